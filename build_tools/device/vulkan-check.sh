#!/usr/bin/env bash
# Runs the Vulkan platform's tests and transfer benchmark on a machine with a real GPU and prints a
# short table last. See /work/shared/device/README.md for preparing such a machine:
#   on the build machine: bash ../shared/device/prepare-gl.sh   (fills .gl/)
#                         build build-vulkan (Release), copy missing shared libs into .devrun/lib
#   on the GPU machine:   bash build_tools/device/vulkan-check.sh [build-dir] [bytes]
# The run tool: copy the two binaries into .devrun/bin, carry [".gl", ".devrun"], and run
#   bash build_tools/device/vulkan-check.sh   (timeout_s ~400; 1 GiB x 3 reps per row)
set -u
BUILD=${1:-build-vulkan}
BYTES=${2:-1073741824}   # 1 GiB
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
[ -f .gl/on-device-prologue.sh ] && source .gl/on-device-prologue.sh
[ -d .devrun/lib ] && export LD_LIBRARY_PATH=$ROOT/.devrun/lib:${LD_LIBRARY_PATH:-}
OUTDIR=${OUT:-/tmp/vulkan-check}
mkdir -p "$OUTDIR"

TEST=$BUILD/tests/backends/vulkan/vulkan_platform_test
BENCH=$BUILD/benchmarks/backends/vulkan_transfer_benchmark
# The run tool carries at most 64 MiB: binaries copied into .devrun/bin win.
[ -x .devrun/bin/vulkan_platform_test ] && TEST=.devrun/bin/vulkan_platform_test
[ -x .devrun/bin/vulkan_transfer_benchmark ] && BENCH=.devrun/bin/vulkan_transfer_benchmark
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
