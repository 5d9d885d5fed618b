#include "sharding/shard_layout.h"

#include <vector>

#include "absl/hash/hash_testing.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace tessera::sharding {
namespace {

using ::tessera::testing::IsOk;
using ::tessera::testing::StatusIs;
using ::testing::HasSubstr;

constexpr auto kInvalid = absl::StatusCode::kInvalidArgument;

ShardLayout FromParam(const std::string& text, std::vector<int64_t> shape) {
  auto p = ShardingParam::Parse(text);
  EXPECT_TRUE(p.ok()) << p.status();
  auto l = ShardLayout::FromShardingParam(*p, shape);
  EXPECT_TRUE(l.ok()) << l.status();
  return *l;
}

TEST(ShardLayoutTest, RaggedCeilTiling) {
  // 5 rows over 4 tiles: ceil(5/4) = 2 -> [0,2) [2,4) [4,5) [5,5).
  ShardLayout l = FromParam("4 to [0] on 4", {5});
  EXPECT_EQ(l.slot_box(0), Box({0}, {2}));
  EXPECT_EQ(l.slot_box(1), Box({2}, {2}));
  EXPECT_EQ(l.slot_box(2), Box({4}, {1}));
  EXPECT_EQ(l.slot_box(3), Box({5}, {0}));
  EXPECT_EQ(l.shard_shape(3), Index({0}));
  EXPECT_TRUE(l.slot_box(3).is_empty());
  // 7 over 4: ceil = 2 -> sizes 2,2,2,1.
  ShardLayout l7 = FromParam("4 to [0] on 4", {7});
  EXPECT_EQ(l7.slot_box(3), Box({6}, {1}));
  // 2 over 4: sizes 1,1,0,0, the empty ones at 2.
  ShardLayout l2 = FromParam("4 to [0] on 4", {2});
  EXPECT_EQ(l2.slot_box(2), Box({2}, {0}));
  EXPECT_EQ(l2.slot_box(3), Box({2}, {0}));
  EXPECT_EQ(l2.replica_groups(), (std::vector<std::vector<int>>{{0}, {1}, {2, 3}}));
}

TEST(ShardLayoutTest, ZeroSizedArray) {
  ShardLayout l = FromParam("2x2 to [0,1] on 2x2", {0, 4});
  for (int s = 0; s < 4; ++s) EXPECT_TRUE(l.slot_box(s).is_empty());
  EXPECT_THAT(ShardLayout::FromBoxes({0, 4}, {Box({0, 0}, {0, 4})}), IsOk());
}

TEST(ShardLayoutTest, Replicated) {
  ShardLayout l = ShardLayout::Replicated({3, 4}, 3);
  EXPECT_EQ(l.num_slots(), 3);
  EXPECT_TRUE(l.IsFullyReplicated());
  EXPECT_EQ(l.replica_groups(), (std::vector<std::vector<int>>{{0, 1, 2}}));
  EXPECT_EQ(l, FromParam("1x1 to [0] on 3", {3, 4}));
  EXPECT_FALSE(FromParam("2x1 to [0] on 2", {3, 4}).IsFullyReplicated());
  EXPECT_TRUE(ShardLayout::Replicated({}, 1).IsFullyReplicated());
  EXPECT_EQ(l.ToString(),
            "ShardLayout{shape=[3,4], slots=[[0:3, 0:4], [0:3, 0:4], "
            "[0:3, 0:4]]}");
}

TEST(ShardLayoutTest, FromBoxes) {
  // Overlapping, non-grid boxes are fine as long as they cover.
  auto l = ShardLayout::FromBoxes({4, 4},
                                  {Box({0, 0}, {3, 4}), Box({2, 0}, {2, 2}), Box({1, 2}, {3, 2})});
  ASSERT_THAT(l, IsOk());
  EXPECT_EQ(l->num_slots(), 3);
  EXPECT_THAT(ShardLayout::FromBoxes({4, 4}, {Box({0, 0}, {3, 4}), Box({2, 0}, {2, 2})}),
              StatusIs(kInvalid, HasSubstr("do not cover the array of shape [4,4]")));
  EXPECT_THAT(ShardLayout::FromBoxes({4, 4}, {Box({0, 0}, {5, 4})}),
              StatusIs(kInvalid, HasSubstr("lies outside the array")));
  EXPECT_THAT(ShardLayout::FromBoxes({4, 4}, {Box({-1, 0}, {0, 4})}),
              StatusIs(kInvalid, HasSubstr("lies outside the array")));
  EXPECT_THAT(ShardLayout::FromBoxes({4, 4}, {Box({0}, {4})}),
              StatusIs(kInvalid, HasSubstr("has rank 1 but the array has rank 2")));
  EXPECT_THAT(ShardLayout::FromBoxes({4, 4}, {}),
              StatusIs(kInvalid, HasSubstr("at least one slot")));
  EXPECT_THAT(ShardLayout::FromBoxes({-4}, {Box({0}, {0})}),
              StatusIs(kInvalid, HasSubstr("negative size")));
  // Grid with a hole in the middle.
  EXPECT_THAT(ShardLayout::FromBoxes({3}, {Box({0}, {1}), Box({2}, {1})}),
              StatusIs(kInvalid, HasSubstr("do not cover")));
  // Non-grid with a hole.
  EXPECT_THAT(ShardLayout::FromBoxes(
                  {2, 2}, {Box({0, 0}, {1, 2}), Box({1, 0}, {1, 1}), Box({0, 0}, {2, 1})}),
              StatusIs(kInvalid, HasSubstr("do not cover")));
  // Ragged 1-D partition and rank 0.
  EXPECT_THAT(ShardLayout::FromBoxes({10}, {Box({0}, {3}), Box({3}, {0}), Box({3}, {7})}), IsOk());
  EXPECT_THAT(ShardLayout::FromBoxes({}, {Box(), Box()}), IsOk());
}

TEST(ShardLayoutTest, EqualityAndHash) {
  ShardLayout a = FromParam("2 to [0] on 2", {4});
  ShardLayout b = *ShardLayout::FromBoxes({4}, {Box({0}, {2}), Box({2}, {2})});
  EXPECT_EQ(a, b);
  EXPECT_NE(a, FromParam("2 to [0] on 2", {5}));
  EXPECT_TRUE(absl::VerifyTypeImplementsAbslHashCorrectly(
      {a, FromParam("2 to [0] on 2", {5}), ShardLayout::Replicated({4}, 2),
       ShardLayout::Replicated({4}, 3), FromParam("2x1 to [0] on 2", {4, 4})}));
}

}  // namespace
}  // namespace tessera::sharding
