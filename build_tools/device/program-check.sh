#!/usr/bin/env bash
# Runs compiled programs on a machine with an NVIDIA GPU, through Tessera's Vulkan code generator
# (compiler/ -> SPIR-V -> backends/vulkan), and prints GFLOP/s beside the GPU's FP32 peak and GB/s
# beside its memory bandwidth, last:
#   1. a 4096x4096x4096 f32 matmul on one GPU device (issue 26's target: >= 25% of FP32 peak);
#   2. the Megatron MLP (examples/mlp2_megatron.mlir's program at 2048 x 4096 -> 16384 -> 4096)
#      on one GPU device;
#   3. x * 2 + 1 over f32[16384,16384] (1 GiB read, 1 GiB written) on one GPU device (target: >= 70%
#      of memory bandwidth).
# Each run is `tessera run` (it also checks the result against the same program on one device and
# fails when they differ); each program is limited to 240 s:
#   bash build_tools/device/program-check.sh [build-dir (build)] [repeats (5)]
# The build folder is a Release build of the `tessera` target (it links libMLIR and libLLVM, from
# Debian's llvm-22 packages, which the GPU machine needs as well).
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
BUILD=${1:-build}
REPEAT=${2:-5}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
source "$ROOT/build_tools/device/device-env.sh"
OUTDIR=${OUT:-/tmp/program-check}
mkdir -p "$OUTDIR"
TESSERA=$(device_binary "$BUILD/tools/tessera")
if [ ! -x "$TESSERA" ]; then
  echo "missing $TESSERA"
  exit 127
fi

GPU=""
if command -v nvidia-smi >/dev/null; then
  GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
fi
# FP32 peak (non-tensor-core) in GFLOP/s and memory bandwidth in GB/s of the GPUs such a machine
# may have (vendor data sheets).
case "$GPU" in
  *H200*) PEAK=67000 BANDWIDTH=4800 ;;
  *H100*SXM*|*"H100 80GB HBM3"*) PEAK=67000 BANDWIDTH=3350 ;;
  *H100*PCIe*|*"H100 PCIe"*) PEAK=51000 BANDWIDTH=2000 ;;
  *A100*80GB*) PEAK=19500 BANDWIDTH=2039 ;;
  *A100*) PEAK=19500 BANDWIDTH=1555 ;;
  *L40S*) PEAK=91600 BANDWIDTH=864 ;;
  *L4*) PEAK=30300 BANDWIDTH=300 ;;
  *A10*) PEAK=31200 BANDWIDTH=600 ;;
  *T4*) PEAK=8100 BANDWIDTH=320 ;;
  *) PEAK="" BANDWIDTH="" ;;
esac

"$TESSERA" info --devices vulkan:1 >"$OUTDIR/info.log" 2>&1
sed -n '/Drivers/,/Attributes/p' "$OUTDIR/info.log"

# The programs, on a one-device mesh.
cat >"$OUTDIR/matmul4096.mlir" <<'EOF'
func.func @main(%a: tensor<4096x4096xf32> {tessera.sharding = "mesh{x=1} P()"},
                %b: tensor<4096x4096xf32> {tessera.sharding = "mesh{x=1} P()"})
    -> (tensor<4096x4096xf32> {tessera.sharding = "mesh{x=1} P()"}) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4096x4096xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<4096x4096xf32>) -> tensor<4096x4096xf32>
  %c = linalg.matmul ins(%a, %b : tensor<4096x4096xf32>, tensor<4096x4096xf32>)
                     outs(%acc : tensor<4096x4096xf32>) -> tensor<4096x4096xf32>
  return %c : tensor<4096x4096xf32>
}
EOF
cat >"$OUTDIR/elementwise16384.mlir" <<'EOF'
func.func @main(%x: tensor<16384x16384xf32> {tessera.sharding = "mesh{x=1} P()"})
    -> (tensor<16384x16384xf32> {tessera.sharding = "mesh{x=1} P()"}) {
  %two = arith.constant 2.0 : f32
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<16384x16384xf32>
  %y = linalg.map ins(%x : tensor<16384x16384xf32>) outs(%e : tensor<16384x16384xf32>)
    (%in: f32, %out: f32) {
      %m = arith.mulf %in, %two : f32
      %a = arith.addf %m, %one : f32
      linalg.yield %a : f32
    }
  return %y : tensor<16384x16384xf32>
}
EOF
# examples/mlp2_megatron.mlir at B=2048, D=4096, H=16384 (its shapes scaled; one device).
sed -e 's/8x16xf32/2048x4096xf32/g' -e 's/16x32xf32/4096x16384xf32/g' \
    -e 's/32x16xf32/16384x4096xf32/g' -e 's/8x32xf32/2048x16384xf32/g' \
    -e 's/tensor<32xf32>/tensor<16384xf32>/g' -e 's/tensor<16xf32>/tensor<4096xf32>/g' \
    -e 's/mesh{x=4}/mesh{x=1}/g' examples/mlp2_megatron.mlir >"$OUTDIR/megatron.mlir"

