#!/usr/bin/env bash
# Installs the Debian 12 packages Tessera needs to build, test and run, if any is missing.
# Idempotent; prints nothing when everything is already present.
set -euo pipefail

PACKAGES=(
  cmake ninja-build g++ make pkg-config git
  ccache                 # rebuilds and other clones of the repository reuse compiled objects
  libabsl-dev            # Status, StatusOr, Span, containers, Mutex, logging
  libtbb-dev             # oneTBB: task arenas of the CPU platform
  libmlir-22-dev llvm-22-dev mlir-22-tools  # MLIR: the program compiler (compiler/), CPU kernel JIT
  libopenblas-dev        # optional: CPU f32 / f64 matmuls through cblas_sgemm / cblas_dgemm
  libgtest-dev libgmock-dev
  libbenchmark-dev
  libcli11-dev           # argument parsing of the tessera tool
  libopenmpi-dev openmpi-bin  # MPI: multi-process clients (Distributed::kMpi), mpirun for tests
  libvulkan-dev vulkan-validationlayers glslc spirv-tools
  mesa-vulkan-drivers    # lavapipe: a Vulkan driver on the CPU, used when no GPU is present
  clang-14 libclang-rt-14-dev  # libFuzzer for the parser fuzz targets
  clang-format           # the format check (tests/format)
  python3
  python3-dev python3-venv  # bindings/python: Python.h, and the venv `make deps` fills from PyPI
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
