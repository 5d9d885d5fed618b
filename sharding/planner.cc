#include "sharding/planner.h"

#include <algorithm>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sharding/box_index.h"

namespace tessera::sharding {
namespace {

// A region of one destination slot and where it comes from, in global
// coordinates. depth orders forwards (0: reads a source slot).
struct Piece {
  bool from_destination;
  int src_slot;
  int depth;
  Box box;
};

// One distinct source box and the slots holding it.
struct SrcGroup {
  Box box;
  std::vector<std::pair<int64_t, int>> by_device;  // (device, slot), sorted
};

// The lowest slot of `group` on `device`, or -1.
int FindSlotOnDevice(const SrcGroup& group, int64_t device) {
  auto it =
      std::lower_bound(group.by_device.begin(), group.by_device.end(), std::make_pair(device, -1));
  if (it == group.by_device.end() || it->first != device) return -1;
  return it->second;
}

// A cell of a destination box: a sub-box every source box either contains
// or misses, and the source groups containing it.
struct Cell {
  Box box;
  absl::InlinedVector<int, 2> holders;
};

// Splits `b` along every source-box boundary that crosses it.
absl::Status ComputeCells(const Box& b, const std::vector<int>& candidates,
                          const std::vector<SrcGroup>& groups, std::vector<Cell>* cells) {
  const int rank = b.rank();
  std::vector<std::vector<int64_t>> cuts(rank);
  for (int d = 0; d < rank; ++d) {
    const int64_t lo = b.inclusive_min(d), hi = b.exclusive_max(d);
    cuts[d] = {lo, hi};
    for (int c : candidates) {
      for (int64_t v : {groups[c].box.inclusive_min(d), groups[c].box.exclusive_max(d)}) {
        if (v > lo && v < hi) cuts[d].push_back(v);
      }
    }
    std::sort(cuts[d].begin(), cuts[d].end());
    cuts[d].erase(std::unique(cuts[d].begin(), cuts[d].end()), cuts[d].end());
  }
  Index cur(rank, 0);
  while (true) {
    Index origin(rank), shape(rank);
    for (int d = 0; d < rank; ++d) {
      origin[d] = cuts[d][cur[d]];
      shape[d] = cuts[d][cur[d] + 1] - origin[d];
    }
    Cell cell{Box(std::move(origin), std::move(shape)), {}};
    for (int c : candidates) {
      if (Contains(groups[c].box, cell.box)) cell.holders.push_back(c);
    }
    if (cell.holders.empty()) {
      return absl::InternalError(absl::StrCat("No source shard holds ", cell.box.ToString(),
                                              " (source layout does not cover the array)"));
    }
    cells->push_back(std::move(cell));
    int d = rank - 1;
    for (; d >= 0; --d) {
      if (++cur[d] + 1 < static_cast<int64_t>(cuts[d].size())) break;
      cur[d] = 0;
    }
    if (d < 0) return absl::OkStatus();
  }
}

// Merges abutting boxes (equal extents in all dims but one, touching in it)
// until no two merge.
void MergeBoxes(std::vector<Box>& boxes) {
  if (boxes.size() < 2) return;
  const int rank = boxes[0].rank();
  bool changed = true;
  while (changed && boxes.size() > 1) {
    changed = false;
    for (int d = rank - 1; d >= 0; --d) {
      auto other_key_less = [d, rank](const Box& a, const Box& b) {
        for (int e = 0; e < rank; ++e) {
          if (e == d) continue;
          if (a.inclusive_min(e) != b.inclusive_min(e)) {
            return a.inclusive_min(e) < b.inclusive_min(e);
          }
          if (a.size(e) != b.size(e)) return a.size(e) < b.size(e);
        }
        return a.inclusive_min(d) < b.inclusive_min(d);
      };
      std::sort(boxes.begin(), boxes.end(), other_key_less);
      std::vector<Box> out;
      out.reserve(boxes.size());
      for (Box& box : boxes) {
        if (!out.empty()) {
          const Box& last = out.back();
          bool same_other = true;
          for (int e = 0; e < rank && same_other; ++e) {
            same_other = e == d || (last.inclusive_min(e) == box.inclusive_min(e) &&
                                    last.size(e) == box.size(e));
          }
          if (same_other && last.exclusive_max(d) == box.inclusive_min(d)) {
            Index shape = last.shape();
            shape[d] += box.size(d);
            out.back() = Box(last.origin(), std::move(shape));
            changed = true;
            continue;
          }
        }
        out.push_back(std::move(box));
      }
      boxes = std::move(out);
    }
  }
  // Deterministic final order: row-major by origin.
  std::sort(boxes.begin(), boxes.end(),
            [](const Box& a, const Box& b) { return a.origin() < b.origin(); });
}

// Merges the pieces of one destination slot with equal endpoints.
void MergePieces(std::vector<Piece>& pieces) {
  if (pieces.size() < 2) return;
  auto key = [](const Piece& p) {
    return std::make_tuple(p.depth, p.from_destination, p.src_slot);
  };
  std::stable_sort(pieces.begin(), pieces.end(),
                   [&](const Piece& a, const Piece& b) { return key(a) < key(b); });
  std::vector<Piece> out;
  out.reserve(pieces.size());
  for (size_t i = 0; i < pieces.size();) {
    size_t j = i;
    std::vector<Box> boxes;
    while (j < pieces.size() && key(pieces[j]) == key(pieces[i])) {
      boxes.push_back(std::move(pieces[j].box));
      ++j;
    }
    MergeBoxes(boxes);
    for (Box& box : boxes) {
      out.push_back(
          {pieces[i].from_destination, pieces[i].src_slot, pieces[i].depth, std::move(box)});
    }
    i = j;
  }
  pieces = std::move(out);
}

int TreeDepth(int i) {  // floor(log2(i + 1))
  int depth = 0;
  while ((i + 1) >> (depth + 1)) ++depth;
  return depth;
}

}  // namespace

absl::StatusOr<ReshardPlan> PlanReshard(const ShardLayout& src,
                                        absl::Span<const int64_t> src_devices,
                                        const ShardLayout& dst,
                                        absl::Span<const int64_t> dst_devices,
                                        int64_t element_bytes, const PlanOptions& options) {
  if (src.global_shape() != dst.global_shape()) {
    return absl::InvalidArgumentError(absl::StrCat("Source and destination global shapes differ: [",
                                                   absl::StrJoin(src.global_shape(), ","), "] vs [",
                                                   absl::StrJoin(dst.global_shape(), ","), "]"));
  }
  if (static_cast<int64_t>(src_devices.size()) != src.num_slots()) {
    return absl::InvalidArgumentError(absl::StrCat("Source layout has ", src.num_slots(),
                                                   " slots but ", src_devices.size(),
                                                   " source devices were given"));
  }
  if (static_cast<int64_t>(dst_devices.size()) != dst.num_slots()) {
    return absl::InvalidArgumentError(absl::StrCat("Destination layout has ", dst.num_slots(),
                                                   " slots but ", dst_devices.size(),
                                                   " destination devices were given"));
  }
  if (element_bytes <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("element_bytes must be positive, got ", element_bytes));
  }
  const int rank = src.rank();

