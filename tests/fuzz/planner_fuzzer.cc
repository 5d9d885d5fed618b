// libFuzzer target for the reshard planner: two small layouts (grids of random
// cuts plus random, possibly overlapping or duplicate boxes; replicated layouts;
// ShardingParam tilings) and random locations decoded from the bytes, then
// PlanReshard. The plan must pass the painting check of
// tests/sharding/plan_checker.h (every destination element written once, with
// the right value, consistent bookkeeping), meet the brute-force lower bound,
// and be deterministic; the only error allowed is RESOURCE_EXHAUSTED under a
// small max_copies. Anything else aborts.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "sharding/planner.h"
#include "sharding/shard_layout.h"
#include "sharding/sharding_param.h"
#include "tests/fuzz/fuzz_input.h"
#include "tests/sharding/plan_checker.h"

namespace tessera::sharding {
namespace {

using ::tessera::fuzzing::FuzzInput;

void Fail(const std::string& what) {
  std::fprintf(stderr, "planner fuzzer: %s\n", what.c_str());
  std::abort();
}

// Per dim 0-2 cuts -> a grid covering the array, then 0-3 random boxes and
// maybe a duplicate, rotated so that slot order differs from position.
std::optional<ShardLayout> BoxesLayout(FuzzInput& in, const Index& shape) {
  const int rank = static_cast<int>(shape.size());
  std::vector<std::vector<int64_t>> cuts(rank);
  for (int d = 0; d < rank; ++d) {
    cuts[d] = {0, shape[d]};
    for (int64_t k = in.Int(0, 2); k > 0; --k) cuts[d].push_back(in.Int(0, shape[d]));
    std::sort(cuts[d].begin(), cuts[d].end());
  }
  std::vector<Box> boxes = testing::GridBoxes(cuts);
  for (int64_t extra = in.Int(0, 3); extra > 0; --extra) {
    Index origin(rank), size(rank);
    for (int d = 0; d < rank; ++d) {
      const int64_t a = in.Int(0, shape[d]), b = in.Int(0, shape[d]);
      origin[d] = std::min(a, b);
      size[d] = std::max(a, b) - origin[d];
    }
    boxes.emplace_back(origin, size);
  }
  if (in.Bool()) boxes.push_back(boxes[in.Int(0, static_cast<int64_t>(boxes.size()) - 1)]);
  std::rotate(boxes.begin(), boxes.begin() + in.Int(0, static_cast<int64_t>(boxes.size()) - 1),
              boxes.end());
  absl::StatusOr<ShardLayout> layout = ShardLayout::FromBoxes(shape, boxes);
  if (!layout.ok()) Fail("FromBoxes rejected a covering set: " + layout.status().ToString());
  return *layout;
}

// 1-3 tiles per dim (at most 16 tiles), replicated 1-2 times, over one or two
// mesh axes in either order.
std::optional<ShardLayout> ParamLayout(FuzzInput& in, const Index& shape) {
  const int rank = static_cast<int>(shape.size());
  std::vector<int64_t> dim_shards(rank, 1);
  int64_t tiles = 1;
  for (int d = 0; d < rank; ++d) {
    dim_shards[d] = in.Int(1, 3);
    if (tiles * dim_shards[d] > 16) dim_shards[d] = 1;
    tiles *= dim_shards[d];
  }
  const int replicas = static_cast<int>(in.Int(1, 2));
  ShardingParam::MinorToMajor mtm;
  if (replicas > 1 && tiles > 1) {
    mtm.axis_sizes = {static_cast<int>(tiles), replicas};
    mtm.permutation = in.Bool() ? std::vector<int>{0, 1} : std::vector<int>{1, 0};
  } else {
    mtm.axis_sizes = {static_cast<int>(tiles * replicas)};
    mtm.permutation = {0};
  }
  absl::StatusOr<ShardingParam> param = ShardingParam::Create(dim_shards, mtm);
  if (!param.ok()) return std::nullopt;
  absl::StatusOr<ShardLayout> layout = ShardLayout::FromShardingParam(*param, shape);
  if (!layout.ok()) return std::nullopt;
  return *layout;
}

std::optional<ShardLayout> ReadLayout(FuzzInput& in, const Index& shape) {
  switch (in.Int(0, 2)) {
    case 0:
      return BoxesLayout(in, shape);
    case 1:
      return ShardLayout::Replicated(shape, static_cast<int>(in.Int(1, 4)));
    default:
      return ParamLayout(in, shape);
  }
}

std::vector<int64_t> ReadLocations(FuzzInput& in, int slots, int64_t pool) {
  std::vector<int64_t> locations(slots);
  for (int64_t& l : locations) l = in.Int(0, pool - 1);
  return locations;
}

void CheckOne(FuzzInput& in) {
  const int rank = static_cast<int>(in.Int(0, 4));
  Index shape(rank);
  for (int d = 0; d < rank; ++d) shape[d] = in.Int(0, rank >= 3 ? 5 : 9);
  std::optional<ShardLayout> src = ReadLayout(in, shape);
  std::optional<ShardLayout> dst = ReadLayout(in, shape);
  if (!src || !dst) return;
  const int64_t pool = in.Int(1, 8);
  const std::vector<int64_t> src_loc = ReadLocations(in, src->num_slots(), pool);
  const std::vector<int64_t> dst_loc = ReadLocations(in, dst->num_slots(), pool);
  const int64_t element_bytes = in.Int(1, 8);
  PlanOptions options;
  options.fan_out = in.Bool();
  const bool small_limit = in.Int(0, 7) == 0;
  if (small_limit) options.max_copies = in.Int(1, 16);
  absl::StatusOr<ReshardPlan> plan =
      PlanReshard(*src, src_loc, *dst, dst_loc, element_bytes, options);
  if (!plan.ok()) {
    if (small_limit && plan.status().code() == absl::StatusCode::kResourceExhausted) return;
    Fail("PlanReshard failed: " + plan.status().ToString() + " for " + src->ToString() + " -> " +
         dst->ToString());
  }
  if (static_cast<int64_t>(plan->copies.size()) > options.max_copies) {
    Fail("plan over max_copies");
  }
  ::testing::AssertionResult painted =
      testing::SimulatePlan(*plan, *src, src_loc, *dst, dst_loc, element_bytes);
  if (!painted) {
    Fail(std::string("painting check: ") + painted.message() + " for " + src->ToString() + " -> " +
         dst->ToString());
  }
  const int64_t lower = testing::BruteForceLowerBound(*src, src_loc, *dst, dst_loc, element_bytes);
  if (plan->lower_bound_bytes != lower) Fail("lower_bound_bytes differs from the brute force");
  if (options.fan_out ? plan->cross_location_bytes > lower
                      : plan->cross_location_bytes != lower || plan->forwarded_bytes != 0) {
    Fail("cross-location bytes off the lower bound");
  }
  absl::StatusOr<ReshardPlan> again =
      PlanReshard(*src, src_loc, *dst, dst_loc, element_bytes, options);
  if (!again.ok() || !(*again == *plan)) Fail("planning is not deterministic");
}

}  // namespace
}  // namespace tessera::sharding

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tessera::fuzzing::FuzzInput in(data, size);
  tessera::sharding::CheckOne(in);
  return 0;
}
