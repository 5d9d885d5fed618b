// sharding/reshard_plan.h: the output of the reshard planner -- a list of box copies between slots
// at memory locations -- and its rendering.
//
// Locations are integers the caller chooses (the runtime passes memory ids):
// two slots at one location share a memory, so copies between them are local.
//
// Coordinates: every BoxCopy names boxes in shard-local coordinates (origin 0 = the first element
// of the shard buffer), so a dispatcher can copy src_box of the source buffer into dst_box of the
// destination buffer with ForEachContiguousRun on each side.
#ifndef TESSERA_SHARDING_RESHARD_PLAN_H_
#define TESSERA_SHARDING_RESHARD_PLAN_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/functional/function_ref.h"
#include "sharding/box.h"

namespace tessera::sharding {

// One copy of a box of elements. Plain value type.
struct BoxCopy {
  enum class Kind {
    // dst shard == whole src shard at the same location: share the buffer, move nothing.
    kAlias,
    kLocal,          // src_location == dst_location, a real copy
    kCrossLocation,  // src_location != dst_location
  };
  Kind kind = Kind::kCrossLocation;
  // fan_out plans only: src_slot names a DESTINATION slot that earlier copies of the plan fill (a
  // forward in a broadcast tree); src_box is then in that destination shard's local coordinates.
  bool from_destination = false;
  int src_slot = 0;
  Box src_box;  // source-shard-local coordinates
  int dst_slot = 0;
  Box dst_box;  // destination-shard-local coordinates; same shape as src_box
  int64_t src_location = 0;
  int64_t dst_location = 0;
  int64_t bytes = 0;  // src_box.num_elements() * element_bytes

  friend bool operator==(const BoxCopy& a, const BoxCopy& b) {
    return a.kind == b.kind && a.from_destination == b.from_destination &&
           a.src_slot == b.src_slot && a.src_box == b.src_box && a.dst_slot == b.dst_slot &&
           a.dst_box == b.dst_box && a.src_location == b.src_location &&
           a.dst_location == b.dst_location && a.bytes == b.bytes;
  }
};

// A complete reshard: executing `copies` in order fills every element of every destination shard
// exactly once. Plain value type.
struct ReshardPlan {
  // Ordered so that every from_destination copy comes after all copies that fill the region it
  // reads. Copies that do not read destinations come first.
  std::vector<BoxCopy> copies;
  int64_t cross_location_bytes = 0;  // sum of kCrossLocation bytes (forwards too)
  int64_t local_bytes = 0;           // sum of kLocal bytes
  int64_t aliased_bytes = 0;         // sum of kAlias bytes
  // Sum over destination slots of the bytes of its box that no source slot at the same location
  // holds. A location holding k destination slots counts each slot (k times for a region all of
  // them need). Without fan_out, cross_location_bytes == lower_bound_bytes; with fan_out it can be
  // lower (a region fetched once per location, then copied locally).
  int64_t lower_bound_bytes = 0;
  bool fan_out = false;
  // Bytes of from_destination copies (0 without fan_out).
  int64_t forwarded_bytes = 0;

  friend bool operator==(const ReshardPlan& a, const ReshardPlan& b) {
    return a.copies == b.copies && a.cross_location_bytes == b.cross_location_bytes &&
           a.local_bytes == b.local_bytes && a.aliased_bytes == b.aliased_bytes &&
           a.lower_bound_bytes == b.lower_bound_bytes && a.forwarded_bytes == b.forwarded_bytes &&
           a.fan_out == b.fan_out;
  }
};

// "alias", "local" or "cross-location".
std::string_view KindName(BoxCopy::Kind kind);

// Human-readable summary: one line per (source location, destination location, kind, forward or
// not) with the number of copies and bytes, sorted by locations; forwards of a fan_out plan are
// marked "forward"; then the totals and the lower bound on one line (wrapped here). Locations are
// named "location <n>". Example:
//
//   ReshardPlan: 2 copies, fan_out=false
//     location 0 -> location 0: 1 local copy, 32 bytes
//     location 0 -> location 1: 1 cross-location copy, 32 bytes
//   totals: cross_location_bytes=32 local_bytes=32 aliased_bytes=0 forwarded_bytes=0
//           lower_bound_bytes=32
std::string RenderPlan(const ReshardPlan& plan);

// The same, naming each location with `location_name` (called during the call only), e.g. a runtime
// that plans over memory ids names a memory by its device and kind: "device 2 (host) -> device 3
// (host): 1 cross-location copy".
std::string RenderPlan(const ReshardPlan& plan,
                       absl::FunctionRef<std::string(int64_t location)> location_name);

}  // namespace tessera::sharding

#endif  // TESSERA_SHARDING_RESHARD_PLAN_H_
