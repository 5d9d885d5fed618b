// Overflow in sharding/: every geometry that takes sizes (Box, Mesh, ShardingParam, ShardLayout)
// rejecting values whose counts, ends or products do not fit in int64_t, with INVALID_ARGUMENT
// naming the problem.

#include <cstdint>
#include <limits>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sharding/box.h"
#include "sharding/mesh.h"
#include "sharding/partition_spec.h"
#include "sharding/shard_layout.h"
#include "sharding/sharding_param.h"

namespace tessera::sharding {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t k2Pow32 = int64_t{1} << 32;
constexpr int64_t k2Pow62 = int64_t{1} << 62;
constexpr int64_t kWrapsToTwo = 6148914691236517206;  // 3 * this = 2^64 + 2

MATCHER_P(IsInvalid, text, "") {
  return arg.code() == absl::StatusCode::kInvalidArgument &&
         arg.message().find(text) != absl::string_view::npos;
}

TEST(BoxOverflow, CreateRejectsAnEndOrCountThatOverflows) {
  EXPECT_THAT(Box::Create({kMax - 3}, {4}).status(), IsInvalid("exclusive_max"));
  EXPECT_THAT(Box::Create({kMax - 3}, {3}).status().code(), absl::StatusCode::kOk);
  EXPECT_THAT(Box::Create({0, 0}, {k2Pow62, k2Pow62}).status(), IsInvalid("overflows int64"));
  EXPECT_THAT(Box::Create({0, 0}, {3, kWrapsToTwo}).status(), IsInvalid("overflows int64"));
}

TEST(BoxOverflow, NumElementsNeverWraps) {
  EXPECT_EQ(Box({0, 0}, {k2Pow62, k2Pow62}).num_elements(), -1);
  EXPECT_EQ(Box({0}, {kMax}).num_elements(), kMax);
}

TEST(MeshOverflow, DeviceCountIsCheckedAsItIsFormed) {
  // 32 * 576460752303423489 = 2^64 + 32 wrapped to 32.
  EXPECT_THAT(Mesh::Parse("mesh{x=32,y=576460752303423489}").status(),
              IsInvalid("more than 16777216 devices"));
  EXPECT_THAT(Mesh::Create({{"x", 2}, {"y", kMax}}).status(), IsInvalid("more than int64 holds"));
  EXPECT_THAT(Mesh::Create({{"x", kMax}}).status(), IsInvalid("more than 16777216 devices"));
  absl::StatusOr<Mesh> largest = Mesh::Create({{"x", 4096}, {"y", 4096}});
  ASSERT_TRUE(largest.ok()) << largest.status();
  EXPECT_EQ(largest->num_devices(), 1 << 24);
}

TEST(ShardingParamOverflow, HugeDimShardsAreRejected) {
  EXPECT_THAT(ShardingParam::Create({k2Pow32, k2Pow32}, {{0}, {2}}).status(),
              IsInvalid("Can't shard"));
  EXPECT_THAT(ShardingParam::Parse("999999999999999999 to [0] on 2").status(),
              IsInvalid("Can't shard"));
}

TEST(ShardLayoutOverflow, FromShardingParamRejectsAnOverflowingShape) {
  absl::StatusOr<ShardingParam> rows = ShardingParam::Parse("2x1 to [0] on 2");
  ASSERT_TRUE(rows.ok());
  EXPECT_THAT(ShardLayout::FromShardingParam(*rows, {3, kWrapsToTwo}).status(),
              IsInvalid("overflows int64"));
  EXPECT_THAT(ShardLayout::FromShardingParam(*rows, {k2Pow62, k2Pow62}).status(),
              IsInvalid("overflows int64"));
}

TEST(ShardLayoutOverflow, TilesOfTheLargestDimensionDoNotWrap) {
  // ceil(n / k) used to be computed as (n + k - 1) / k, which wraps for n near 2^63.
  absl::StatusOr<ShardingParam> three = ShardingParam::Parse("3 to [0] on 3");
  ASSERT_TRUE(three.ok());
  absl::StatusOr<ShardLayout> layout = ShardLayout::FromShardingParam(*three, {kMax});
  ASSERT_TRUE(layout.ok()) << layout.status();
  const int64_t c = kMax / 3 + 1;
  EXPECT_EQ(layout->slot_box(0), Box({0}, {c}));
  EXPECT_EQ(layout->slot_box(1), Box({c}, {c}));
  EXPECT_EQ(layout->slot_box(2), Box({2 * c}, {kMax - 2 * c}));
}

TEST(ShardLayoutOverflow, FromBoxesChecksEndsWithoutOverflow) {
  // Box's unchecked constructor can hold an end past int64; FromBoxes must not add it up.
  EXPECT_THAT(ShardLayout::FromBoxes({4}, {Box({0}, {4}), Box({kMax - 1}, {4})}).status(),
              IsInvalid("lies outside the array"));
  // Its message prints the box without adding up its end.
  EXPECT_EQ(Box({kMax - 1}, {4}).ToString(), "[9223372036854775806:9223372036854775806+4]");
  EXPECT_THAT(ShardLayout::FromBoxes({k2Pow62, k2Pow62}, {Box({0, 0}, {1, 1})}).status(),
              IsInvalid("overflows int64"));
}

TEST(PartitionSpecOverflow, ShardsOfALargeMeshFitTheParam) {
  absl::StatusOr<Mesh> mesh = Mesh::Parse("mesh{x=64,y=64}");
  absl::StatusOr<PartitionSpec> spec = PartitionSpec::Parse("P((x,y))");
  ASSERT_TRUE(mesh.ok() && spec.ok());
  absl::StatusOr<ShardingParam> param = ToShardingParam(*mesh, *spec, 1);
  ASSERT_TRUE(param.ok()) << param.status();
  EXPECT_EQ(param->NumTiles(), 4096);
  absl::StatusOr<ShardLayout> layout = ShardLayout::FromShardingParam(*param, {kMax});
  ASSERT_TRUE(layout.ok()) << layout.status();
  EXPECT_EQ(layout->slot_box(4095).exclusive_max(0), kMax);
}

}  // namespace
}  // namespace tessera::sharding
