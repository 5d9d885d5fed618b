// The planner on irregular, overlapping source boxes at ranks 6-8: the plan stays small (the
// cells of a destination box are bounded by (2*rank + 1)^k for k overlapping source boxes, not by
// the grid of all their boundaries, 7^rank here), every plan passes the painting check, and plans
// over the bound fail with RESOURCE_EXHAUSTED instead of exhausting memory.
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sharding/planner.h"
#include "sharding/shard_layout.h"
#include "tests/sharding/plan_checker.h"
#include "tests/testing/status_matchers.h"

namespace tessera::sharding {
namespace {

using ::tessera::sharding::testing::BruteForceLowerBound;
using ::tessera::sharding::testing::SimulatePlan;
using ::tessera::testing::StatusIs;
using ::testing::HasSubstr;

constexpr int64_t kDim = 7;  // room for 6 distinct interior boundaries per dim

// (2*rank + 1)^k: the bound on the cells of one destination box overlapped by k source boxes.
int64_t CellBound(int rank, int k) {
  int64_t bound = 1;
  for (int i = 0; i < k; ++i) bound *= 2 * rank + 1;
  return bound;
}

// The whole array [0, 7)^rank plus three irregular interior boxes whose boundaries differ in
// every dim (1..6 in some order), so the grid of all boundaries has 7^rank cells.
std::vector<Box> OverlappingBoxes(int rank) {
  static constexpr int64_t kIntervals[3][2] = {{1, 4}, {2, 5}, {3, 6}};
  std::vector<Box> boxes = {Box::FromShape(Index(rank, kDim))};
  for (int b = 0; b < 3; ++b) {
    Index origin(rank), shape(rank);
    for (int d = 0; d < rank; ++d) {
      const auto& iv = kIntervals[(b + d) % 3];
      origin[d] = iv[0];
      shape[d] = iv[1] - iv[0] + (d % 2);  // irregular: odd dims one longer
      if (origin[d] + shape[d] > kDim) shape[d] = kDim - origin[d];
    }
    boxes.emplace_back(origin, shape);
  }
  return boxes;
}

// Two halves along dim 0 that overlap in [3, 4), plus the three interior boxes: no source box is
// the whole array.
std::vector<Box> OverlappingHalves(int rank) {
  std::vector<Box> boxes = OverlappingBoxes(rank);
  Index shape(rank, kDim);
  shape[0] = 4;
  boxes[0] = Box(Index(rank, 0), shape);
  Index origin(rank, 0);
  origin[0] = 3;
  boxes.emplace_back(origin, shape);
  return boxes;
}

struct Case {
  std::string name;
  ShardLayout src;
  std::vector<int64_t> src_loc;
  ShardLayout dst;
  std::vector<int64_t> dst_loc;
};

std::vector<Case> Cases(int rank) {
  const Index shape(rank, kDim);
  ShardLayout overlapping = *ShardLayout::FromBoxes(shape, OverlappingBoxes(rank));
  ShardLayout halves = *ShardLayout::FromBoxes(shape, OverlappingHalves(rank));
  ShardLayout host = ShardLayout::Replicated(shape, 1);
  std::vector<Case> cases;
  // CopyToHostBuffer: the whole array to one slot at a location holding no source.
  cases.push_back({"to_host", overlapping, {0, 1, 2, 3}, host, {9}});
  cases.push_back({"halves_to_host", halves, {0, 1, 2, 3, 4}, host, {9}});
  // Overlapping -> overlapping at permuted locations: local pieces and remote ones.
  cases.push_back({"halves_to_overlapping", halves, {0, 1, 2, 3, 4}, overlapping, {3, 2, 1, 0}});
  // The reverse, and a replicated source (every cell has 4 remote holders).
  cases.push_back({"overlapping_to_halves", overlapping, {0, 1, 2, 3}, halves, {4, 3, 2, 1, 0}});
  cases.push_back({"replicated_to_overlapping",
                   ShardLayout::Replicated(shape, 4),
                   {5, 6, 7, 8},
                   overlapping,
                   {0, 1, 2, 3}});
  return cases;
}

class PlannerOverlapTest : public ::testing::TestWithParam<int> {};

TEST_P(PlannerOverlapTest, CopiesStayPolynomialAndPaintCorrectly) {
  const int rank = GetParam();
  for (const Case& c : Cases(rank)) {
    for (bool fan_out : {false, true}) {
      SCOPED_TRACE(absl::StrCat(c.name, " rank=", rank, " fan_out=", fan_out));
      auto plan = PlanReshard(c.src, c.src_loc, c.dst, c.dst_loc, 4, {.fan_out = fan_out});
      ASSERT_TRUE(plan.ok()) << plan.status();
      // Stated bound: per destination slot, (2*rank + 1)^k copies with k = the number of source
      // boxes overlapping it (5 at most here), and far below the 7^rank grid.
      const int64_t bound =
          c.dst.num_slots() * CellBound(rank, static_cast<int>(c.src.replica_groups().size()));
      std::printf("%s rank=%d fan_out=%d: %zu copies (bound %lld)\n", c.name.c_str(), rank, fan_out,
                  plan->copies.size(), static_cast<long long>(bound));
      EXPECT_LE(static_cast<int64_t>(plan->copies.size()), bound);
      EXPECT_TRUE(SimulatePlan(*plan, c.src, c.src_loc, c.dst, c.dst_loc, 4));
      if (rank <= 6) {  // the brute force visits every element of every destination slot
        EXPECT_EQ(plan->lower_bound_bytes,
                  BruteForceLowerBound(c.src, c.src_loc, c.dst, c.dst_loc, 4));
      }
      if (!fan_out) {
        EXPECT_EQ(plan->cross_location_bytes, plan->lower_bound_bytes);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, PlannerOverlapTest, ::testing::Values(6, 7, 8),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return absl::StrCat("Rank", info.param);
                         });

TEST(PlannerOverlapTest, ToHostCopiesGrowAsRankCubed) {
  // The readback of the 4-box layout, as CopyToHostBuffer plans it. The 7^rank grid of all
  // boundaries (117649 cells at rank 6, 5764801 at rank 8) is never built; the plan has at most
  // rank^3 copies (146, 214, 306 at ranks 6, 7, 8; 557 at rank 10).
  for (int rank : {6, 7, 8, 10}) {
    const Index shape(rank, kDim);
    ShardLayout src = *ShardLayout::FromBoxes(shape, OverlappingBoxes(rank));
    std::vector<int64_t> src_loc = {0, 1, 2, 3}, dst_loc = {9};
    auto plan = PlanReshard(src, src_loc, ShardLayout::Replicated(shape, 1), dst_loc, 4);
    ASSERT_TRUE(plan.ok()) << plan.status();
    EXPECT_LE(static_cast<int64_t>(plan->copies.size()), rank * rank * rank) << rank;
    EXPECT_EQ(plan->cross_location_bytes, Box::FromShape(shape).num_elements() * 4);
  }
}

TEST(PlannerOverlapTest, MaxCopiesIsResourceExhausted) {
  const int rank = 6;
  const Index shape(rank, kDim);
  ShardLayout src = *ShardLayout::FromBoxes(shape, OverlappingHalves(rank));
  ShardLayout dst = ShardLayout::Replicated(shape, 1);
  std::vector<int64_t> src_loc = {0, 1, 2, 3, 4}, dst_loc = {9};
  auto plan = PlanReshard(src, src_loc, dst, dst_loc, 4);
  ASSERT_TRUE(plan.ok()) << plan.status();
  // Cells of one destination box over the bound.
  EXPECT_THAT(PlanReshard(src, src_loc, dst, dst_loc, 4, {.max_copies = 4}),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       AllOf(HasSubstr("Reshard plan too large"), HasSubstr("more than 4 pieces"),
                             HasSubstr("5 overlapping source shards"))));
  // Pieces of many destination slots over the bound (each slot alone fits).
  ShardLayout replicated = ShardLayout::Replicated(shape, 8);
  std::vector<int64_t> replicated_loc = {10, 11, 12, 13, 14, 15, 16, 17};
  // The fewest max_copies one slot plans with: its number of cells.
  int64_t lo = 1, hi = static_cast<int64_t>(CellBound(rank, 5));
  while (lo < hi) {
    const int64_t mid = (lo + hi) / 2;
    if (PlanReshard(src, src_loc, dst, dst_loc, 4, {.max_copies = mid}).ok()) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  const int64_t per_slot_limit = lo;
  ASSERT_GE(per_slot_limit, static_cast<int64_t>(plan->copies.size()));
  auto many =
      PlanReshard(src, src_loc, replicated, replicated_loc, 4, {.max_copies = per_slot_limit});
  EXPECT_THAT(many, StatusIs(absl::StatusCode::kResourceExhausted,
                             HasSubstr(absl::StrCat("more than ", per_slot_limit, " copies"))));
  EXPECT_THAT(PlanReshard(src, src_loc, dst, dst_loc, 4, {.max_copies = 0}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("max_copies")));
}

TEST(PlannerOverlapTest, DefaultBoundIsTwoToThe24) { EXPECT_EQ(kMaxPlanCopies, 1 << 24); }

}  // namespace
}  // namespace tessera::sharding
