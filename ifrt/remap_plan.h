#ifndef TESSERA_IFRT_REMAP_PLAN_H_
#define TESSERA_IFRT_REMAP_PLAN_H_

// RemapPlan: moves whole shards between arrays without copying (IFRT's RemapArrays).
//
// Each mapping takes shards of input array `in_array` and places them in output array `out_array`:
// for each pair of intervals (from[k], to[k]), shard from[k].start + j*from[k].step goes to
// position to[k].start + j*to[k].step of the output, for as long as both intervals last (they must
// have the same number of elements). Every output shard must be written exactly once, by a shard
// on the same device the output's sharding names for that position; every input shard may be used
// at most once (as in IFRT: one input shard never becomes two output shards).
//
//   // Interleave two 2-shard arrays (a on devices 0,1; b on devices 2,3) into one 4-shard array
//   // whose sharding lists devices 0,2,1,3:
//   RemapPlan plan;
//   plan.input_specs = {a_spec, b_spec};
//   plan.output_specs = {interleaved_spec};
//   plan.mappings = {{0, 0, {{0, 2, 1}}, {{0, 4, 2}}}, {1, 0, {{0, 2, 1}}, {{1, 4, 2}}}};
//   std::vector<ArrayRef> inputs = {a, b};
//   absl::StatusOr<std::vector<ArrayRef>> out =
//       client->RemapArrays(plan, absl::MakeSpan(inputs), ArrayCopySemantics::kDonateInput);
//
// A plain value type (its specs share their immutable shardings); thread-compatible.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "ifrt/array_spec.h"

namespace tessera {

struct RemapPlan {
  // [start, end) with a positive step.
  struct Interval {
    int start = 0;
    int end = 0;
    int step = 1;
    // The number of shards; 0 when end <= start. Precondition: step > 0.
    int size() const {
      return end <= start ? 0 : static_cast<int>(1 + (int64_t{end} - start - 1) / step);
    }
    std::string DebugString() const;
  };
  struct Mapping {
    int in_array = 0;
    int out_array = 0;
    std::vector<Interval> from;
    std::vector<Interval> to;
  };

  std::vector<ArraySpec> input_specs;
  std::vector<ArraySpec> output_specs;
  std::vector<Mapping> mappings;

  // Checks the plan on its own: dtypes agree between the arrays a mapping connects, intervals fit,
  // each output shard is written exactly once, by a shard of the same shape on the same device,
  // and no input shard is used twice (in one output or in two). INVALID_ARGUMENT naming the first
  // problem (e.g. "RemapPlan: shard 1 of input 0 is used more than once"); a sharding's own
  // Layout error as is (UNIMPLEMENTED for an OpaqueSharding, which has no shard shapes).
  absl::Status Validate() const;
  std::string DebugString() const;
};

}  // namespace tessera

#endif  // TESSERA_IFRT_REMAP_PLAN_H_
