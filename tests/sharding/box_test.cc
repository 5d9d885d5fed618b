#include "sharding/box.h"

#include <vector>

#include "absl/hash/hash_testing.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace tessera::sharding {
namespace {

using ::tessera::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

TEST(BoxTest, DefaultIsRankZeroScalar) {
  Box b;
  EXPECT_EQ(b.rank(), 0);
  EXPECT_EQ(b.num_elements(), 1);
  EXPECT_FALSE(b.is_empty());
  EXPECT_EQ(b.ToString(), "[]");
}

TEST(BoxTest, Accessors) {
  Box b({1, 2}, {3, 4});
  EXPECT_EQ(b.rank(), 2);
  EXPECT_EQ(b.inclusive_min(0), 1);
  EXPECT_EQ(b.exclusive_max(0), 4);
  EXPECT_EQ(b.size(1), 4);
  EXPECT_EQ(b.exclusive_max(1), 6);
  EXPECT_EQ(b.num_elements(), 12);
  EXPECT_FALSE(b.is_empty());
  EXPECT_EQ(b.ToString(), "[1:4, 2:6]");
}

TEST(BoxTest, EmptyBox) {
  Box b({5, 0}, {0, 3});
  EXPECT_TRUE(b.is_empty());
  EXPECT_EQ(b.num_elements(), 0);
  EXPECT_EQ(b.ToString(), "[5:5, 0:3]");
}

TEST(BoxTest, CreateChecks) {
  EXPECT_THAT(Box::Create({0}, {1, 2}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("origin has rank 1 but shape has rank 2")));
  EXPECT_THAT(Box::Create({0, 0}, {1, -2}), StatusIs(absl::StatusCode::kInvalidArgument,
                                                     HasSubstr("negative size -2 in dimension 1")));
  auto ok = Box::Create({-1, 0}, {2, 0});
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, Box({-1, 0}, {2, 0}));
  ASSERT_TRUE(Box::Create({}, {}).ok());
}

TEST(BoxTest, FromShape) {
  EXPECT_EQ(Box::FromShape({3, 4}), Box({0, 0}, {3, 4}));
  EXPECT_EQ(Box::FromShape({}), Box());
}

TEST(BoxTest, EqualityAndHash) {
  EXPECT_EQ(Box({1}, {2}), Box({1}, {2}));
  EXPECT_NE(Box({1}, {2}), Box({0}, {2}));
  EXPECT_NE(Box({1}, {0}), Box({0}, {0}));  // empty boxes keep their origin
  EXPECT_NE(Box({1}, {2}), Box({1, 0}, {2, 1}));
  EXPECT_TRUE(absl::VerifyTypeImplementsAbslHashCorrectly({Box(), Box({0}, {0}), Box({1}, {2}),
                                                           Box({0, 0}, {1, 2}), Box({0, 0}, {2, 1}),
                                                           Box({1, 2, 3}, {4, 5, 6})}));
}

TEST(IntersectTest, Cases) {
  Box a({0, 0}, {4, 4});
  EXPECT_EQ(Intersect(a, Box({2, 2}, {4, 4})), Box({2, 2}, {2, 2}));
  EXPECT_EQ(Intersect(a, a), a);
  EXPECT_EQ(Intersect(a, Box({1, 1}, {1, 1})), Box({1, 1}, {1, 1}));
  // Touching: empty.
  Box touch = Intersect(a, Box({4, 0}, {2, 4}));
  EXPECT_TRUE(touch.is_empty());
  EXPECT_EQ(touch, Box({4, 0}, {0, 4}));
  // Disjoint in one dim only.
  EXPECT_TRUE(Intersect(a, Box({0, 10}, {4, 2})).is_empty());
  // Empty operand.
  EXPECT_TRUE(Intersect(a, Box({1, 1}, {0, 2})).is_empty());
  // Rank 0.
  EXPECT_EQ(Intersect(Box(), Box()), Box());
}

TEST(ContainsTest, Cases) {
  Box a({0, 0}, {4, 4});
  EXPECT_TRUE(Contains(a, a));
  EXPECT_TRUE(Contains(a, Box({1, 1}, {3, 3})));
  EXPECT_FALSE(Contains(a, Box({1, 1}, {4, 3})));
  EXPECT_FALSE(Contains(a, Box({-1, 0}, {1, 1})));
  EXPECT_FALSE(Contains(Box({1, 1}, {3, 3}), a));
  // Empty inner boxes are contained anywhere; an empty outer holds nothing.
  EXPECT_TRUE(Contains(a, Box({9, 9}, {0, 1})));
  EXPECT_FALSE(Contains(Box({0, 0}, {0, 4}), Box({0, 0}, {1, 1})));
  EXPECT_TRUE(Contains(Box(), Box()));
}