# Median seconds of "execute + await (sharded)" in a `tessera run` log.
median_seconds() {
  awk '/execute \+ await \(sharded\)/ {
         v = $(NF-4); u = $(NF-3);
         f = (u == "s") ? 1 : (u == "ms") ? 1e-3 : (u == "us") ? 1e-6 : (u == "ns") ? 1e-9 : 0;
         printf "%.9f\n", v * f }' "$1"
}

run_one() {  # name file flops [bytes moved]
  local name=$1 file=$2 flops=$3 bytes=${4:-}
  timeout 240 "$TESSERA" run "$file" --devices vulkan:1 --repeat "$REPEAT" >"$OUTDIR/$name.log" 2>&1
  local rc=$?
  tail -9 "$OUTDIR/$name.log"
  local t
  t=$(median_seconds "$OUTDIR/$name.log")
  local gflops=""
  if [ -n "$t" ] && [ "$t" != "0.000000000" ]; then
    gflops=$(awk -v f="$flops" -v t="$t" 'BEGIN { printf "%.1f", f / t / 1e9 }')
  fi
  local gbps="" share=""
  if [ -n "$bytes" ]; then  # a memory-bound program: GB/s against the memory bandwidth
    [ -n "$gflops" ] && gbps=$(awk -v b="$bytes" -v t="$t" 'BEGIN { printf "%.1f", b / t / 1e9 }')
    [ -n "$BANDWIDTH" ] && share=$(awk -v g="${gbps:-0}" -v p="$BANDWIDTH" \
      'BEGIN { printf "%.1f%% of memory bandwidth", 100 * g / p }')
    RESULTS+=("$(printf "%-34s %-6s %-12s %-12s %s" "$name" "$rc" "${t:-?}" "${gbps:-?} GB/s" \
      "$share")")
  else
    [ -n "$PEAK" ] && share=$(awk -v g="${gflops:-0}" -v p="$PEAK" \
      'BEGIN { printf "%.1f%% of FP32 peak", 100 * g / p }')
    RESULTS+=("$(printf "%-34s %-6s %-12s %-12s %s" "$name" "$rc" "${t:-?}" "${gflops:-?}" \
      "$share")")
  fi
  [ "$rc" = 0 ]
}

RESULTS=()
ok=0
echo "== 4096x4096 f32 matmul =="
run_one matmul4096 "$OUTDIR/matmul4096.mlir" $((2 * 4096 * 4096 * 4096)) || ok=1
echo "== Megatron MLP 2048x4096 -> 16384 -> 4096 =="
run_one megatron "$OUTDIR/megatron.mlir" $((2 * 2048 * 4096 * 16384 * 2)) || ok=1
echo "== x * 2 + 1 over f32[16384,16384] =="
run_one elementwise16384 "$OUTDIR/elementwise16384.mlir" $((2 * 16384 * 16384)) \
  $((2 * 16384 * 16384 * 4)) || ok=1

echo
echo "== summary (${GPU:-unknown GPU}; FP32 peak ${PEAK:-unknown} GFLOP/s, memory" \
  "${BANDWIDTH:-unknown} GB/s) =="
printf "%-34s %-6s %-12s %-12s %s\n" "program" "exit" "median s" "GFLOP/s" "share"
for r in "${RESULTS[@]}"; do echo "$r"; done
exit $ok
