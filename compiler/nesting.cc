#include "compiler/nesting.h"

#include <array>
#include <cstddef>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace tessera::compiler {
namespace {

constexpr std::string_view kOpeners = "([{<";
constexpr std::string_view kClosers = ")]}>";

// A position in the text, 1-based, as MLIR's diagnostics print it.
struct Cursor {
  size_t line = 1;
  size_t column = 1;
};

// Whether the `>` at `i` closes a `<`: not when it is the arrow of `->` or starts `>=`.
bool ClosesAngle(std::string_view text, size_t i) {
  if (i > 0 && text[i - 1] == '-') return false;
  return i + 1 >= text.size() || text[i + 1] != '=';
}

// The index just past the string literal whose opening quote is at `i` (or the end of the text).
size_t SkipString(std::string_view text, size_t i, Cursor& cursor) {
  for (++i; i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++cursor.line;
      cursor.column = 1;
      continue;
    }
    ++cursor.column;
    if (text[i] == '\\') {
      if (i + 1 < text.size() && text[i + 1] != '\n') {
        ++i;
        ++cursor.column;
      }
    } else if (text[i] == '"') {
      return i + 1;
    }
  }
  return i;
}

}  // namespace

absl::Status CheckNestingDepth(std::string_view text, int max_depth) {
  std::array<int, 4> open = {0, 0, 0, 0};  // per kind: ( [ { <
  int depth = 0;
  Cursor cursor;
  size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (c == '"') {
      ++cursor.column;
      i = SkipString(text, i, cursor);
      continue;
    }
    if (c == '/' && i + 1 < text.size() && text[i + 1] == '/') {
      while (i < text.size() && text[i] != '\n') ++i;
      continue;
    }
    if (c == '\n') {
      ++cursor.line;
      cursor.column = 1;
      ++i;
      continue;
    }
    if (size_t kind = kOpeners.find(c); kind != std::string_view::npos) {
      ++open[kind];
      if (++depth > max_depth) {
        return absl::InvalidArgumentError(
            absl::StrCat("invalid program: it nests deeper than ", max_depth, " levels at ",
                         cursor.line, ":", cursor.column, " ('", std::string(1, c),
                         "'); nested regions, brackets, types and attributes count"));
      }
    } else if (size_t kind = kClosers.find(c); kind != std::string_view::npos) {
      if (open[kind] > 0 && (c != '>' || ClosesAngle(text, i))) {
        --open[kind];
        --depth;
      }
    }
    ++cursor.column;
    ++i;
  }
  return absl::OkStatus();
}

}  // namespace tessera::compiler
