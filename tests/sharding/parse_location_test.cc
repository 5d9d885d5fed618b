// Where the sharding parsers failed: the parse location (base/message_text.h) each attaches, and
// messages that stay one short line whatever the user typed. Expected strings are built with
// absl::StrCat: GCC 12 at -O3 reports a false -Wrestrict inside std::string's operator+ on a
// literal and a temporary.

#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "base/message_text.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sharding/mesh.h"
#include "sharding/partition_spec.h"
#include "sharding/sharding_param.h"

namespace tessera::sharding {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(ParseLocation, ParsersAttachOffsetAndExpectation) {
  absl::Status s = PartitionSpec::Parse("P(x,None").status();
  std::optional<base::ParseLocation> at = base::GetParseLocation(s);
  ASSERT_TRUE(at.has_value()) << s;
  EXPECT_EQ(at->offset, 8u);
  EXPECT_EQ(at->expected, "')'");
  at = base::GetParseLocation(Mesh::Parse("mesh{x:2}").status());
  ASSERT_TRUE(at.has_value());
  EXPECT_EQ(at->offset, 6u);
  EXPECT_EQ(at->expected, "'='");
  // Errors that are not about a position carry none.
  EXPECT_FALSE(base::GetParseLocation(Mesh::Parse("mesh{x=0}").status()).has_value());
  EXPECT_FALSE(base::GetParseLocation(absl::OkStatus()).has_value());
}

TEST(ParseLocation, ParserMessagesStayOneShortLine) {
  const std::string hostile = absl::StrCat("mesh{x=2}\n\x1b[2J", std::string(100000, 'y'), "\xFF");
  const absl::Status s = Mesh::Parse(hostile).status();
  const std::string message(s.message());
  EXPECT_THAT(message, StartsWith("Cannot parse Mesh \"mesh{x=2}\\n\\x1B[2Jyyy"));
  EXPECT_THAT(message, HasSubstr("...\": expected end of input at offset 10"));
  EXPECT_LT(message.size(), 200u);
  EXPECT_EQ(message.find('\n'), std::string::npos);
  EXPECT_EQ(message.find('\x1b'), std::string::npos);
  const absl::Status p = ShardingParam::Parse(std::string(100000, '2')).status();
  EXPECT_LT(p.message().size(), 200u) << p;
  // Verify's messages list at most 16 dims.
  std::string dims = "2";
  for (int i = 0; i < 5000; ++i) dims += "x2";
  const absl::Status v = ShardingParam::Parse(dims + " to [0] on 2").status();
  EXPECT_THAT(std::string(v.message()),
              HasSubstr("Can't shard the dims 2x2x2x2x2x2x2x2x2x2x2x2x2x2x2x2x...(5001 in all)"));
  EXPECT_LT(v.message().size(), 200u) << v;
}

}  // namespace
}  // namespace tessera::sharding
