#!/bin/bash
# Builds the sharding parser fuzzer with clang++-14 (libFuzzer + ASan) and runs
# it over the checked-in seed corpus for a few seconds.
#   usage: run_fuzz.sh <repo root> <work dir>
# Exit 77 (reported as skipped by ctest) when clang++-14 or libFuzzer is absent.
set -euo pipefail
ROOT=${1:?repo root}
WORK=${2:?work dir}
CXX=${FUZZ_CXX:-clang++-14}
SECONDS_TO_RUN=${FUZZ_SECONDS:-5}
if ! command -v "$CXX" >/dev/null 2>&1; then
  echo "SKIP: $CXX not found; install clang-14 and libclang-rt-14-dev to fuzz"
  exit 77
fi
mkdir -p "$WORK/corpus"
SRCS=(sharding/sharding_param.cc sharding/mesh.cc sharding/partition_spec.cc
      sharding/parse_util.cc sharding/message_text.cc tests/sharding/parser_fuzzer.cc)
BIN="$WORK/sharding_parser_fuzzer"
# Rebuild only when a source is newer than the binary.
NEED_BUILD=0
[[ -x "$BIN" ]] || NEED_BUILD=1
for f in "${SRCS[@]}" sharding/*.h; do
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
  if ! "$CXX" -std=c++20 -O1 -g -fsanitize=fuzzer,address -I"$ROOT" \
      "${FULL_SRCS[@]}" "${ABSL_LIBS[@]}" -o "$BIN.tmp" 2> "$WORK/build.log"; then
    if grep -q -e "libclang_rt.fuzzer" -e "cannot find -l.*fuzzer" "$WORK/build.log"; then
      echo "SKIP: libFuzzer runtime missing (install libclang-rt-14-dev)"
      cat "$WORK/build.log"
      exit 77
    fi
    cat "$WORK/build.log"
    echo "FAIL: could not build the fuzzer"
    exit 1
  fi
  mv "$BIN.tmp" "$BIN"
fi
# New inputs go to $WORK/corpus; the checked-in seeds are read only.
"$BIN" -max_total_time="$SECONDS_TO_RUN" -max_len=256 -timeout=10 \
  "$WORK/corpus" "$ROOT/tests/sharding/fuzz_corpus"
