// base/checked_math.h at every boundary: products and sums that fit, that wrap (to 0, to a small
// positive number, past the minimum), the zero-dimension rule, and ceil-division without n + k.

#include "base/checked_math.h"

#include <cstdint>
#include <limits>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tessera::base {
namespace {

using ::testing::Optional;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t k2Pow32 = int64_t{1} << 32;
constexpr int64_t k2Pow62 = int64_t{1} << 62;
constexpr int64_t kWrapsToTwo = 6148914691236517206;  // 3 * this = 2^64 + 2

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

// The helpers are constexpr: a size known at compile time is checked at compile time.
static_assert(CheckedMul(3, 4) == 12);
static_assert(!CheckedAdd(kMax, 1).has_value());
static_assert(CeilDiv(7, 2) == 4);

}  // namespace
}  // namespace tessera::base
