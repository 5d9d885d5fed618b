#!/usr/bin/env bash
# Runs the Vulkan platform's tests (on the system's drivers) and its transfer benchmark on a machine
# with a real GPU, and prints a short table last (each limited to 300 s; 3 repetitions a row):
#   bash build_tools/device/vulkan-check.sh [build-dir (build-vulkan)] [bytes (1 GiB)]
# The build folder is a Release build with tests and benchmarks (the targets vulkan_platform_test
# and vulkan_transfer_benchmark are enough).
# The GPU machine needs the Vulkan loader (Debian: libvulkan1) and the GPU driver with its Vulkan
# ICD (NVIDIA: the driver's nvidia_icd.json); see docs/backends.md, "A GPU machine". Binaries
# built on another machine need their shared libraries there too (`ldd` lists them). Settings:
#   TESSERA_DEVICE_PROLOGUE  a script sourced first (e.g. one exporting VK_DRIVER_FILES for the
#                            driver's ICD); default .gl/on-device-prologue.sh when present
#   TESSERA_DEVICE_LIB_DIR   a folder of shared libraries the machine lacks (put on the loader's
#                            path for these binaries only); default .devrun/lib when present
#   TESSERA_DEVICE_BIN_DIR   a folder of prebuilt binaries, used instead of the build folder's;
#                            default .devrun/bin when present
#   OUT                      where the logs go (default /tmp/<script name>)
set -u
BUILD=${1:-build-vulkan}
BYTES=${2:-1073741824}   # 1 GiB
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
source "$ROOT/build_tools/device/device-env.sh"
OUTDIR=${OUT:-/tmp/vulkan-check}
mkdir -p "$OUTDIR"

TEST=$(device_binary "$BUILD/tests/backends/vulkan/vulkan_platform_test")
BENCH=$(device_binary "$BUILD/benchmarks/backends/vulkan_transfer_benchmark")
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader

echo "== tests (system drivers) =="
test_rc=127
if [ -x "$TEST" ]; then
  TESSERA_VULKAN_TEST_SYSTEM_DRIVERS=1 timeout 300 "$TEST" --gtest_brief=1 >"$OUTDIR/tests.log" 2>&1
  test_rc=$?
  tail -25 "$OUTDIR/tests.log"
else
  echo "missing $TEST"
fi

echo "== benchmark ($BYTES bytes) =="
bench_rc=127
if [ -x "$BENCH" ]; then
  TESSERA_BENCH_BYTES=$BYTES timeout 300 "$BENCH" --reps=3 >"$OUTDIR/bench.log" 2>&1
  bench_rc=$?
  cat "$OUTDIR/bench.log"
else
  echo "missing $BENCH"
fi

echo
echo "== summary =="
printf "%-40s %s\n" "tests exit code" "$test_rc"
printf "%-40s %s\n" "tests passed line" "$(grep -E 'PASSED|FAILED' "$OUTDIR/tests.log" 2>/dev/null | tail -1)"
printf "%-40s %s\n" "benchmark exit code" "$bench_rc"
grep -E "GB/s|memcpy \(floor\)|->|cross" "$OUTDIR/bench.log" 2>/dev/null | sed -n '1,40p'
[ "$test_rc" = 0 ] && [ "$bench_rc" = 0 ]