  std::vector<SrcGroup> groups;
  std::vector<Box> group_boxes;
  groups.reserve(src.replica_groups().size());
  for (const auto& slots : src.replica_groups()) {
    SrcGroup group{src.slot_box(slots[0]), {}};
    for (int slot : slots) group.by_device.push_back({src_devices[slot], slot});
    std::sort(group.by_device.begin(), group.by_device.end());
    group_boxes.push_back(group.box);
    groups.push_back(std::move(group));
  }
  internal::BoxIndex index(rank, group_boxes);

  absl::flat_hash_map<int64_t, int64_t> sent;  // source device -> bytes sent
  // Cheapest remote replica among the holders of a cell: least bytes sent so
  // far, then lowest slot.
  auto choose_remote = [&](const Cell& cell) {
    int best_slot = -1;
    int64_t best_device = 0, best_load = 0;
    for (int h : cell.holders) {
      for (const auto& [device, slot] : groups[h].by_device) {
        auto it = sent.find(device);
        int64_t load = it == sent.end() ? 0 : it->second;
        if (best_slot < 0 || load < best_load || (load == best_load && slot < best_slot)) {
          best_slot = slot;
          best_device = device;
          best_load = load;
        }
      }
    }
    return std::make_pair(best_slot, best_device);
  };

  ReshardPlan plan;
  plan.fan_out = options.fan_out;
  std::vector<std::vector<Piece>> pieces(dst.num_slots());
  std::vector<std::pair<int, int>> aliases;  // (dst slot, src slot)
  int64_t lower_bound_elements = 0;
  std::vector<int> candidates;
  std::vector<Cell> cells;
  std::vector<std::vector<int>> remote;  // per cell: dst slots needing it
  absl::flat_hash_map<int64_t, int> receiver_of_device;

