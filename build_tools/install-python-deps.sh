#!/usr/bin/env bash
# Makes the build's one Python: a venv at $PYTHON_VENV (default build/pyenv) with the packages of
# build_tools/python-requirements.txt. Idempotent; prints nothing when the venv already has them.
# The machine's own python3 only seeds the venv: nothing is installed into it or imported from it.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="${PYTHON_VENV:-$here/../build/pyenv}"
requirements="$here/python-requirements.txt"
modules=(nanobind scikit_build_core numpy pytest jax)  # the import name of each requirement

check="import importlib.util, sys; sys.exit(any(importlib.util.find_spec(m) is None for m in sys.argv[1:]))"
if [ -x "$venv/bin/python3" ] && "$venv/bin/python3" -c "$check" "${modules[@]}"; then
  exit 0
fi
echo "install-python-deps: making $venv from $requirements"
[ -x "$venv/bin/python3" ] || python3 -m venv "$venv"
"$venv/bin/python3" -m pip install -q --disable-pip-version-check -r "$requirements"
echo "install-python-deps: done"
