// User text inside error messages (base/message_text.h): escaping of every kind of hostile byte,
// and excerpts of long text around a position. (The parse locations the sharding parsers attach are
// tested in tests/sharding/parse_location_test.cc.) Expected strings are built with absl::StrCat:
// GCC 12 at -O3 reports a false -Wrestrict inside std::string's operator+ on a literal and a
// temporary.

#include "base/message_text.h"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tessera::base {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(EscapeText, ControlCharactersAndLineBreaks) {
  EXPECT_EQ(EscapeText("a\nb\r\tc"), "a\\nb\\r\\tc");
  EXPECT_EQ(EscapeText(std::string("\0\x1b[31m\x7f", 7)), "\\x00\\x1B[31m\\x7F");
  EXPECT_EQ(EscapeText("say \"hi\" \\o/"), "say \\\"hi\\\" \\\\o/");
  EXPECT_EQ(EscapeText("say \"hi\" \\o/", /*quote_safe=*/false), "say \"hi\" \\o/");
}

TEST(EscapeText, Utf8PassesAndInvalidBytesAreHex) {
  EXPECT_EQ(EscapeText("8\xC3\x97"
                       "8 \xE2\x86\x92 \xF0\x9F\x98\x80"),
            "8\xC3\x97"
            "8 \xE2\x86\x92 \xF0\x9F\x98\x80");  // ×, →, an emoji
  EXPECT_EQ(EscapeText("\xFF\xFE"), "\\xFF\\xFE");
  EXPECT_EQ(EscapeText("\xC0\xAF"), "\\xC0\\xAF");                    // overlong '/'
  EXPECT_EQ(EscapeText("\xED\xA0\x80"), "\\xED\\xA0\\x80");           // a surrogate
  EXPECT_EQ(EscapeText("\xF4\x90\x80\x80"), "\\xF4\\x90\\x80\\x80");  // above U+10FFFF
  EXPECT_EQ(EscapeText("ab\xE2\x86"), "ab\\xE2\\x86");                // cut short
}

TEST(EscapeText, InvisibleUnicodeControlsAreHex) {
  EXPECT_EQ(EscapeText("\xC2\x85"), "\\xC2\\x85");  // NEL (C1)
  EXPECT_EQ(EscapeText("a\xE2\x80\xA8"
                       "b"),
            "a\\xE2\\x80\\xA8b");                            // LINE SEPARATOR
  EXPECT_EQ(EscapeText("\xE2\x80\xAE"), "\\xE2\\x80\\xAE");  // RIGHT-TO-LEFT OVERRIDE
  EXPECT_EQ(EscapeText("\xE2\x81\xA6"), "\\xE2\\x81\\xA6");  // LEFT-TO-RIGHT ISOLATE
}

TEST(QuoteExcerpt, ShortTextIsWhole) {
  EXPECT_EQ(QuoteExcerpt(""), "\"\"");
  EXPECT_EQ(QuoteExcerpt("P(x,\nNone)", 4), "\"P(x,\\nNone)\"");
  EXPECT_EQ(QuoteExcerpt(std::string(kExcerptLimit, 'a')),
            absl::StrCat("\"", std::string(kExcerptLimit, 'a'), "\""));
}

TEST(QuoteExcerpt, LongTextKeepsAWindowAroundThePosition) {
  const std::string text = absl::StrCat(std::string(50000, 'a'), "X", std::string(50000, 'b'));
  const std::string middle = QuoteExcerpt(text, 50000);
  EXPECT_EQ(middle,
            absl::StrCat("\"...", std::string(30, 'a'), "X", std::string(29, 'b'), "...\""));
  const std::string start = QuoteExcerpt(text, 0);
  EXPECT_EQ(start, absl::StrCat("\"", std::string(kExcerptBytes, 'a'), "...\""));
  const std::string end = QuoteExcerpt(text, text.size());
  EXPECT_EQ(end, absl::StrCat("\"...", std::string(kExcerptBytes, 'b'), "\""));
  EXPECT_EQ(QuoteExcerpt(text, 1u << 30), end);  // clamped
}

TEST(QuoteExcerpt, NeverSplitsAUtf8Character) {
  std::string text;
  for (int i = 0; i < 100; ++i) text += "\xC3\x97";  // 200 bytes of U+00D7
  for (size_t position : {0u, 1u, 77u, 100u, 199u}) {
    const std::string q = QuoteExcerpt(text, position);
    EXPECT_THAT(q, Not(HasSubstr("\\x"))) << position;  // every character stays whole
  }
}

TEST(ParseLocation, RoundTripsThroughAStatusAndIgnoresOk) {
  absl::Status s = absl::InvalidArgumentError("bad");
  AttachParseLocation(s, ParseLocation{7, "')'"});
  const std::optional<ParseLocation> at = GetParseLocation(s);
  ASSERT_TRUE(at.has_value());
  EXPECT_EQ(at->offset, 7u);
  EXPECT_EQ(at->expected, "')'");
  EXPECT_EQ(s.message(), "bad");  // the message is unchanged
  absl::Status ok = absl::OkStatus();
  AttachParseLocation(ok, ParseLocation{1, "x"});
  EXPECT_TRUE(ok.ok());
  EXPECT_FALSE(GetParseLocation(ok).has_value());
  EXPECT_FALSE(GetParseLocation(absl::InternalError("no location")).has_value());
}

}  // namespace
}  // namespace tessera::base
