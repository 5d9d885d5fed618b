// Overflow in sharding/: the checked arithmetic of checked_math.h at every boundary, and every
// geometry that takes sizes (Box, Mesh, ShardingParam, ShardLayout) rejecting values whose
// counts, ends or products do not fit in int64_t, with INVALID_ARGUMENT naming the problem.

#include <cstdint>
#include <limits>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sharding/box.h"
#include "sharding/checked_math.h"
#include "sharding/mesh.h"
#include "sharding/partition_spec.h"
#include "sharding/shard_layout.h"
#include "sharding/sharding_param.h"

namespace tessera::sharding {
namespace {

using ::testing::HasSubstr;
using ::testing::Optional;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t k2Pow32 = int64_t{1} << 32;
constexpr int64_t k2Pow62 = int64_t{1} << 62;
constexpr int64_t kWrapsToTwo = 6148914691236517206;  // 3 * this = 2^64 + 2

MATCHER_P(IsInvalid, text, "") {
  return arg.code() == absl::StatusCode::kInvalidArgument &&
         arg.message().find(text) != absl::string_view::npos;
}

TEST(CheckedMath, MulAndAddAtTheBoundaries) {
  EXPECT_THAT(CheckedMul(k2Pow32, k2Pow32 / 2 - 1), Optional(k2Pow32 * (k2Pow32 / 2 - 1)));
  EXPECT_EQ(CheckedMul(k2Pow32, k2Pow32), std::nullopt);
  EXPECT_THAT(CheckedMul(kMax, 1), Optional(kMax));
  EXPECT_EQ(CheckedMul(kMax, 2), std::nullopt);
  EXPECT_EQ(CheckedMul(kMin, -1), std::nullopt);
  EXPECT_THAT(CheckedMul(0, kMax), Optional(0));
  EXPECT_THAT(CheckedAdd(kMax - 1, 1), Optional(kMax));
  EXPECT_EQ(CheckedAdd(kMax, 1), std::nullopt);
  EXPECT_EQ(CheckedAdd(kMin, -1), std::nullopt);
  EXPECT_THAT(CheckedAdd(kMax, kMin), Optional(-1));
}

TEST(CheckedMath, ProductCountsTheNonZeroDims) {
  EXPECT_THAT(CheckedProduct({}), Optional(1));
  EXPECT_THAT(CheckedProduct({2, 3, 4}), Optional(24));
  EXPECT_THAT(CheckedProduct({5, 0}), Optional(0));
  EXPECT_THAT(CheckedProduct({kMax}), Optional(kMax));
  EXPECT_EQ(CheckedProduct({3, kWrapsToTwo}), std::nullopt);       // wraps to 2
  EXPECT_EQ(CheckedProduct({k2Pow62, k2Pow62}), std::nullopt);     // wraps to 0
  EXPECT_EQ(CheckedProduct({0, k2Pow62, k2Pow62}), std::nullopt);  // empty, but strides overflow
  EXPECT_THAT(CheckedProduct({0, k2Pow62, 1}), Optional(0));
  EXPECT_THAT(CheckedByteCount({int64_t{1} << 60}, 4), Optional(int64_t{1} << 62));
  EXPECT_EQ(CheckedByteCount({int64_t{1} << 61}, 4), std::nullopt);
  EXPECT_EQ(CheckedByteCount({0, int64_t{1} << 61}, 4), std::nullopt);
  EXPECT_THAT(CheckedByteCount({}, 8), Optional(8));
}

TEST(CheckedMath, CeilDivNeverFormsNPlusK) {
  EXPECT_EQ(CeilDiv(0, 3), 0);
  EXPECT_EQ(CeilDiv(5, 2), 3);
  EXPECT_EQ(CeilDiv(6, 2), 3);
  EXPECT_EQ(CeilDiv(kMax, 2), kMax / 2 + 1);
  EXPECT_EQ(CeilDiv(kMax, kMax), 1);
  EXPECT_EQ(CeilDiv(kMax - 1, kMax), 1);
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
