#include "sharding/planner.h"

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sharding/mesh.h"
#include "sharding/partition_spec.h"
#include "tests/sharding/plan_checker.h"
#include "tests/testing/status_matchers.h"

namespace tessera::sharding {
namespace {

using ::tessera::sharding::testing::BruteForceLowerBound;
using ::tessera::sharding::testing::SimulatePlan;
using ::tessera::testing::StatusIs;
using ::testing::HasSubstr;

ShardLayout Named(const std::string& mesh, const std::string& spec, std::vector<int64_t> shape) {
  auto param = ToShardingParam(*Mesh::Parse(mesh), *PartitionSpec::Parse(spec),
                               static_cast<int>(shape.size()));
  EXPECT_TRUE(param.ok()) << param.status();
  auto layout = ShardLayout::FromShardingParam(*param, shape);
  EXPECT_TRUE(layout.ok()) << layout.status();
  return *layout;
}

std::vector<int64_t> Iota(int n, int64_t start = 0) {
  std::vector<int64_t> v(n);
  std::iota(v.begin(), v.end(), start);
  return v;
}

int Count(const ReshardPlan& plan, BoxCopy::Kind kind, bool forward = false) {
  int n = 0;
  for (const BoxCopy& c : plan.copies) {
    n += c.kind == kind && c.from_destination == forward;
  }
  return n;
}

// Plans, simulates, and checks the lower bound.
ReshardPlan PlanAndCheck(const ShardLayout& src, std::vector<int64_t> src_loc,
                         const ShardLayout& dst, std::vector<int64_t> dst_loc,
                         PlanOptions options = {}) {
  auto plan = PlanReshard(src, src_loc, dst, dst_loc, 4, options);
  EXPECT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(SimulatePlan(*plan, src, src_loc, dst, dst_loc, 4));
  EXPECT_EQ(plan->lower_bound_bytes, BruteForceLowerBound(src, src_loc, dst, dst_loc, 4));
  if (!options.fan_out) {
    EXPECT_EQ(plan->cross_location_bytes, plan->lower_bound_bytes);
  }
  return *plan;
}

TEST(PlannerTest, RowsToColumnsOverEightLocations) {
  ShardLayout rows = Named("mesh{x=8}", "P(x,None)", {64, 64});
  ShardLayout cols = Named("mesh{x=8}", "P(None,x)", {64, 64});
  ReshardPlan plan = PlanAndCheck(rows, Iota(8), cols, Iota(8));
  EXPECT_EQ(Count(plan, BoxCopy::Kind::kCrossLocation), 56);
  EXPECT_EQ(Count(plan, BoxCopy::Kind::kLocal), 8);
  EXPECT_EQ(plan.copies.size(), 64u);
  EXPECT_EQ(plan.cross_location_bytes, 8 * 7 * 8 * 8 * 4);
  EXPECT_EQ(plan.local_bytes, 8 * 8 * 8 * 4);
  for (const BoxCopy& c : plan.copies) {
    EXPECT_EQ(c.src_box.shape(), Index({8, 8}));
    // Source box: columns of the destination slot within the row shard.
    EXPECT_EQ(c.src_box, Box({0, 8 * c.dst_slot}, {8, 8}));
    EXPECT_EQ(c.dst_box, Box({8 * c.src_slot, 0}, {8, 8}));
  }
}

TEST(PlannerTest, SameLayoutSameLocationsAliasesEverything) {
  ShardLayout l = Named("mesh{x=2,y=2}", "P(x,y)", {6, 5});
  ReshardPlan plan = PlanAndCheck(l, Iota(4), l, Iota(4));
  EXPECT_EQ(Count(plan, BoxCopy::Kind::kAlias), 4);
  EXPECT_EQ(plan.aliased_bytes, 6 * 5 * 4);
  EXPECT_EQ(plan.cross_location_bytes, 0);
  EXPECT_EQ(plan.local_bytes, 0);
}

TEST(PlannerTest, AliasFindsTheShardAtTheSameLocation) {
  // Same boxes, locations reversed: whole-shard cross-location copies.
  ShardLayout l = Named("mesh{x=4}", "P(x)", {8});
  ReshardPlan moved = PlanAndCheck(l, {0, 1, 2, 3}, l, {3, 2, 1, 0});
  EXPECT_EQ(Count(moved, BoxCopy::Kind::kCrossLocation), 4);
  // A location holding two source slots: the destination aliases the one with
  // its box.
  ShardLayout two = Named("mesh{x=2}", "P(x)", {8});
  ReshardPlan alias = PlanAndCheck(two, {7, 7}, two, {9, 7});
  EXPECT_EQ(Count(alias, BoxCopy::Kind::kAlias), 1);
  for (const BoxCopy& c : alias.copies) {
    if (c.kind == BoxCopy::Kind::kAlias) {
      EXPECT_EQ(c.src_slot, 1);
    }
  }
  EXPECT_EQ(Count(alias, BoxCopy::Kind::kCrossLocation), 1);
}

TEST(PlannerTest, LocalCopies) {
  // 4 row tiles at locations 0..3 -> 2 row tiles at 0, 1: destination 0
  // takes rows 0-15 locally and rows 16-31 from location 1.
  ShardLayout four = Named("mesh{x=4}", "P(x,None)", {64, 4});
  ShardLayout two = Named("mesh{x=2}", "P(x,None)", {64, 4});
  ReshardPlan plan = PlanAndCheck(four, Iota(4), two, Iota(2));
  // Destination 1 (rows 32-63, location 1) gets them from locations 2 and 3.
  EXPECT_EQ(Count(plan, BoxCopy::Kind::kLocal), 1);
  EXPECT_EQ(Count(plan, BoxCopy::Kind::kCrossLocation), 3);
  EXPECT_EQ(plan.local_bytes, 16 * 4 * 4);
  // Rank 0 scalar moved across locations, then locally.
  ShardLayout scalar = ShardLayout::Replicated({}, 1);
  ReshardPlan s = PlanAndCheck(scalar, {0}, ShardLayout::Replicated({}, 2), {0, 1});
  EXPECT_EQ(Count(s, BoxCopy::Kind::kAlias), 1);
  EXPECT_EQ(Count(s, BoxCopy::Kind::kCrossLocation), 1);
}

TEST(PlannerTest, PrefersReplicaAtTheDestinationLocation) {
  ShardLayout repl = ShardLayout::Replicated({8, 8}, 4);
  ShardLayout halves = Named("mesh{x=2}", "P(x)", {8, 8});
  ReshardPlan plan = PlanAndCheck(repl, {0, 1, 2, 3}, halves, {2, 5});
  ASSERT_EQ(plan.copies.size(), 2u);
  EXPECT_EQ(plan.copies[0].kind, BoxCopy::Kind::kLocal);
  EXPECT_EQ(plan.copies[0].src_slot, 2);
  EXPECT_EQ(plan.copies[1].kind, BoxCopy::Kind::kCrossLocation);
  EXPECT_EQ(plan.copies[1].src_slot, 0);
}

TEST(PlannerTest, BalancesRemoteReplicas) {
  ShardLayout repl = ShardLayout::Replicated({8}, 2);
  ShardLayout quarters = Named("mesh{x=4}", "P(x)", {8});
  ReshardPlan plan = PlanAndCheck(repl, {0, 1}, quarters, {10, 11, 12, 13});
  ASSERT_EQ(plan.copies.size(), 4u);
  EXPECT_EQ(plan.copies[0].src_location, 0);
  EXPECT_EQ(plan.copies[1].src_location, 1);
  EXPECT_EQ(plan.copies[2].src_location, 0);
  EXPECT_EQ(plan.copies[3].src_location, 1);
}

TEST(PlannerTest, MergesCellsFromTheSameSource) {
  // Slot 1 splits slot 0's region into cells; all come from slot 0 and merge.
  auto src = ShardLayout::FromBoxes({4, 4}, {Box({0, 0}, {4, 4}), Box({1, 1}, {2, 2})});
  ASSERT_TRUE(src.ok());
  ShardLayout dst = ShardLayout::Replicated({4, 4}, 1);
  ReshardPlan plan = PlanAndCheck(*src, {0, 0}, dst, {9});
  ASSERT_EQ(plan.copies.size(), 1u);
  EXPECT_EQ(plan.copies[0].src_box, Box({0, 0}, {4, 4}));
  // With slot 1 at another location, load balancing takes the middle from it.
  ReshardPlan balanced = PlanAndCheck(*src, {0, 5}, dst, {9});
  EXPECT_EQ(Count(balanced, BoxCopy::Kind::kCrossLocation), 5);
  // Destination at location 5: the middle is local, the ring merges to few
  // boxes from location 0.
  ReshardPlan ring = PlanAndCheck(*src, {0, 5}, dst, {5});
  EXPECT_EQ(Count(ring, BoxCopy::Kind::kLocal), 1);
  EXPECT_LE(Count(ring, BoxCopy::Kind::kCrossLocation), 4);
}

TEST(PlannerTest, FanOutBroadcastTree) {
  ShardLayout one = ShardLayout::Replicated({16}, 1);
  ShardLayout seven = ShardLayout::Replicated({16}, 7);
  std::vector<int64_t> dst_loc = Iota(7, 1);
  ReshardPlan direct = PlanAndCheck(one, {0}, seven, dst_loc);
  EXPECT_EQ(Count(direct, BoxCopy::Kind::kCrossLocation), 7);
  ReshardPlan tree = PlanAndCheck(one, {0}, seven, dst_loc, {.fan_out = true});
  EXPECT_TRUE(tree.fan_out);
  EXPECT_EQ(Count(tree, BoxCopy::Kind::kCrossLocation, /*forward=*/false), 1);
  EXPECT_EQ(Count(tree, BoxCopy::Kind::kCrossLocation, /*forward=*/true), 6);
  EXPECT_EQ(tree.cross_location_bytes, direct.cross_location_bytes);
  EXPECT_EQ(tree.forwarded_bytes, 6 * 16 * 4);
  for (const BoxCopy& c : tree.copies) {
    if (c.from_destination) {
      EXPECT_EQ(c.src_slot, (c.dst_slot - 1) / 2);
    }
  }
  EXPECT_THAT(RenderPlan(tree), HasSubstr("forward location 1 -> location 2: 1 "
                                          "cross-location copy, 64 bytes"));
}

TEST(PlannerTest, FanOutCopiesLocallyWithinALocation) {
  ShardLayout one = ShardLayout::Replicated({16}, 1);
  ShardLayout four = ShardLayout::Replicated({16}, 4);
  ReshardPlan tree = PlanAndCheck(one, {0}, four, {1, 1, 2, 2}, {.fan_out = true});
  EXPECT_EQ(tree.lower_bound_bytes, 4 * 64);
  EXPECT_EQ(tree.cross_location_bytes, 2 * 64);
  EXPECT_EQ(Count(tree, BoxCopy::Kind::kLocal, /*forward=*/true), 2);
}

TEST(PlannerTest, EmptyDestinationShardsGetNoCopies) {
  ShardLayout src = Named("mesh{x=2}", "P(x)", {2});
  ShardLayout dst = Named("mesh{x=4}", "P(x)", {2});  // sizes 1,1,0,0
  ReshardPlan plan = PlanAndCheck(src, {0, 1}, dst, {0, 1, 2, 3});
  EXPECT_EQ(plan.copies.size(), 2u);
  ShardLayout zero = Named("mesh{x=2}", "P(x)", {0});
  EXPECT_EQ(PlanAndCheck(zero, {0, 1}, zero, {1, 0}).copies.size(), 0u);
}

TEST(PlannerTest, Errors) {
  ShardLayout a = Named("mesh{x=2}", "P(x)", {8});
  ShardLayout b = Named("mesh{x=2}", "P(x)", {9});
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  EXPECT_THAT(PlanReshard(a, {0, 1}, b, {0, 1}, 4),
              StatusIs(kInvalid, HasSubstr("global shapes differ: [8] vs [9]")));
  EXPECT_THAT(PlanReshard(a, {0}, a, {0, 1}, 4),
              StatusIs(kInvalid, HasSubstr("Source layout has 2 slots but 1")));
  EXPECT_THAT(PlanReshard(a, {0, 1}, a, {0, 1, 2}, 4),
              StatusIs(kInvalid, HasSubstr("Destination layout has 2 slots")));
  EXPECT_THAT(PlanReshard(a, {0, 1}, a, {0, 1}, 0),
              StatusIs(kInvalid, HasSubstr("element_bytes must be positive")));
}

TEST(PlannerTest, RenderPlan) {
  ShardLayout rows = Named("mesh{x=2}", "P(x,None)", {4, 4});
  ShardLayout cols = Named("mesh{x=2}", "P(None,x)", {4, 4});
  auto plan = PlanReshard(rows, {0, 1}, cols, {0, 1}, 4);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(RenderPlan(*plan),
            "ReshardPlan: 4 copies, fan_out=false\n"
            "  location 0 -> location 0: 1 local copy, 16 bytes\n"
            "  location 0 -> location 1: 1 cross-location copy, 16 bytes\n"
            "  location 1 -> location 0: 1 cross-location copy, 16 bytes\n"
            "  location 1 -> location 1: 1 local copy, 16 bytes\n"
            "totals: cross_location_bytes=32 local_bytes=32 aliased_bytes=0 "
            "forwarded_bytes=0 lower_bound_bytes=32\n");
}

TEST(PlannerTest, RenderPlanNamesLocations) {
  // Locations 10 and 11 (say memory ids), named by the caller; the lines stay
  // sorted by location number, not by name.
  ShardLayout rows = Named("mesh{x=2}", "P(x,None)", {4, 4});
  ShardLayout cols = Named("mesh{x=2}", "P(None,x)", {4, 4});
  auto plan = PlanReshard(rows, {11, 10}, cols, {10, 10}, 4);
  ASSERT_TRUE(plan.ok());
  std::vector<int64_t> named;
  const std::string text = RenderPlan(*plan, [&](int64_t location) {
    named.push_back(location);
    return location == 10 ? std::string("device 0 (host)") : std::string("device 1 (device)");
  });
  EXPECT_EQ(text,
            "ReshardPlan: 4 copies, fan_out=false\n"
            "  device 0 (host) -> device 0 (host): 2 local copies, 32 bytes\n"
            "  device 1 (device) -> device 0 (host): 2 cross-location copies, 32 bytes\n"
            "totals: cross_location_bytes=32 local_bytes=32 aliased_bytes=0 "
            "forwarded_bytes=0 lower_bound_bytes=32\n");
  // Called for the two ends of each line, in no particular order.
  std::sort(named.begin(), named.end());
  EXPECT_EQ(named, std::vector<int64_t>({10, 10, 10, 11}));
  EXPECT_EQ(KindName(BoxCopy::Kind::kCrossLocation), "cross-location");
  EXPECT_EQ(KindName(BoxCopy::Kind::kLocal), "local");
  EXPECT_EQ(KindName(BoxCopy::Kind::kAlias), "alias");
}

TEST(PlannerTest, TransposedMeshAtScale) {
  // P(x,y) -> P(y,x) on a 16x16 mesh: each destination tile is one source
  // tile at another location (or the same, on the diagonal).
  ShardLayout xy = Named("mesh{x=16,y=16}", "P(x,y)", {256, 256});
  ShardLayout yx = Named("mesh{x=16,y=16}", "P(y,x)", {256, 256});
  auto plan = PlanReshard(xy, Iota(256), yx, Iota(256), 4);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->copies.size(), 256u);
  EXPECT_EQ(Count(*plan, BoxCopy::Kind::kAlias), 16);
  EXPECT_EQ(plan->cross_location_bytes, plan->lower_bound_bytes);
  EXPECT_EQ(plan->cross_location_bytes, 240 * 16 * 16 * 4);
}

TEST(PlannerTest, LocationsAreOnlyCompared) {
  // The same reshard over small locations (which number themselves) and over negative and huge
  // ones (numbered by sorting): equal plans up to the location values, with fan-out and local
  // copies (locations 0-5 hold several slots).
  ShardLayout rows = Named("mesh{x=4,y=2}", "P(x,None)", {8, 6});
  ShardLayout cols = Named("mesh{x=2,y=4}", "P(None,y)", {8, 6});
  const std::vector<int64_t> src_small = {0, 1, 2, 3, 4, 5, 0, 1},
                             dst_small = {5, 4, 3, 2, 1, 0, 2, 3};
  auto far = [](int64_t l) { return l * 1'000'000'000'000 - 2'500'000'000'000; };
  std::vector<int64_t> src_far, dst_far;
  for (int64_t l : src_small) src_far.push_back(far(l));
  for (int64_t l : dst_small) dst_far.push_back(far(l));
  for (bool fan_out : {false, true}) {
    ReshardPlan small = PlanAndCheck(rows, src_small, cols, dst_small, {.fan_out = fan_out});
    ReshardPlan big = PlanAndCheck(rows, src_far, cols, dst_far, {.fan_out = fan_out});
    for (BoxCopy& c : small.copies) {
      c.src_location = far(c.src_location);
      c.dst_location = far(c.dst_location);
    }
    EXPECT_TRUE(small == big) << "fan_out=" << fan_out;
    EXPECT_GT(Count(small, BoxCopy::Kind::kLocal), 0);
  }
}

}  // namespace
}  // namespace tessera::sharding