TEST(ShiftOriginTest, Cases) {
  EXPECT_EQ(ShiftOrigin(Box({4, 6}, {2, 2}), {4, 2}), Box({0, 4}, {2, 2}));
  EXPECT_EQ(ShiftOrigin(Box({0}, {3}), {2}), Box({-2}, {3}));
  EXPECT_EQ(ShiftOrigin(Box({3}, {0}), {3}), Box({0}, {0}));
  EXPECT_EQ(ShiftOrigin(Box(), {}), Box());
}

TEST(RowMajorOffsetTest, Cases) {
  EXPECT_EQ(RowMajorOffset({}, {}), 0);
  EXPECT_EQ(RowMajorOffset({5}, {3}), 3);
  EXPECT_EQ(RowMajorOffset({3, 4}, {2, 1}), 9);
  EXPECT_EQ(RowMajorOffset({2, 3, 4}, {1, 2, 3}), 23);
  EXPECT_EQ(RowMajorOffset({2, 3}, {2, 0}), 6);  // one past the end
}

std::vector<std::pair<int64_t, int64_t>> Runs(std::vector<int64_t> shape, const Box& box) {
  std::vector<std::pair<int64_t, int64_t>> runs;
  ForEachContiguousRun(shape, box, [&](int64_t o, int64_t n) { runs.push_back({o, n}); });
  return runs;
}

TEST(ForEachContiguousRunTest, Cases) {
  EXPECT_THAT(Runs({}, Box()), ElementsAre(Pair(0, 1)));
  EXPECT_THAT(Runs({4, 4}, Box({0, 0}, {4, 4})), ElementsAre(Pair(0, 16)));
  EXPECT_THAT(Runs({4, 4}, Box({1, 0}, {2, 4})), ElementsAre(Pair(4, 8)));
  EXPECT_THAT(Runs({4, 4}, Box({1, 1}, {2, 2})), ElementsAre(Pair(5, 2), Pair(9, 2)));
  EXPECT_THAT(Runs({4, 4}, Box({1, 1}, {0, 2})), ElementsAre());
  EXPECT_THAT(Runs({0, 4}, Box({0, 0}, {0, 4})), ElementsAre());
  EXPECT_THAT(Runs({6}, Box({2}, {3})), ElementsAre(Pair(2, 3)));
  // Full trailing dims merge into the partial dim before them.
  EXPECT_THAT(Runs({3, 2, 2}, Box({0, 1, 0}, {2, 1, 2})), ElementsAre(Pair(2, 2), Pair(6, 2)));
  EXPECT_THAT(Runs({2, 3, 2}, Box({1, 1, 0}, {1, 2, 2})), ElementsAre(Pair(8, 4)));
  // A partial inner dim stops merging even if outer dims are full.
  EXPECT_THAT(Runs({2, 3}, Box({0, 0}, {2, 2})), ElementsAre(Pair(0, 2), Pair(3, 2)));
}

TEST(ForEachContiguousRunTest, MatchesBruteForce) {
  const std::vector<int64_t> shape = {3, 4, 5};
  for (int64_t a0 = 0; a0 <= 3; ++a0)
    for (int64_t s0 = 0; a0 + s0 <= 3; ++s0)
      for (int64_t a1 = 0; a1 <= 4; a1 += 2)
        for (int64_t s1 = 0; a1 + s1 <= 4; ++s1)
          for (int64_t a2 = 0; a2 <= 5; a2 += 1)
            for (int64_t s2 = 0; a2 + s2 <= 5; s2 += 2) {
              Box box({a0, a1, a2}, {s0, s1, s2});
              std::vector<int64_t> expected, got;
              for (int64_t i = a0; i < a0 + s0; ++i)
                for (int64_t j = a1; j < a1 + s1; ++j)
                  for (int64_t k = a2; k < a2 + s2; ++k)
                    expected.push_back(RowMajorOffset(shape, {i, j, k}));
              int64_t last_end = -1;
              bool maximal = true;
              ForEachContiguousRun(shape, box, [&](int64_t o, int64_t n) {
                if (o == last_end) maximal = false;
                last_end = o + n;
                for (int64_t e = 0; e < n; ++e) got.push_back(o + e);
              });
              EXPECT_EQ(got, expected) << box.ToString();
              EXPECT_TRUE(maximal) << box.ToString();
            }
}

}  // namespace
}  // namespace tessera::sharding
