// sharding/shard_layout.h: where every shard of a global array lies.
//
// A ShardLayout is, for a global shape and a number of device slots, the box (in global
// coordinates) each slot holds. Slots are positions in a device list; ShardLayout knows no devices.
// Boxes may be empty (a trailing tile of a ragged tiling) and several slots may hold the same box
// (replicas).
//
//   auto param = ShardingParam::Parse("2x1 to [0,1] on 2x3");
//   auto layout = ShardLayout::FromShardingParam(*param, {5, 4});
//   layout->slot_box(3) == Box({3, 0}, {2, 4});      // ceil(5/2) = 3 rows
//   layout->replica_groups() == {{0,1,2},{3,4,5}};
#ifndef TESSERA_SHARDING_SHARD_LAYOUT_H_
#define TESSERA_SHARDING_SHARD_LAYOUT_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "sharding/box.h"
#include "sharding/index.h"
#include "sharding/sharding_param.h"

namespace tessera::sharding {

// ShardLayout: an immutable value type (copyable, hashable, thread-compatible). Invariants: every
// slot box has the global rank and lies in [0, global_shape) (empty boxes too: 0 <= min <= max <=
// shape); the union of the boxes is the whole array; at least one slot.
class ShardLayout {
 public:
  // The layout of `param` over `global_shape`, slot i = device slot i of `param`. Each dim of size
  // n cut into k tiles uses XLA's ceil division:
  // tile t covers [min(t*c, n), min((t+1)*c, n)) with c = ceil(n/k), so the last tiles may be
  // smaller or empty. INVALID_ARGUMENT when param.VerifyForShape(global_shape) fails or the element
  // count of `global_shape` overflows int64_t (base::CheckedProduct).
  static absl::StatusOr<ShardLayout> FromShardingParam(const ShardingParam& param,
                                                       absl::Span<const int64_t> global_shape);
  // Arbitrary boxes, one per slot. INVALID_ARGUMENT when: no slots; a negative global dim; a global
  // element count that overflows int64_t; a box of another rank; a box outside the array; the boxes
  // do not cover the array.
  static absl::StatusOr<ShardLayout> FromBoxes(absl::Span<const int64_t> global_shape,
                                               std::vector<Box> slot_boxes);
  // Every one of `num_slots` (>= 1, precondition) slots holds the whole array.
  // Unchecked: `global_shape` must be valid (dims >= 0, base::CheckedProduct fits).
  static ShardLayout Replicated(absl::Span<const int64_t> global_shape, int num_slots);

  int num_slots() const { return static_cast<int>(boxes_.size()); }
  int rank() const { return static_cast<int>(global_shape_.size()); }
  const Index& global_shape() const { return global_shape_; }
  // Global coordinates. Precondition: 0 <= slot < num_slots().
  const Box& slot_box(int slot) const { return boxes_[slot]; }
  const std::vector<Box>& slot_boxes() const { return boxes_; }
  Index shard_shape(int slot) const { return boxes_[slot].shape(); }
  // Partition of all slots into groups holding identical boxes (singletons included); each group
  // ascending, groups ordered by their first slot.
  const std::vector<std::vector<int>>& replica_groups() const { return replica_groups_; }
  // True iff every slot holds the whole array.
  bool IsFullyReplicated() const;
  // E.g. "ShardLayout{shape=[4,4], slots=[[0:2, 0:4], [2:4, 0:4]]}".
  std::string ToString() const;

  friend bool operator==(const ShardLayout& a, const ShardLayout& b) {
    return a.global_shape_ == b.global_shape_ && a.boxes_ == b.boxes_;
  }
  friend bool operator!=(const ShardLayout& a, const ShardLayout& b) { return !(a == b); }
  template <typename H>
  friend H AbslHashValue(H h, const ShardLayout& l) {
    return H::combine(std::move(h), l.global_shape_, l.boxes_);
  }

 private:
  ShardLayout(Index global_shape, std::vector<Box> boxes);
  Index global_shape_;
  std::vector<Box> boxes_;
  std::vector<std::vector<int>> replica_groups_;
};

}  // namespace tessera::sharding

#endif  // TESSERA_SHARDING_SHARD_LAYOUT_H_
