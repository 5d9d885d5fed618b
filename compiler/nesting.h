#ifndef TESSERA_COMPILER_NESTING_H_
#define TESSERA_COMPILER_NESTING_H_

// compiler/nesting.h: a bound on how deeply a program's text nests, checked before MLIR parses
// it. MLIR's parser recurses once per nested region, attribute, type and parenthesis; text nested
// a few thousand levels deep overflows the calling thread's stack. CheckNestingDepth scans the
// text once (no allocation, linear time) and refuses it before any recursion.
//
// What counts: every `(`, `[`, `{` and `<` opens a level, its closer ends it. Brackets inside
// string literals ("...", with backslash escapes) and `//` comments are ignored, and so is the `>`
// of `->` and `>=`. The kinds are counted separately and the depth is their sum, so a stray closer
// of one kind never hides the openers of another. Internal to compiler/ (not installed); Abseil
// only, so that a fuzz target builds it without MLIR (tests/fuzz/program_nesting_fuzzer.cc).
//
//   absl::Status s = CheckNestingDepth(text, kMaxProgramNesting);
//   // INVALID_ARGUMENT: "the program nests deeper than 64 levels at 3:17 ('[')"

#include <string_view>

#include "absl/status/status.h"

namespace tessera::compiler {

// The deepest nesting a program may use: far above what programs write (a linalg.generic in
// @main nests about 6 levels, a dense constant of rank r about r + 3), far below what MLIR's
// parser survives on a small thread stack.
inline constexpr int kMaxProgramNesting = 64;

// OK when no point of `text` is nested more than `max_depth` levels deep; else INVALID_ARGUMENT
// naming the limit and the line:column (1-based) of the first opener past it.
absl::Status CheckNestingDepth(std::string_view text, int max_depth);

}  // namespace tessera::compiler

#endif  // TESSERA_COMPILER_NESTING_H_
