#!/bin/bash
# Builds one libFuzzer target with clang++-14 (libFuzzer + ASan + UBSan) and runs
# it over its checked-in seed corpus (tests/fuzz/corpus/<target>) for a few seconds.
#   usage: run_fuzz.sh <repo root> <work dir> <target> [extra libFuzzer flags]
#   targets: sharding_parser guard_policy remap_plan planner cli_options program_nesting
#            stablehlo_attributes stablehlo_import
# FUZZ_SECONDS (default 5) sets the run time; FUZZ_CXX the compiler. New inputs
# go to <work dir>/corpus, crashes to <work dir>/crash-*; the seeds are read only.
# Exit 77 (reported as skipped by ctest) when clang++-14 or libFuzzer is absent.
set -euo pipefail
ROOT=${1:?repo root}
WORK=${2:?work dir}
TARGET=${3:?target}
shift 3
CXX=${FUZZ_CXX:-clang++-14}
SECONDS_TO_RUN=${FUZZ_SECONDS:-5}
if ! command -v "$CXX" >/dev/null 2>&1; then
  echo "SKIP: $CXX not found; install clang-14 and libclang-rt-14-dev to fuzz"
  exit 77
fi

# Every source of base/ and sharding/ (a new file there must not break the fuzz builds).
BASE=()
for f in "$ROOT"/base/*.cc; do BASE+=("base/$(basename "$f")"); done
SHARDING=("${BASE[@]}")
for f in "$ROOT"/sharding/*.cc; do SHARDING+=("sharding/$(basename "$f")"); done
EXTRA_CFLAGS=()
EXTRA_LIBS=()
MAX_LEN=256
case "$TARGET" in
  sharding_parser)
    SRCS=("${SHARDING[@]}" tests/fuzz/sharding_parser_fuzzer.cc) ;;
  guard_policy)
    SRCS=("${BASE[@]}" guard/level.cc guard/policy.cc tests/fuzz/guard_policy_fuzzer.cc) ;;
  remap_plan)
    SRCS=("${SHARDING[@]}" ifrt/array_spec.cc ifrt/attribute_map.cc ifrt/device_list.cc
          ifrt/dtype.cc ifrt/remap_plan.cc ifrt/shape.cc ifrt/sharding.cc
          tests/fuzz/remap_plan_fuzzer.cc) ;;
  cli_options)
    SRCS=("${SHARDING[@]}" tools/option_text.cc tests/fuzz/cli_options_fuzzer.cc) ;;
  program_nesting)
    # The bound on a program's nesting, checked before MLIR parses it (Abseil only).
    SRCS=("${BASE[@]}" compiler/nesting.cc tests/fuzz/program_nesting_fuzzer.cc)
    MAX_LEN=4096 ;;
  stablehlo_attributes)
    # The StableHLO / Shardy attribute text parsers (Abseil only).
    SRCS=("${BASE[@]}" compiler/stablehlo/attribute_text.cc compiler/stablehlo/gspmd_mesh.cc
          tests/fuzz/stablehlo_attributes_fuzzer.cc) ;;
  stablehlo_import)
    # The StableHLO importer on program text, over MLIR 22. Only Tessera's sources are
    # instrumented: the shared libMLIR / libLLVM are not (inside them ASan catches only accesses
    # that fault, UBSan nothing, libFuzzer sees no coverage), so the run explores the importer.
    # TESSERA_FUZZ_INTERNAL=abort (or =report) stops at (or prints) an INTERNAL status.
    SRCS=("${SHARDING[@]}" compiler/nesting.cc compiler/diagnostics.cc
          compiler/stablehlo/stablehlo_import.cc compiler/stablehlo/import_state.cc
          compiler/stablehlo/attribute_text.cc compiler/stablehlo/gspmd_mesh.cc
          compiler/stablehlo/elementwise.cc
          compiler/stablehlo/structural.cc compiler/stablehlo/contraction.cc
          compiler/stablehlo/gather_scatter.cc compiler/stablehlo/slicing.cc
          compiler/stablehlo/dynamic_slicing.cc
          compiler/stablehlo/control_flow.cc compiler/stablehlo/sort.cc
          compiler/stablehlo/convolution.cc
          compiler/stablehlo/sdy_shardings.cc
          compiler/stablehlo/manual_computation.cc compiler/stablehlo/collectives.cc
          compiler/stablehlo/reduce_window.cc
          tests/compiler/stablehlo_import_fuzzer.cc)
    EXTRA_CFLAGS=(-isystem /usr/lib/llvm-22/include)
    EXTRA_LIBS=(-L/usr/lib/llvm-22/lib -Wl,-rpath,/usr/lib/llvm-22/lib -lMLIR -lLLVM)
    MAX_LEN=8192 ;;
  pjrt_compile_options)
    SRCS=(bindings/pjrt/compile_options.cc tests/fuzz/pjrt_compile_options_fuzzer.cc)
    MAX_LEN=4096 ;;
  planner)
    # plan_checker.h reports through gtest's AssertionResult.
    SRCS=("${SHARDING[@]}" tests/fuzz/planner_fuzzer.cc)
    EXTRA_LIBS=(-lgtest -lpthread) ;;
  *)
    echo "FAIL: unknown fuzz target '$TARGET'"
    exit 1 ;;
esac

mkdir -p "$WORK/corpus"
BIN="$WORK/${TARGET}_fuzzer"
# Rebuild only when a source or header is newer than the binary.
NEED_BUILD=0
[[ -x "$BIN" ]] || NEED_BUILD=1
# The header globs expand in the repo root, wherever the script runs from.
HEADERS=($(cd "$ROOT" && echo base/*.h sharding/*.h guard/*.h ifrt/*.h tools/option_text.h \
           compiler/nesting.h compiler/internal.h compiler/stablehlo/*.h tests/fuzz/*.h \
           bindings/pjrt/compile_options.h \
           tests/sharding/*.h))
for f in "${SRCS[@]}" "${HEADERS[@]}"; do
  [[ "$ROOT/$f" -nt "$BIN" ]] && NEED_BUILD=1
done
if [[ $NEED_BUILD == 1 ]]; then
  ABSL_LIBS=(-labsl_status -labsl_statusor -labsl_strings -labsl_strings_internal
             -labsl_str_format_internal -labsl_int128 -labsl_throw_delegate
             -labsl_raw_logging_internal -labsl_hash -labsl_city
             -labsl_low_level_hash -labsl_raw_hash_set -labsl_cord
             -labsl_cord_internal -labsl_base -labsl_spinlock_wait)
  FULL_SRCS=()
  for f in "${SRCS[@]}"; do FULL_SRCS+=("$ROOT/$f"); done
  if ! "$CXX" -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined \
      -fno-sanitize-recover=undefined -I"$ROOT" "${EXTRA_CFLAGS[@]}" "${FULL_SRCS[@]}" \
      "${ABSL_LIBS[@]}" "${EXTRA_LIBS[@]}" -o "$BIN.tmp" 2> "$WORK/build.log"; then
    if grep -q -e "libclang_rt.fuzzer" -e "cannot find -l.*fuzzer" "$WORK/build.log"; then
      echo "SKIP: libFuzzer runtime missing (install libclang-rt-14-dev)"
      cat "$WORK/build.log"
      exit 77
    fi
    cat "$WORK/build.log"
    echo "FAIL: could not build the $TARGET fuzzer"
    exit 1
  fi
  mv "$BIN.tmp" "$BIN"
fi
cd "$WORK"
# libFuzzer exits 77 on a crash by default, which ctest would report as a skip: make it 1.
"$BIN" -max_total_time="$SECONDS_TO_RUN" -max_len="$MAX_LEN" -timeout=10 -rss_limit_mb=2048 \
  -error_exitcode=1 -timeout_exitcode=1 "$@" "$WORK/corpus" "$ROOT/tests/fuzz/corpus/$TARGET"