  for (const auto& dst_slots : dst.replica_groups()) {
    const Box& box = dst.slot_box(dst_slots[0]);
    if (box.is_empty()) continue;
    candidates.clear();
    index.ForEachIntersecting(box, [&](int g) { candidates.push_back(g); });
    std::sort(candidates.begin(), candidates.end());
    int alias_group = -1;
    for (int c : candidates) {
      if (groups[c].box == box) alias_group = c;
    }
    cells.clear();
    if (absl::Status s = ComputeCells(box, candidates, groups, &cells); !s.ok()) {
      return s;
    }
    remote.assign(cells.size(), {});
    for (int slot : dst_slots) {
      const int64_t device = dst_devices[slot];
      if (alias_group >= 0) {
        int src_slot = FindSlotOnDevice(groups[alias_group], device);
        if (src_slot >= 0) {
          aliases.push_back({slot, src_slot});
          continue;
        }
      }
      for (size_t i = 0; i < cells.size(); ++i) {
        int local = -1;
        for (int h : cells[i].holders) {
          local = FindSlotOnDevice(groups[h], device);
          if (local >= 0) break;
        }
        if (local >= 0) {
          pieces[slot].push_back({false, local, 0, cells[i].box});
        } else {
          remote[i].push_back(slot);
          lower_bound_elements += cells[i].box.num_elements();
        }
      }
    }
    for (size_t i = 0; i < cells.size(); ++i) {
      const std::vector<int>& needing = remote[i];
      if (needing.empty()) continue;
      const int64_t bytes = cells[i].box.num_elements() * element_bytes;
      if (!options.fan_out) {
        for (int slot : needing) {
          auto [src_slot, src_device] = choose_remote(cells[i]);
          pieces[slot].push_back({false, src_slot, 0, cells[i].box});
          sent[src_device] += bytes;
        }
        continue;
      }
      // Fan-out: one receiver per device; a binary tree over the receivers.
      std::vector<int> receivers;
      std::vector<std::pair<int, int>> extras;  // (slot, receiver index)
      receiver_of_device.clear();
      for (int slot : needing) {
        auto [it, inserted] =
            receiver_of_device.try_emplace(dst_devices[slot], static_cast<int>(receivers.size()));
        if (inserted) {
          receivers.push_back(slot);
        } else {
          extras.push_back({slot, it->second});
        }
      }
      auto [src_slot, src_device] = choose_remote(cells[i]);
      pieces[receivers[0]].push_back({false, src_slot, 0, cells[i].box});
      sent[src_device] += bytes;
      for (int r = 1; r < static_cast<int>(receivers.size()); ++r) {
        pieces[receivers[r]].push_back({true, receivers[(r - 1) / 2], TreeDepth(r), cells[i].box});
      }
      for (const auto& [slot, r] : extras) {
        pieces[slot].push_back({true, receivers[r], TreeDepth(r) + 1, cells[i].box});
      }
    }
  }

  // Assemble: aliases and merged pieces, stably ordered by depth.
  std::vector<std::pair<int, BoxCopy>> ordered;
  for (const auto& [slot, src_slot] : aliases) {
    const Box& box = dst.slot_box(slot);
    Box local = ShiftOrigin(box, box.origin());
    ordered.push_back(
        {0, BoxCopy{BoxCopy::Kind::kAlias, false, src_slot, local, slot, local,
                    src_devices[src_slot], dst_devices[slot], box.num_elements() * element_bytes}});
  }
  for (int slot = 0; slot < dst.num_slots(); ++slot) {
    MergePieces(pieces[slot]);
    const Box& dst_box = dst.slot_box(slot);
    for (Piece& p : pieces[slot]) {
      const Box& frame = p.from_destination ? dst.slot_box(p.src_slot) : src.slot_box(p.src_slot);
      const int64_t src_device =
          p.from_destination ? dst_devices[p.src_slot] : src_devices[p.src_slot];
      BoxCopy copy;
      copy.kind =
          src_device == dst_devices[slot] ? BoxCopy::Kind::kLocal : BoxCopy::Kind::kCrossDevice;
      copy.from_destination = p.from_destination;
      copy.src_slot = p.src_slot;
      copy.src_box = ShiftOrigin(p.box, frame.origin());
      copy.dst_slot = slot;
      copy.dst_box = ShiftOrigin(p.box, dst_box.origin());
      copy.src_device = src_device;
      copy.dst_device = dst_devices[slot];
      copy.bytes = p.box.num_elements() * element_bytes;
      ordered.push_back({p.depth, std::move(copy)});
    }
  }
  std::stable_sort(ordered.begin(), ordered.end(), [](const auto& a, const auto& b) {
    if (a.first != b.first) return a.first < b.first;
    return a.second.dst_slot < b.second.dst_slot;
  });
  plan.copies.reserve(ordered.size());
  for (auto& [depth, copy] : ordered) {
    switch (copy.kind) {
      case BoxCopy::Kind::kAlias:
        plan.aliased_bytes += copy.bytes;
        break;
      case BoxCopy::Kind::kLocal:
        plan.local_bytes += copy.bytes;
        break;
      case BoxCopy::Kind::kCrossDevice:
        plan.cross_device_bytes += copy.bytes;
        break;
    }
    if (copy.from_destination) plan.forwarded_bytes += copy.bytes;
    plan.copies.push_back(std::move(copy));
  }
  plan.num_copies = static_cast<int64_t>(plan.copies.size());
  plan.lower_bound_bytes = lower_bound_elements * element_bytes;
  return plan;
}

}  // namespace tessera::sharding
