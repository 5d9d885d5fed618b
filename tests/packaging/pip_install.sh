#!/usr/bin/env bash
# `pip install ./bindings/python` the way a user runs it: a fresh venv, build isolation on (pip
# fetches scikit-build-core and nanobind from PyPI), then the Megatron MLP compiled and executed
# from Python (megatron_from_python.py). Prints the install time.
#   tests/packaging/pip_install.sh [PYTHON]   (default: python3; the venv is made from it)
# Needs the Debian packages of build_tools/install-deps.sh and PyPI. Exit 0 when it computes.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
python="${1:-python3}"
work="$(mktemp -d /tmp/tessera-pip.XXXXXX)"
trap 'rm -rf "$work"' EXIT
"$python" -m venv "$work/venv"
# The venv's own interpreter, with nothing of the caller's environment pointing elsewhere.
unset PYTHONPATH PYTHONHOME VIRTUAL_ENV LD_LIBRARY_PATH
start=$(date +%s)
"$work/venv/bin/python" -m pip install -q --disable-pip-version-check "$repo/bindings/python"
echo "pip install ./bindings/python: $(( $(date +%s) - start )) s"
cd "$work"  # away from the repository, so that nothing imports from it
"$work/venv/bin/python" "$repo/tests/packaging/megatron_from_python.py" \
  "$repo/examples/mlp2_megatron.mlir"
