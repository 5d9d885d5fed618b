#include "sharding/shard_layout.h"

#include <algorithm>
#include <cassert>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/checked_math.h"
#include "sharding/box_index.h"

namespace tessera::sharding {

namespace {

// INVALID_ARGUMENT unless every dim is >= 0 and the element count fits in int64_t.
absl::Status CheckGlobalShape(absl::Span<const int64_t> global_shape) {
  for (size_t d = 0; d < global_shape.size(); ++d) {
    if (global_shape[d] < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("Global shape has negative size ", global_shape[d], " in dimension ", d));
    }
  }
  if (!base::CheckedProduct(global_shape).has_value()) {
    return absl::InvalidArgumentError(absl::StrCat("Global shape [",
                                                   absl::StrJoin(global_shape, ","),
                                                   "] has an element count that overflows int64"));
  }
  return absl::OkStatus();
}

// The [min, size) of tile t of k along a dim of size n (XLA's ceil division), without overflow.
std::pair<int64_t, int64_t> Tile(int64_t n, int64_t k, int64_t t) {
  const int64_t c = base::CeilDiv(n, k);
  if (c == 0) return {0, 0};
  const int64_t lo = t <= n / c ? t * c : n;  // t * c <= n exactly when t <= n / c
  return {lo, std::min(c, n - lo)};
}

}  // namespace

ShardLayout::ShardLayout(Index global_shape, std::vector<Box> boxes)
    : global_shape_(std::move(global_shape)), boxes_(std::move(boxes)) {
  absl::flat_hash_map<Box, int> group_of;
  group_of.reserve(boxes_.size());
  for (int slot = 0; slot < static_cast<int>(boxes_.size()); ++slot) {
    auto [it, inserted] =
        group_of.try_emplace(boxes_[slot], static_cast<int>(replica_groups_.size()));
    if (inserted) replica_groups_.emplace_back();
    replica_groups_[it->second].push_back(slot);
  }
}

absl::StatusOr<ShardLayout> ShardLayout::FromShardingParam(const ShardingParam& param,
                                                           absl::Span<const int64_t> global_shape) {
  if (absl::Status s = param.VerifyForShape(global_shape); !s.ok()) return s;
  if (absl::Status s = CheckGlobalShape(global_shape); !s.ok()) return s;
  const int rank = static_cast<int>(global_shape.size());
  // Per dim, the [min, size) of each tile.
  std::vector<std::vector<std::pair<int64_t, int64_t>>> tiles(rank);
  for (int d = 0; d < rank; ++d) {
    const int64_t n = global_shape[d], k = param.dim_shards()[d];
    for (int64_t t = 0; t < k; ++t) tiles[d].push_back(Tile(n, k, t));
  }
  std::vector<Index> tile_indices = param.DeviceTileIndices();
  std::vector<Box> boxes;
  boxes.reserve(tile_indices.size());
  for (const Index& tile : tile_indices) {
    Index origin(rank), shape(rank);
    for (int d = 0; d < rank; ++d) {
      origin[d] = tiles[d][tile[d]].first;
      shape[d] = tiles[d][tile[d]].second;
    }
    boxes.emplace_back(std::move(origin), std::move(shape));
  }
  return ShardLayout(Index(global_shape.begin(), global_shape.end()), std::move(boxes));
}

absl::StatusOr<ShardLayout> ShardLayout::FromBoxes(absl::Span<const int64_t> global_shape,
                                                   std::vector<Box> slot_boxes) {
  const int rank = static_cast<int>(global_shape.size());
  if (slot_boxes.empty()) {
    return absl::InvalidArgumentError("ShardLayout needs at least one slot");
  }
  if (absl::Status s = CheckGlobalShape(global_shape); !s.ok()) return s;
  for (size_t slot = 0; slot < slot_boxes.size(); ++slot) {
    const Box& box = slot_boxes[slot];
    if (box.rank() != rank) {
      return absl::InvalidArgumentError(absl::StrCat("Slot ", slot, " box ", box.ToString(),
                                                     " has rank ", box.rank(),
                                                     " but the array has rank ", rank));
    }
    for (int d = 0; d < rank; ++d) {
      // Overflow-free form of 0 <= min && min + size <= global_shape[d].
      if (box.inclusive_min(d) < 0 || box.inclusive_min(d) > global_shape[d] ||
          box.size(d) > global_shape[d] - box.inclusive_min(d)) {
        return absl::InvalidArgumentError(absl::StrCat("Slot ", slot, " box ", box.ToString(),
                                                       " lies outside the array of shape [",
                                                       absl::StrJoin(global_shape, ","), "]"));
      }
    }
  }
  ShardLayout layout(Index(global_shape.begin(), global_shape.end()), std::move(slot_boxes));
  std::vector<Box> unique;
  unique.reserve(layout.replica_groups_.size());
  for (const auto& group : layout.replica_groups_) {
    unique.push_back(layout.boxes_[group[0]]);
  }
  internal::BoxIndex index(rank, unique);
  if (!index.Covers(Box::FromShape(global_shape))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "The slot boxes do not cover the array of shape [", absl::StrJoin(global_shape, ","), "]"));
  }
  return layout;
}

ShardLayout ShardLayout::Replicated(absl::Span<const int64_t> global_shape, int num_slots) {
  assert(num_slots >= 1);
  return ShardLayout(Index(global_shape.begin(), global_shape.end()),
                     std::vector<Box>(num_slots, Box::FromShape(global_shape)));
}

bool ShardLayout::IsFullyReplicated() const {
  const Box whole = Box::FromShape(global_shape_);
  for (const Box& box : boxes_) {
    if (box != whole) return false;
  }
  return true;
}

std::string ShardLayout::ToString() const {
  return absl::StrCat(
      "ShardLayout{shape=[", absl::StrJoin(global_shape_, ","), "], slots=[",
      absl::StrJoin(boxes_, ", ",
                    [](std::string* out, const Box& b) { out->append(b.ToString()); }),
      "]}");
}

}  // namespace tessera::sharding
