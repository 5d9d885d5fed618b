#!/usr/bin/env bash
# `pip install ./bindings/python` the way a user runs it: a fresh venv, build isolation on (pip
# fetches scikit-build-core and nanobind from PyPI), then the Megatron MLP compiled and executed
# from Python (megatron_from_python.py), then JAX on Tessera through the installed plugin
# (examples/jax_mlp_train.py). Prints the install time.
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

# JAX on Tessera, as docs/jax.md's user runs it: the installed package registers the jax_plugins
# entry point, and the example trains on Tessera's devices. JAX is the build venv's version
# (a test dependency, never the package's).
jax_version="$("$python" -c 'import jax; print(jax.__version__)' 2>/dev/null || true)"
if [[ -z "$jax_version" ]]; then
  echo "JAX on Tessera: skipped ($python has no jax)"
  exit 0
fi
"$work/venv/bin/python" -m pip install -q --disable-pip-version-check "jax==$jax_version"
JAX_PLATFORMS=tessera TESSERA_CPU_DEVICES=8 TESSERA_VULKAN=off \
  "$work/venv/bin/python" "$repo/examples/jax_mlp_train.py" --steps 5 | tee "$work/train.log"
grep -q "^backend tessera: a 2x4 mesh" "$work/train.log"
test "$(grep -c '^step .* loss .* moved: ' "$work/train.log")" -eq 5
# And with Tessera's defaults, as a user types it first: 4 CPU devices and, where Vulkan is found,
# a GPU (5 devices, which the model's widths do not divide: the example takes 4 of them).
JAX_PLATFORMS=tessera "$work/venv/bin/python" "$repo/examples/jax_mlp_train.py" --steps 2 \
  | tee "$work/train_defaults.log"
test "$(grep -c '^step .* loss .* moved: ' "$work/train_defaults.log")" -eq 2
echo "JAX on Tessera through the installed plugin: OK"
