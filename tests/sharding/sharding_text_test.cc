// The one parser of the two sharding notations (sharding/sharding_text.h): both notations, white
// space, canonical round trips, and errors that name the text, the part that failed and the
// position in the text as given (also attached as a parse location).

#include "sharding/sharding_text.h"

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/message_text.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tessera::sharding {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string Message(const absl::Status& s) { return std::string(s.message()); }

TEST(ParseShardingText, NamedNotation) {
  absl::StatusOr<ShardingText> s = ParseShardingText(" \tmesh{x=2, y=4}  P(x,(y))\n");
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_TRUE(s->is_named());
  EXPECT_FALSE(s->param.has_value());
  EXPECT_EQ(s->num_devices(), 8);
  EXPECT_EQ(s->mesh->ToString(), "mesh{x=2,y=4}");
  EXPECT_EQ(s->spec.ToString(), "P(x,y)");
  EXPECT_EQ(s->ToString(), "mesh{x=2,y=4} P(x,y)");
}

TEST(ParseShardingText, ShardingParamNotation) {
  absl::StatusOr<ShardingText> s = ParseShardingText("2x1 to [0] on 2");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_FALSE(s->is_named());
  ASSERT_TRUE(s->param.has_value());
  EXPECT_EQ(s->num_devices(), 2);
  EXPECT_EQ(s->ToString(), "2x1 to [0] on 2");
}

TEST(ParseShardingText, ToStringParsesToTheSameSharding) {
  for (const char* text : {"mesh{a=3} P()", "mesh{x=2,y=2} P((x,y),None)", "mesh{x=4} P(None,x)",
                           "1x1 to [0] on 1", "1x2 to [0,1] on 2x3", "1x1 to [0] on 4"}) {
    SCOPED_TRACE(text);
    absl::StatusOr<ShardingText> once = ParseShardingText(text);
    ASSERT_TRUE(once.ok()) << once.status();
    absl::StatusOr<ShardingText> twice = ParseShardingText(once->ToString());
    ASSERT_TRUE(twice.ok()) << twice.status();
    EXPECT_EQ(twice->ToString(), once->ToString());
    EXPECT_EQ(twice->num_devices(), once->num_devices());
  }
}

TEST(ParseShardingText, ErrorsNameThePartAndThePositionInTheWholeText) {
  // Offset 8 of the PartitionSpec "P(x,None", 21 of the text as given.
  const absl::Status spec = ParseShardingText("  mesh{x=4}  P(x,None").status();
  EXPECT_EQ(spec.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Message(spec),
            "invalid sharding \"  mesh{x=4}  P(x,None\": in the PartitionSpec: expected ')' at "
            "position 21");
  std::optional<base::ParseLocation> at = base::GetParseLocation(spec);
  ASSERT_TRUE(at.has_value());
  EXPECT_EQ(at->offset, 21u);
  EXPECT_EQ(at->expected, "')'");

  EXPECT_THAT(Message(ParseShardingText("mesh{x:4} P(x)", "--from").status()),
              StartsWith("invalid --from \"mesh{x:4} P(x)\": in the mesh: expected '=' at "
                         "position 6"));
  EXPECT_THAT(Message(ParseShardingText(" 2x1 to [0] 2").status()),
              HasSubstr("neither 'mesh{...} P(...)' nor a ShardingParam: expected 'on' at "
                        "position 12"));
}

TEST(ParseShardingText, ErrorsWithoutAPosition) {
  EXPECT_THAT(Message(ParseShardingText("mesh{x=0} P()").status()),
              StartsWith("invalid sharding \"mesh{x=0} P()\": in the mesh: "));
  EXPECT_FALSE(base::GetParseLocation(ParseShardingText("mesh{x=0} P()").status()).has_value());
  EXPECT_THAT(Message(ParseShardingText("mesh{x=32,y=576460752303423489} P(x)").status()),
              HasSubstr("in the mesh: Mesh has more than 16777216 devices"));
  EXPECT_THAT(Message(ParseShardingText("mesh{x=2}").status()),
              HasSubstr("a PartitionSpec must follow the mesh at position 9 (expected e.g. "));
  EXPECT_THAT(Message(ParseShardingText("mesh{x=2 P(x)").status()),
              HasSubstr("the mesh has no closing '}'"));
  EXPECT_THAT(Message(ParseShardingText("").status()),
              HasSubstr("neither 'mesh{...} P(...)' nor a ShardingParam"));
}

TEST(ParseShardingText, HostileTextStaysOneShortLine) {
  const std::string huge = absl::StrCat("mesh{x=4} P(", std::string(100000, 'x'), "?)\n\x1b[2J");
  const absl::Status s = ParseShardingText(huge).status();
  const std::string message = Message(s);
  EXPECT_LT(message.size(), 200u) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos);
  EXPECT_EQ(message.find('\x1b'), std::string::npos);
  EXPECT_THAT(message, HasSubstr("in the PartitionSpec: expected ')' at position 100012"));
}

}  // namespace
}  // namespace tessera::sharding
