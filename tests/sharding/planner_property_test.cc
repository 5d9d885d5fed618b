// Randomised property tests of the planner over ranks 0-4, dims including 0,
// 1 and primes, meshes up to 64 slots, random permutations, replication,
// arbitrary (overlapping) boxes and locations holding several slots. Each case
// prints its seed on failure; rerun one with --gtest_filter and the seed.
#include <algorithm>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "sharding/planner.h"
#include "sharding/sharding_param.h"
#include "tests/sharding/plan_checker.h"

namespace tessera::sharding {
namespace {

using ::tessera::sharding::testing::BruteForceLowerBound;
using ::tessera::sharding::testing::SimulatePlan;

std::vector<int> PrimeFactors(int n) {
  std::vector<int> f;
  for (int p = 2; p * p <= n; ++p) {
    while (n % p == 0) {
      f.push_back(p);
      n /= p;
    }
  }
  if (n > 1) f.push_back(n);
  return f;
}

// A random valid ShardingParam for `rank` with at most 64 slots.
ShardingParam RandomParam(std::mt19937& rng, int rank) {
  auto pick = [&](int n) { return static_cast<int>(rng() % n); };
  std::vector<int64_t> dim_shards(rank, 1);
  int64_t tiles = 1;
  for (int d = 0; d < rank; ++d) {
    static constexpr int kShards[] = {1, 1, 2, 3, 4, 5};
    int64_t s = kShards[pick(6)];
    if (tiles * s > 32) s = 1;
    dim_shards[d] = s;
    tiles *= s;
  }
  static constexpr int kReplicas[] = {1, 1, 1, 2, 3};
  int64_t replicas = kReplicas[pick(5)];
  if (tiles * replicas > 64) replicas = 1;
  const int n = static_cast<int>(tiles * replicas);
  // Split the prime factors of n into 1-3 axes in random order.
  std::vector<int> factors = PrimeFactors(n);
  std::shuffle(factors.begin(), factors.end(), rng);
  const int num_axes = 1 + pick(3);
  std::vector<int> axes(num_axes, 1);
  for (int f : factors) axes[pick(num_axes)] *= f;
  std::vector<int> perm(num_axes);
  for (int i = 0; i < num_axes; ++i) perm[i] = i;
  std::shuffle(perm.begin(), perm.end(), rng);
  ShardingParam param(dim_shards, {perm, axes});
  EXPECT_TRUE(param.Verify().ok()) << param.ToString();
  return param;
}

// A random layout: from a ShardingParam, or arbitrary boxes (a random grid
// plus random extra, possibly overlapping boxes).
ShardLayout RandomLayout(std::mt19937& rng, const std::vector<int64_t>& shape,
                         std::string* description) {
  const int rank = static_cast<int>(shape.size());
  if (rng() % 3 != 0) {
    ShardingParam param = RandomParam(rng, rank);
    *description = param.ToString();
    return *ShardLayout::FromShardingParam(param, shape);
  }
  // Per dim random cuts -> a grid; then a few random boxes.
  std::vector<std::vector<int64_t>> cuts(rank);
  for (int d = 0; d < rank; ++d) {
    cuts[d] = {0, shape[d]};
    for (int k = rng() % 3; k > 0; --k) {
      cuts[d].push_back(static_cast<int64_t>(rng() % (shape[d] + 1)));
    }
    std::sort(cuts[d].begin(), cuts[d].end());
  }
  std::vector<Box> boxes = testing::GridBoxes(cuts);
  for (int extra = rng() % 4; extra > 0; --extra) {
    Index origin(rank), size(rank);
    for (int d = 0; d < rank; ++d) {
      int64_t a = rng() % (shape[d] + 1), b = rng() % (shape[d] + 1);
      origin[d] = std::min(a, b);
      size[d] = std::max(a, b) - origin[d];
    }
    boxes.emplace_back(origin, size);
  }
  std::shuffle(boxes.begin(), boxes.end(), rng);
  // Sometimes duplicate a box (a replica).
  if (rng() % 2 == 0) boxes.push_back(boxes[rng() % boxes.size()]);
  *description = absl::StrCat("FromBoxes(", boxes.size(), " boxes)");
  auto layout = ShardLayout::FromBoxes(shape, boxes);
  EXPECT_TRUE(layout.ok()) << layout.status();
  return *layout;
}

std::vector<int64_t> RandomLocations(std::mt19937& rng, int n, int pool) {
  std::vector<int64_t> locations(n);
  for (int i = 0; i < n; ++i) locations[i] = i % pool;
  std::shuffle(locations.begin(), locations.end(), rng);
  return locations;
}

TEST(PlannerPropertyTest, RandomReshards) {
  constexpr int kCases = 3000;
  int64_t total_copies = 0, total_forwards = 0, total_local = 0, total_alias = 0, non_grid = 0;
  for (int seed = 1; seed <= kCases; ++seed) {
    std::mt19937 rng(seed);
    const int rank = static_cast<int>(rng() % 5);
    static constexpr int64_t kDims[] = {0, 1, 2, 3, 4, 5, 7, 8, 11};
    std::vector<int64_t> shape(rank);
    for (int d = 0; d < rank; ++d) {
      shape[d] = kDims[rng() % (rank >= 3 ? 7 : 9)];
    }
    std::string src_desc, dst_desc;
    ShardLayout src = RandomLayout(rng, shape, &src_desc);
    ShardLayout dst = RandomLayout(rng, shape, &dst_desc);
    // Location pools: sometimes fewer locations than slots (several slots per
    // location), always overlapping between source and destination.
    const int pool = 1 + static_cast<int>(rng() % 64);
    std::vector<int64_t> src_loc = RandomLocations(rng, src.num_slots(), pool);
    std::vector<int64_t> dst_loc = RandomLocations(rng, dst.num_slots(), pool);
    const int64_t element_bytes = 1 + rng() % 8;
    SCOPED_TRACE(absl::StrCat("seed=", seed, " shape=[", absl::StrJoin(shape, ","),
                              "] src=", src_desc, " dst=", dst_desc, " pool=", pool));
    for (bool fan_out : {false, true}) {
      SCOPED_TRACE(absl::StrCat("fan_out=", fan_out));
      PlanOptions options{.fan_out = fan_out};
      auto plan = PlanReshard(src, src_loc, dst, dst_loc, element_bytes, options);
      ASSERT_TRUE(plan.ok()) << plan.status();
      ASSERT_TRUE(SimulatePlan(*plan, src, src_loc, dst, dst_loc, element_bytes));
      const int64_t lower = BruteForceLowerBound(src, src_loc, dst, dst_loc, element_bytes);
      ASSERT_EQ(plan->lower_bound_bytes, lower);
      if (fan_out) {
        ASSERT_LE(plan->cross_location_bytes, lower);
      } else {
        ASSERT_EQ(plan->cross_location_bytes, lower);
        ASSERT_EQ(plan->forwarded_bytes, 0);
      }
      // Determinism.
      auto again = PlanReshard(src, src_loc, dst, dst_loc, element_bytes, options);
      ASSERT_TRUE(again.ok());
      ASSERT_TRUE(*again == *plan);
      total_copies += static_cast<int64_t>(plan->copies.size());
      total_forwards += plan->forwarded_bytes > 0;
      total_local += plan->local_bytes > 0;
      total_alias += plan->aliased_bytes > 0;
      non_grid += src_desc[0] == 'F';
    }
  }
  // Coverage of the generator (printed for the record).
  std::printf(
      "copies=%lld plans_with_forwards=%lld with_local=%lld "
      "with_alias=%lld from_boxes_src=%lld\n",
      static_cast<long long>(total_copies), static_cast<long long>(total_forwards),
      static_cast<long long>(total_local), static_cast<long long>(total_alias),
      static_cast<long long>(non_grid));
  EXPECT_GT(total_forwards, 20);
  EXPECT_GT(total_local, 20);
  EXPECT_GT(total_alias, 5);
}

// The copies of `plan` whose source (for a forward: the destination slot it reads) or
// destination location satisfies `in`, with their totals.
ReshardPlan Filter(const ReshardPlan& plan, const std::function<bool(int64_t)>& in,
                   const std::vector<int64_t>& dst_loc) {
  ReshardPlan part;
  part.fan_out = plan.fan_out;
  for (const BoxCopy& c : plan.copies) {
    const int64_t src = c.from_destination ? dst_loc[c.src_slot] : c.src_location;
    if (!in(src) && !in(c.dst_location)) continue;
    part.copies.push_back(c);
    (c.kind == BoxCopy::Kind::kAlias   ? part.aliased_bytes
     : c.kind == BoxCopy::Kind::kLocal ? part.local_bytes
                                       : part.cross_location_bytes) += c.bytes;
    if (c.from_destination) part.forwarded_bytes += c.bytes;
  }
  return part;
}

// PlanReshardPart over 1-3 dims (ragged, some empty), ShardingParam layouts, replicated layouts
// and arbitrary (overlapping, replicated) boxes, with the locations dealt to 1-6 processes: each
// process's part is exactly the whole plan's copies touching that process, in order, with their
// totals; the parts' lower bounds add up to the plan's.
TEST(PlannerPropertyTest, ProcessPartsReuniteIntoThePlan) {
  constexpr int kCases = 1500;
  int64_t parts = 0, replica_choices = 0;
  for (int seed = 1; seed <= kCases; ++seed) {
    std::mt19937 rng(seed);
    const int rank = 1 + static_cast<int>(rng() % 3);
    static constexpr int64_t kDims[] = {0, 1, 2, 3, 5, 7, 8, 11, 13};
    std::vector<int64_t> shape(rank);
    for (int d = 0; d < rank; ++d) shape[d] = kDims[rng() % 9];
    std::string src_desc, dst_desc;
    auto layout = [&](std::string* desc) {
      if (rng() % 6 == 0) {
        const int n = 1 + static_cast<int>(rng() % 5);
        *desc = absl::StrCat("Replicated(", n, ")");
        return ShardLayout::Replicated(shape, n);
      }
      return RandomLayout(rng, shape, desc);
    };
    ShardLayout src = layout(&src_desc);
    ShardLayout dst = layout(&dst_desc);
    const int pool = 1 + static_cast<int>(rng() % 24);
    std::vector<int64_t> src_loc = RandomLocations(rng, src.num_slots(), pool);
    std::vector<int64_t> dst_loc = RandomLocations(rng, dst.num_slots(), pool);
    const int processes = 1 + static_cast<int>(rng() % 6);
    const int64_t element_bytes = 1 + rng() % 8;
    SCOPED_TRACE(absl::StrCat("seed=", seed, " shape=[", absl::StrJoin(shape, ","),
                              "] src=", src_desc, " dst=", dst_desc, " pool=", pool,
                              " processes=", processes));
    for (bool fan_out : {false, true}) {
      SCOPED_TRACE(absl::StrCat("fan_out=", fan_out));
      PlanOptions options{.fan_out = fan_out};
      auto plan = PlanReshard(src, src_loc, dst, dst_loc, element_bytes, options);
      ASSERT_TRUE(plan.ok()) << plan.status();
      int64_t lower_bound = 0;
      for (int p = 0; p < processes; ++p) {
        SCOPED_TRACE(absl::StrCat("process=", p));
        std::vector<int64_t> mine;
        for (int64_t l = p; l < pool; l += processes) mine.push_back(l);
        std::shuffle(mine.begin(), mine.end(), rng);
        auto part = PlanReshardPart(src, src_loc, dst, dst_loc, element_bytes, mine, options);
        ASSERT_TRUE(part.ok()) << part.status();
        ReshardPlan expected = Filter(
            *plan, [&](int64_t l) { return l % processes == p; }, dst_loc);
        ASSERT_EQ(part->copies.size(), expected.copies.size());
        for (size_t i = 0; i < expected.copies.size(); ++i) {
          ASSERT_TRUE(part->copies[i] == expected.copies[i]) << "copy " << i;
        }
        ASSERT_EQ(part->cross_location_bytes, expected.cross_location_bytes);
        ASSERT_EQ(part->local_bytes, expected.local_bytes);
        ASSERT_EQ(part->aliased_bytes, expected.aliased_bytes);
        ASSERT_EQ(part->forwarded_bytes, expected.forwarded_bytes);
        ASSERT_EQ(part->fan_out, fan_out);
        lower_bound += part->lower_bound_bytes;
        ++parts;
      }
      ASSERT_EQ(lower_bound, plan->lower_bound_bytes);
    }
    for (const auto& group : src.replica_groups()) {
      for (int slot : group) replica_choices += src_loc[slot] != src_loc[group[0]];
    }
  }
  std::printf("parts=%lld source replicas at another location=%lld\n",
              static_cast<long long>(parts), static_cast<long long>(replica_choices));
  EXPECT_GT(replica_choices, 100);
}

// A part of no location is empty; a part of every location is the whole plan.
TEST(PlannerPropertyTest, EmptyAndWholeParts) {
  auto rows = ShardLayout::FromShardingParam(*ShardingParam::Parse("4x1 to [0] on 4"), {9, 6});
  auto cols = ShardLayout::FromShardingParam(*ShardingParam::Parse("1x3 to [0] on 3"), {9, 6});
  ASSERT_TRUE(rows.ok() && cols.ok());
  const std::vector<int64_t> src_loc = {0, 1, 2, 3}, dst_loc = {3, 4, 5};
  auto plan = PlanReshard(*rows, src_loc, *cols, dst_loc, 4);
  ASSERT_TRUE(plan.ok());
  auto none = PlanReshardPart(*rows, src_loc, *cols, dst_loc, 4, {});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->copies.empty());
  EXPECT_EQ(none->lower_bound_bytes, 0);
  auto all = PlanReshardPart(*rows, src_loc, *cols, dst_loc, 4, {5, 4, 3, 2, 1, 0, 99});
  ASSERT_TRUE(all.ok());
  EXPECT_TRUE(*all == *plan);
  // Only location 1 (a row slot): its row sent to each of the 3 column slots.
  auto one = PlanReshardPart(*rows, src_loc, *cols, dst_loc, 4, {1});
  ASSERT_TRUE(one.ok());
  ASSERT_EQ(one->copies.size(), 3u);
  for (const BoxCopy& c : one->copies) {
    EXPECT_EQ(c.src_slot, 1);
    EXPECT_EQ(c.src_location, 1);
    EXPECT_EQ(c.bytes, 3 * 2 * 4);
  }
  EXPECT_EQ(one->cross_location_bytes, 3 * 6 * 4);
  EXPECT_EQ(one->lower_bound_bytes, 0);
  // Argument errors as PlanReshard.
  auto bad = PlanReshardPart(*rows, src_loc, *cols, {3, 4}, 4, {1});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(),
            "Destination layout has 3 slots but 2 destination locations were given");
}

}  // namespace
}  // namespace tessera::sharding
