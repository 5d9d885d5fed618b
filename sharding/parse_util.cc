#include "sharding/parse_util.h"

#include <cctype>

#include "absl/strings/str_cat.h"
#include "base/message_text.h"
#include "base/string_view.h"

namespace tessera::sharding::internal {

void TextCursor::SkipSpaces() {
  while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) {
    ++pos_;
  }
}

bool TextCursor::Consume(std::string_view token) {
  SkipSpaces();
  if (text_.substr(pos_, token.size()) != token) return false;
  pos_ += token.size();
  return true;
}

bool TextCursor::ConsumeInteger(int64_t* out, bool allow_negative) {
  SkipSpaces();
  size_t p = pos_;
  const bool negative = allow_negative && p < text_.size() && text_[p] == '-';
  if (negative) ++p;
  const size_t start = p;
  int64_t value = 0;
  while (p < text_.size() && std::isdigit(static_cast<unsigned char>(text_[p]))) {
    if (p - start >= 18) return false;
    value = value * 10 + (text_[p] - '0');
    ++p;
  }
  if (p == start) return false;
  pos_ = p;
  *out = negative ? -value : value;
  return true;
}

bool TextCursor::ConsumeIdentifier(std::string_view* out) {
  SkipSpaces();
  size_t p = pos_;
  auto is_start = [](char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; };
  if (p >= text_.size() || !is_start(text_[p])) return false;
  ++p;
  while (p < text_.size() &&
         (is_start(text_[p]) || std::isdigit(static_cast<unsigned char>(text_[p])))) {
    ++p;
  }
  *out = text_.substr(pos_, p - pos_);
  pos_ = p;
  return true;
}

bool TextCursor::AtEnd() {
  SkipSpaces();
  return pos_ == text_.size();
}

absl::Status TextCursor::Error(std::string_view expected) const {
  absl::Status status = absl::InvalidArgumentError(
      absl::StrCat("Cannot parse ", base::AsAbsl(what_), " ", base::QuoteExcerpt(text_, pos_),
                   ": expected ", base::AsAbsl(expected), " at offset ", pos_));
  base::AttachParseLocation(status, base::ParseLocation{pos_, std::string(expected)});
  return status;
}

}  // namespace tessera::sharding::internal
