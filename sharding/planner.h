// sharding/planner.h: plans the box copies that turn an array laid out as `src` into the same array
// laid out as `dst`. Slots sit at memory *locations*: integers the caller chooses (the runtime
// passes memory ids); slots at one location can copy between each other locally.
//
//   auto plan = PlanReshard(src_layout, {0, 1, 2, 3}, dst_layout, {3, 2, 1, 0},
//                           /*element_bytes=*/4);
//   std::cout << RenderPlan(*plan);
//
// Rules, in order of precedence, for each destination slot:
//  1. Alias: a source slot at the same location holding exactly the same
//     global box is shared whole (one kAlias copy, no bytes move).
//  2. Local: every element some source slot at the same location holds is
//     copied locally (kLocal); the first such source replica is used.
//  3. Remote: every other element comes from a source slot at another
//     location (kCrossLocation); among the replicas holding it, the one whose
//     location has sent the fewest bytes so far (ties: lowest slot),
//     processing destination slots in ascending order.
// Copies between the same endpoints whose boxes abut are merged. Each destination element is
// written exactly once; empty destination shards get no copies. Without fan_out,
// cross_location_bytes == lower_bound_bytes.
//
// With fan_out, a region several destination slots need remotely is fetched once from a source to
// the first of them, then forwarded through a binary tree over the distinct locations that need it
// (receiver i reads from receiver (i-1)/2), and copied locally to further slots at a receiver's
// location; these copies have from_destination set.
//
// Cost: each destination box is cut into cells that every source box overlapping it either contains
// or misses, refining by one source box at a time and only along the dims it cuts: with k such
// source boxes, at most min(prod_d (distinct boundaries in dim d + 1), (2*rank + 1)^k) cells, and
// exactly one cell per source box when the sources tile it as a grid (every ShardingParam layout;
// those cells are then built directly, in time linear in the source boxes meeting it). Each
// destination slot gets at most one copy per cell before copies are merged.
//
// Planning is deterministic: equal inputs give equal plans.
#ifndef TESSERA_SHARDING_PLANNER_H_
#define TESSERA_SHARDING_PLANNER_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "sharding/reshard_plan.h"
#include "sharding/shard_layout.h"

namespace tessera::sharding {

// The default bound on the copies of one plan (counted before merging).
inline constexpr int64_t kMaxPlanCopies = int64_t{1} << 24;

struct PlanOptions {
  bool fan_out = false;
  // Beyond this many copies (or cells of one destination box) PlanReshard fails with
  // RESOURCE_EXHAUSTED instead of building the plan.
  int64_t max_copies = kMaxPlanCopies;
};

// Thread-safe (pure function; borrows its arguments for the call only). `src_locations[i]` is the
// location of source slot i, likewise for dst; the same location may appear in both lists and
// several times in one list. INVALID_ARGUMENT when the global shapes differ, a location list's
// length is not its layout's num_slots(), element_bytes <= 0 or options.max_copies <= 0.
// RESOURCE_EXHAUSTED when the plan would exceed options.max_copies copies, or memory runs out while
// planning (nothing throws).
absl::StatusOr<ReshardPlan> PlanReshard(const ShardLayout& src,
                                        absl::Span<const int64_t> src_locations,
                                        const ShardLayout& dst,
                                        absl::Span<const int64_t> dst_locations,
                                        int64_t element_bytes, const PlanOptions& options = {});

// One process's part of the plan PlanReshard would return: exactly the copies whose source location
// (for a forward: the location of the destination slot it reads) or destination location is in
// `part_locations`, in the same order and equal field for field; the byte totals sum those copies,
// and lower_bound_bytes counts the destination slots at part locations only. The parts of processes
// whose locations partition all locations therefore reunite into the whole plan, and their lower
// bounds add up to its.
//
//   std::vector<int64_t> mine;  // process p owns locations 8p .. 8p+7
//   for (int i = 0; i < 8; ++i) mine.push_back(8 * p + i);
//   auto part = PlanReshardPart(rows, locations, cols, locations, 4, mine);
//
// Cost: the source groups meeting the destination boxes at part locations, plus the destination
// groups meeting the source boxes at part locations (found through an index; the rest of the
// layouts is never visited beyond one pass over the slots), when the source boxes form a grid
// (every ShardingParam layout) -- so proportional to the part, not to the plan. Otherwise each
// destination group the part meets is cut whole. When a copy of the part chooses among source
// replicas at several locations (rule 3 depends on the bytes sent for every earlier destination
// slot) it plans every destination group, as PlanReshard does, and keeps the part. Errors as
// PlanReshard, except that options.max_copies bounds the pieces planned for the part (a part may
// succeed where the whole plan is too large).
absl::StatusOr<ReshardPlan> PlanReshardPart(
    const ShardLayout& src, absl::Span<const int64_t> src_locations, const ShardLayout& dst,
    absl::Span<const int64_t> dst_locations, int64_t element_bytes,
    absl::Span<const int64_t> part_locations, const PlanOptions& options = {});

}  // namespace tessera::sharding

#endif  // TESSERA_SHARDING_PLANNER_H_
