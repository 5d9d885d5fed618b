// libFuzzer target for the nesting bound checked before MLIR parses a program (compiler/nesting.h):
// the first byte picks the bound (0..63, or the compiler's kMaxProgramNesting), the rest is the
// text. None may crash; it fails only with INVALID_ARGUMENT whose line:column points at an opener
// of the text; the bound is monotonic (what passes a bound passes every larger one, what fails it
// fails every smaller one); and a text of openers only fails exactly when it is longer than the
// bound.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "compiler/nesting.h"

namespace {

using tessera::compiler::CheckNestingDepth;

[[noreturn]] void Fail(const char* what, const absl::Status& s) {
  std::fprintf(stderr, "%s: %s\n", what, s.ToString().c_str());
  std::abort();
}

// The byte offset of 1-based `line`:`column` in `text`, or npos.
size_t OffsetOf(std::string_view text, size_t line, size_t column) {
  size_t offset = 0;
  for (size_t l = 1; l < line; ++l) {
    offset = text.find('\n', offset);
    if (offset == std::string_view::npos) return offset;
    ++offset;
  }
  offset += column - 1;
  return offset < text.size() ? offset : std::string_view::npos;
}

// The error names an opener of the text at its line:column.
void CheckError(const absl::Status& s, std::string_view text) {
  if (s.code() != absl::StatusCode::kInvalidArgument) Fail("unexpected code", s);
  const std::string message(s.message());
  const size_t at = message.find(" levels at ");
  size_t line = 0, column = 0;
  if (at == std::string::npos ||
      std::sscanf(message.c_str() + at + 11, "%zu:%zu", &line, &column) != 2) {
    Fail("no line:column", s);
  }
  const size_t offset = OffsetOf(text, line, column);
  if (offset == std::string_view::npos ||
      std::string_view("([{<").find(text[offset]) == std::string_view::npos) {
    Fail("line:column is not an opener", s);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const int bound = data[0] == 255 ? tessera::compiler::kMaxProgramNesting : data[0] % 64;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  const absl::Status s = CheckNestingDepth(text, bound);
  if (s.ok()) {
    if (absl::Status larger = CheckNestingDepth(text, bound + 1); !larger.ok()) {
      Fail("passes a bound but not a larger one", larger);
    }
  } else {
    CheckError(s, text);
    if (bound > 0 && CheckNestingDepth(text, bound - 1).ok()) {
      Fail("fails a bound but passes a smaller one", s);
    }
  }
  // Openers alone nest as deep as they are many.
  if (text.find_first_not_of("([{") == std::string_view::npos) {
    const bool too_deep = static_cast<int>(text.size()) > bound;
    if (s.ok() == too_deep) Fail("a run of openers is misjudged", s);
  }
  return 0;
}
