#include "sharding/sharding_param.h"

#include <string>
#include <vector>

#include "absl/hash/hash_testing.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sharding/shard_layout.h"
#include "tests/testing/status_matchers.h"

namespace tessera::sharding {
namespace {

using ::tessera::testing::IsOk;
using ::tessera::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

ShardingParam MustParse(const std::string& text) {
  auto p = ShardingParam::Parse(text);
  EXPECT_TRUE(p.ok()) << text << ": " << p.status();
  return *p;
}

TEST(ShardingParamTest, IfrtExampleDeviceOrder) {
  // "2x1x3 to [1,0] on 3x2": tiles 0..5 (row-major) go to devices 0,3,1,4,2,5.
  ShardingParam p = MustParse("2x1x3 to [1,0] on 3x2");
  EXPECT_THAT(p.Verify(), IsOk());
  EXPECT_EQ(p.NumDevices(), 6);
  EXPECT_EQ(p.NumTiles(), 6);
  EXPECT_EQ(p.replication(), 1);
  EXPECT_THAT(p.LogicalDeviceOrder(), ElementsAre(0, 3, 1, 4, 2, 5));
  std::vector<Index> tiles = p.DeviceTileIndices();
  const std::vector<int> devices = {0, 3, 1, 4, 2, 5};
  for (int t = 0; t < 6; ++t) {
    EXPECT_EQ(tiles[devices[t]], Index({t / 3, 0, t % 3})) << "tile " << t;
  }
}

TEST(ShardingParamTest, IfrtExampleReplication) {
  // "2x1 to [0,1] on 2x3": half 0 on devices 0,1,2 and half 1 on 3,4,5.
  ShardingParam p = MustParse("2x1 to [0,1] on 2x3");
  EXPECT_EQ(p.replication(), 3);
  std::vector<Index> tiles = p.DeviceTileIndices();
  for (int d = 0; d < 6; ++d) {
    EXPECT_EQ(tiles[d], Index({d / 3, 0})) << "device " << d;
  }
  auto layout = ShardLayout::FromShardingParam(p, {6, 4});
  ASSERT_TRUE(layout.ok());
  EXPECT_EQ(layout->replica_groups(), (std::vector<std::vector<int>>{{0, 1, 2}, {3, 4, 5}}));
}

TEST(ShardingParamTest, IfrtExampleTileOrigins) {
  ShardingParam p = MustParse("2x3 to [1,0] on 3x2");
  auto layout = ShardLayout::FromShardingParam(p, {6, 6});
  ASSERT_TRUE(layout.ok());
  const std::vector<Index> origins = {{0, 0}, {0, 4}, {3, 2}, {0, 2}, {3, 0}, {3, 4}};
  for (int d = 0; d < 6; ++d) {
    EXPECT_EQ(layout->slot_box(d), Box(origins[d], {3, 2})) << "device " << d;
  }
}

TEST(ShardingParamTest, IfrtVerifierExamples) {
  // From IFRT's verifier tests.
  EXPECT_THAT(ShardingParam::Parse("4x1 to [1,0,2] on 2x2x3"), IsOk());
  EXPECT_THAT(ShardingParam::Parse("2x2 to [0] on 2"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Can't shard the dims 2x2 to the mesh of [0] "
                                 "on 2")));
  EXPECT_THAT(ShardingParam::Parse("1x2 to [0] on 3"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("Can't shard the dims 1x2")));
}

TEST(ShardingParamTest, RoundTrips) {
  for (const std::string text :
       {"2x1x3 to [1,0] on 3x2", "2x1 to [0,1] on 2x3", "1 to [0] on 1", "{} to [0] on 2",
        "{} to [1,0] on 2x2", "8x8 to [1,0] on 8x8", "4x1 to [1,0,2] on 2x2x3"}) {
    ShardingParam p = MustParse(text);
    EXPECT_EQ(p.ToString(), text);
    EXPECT_EQ(MustParse(p.ToString()), p);
  }
  // Spaces are tolerated and normalised.
  EXPECT_EQ(MustParse("  2 x 3  to [ 1 , 0 ] on 3 x 2 ").ToString(), "2x3 to [1,0] on 3x2");
}

TEST(ShardingParamTest, RankZero) {
  ShardingParam p = MustParse("{} to [0] on 2");
  EXPECT_TRUE(p.dim_shards().empty());
  EXPECT_EQ(p.NumDevices(), 2);
  EXPECT_EQ(p.replication(), 2);
  EXPECT_THAT(p.VerifyForShape({}), IsOk());
  auto layout = ShardLayout::FromShardingParam(p, {});
  ASSERT_TRUE(layout.ok());
  EXPECT_TRUE(layout->IsFullyReplicated());
  EXPECT_EQ(layout->num_slots(), 2);
}

TEST(ShardingParamTest, BadInputs) {
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  // Syntax.
  EXPECT_THAT(ShardingParam::Parse(""), StatusIs(kInvalid, HasSubstr("expected dim_shards")));
  EXPECT_THAT(ShardingParam::Parse("2x to [0] on 2"),
              StatusIs(kInvalid, HasSubstr("expected dim_shards")));
  EXPECT_THAT(ShardingParam::Parse("2 [0] on 2"),
              StatusIs(kInvalid, HasSubstr("expected 'to' at offset 2")));
  EXPECT_THAT(ShardingParam::Parse("2 to [0 on 2"), StatusIs(kInvalid, HasSubstr("expected ']'")));
  EXPECT_THAT(ShardingParam::Parse("2 to [0] on 2 extra"),
              StatusIs(kInvalid, HasSubstr("expected end of input")));
  EXPECT_THAT(ShardingParam::Parse("2 to [0] on 99999999999"),
              StatusIs(kInvalid, HasSubstr("fit in int")));
  // Permutation and axis sizes disagree in length / are empty.
  EXPECT_THAT(ShardingParam::Parse("1x1 to [0,1] on 2"),
              StatusIs(kInvalid, HasSubstr("Expect same non-zero size for "
                                           "`permutation` and `axis_sizes`. "
                                           "Actual 2 vs 1")));
  EXPECT_THAT(ShardingParam::Parse("{} to [] on 2"),
              StatusIs(kInvalid, HasSubstr("Actual 0 vs 1")));
  // Not a permutation.
  EXPECT_THAT(ShardingParam::Parse("2 to [0,0] on 2x1"),
              StatusIs(kInvalid, HasSubstr("has duplicate values")));
  EXPECT_THAT(ShardingParam::Parse("2 to [0,2] on 2x1"),
              StatusIs(kInvalid, HasSubstr("Out of range axis 2")));
  EXPECT_THAT(ShardingParam::Parse("2 to [-1,0] on 2x1"),
              StatusIs(kInvalid, HasSubstr("Out of range axis -1")));
  // Negative or zero sizes.
  EXPECT_THAT(ShardingParam::Parse("-2 to [0] on 2"),
              StatusIs(kInvalid, HasSubstr("dim_shards must be positive")));
  EXPECT_THAT(ShardingParam::Parse("0 to [0] on 2"),
              StatusIs(kInvalid, HasSubstr("dim_shards must be positive")));
  EXPECT_THAT(ShardingParam::Parse("1 to [0] on -2"),
              StatusIs(kInvalid, HasSubstr("axis_sizes must be positive")));
  EXPECT_THAT(ShardingParam::Parse("1 to [0,1] on 4096x8192"),
              StatusIs(kInvalid, HasSubstr("Too many devices")));
  // dim_shards not fitting the axes.
  EXPECT_THAT(ShardingParam::Parse("3 to [0] on 2"),
              StatusIs(kInvalid, HasSubstr("Can't shard the dims 3")));
  // Rank mismatch with a shape.
  ShardingParam p = MustParse("2x1 to [0] on 2");
  EXPECT_THAT(p.VerifyForShape({4}), StatusIs(kInvalid, HasSubstr("Array rank is 1 vs dim shards "
                                                                  "rank of 2")));
  EXPECT_THAT(p.VerifyForShape({4, -1}), StatusIs(kInvalid, HasSubstr("negative size -1")));
  EXPECT_THAT(ShardLayout::FromShardingParam(p, {4, 4, 4}),
              StatusIs(kInvalid, HasSubstr("same rank as the array")));
  // Device count mismatch.
  EXPECT_THAT(p.VerifyDeviceCount(3), StatusIs(kInvalid, HasSubstr("Requires the same amount of "
                                                                   "`devices` and from `sharding`. "
                                                                   "Actual: 3 vs 2")));
  EXPECT_THAT(p.VerifyDeviceCount(2), IsOk());
  // Unchecked constructor + Verify.
  ShardingParam bad({2}, {{0}, {3}});
  EXPECT_THAT(bad.Verify(), StatusIs(kInvalid, HasSubstr("Can't shard")));
  EXPECT_THAT(ShardingParam::Create({2}, {{0}, {3}}), StatusIs(kInvalid, HasSubstr("Can't shard")));
}

TEST(ShardingParamTest, EqualityAndHash) {
  EXPECT_EQ(MustParse("2x1 to [0,1] on 2x3"), MustParse("2x1 to [0,1] on 2x3"));
  EXPECT_NE(MustParse("2x1 to [0,1] on 2x3"), MustParse("2x1 to [1,0] on 2x3"));
  EXPECT_TRUE(absl::VerifyTypeImplementsAbslHashCorrectly(
      {MustParse("2x1 to [0,1] on 2x3"), MustParse("2x1 to [1,0] on 2x3"),
       MustParse("1x2 to [0,1] on 2x3"), MustParse("{} to [0] on 2"), MustParse("2 to [0] on 2")}));
}

}  // namespace
}  // namespace tessera::sharding
