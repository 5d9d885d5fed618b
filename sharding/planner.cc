#include "sharding/planner.h"

#include <algorithm>
#include <new>
#include <stdexcept>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sharding/box_index.h"

namespace tessera::sharding {
namespace {

// Boxes of one rank stored flat (origin, then shape), named by their offset:
// a plan holds one box per piece, and most pieces of a group share a cell.
class BoxArena {
 public:
  explicit BoxArena(int rank) : rank_(rank) {}
  int64_t Add(const Box& box) {
    const int64_t at = static_cast<int64_t>(values_.size());
    values_.insert(values_.end(), box.origin().begin(), box.origin().end());
    values_.insert(values_.end(), box.shape().begin(), box.shape().end());
    return at;
  }
  Box Get(int64_t at) const { return Box(Index(origin(at), origin(at) + rank_), Shape(at)); }
  const int64_t* origin(int64_t at) const { return values_.data() + at; }
  Index Shape(int64_t at) const {
    return Index(values_.data() + at + rank_, values_.data() + at + 2 * rank_);
  }

 private:
  int rank_;
  std::vector<int64_t> values_;
};

// A region of one destination slot (an arena box, global coordinates) and where it comes from.
// depth orders forwards (0: reads a source slot).
struct Piece {
  bool from_destination;
  int src_slot;
  int depth;
  int64_t box;
};

// One distinct source box and the slots holding it.
struct SrcGroup {
  Box box;
  std::vector<std::pair<int64_t, int>> by_location;  // (location, slot), sorted
};

// The lowest slot of `group` at `location`, or -1.
int FindSlotAtLocation(const SrcGroup& group, int64_t location) {
  auto it = std::lower_bound(group.by_location.begin(), group.by_location.end(),
                             std::make_pair(location, -1));
  if (it == group.by_location.end() || it->first != location) return -1;
  return it->second;
}

// A cell of a destination box: a sub-box every source box either contains or misses, and the source
// groups containing it.
struct Cell {
  Box box;
  absl::InlinedVector<int, 2> holders;
};

// True iff `a` and `b` (same rank) share an element.
bool Overlaps(const Box& a, const Box& b) {
  for (int d = 0; d < a.rank(); ++d) {
    if (a.exclusive_max(d) <= b.inclusive_min(d) || b.exclusive_max(d) <= a.inclusive_min(d)) {
      return false;
    }
  }
  return !a.is_empty() && !b.is_empty();
}

// Splits `cell` by `c` (which overlaps it but does not contain it): peels off, dim by dim, the
// slabs of the cell below and above c (holders unchanged), then appends what is left, cell ∩ c,
// with holder `g` added. At most 2*rank + 1 cells come out, and only dims that c actually cuts are
// split.
void SplitCell(Cell cell, const Box& c, int g, std::vector<Cell>& out) {
  const int rank = cell.box.rank();
  Index lo = cell.box.origin(), hi(rank);
  for (int d = 0; d < rank; ++d) hi[d] = cell.box.exclusive_max(d);
  auto slab = [&](int d, int64_t from, int64_t to) {
    Index origin = lo, shape(rank);
    for (int e = 0; e < rank; ++e) shape[e] = hi[e] - lo[e];
    origin[d] = from;
    shape[d] = to - from;
    out.push_back({Box(std::move(origin), std::move(shape)), cell.holders});
  };
  for (int d = 0; d < rank; ++d) {
    if (lo[d] < c.inclusive_min(d)) {
      slab(d, lo[d], c.inclusive_min(d));
      lo[d] = c.inclusive_min(d);
    }
    if (hi[d] > c.exclusive_max(d)) {
      slab(d, c.exclusive_max(d), hi[d]);
      hi[d] = c.exclusive_max(d);
    }
  }
  Index shape(rank);
  for (int d = 0; d < rank; ++d) shape[d] = hi[d] - lo[d];
  cell.box = Box(std::move(lo), std::move(shape));
  cell.holders.push_back(g);
  out.push_back(std::move(cell));
}

// Row-major by origin (origins of disjoint non-empty cells are distinct).
void SortCells(std::vector<Cell>& cells) {
  auto less = [](const Cell& x, const Cell& y) { return x.box.origin() < y.box.origin(); };
  if (!std::is_sorted(cells.begin(), cells.end(), less)) {
    std::sort(cells.begin(), cells.end(), less);
  }
}

// Cuts destination box `b` into disjoint cells that every candidate source box either contains or
// misses, refining one candidate at a time (each splits only the cells it cuts, only along the dims
// it cuts). Cells come out sorted by origin (row-major), holders ascending. Every cell is a union
// of cells of the grid of all candidate boundaries, so there are at most min(prod_d (boundaries in
// dim d + 1), (2*rank + 1)^candidates) of them; when the candidates tile `b` as a grid, the cells
// are exactly their intersections with `b`. RESOURCE_EXHAUSTED beyond `max_cells`. `next` is
// scratch.
//
// `grid`: all source group boxes form a grid (BoxIndex::is_grid). No grid line crosses the interior
// of a box of the grid, so the refinement would cut `b` into exactly its intersections with the
// candidates, one holder each (and its intermediate cell counts never exceed the final one): those
// are built directly, in time linear in the candidates. `candidates` may then be any subset of the
// groups intersecting `b` (the cells of that subset).
absl::Status ComputeCells(const Box& b, const std::vector<int>& candidates,
                          const std::vector<SrcGroup>& groups, int64_t max_cells, bool grid,
                          std::vector<Cell>* cells, std::vector<Cell>& next) {
  cells->clear();
  if (grid) {
    if (static_cast<int64_t>(candidates.size()) > max_cells) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "Reshard plan too large: destination box ", b.ToString(), " splits into more than ",
          max_cells, " pieces over ", candidates.size(), " overlapping source shards"));
    }
    cells->reserve(candidates.size());
    for (int c : candidates) cells->push_back({Intersect(b, groups[c].box), {c}});
    SortCells(*cells);
    return absl::OkStatus();
  }
  cells->push_back({b, {}});
  for (int c : candidates) {
    const Box& box = groups[c].box;
    next.clear();
    for (Cell& cell : *cells) {
      if (!Overlaps(cell.box, box)) {
        next.push_back(std::move(cell));
      } else if (Contains(box, cell.box)) {
        cell.holders.push_back(c);
        next.push_back(std::move(cell));
      } else {
        SplitCell(std::move(cell), box, c, next);
      }
    }
    if (static_cast<int64_t>(next.size()) > max_cells) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "Reshard plan too large: destination box ", b.ToString(), " splits into more than ",
          max_cells, " pieces over ", candidates.size(), " overlapping source shards"));
    }
    cells->swap(next);
  }
  for (const Cell& cell : *cells) {
    if (cell.holders.empty()) {
      return absl::InternalError(absl::StrCat("No source shard holds ", cell.box.ToString(),
                                              " (source layout does not cover the array)"));
    }
  }
  SortCells(*cells);
  return absl::OkStatus();
}

// Merges abutting boxes (equal extents in all dims but one, touching in it) until no two merge.
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

// Merges the pieces of one destination slot with equal endpoints (merged boxes are added to
// `arena`).
void MergePieces(std::vector<Piece>& pieces, BoxArena& arena) {
  if (pieces.size() < 2) return;
  auto key = [](const Piece& p) {
    return std::make_tuple(p.depth, p.from_destination, p.src_slot);
  };
  auto less = [&](const Piece& a, const Piece& b) { return key(a) < key(b); };
  if (!std::is_sorted(pieces.begin(), pieces.end(), less)) {
    std::stable_sort(pieces.begin(), pieces.end(), less);
  }
  // Nothing to merge when no two pieces share a key (one piece per source slot, as from a grid).
  if (std::adjacent_find(pieces.begin(), pieces.end(), [&](const Piece& a, const Piece& b) {
        return key(a) == key(b);
      }) == pieces.end()) {
    return;
  }
  std::vector<Piece> out;
  out.reserve(pieces.size());
  for (size_t i = 0; i < pieces.size();) {
    size_t j = i;
    std::vector<Box> boxes;
    while (j < pieces.size() && key(pieces[j]) == key(pieces[i])) {
      boxes.push_back(arena.Get(pieces[j].box));
      ++j;
    }
    if (boxes.size() == 1) {
      out.push_back(pieces[i]);
      i = j;
      continue;
    }
    MergeBoxes(boxes);
    for (const Box& box : boxes) {
      out.push_back(
          {pieces[i].from_destination, pieces[i].src_slot, pieces[i].depth, arena.Add(box)});
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

absl::Status CheckArguments(const ShardLayout& src, absl::Span<const int64_t> src_locations,
                            const ShardLayout& dst, absl::Span<const int64_t> dst_locations,
                            int64_t element_bytes, int64_t max_copies) {
  if (src.global_shape() != dst.global_shape()) {
    return absl::InvalidArgumentError(absl::StrCat("Source and destination global shapes differ: [",
                                                   absl::StrJoin(src.global_shape(), ","), "] vs [",
                                                   absl::StrJoin(dst.global_shape(), ","), "]"));
  }
  if (static_cast<int64_t>(src_locations.size()) != src.num_slots()) {
    return absl::InvalidArgumentError(absl::StrCat("Source layout has ", src.num_slots(),
                                                   " slots but ", src_locations.size(),
                                                   " source locations were given"));
  }
  if (static_cast<int64_t>(dst_locations.size()) != dst.num_slots()) {
    return absl::InvalidArgumentError(absl::StrCat("Destination layout has ", dst.num_slots(),
                                                   " slots but ", dst_locations.size(),
                                                   " destination locations were given"));
  }
  if (element_bytes <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("element_bytes must be positive, got ", element_bytes));
  }
  if (max_copies <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("PlanOptions::max_copies must be positive, got ", max_copies));
  }
  return absl::OkStatus();
}

// One SrcGroup per replica group of `src`, in the layout's order.
std::vector<SrcGroup> GroupSources(const ShardLayout& src,
                                   absl::Span<const int64_t> src_locations) {
  std::vector<SrcGroup> groups;
  groups.reserve(src.replica_groups().size());
  for (const auto& slots : src.replica_groups()) {
    SrcGroup group{src.slot_box(slots[0]), {}};
    for (int slot : slots) group.by_location.push_back({src_locations[slot], slot});
    std::sort(group.by_location.begin(), group.by_location.end());
    groups.push_back(std::move(group));
  }
  return groups;
}

std::vector<Box> BoxesOf(const std::vector<SrcGroup>& groups) {
  std::vector<Box> boxes;
  boxes.reserve(groups.size());
  for (const SrcGroup& group : groups) boxes.push_back(group.box);
  return boxes;
}

// The state of one PlanReshard or PlanReshardPart call: PlanGroup for each destination replica
// group in order (or PlanPartGroups), then Assemble. Holds what the groups share (the bytes each
// source location has sent so far, the pieces of every destination slot) and scratch buffers reused
// between groups. Borrows the layouts and locations.
class Planner {
 public:
  // `part`: null for a whole plan, else the locations whose copies Assemble keeps.
  Planner(const ShardLayout& src, absl::Span<const int64_t> src_locations, const ShardLayout& dst,
          absl::Span<const int64_t> dst_locations, int64_t element_bytes,
          const PlanOptions& options, const absl::Span<const int64_t>* part)
      : src_(src),
        src_locations_(src_locations),
        dst_(dst),
        dst_locations_(dst_locations),
        element_bytes_(element_bytes),
        options_(options),
        groups_(GroupSources(src, src_locations)),
        index_(src.rank(), BoxesOf(groups_)),
        pieces_(dst.num_slots()),
        alias_of_(dst.num_slots(), -1),
        arena_(dst.rank()) {
    NumberLocations();
    if (part != nullptr) MarkPart(*part);
  }

  // Plans the slots of one destination replica group (equal boxes): splits the box into cells, then
  // aliases, local pieces, and remote fetches.
  absl::Status PlanGroup(const std::vector<int>& dst_slots);

  // Part plans: plans only the destination groups whose copies can touch the part: those holding a
  // slot at a part location (whole), and those whose box meets a source group with a slot at a part
  // location (from those source groups only, when the source groups form a grid). Afterwards
  // exact() says whether that sufficed (no copy of the part depended on the choices made for
  // earlier groups).
  absl::Status PlanPartGroups();
  bool exact() const { return exact_; }

  // The plan (or its part): aliases and merged pieces, stably ordered by forward depth then
  // destination slot, with the totals of its copies.
  ReshardPlan Assemble();

 private:
  // Plans the slots of `dst_slots` over the source groups in candidates_.
  absl::Status PlanCandidates(const std::vector<int>& dst_slots);
  // The source group holding exactly `box`, or -1; candidates_ must hold the groups intersecting
  // it.
  int AliasGroup(const Box& box) const;
  // An alias of `slot` if possible, else its local pieces; the cells it needs remotely are added to
  // remote_.
  void PlanSlot(int slot, int alias_group);
  // Cheapest remote replica among the holders of a cell for `dst_slot`: least bytes sent so far,
  // then lowest slot. Returns the source slot. In a part plan of only some groups, a choice among
  // several locations that touches the part clears exact_ (the bytes sent so far are those of the
  // whole plan).
  int ChooseRemote(const Cell& cell, int dst_slot);
  // Each slot in `needing` fetches cell i from a source.
  void FetchDirect(size_t i, const std::vector<int>& needing);
  // One receiver per location fetches or is forwarded cell i through a binary tree; further slots
  // at a receiver's location copy from it.
  void FetchFanOut(size_t i, const std::vector<int>& needing);
  // The box of cell i in arena_ (added on first use).
  int64_t CellBox(size_t i) {
    if (cell_box_[i] < 0) cell_box_[i] = arena_.Add(cells_[i].box);
    return cell_box_[i];
  }
  // The copy that fills `piece` of destination slot `slot`.
  BoxCopy MakeCopy(int slot, const Piece& piece) const;
  // Numbers the distinct locations 0..n-1 (src_index_, dst_index_) and sizes the per-location
  // state.
  void NumberLocations();
  // Sets src_in_part_ and dst_in_part_.
  void MarkPart(absl::Span<const int64_t> part);
  bool InPart(int dst_slot, const Piece& p) const {
    return src_in_part_.empty() || dst_in_part_[dst_slot] ||
           (p.from_destination ? dst_in_part_[p.src_slot] : src_in_part_[p.src_slot]);
  }

  const ShardLayout& src_;
  absl::Span<const int64_t> src_locations_;
  const ShardLayout& dst_;
  absl::Span<const int64_t> dst_locations_;
  const int64_t element_bytes_;
  const PlanOptions options_;
  const std::vector<SrcGroup> groups_;
  const internal::BoxIndex index_;

  // Locations are numbered densely; the state is in vectors (not hash maps:
  // absl's containers are not safe to destroy after a failed allocation, and PlanReshard turns
  // std::bad_alloc into RESOURCE_EXHAUSTED).
  std::vector<int> src_index_, dst_index_;  // per slot: its location's number
  std::vector<int64_t> sent_;               // per location number: bytes sent
  std::vector<std::vector<Piece>> pieces_;  // per destination slot
  std::vector<int> alias_of_;               // per destination slot: its alias source slot, or -1
  BoxArena arena_;                          // the boxes of the pieces
  int64_t lower_bound_elements_ = 0;
  int64_t num_pieces_ = 0;  // upper bound on the pieces planned so far, before merging
  // Part plans: per slot, whether its location is in the part (empty: whole plan).
  std::vector<char> src_in_part_, dst_in_part_;
  bool some_groups_only_ = false;  // PlanPartGroups is planning
  bool exact_ = true;
  // Scratch, per destination group.
  std::vector<int> candidates_;
  std::vector<Cell> cells_, cells_scratch_;
  std::vector<std::vector<int>> remote_;   // per cell: dst slots needing it
  std::vector<int64_t> cell_box_;          // per cell: its box in arena_, or -1
  std::vector<int> receiver_of_location_;  // per location number, or -1
};

void Planner::NumberLocations() {
  // Small non-negative locations (memory ids, usually) number themselves.
  const size_t total = src_locations_.size() + dst_locations_.size();
  int64_t lo = 0, hi = -1;
  for (absl::Span<const int64_t> list : {src_locations_, dst_locations_}) {
    for (int64_t l : list) {
      lo = std::min(lo, l);
      hi = std::max(hi, l);
    }
  }
  if (lo >= 0 && hi < static_cast<int64_t>(4 * total + 64)) {
    src_index_.assign(src_locations_.begin(), src_locations_.end());
    dst_index_.assign(dst_locations_.begin(), dst_locations_.end());
    sent_.assign(hi + 1, 0);
    receiver_of_location_.assign(hi + 1, -1);
    return;
  }
  std::vector<int64_t> all(src_locations_.begin(), src_locations_.end());
  all.insert(all.end(), dst_locations_.begin(), dst_locations_.end());
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  auto number = [&](int64_t location) {
    return static_cast<int>(std::lower_bound(all.begin(), all.end(), location) - all.begin());
  };
  for (int64_t l : src_locations_) src_index_.push_back(number(l));
  for (int64_t l : dst_locations_) dst_index_.push_back(number(l));
  sent_.assign(all.size(), 0);
  receiver_of_location_.assign(all.size(), -1);
}

void Planner::MarkPart(absl::Span<const int64_t> part) {
  std::vector<int64_t> sorted(part.begin(), part.end());
  std::sort(sorted.begin(), sorted.end());
  auto in = [&](int64_t l) { return std::binary_search(sorted.begin(), sorted.end(), l); };
  src_in_part_.reserve(src_locations_.size());
  for (int64_t l : src_locations_) src_in_part_.push_back(in(l) ? 1 : 0);
  dst_in_part_.reserve(dst_locations_.size());
  for (int64_t l : dst_locations_) dst_in_part_.push_back(in(l) ? 1 : 0);
}

absl::Status Planner::PlanGroup(const std::vector<int>& dst_slots) {
  if (dst_.slot_box(dst_slots[0]).is_empty()) return absl::OkStatus();
  candidates_.clear();
  index_.ForEachIntersecting(dst_.slot_box(dst_slots[0]), [&](int g) { candidates_.push_back(g); });
  return PlanCandidates(dst_slots);
}

absl::Status Planner::PlanPartGroups() {
  some_groups_only_ = true;
  const std::vector<std::vector<int>>& dst_groups = dst_.replica_groups();
  const int n = static_cast<int>(dst_groups.size());
  std::vector<char> whole(n, 0);
  std::vector<Box> dst_boxes;
  dst_boxes.reserve(n);
  for (int gi = 0; gi < n; ++gi) {
    for (int slot : dst_groups[gi]) whole[gi] |= dst_in_part_[slot];
    dst_boxes.push_back(dst_.slot_box(dst_groups[gi][0]));
  }
  // For each destination group not planned whole, the source groups in the part meeting it
  // (ascending), bucketed by destination group: senders[first[gi] .. first[gi + 1]).
  std::vector<std::pair<int, int>> sends;  // (destination group, source group)
  const internal::BoxIndex dst_index(dst_.rank(), dst_boxes);
  for (int g = 0; g < static_cast<int>(groups_.size()); ++g) {
    bool in_part = false;
    for (const auto& [location, slot] : groups_[g].by_location) in_part |= src_in_part_[slot] != 0;
    if (!in_part) continue;
    dst_index.ForEachIntersecting(groups_[g].box, [&](int gi) {
      if (!whole[gi]) sends.push_back({gi, g});
    });
  }
  std::vector<int> first(n + 1, 0), senders(sends.size());
  for (const auto& [gi, g] : sends) ++first[gi + 1];
  for (int gi = 0; gi < n; ++gi) first[gi + 1] += first[gi];
  std::vector<int> fill(first.begin(), first.end() - 1);
  for (const auto& [gi, g] : sends) senders[fill[gi]++] = g;
  for (int gi = 0; gi < n; ++gi) {
    if (whole[gi]) {
      if (absl::Status s = PlanGroup(dst_groups[gi]); !s.ok()) return s;
      continue;
    }
    if (first[gi] == first[gi + 1]) continue;
    if (!index_.is_grid()) {  // the cells of the box depend on every source box meeting it
      if (absl::Status s = PlanGroup(dst_groups[gi]); !s.ok()) return s;
      continue;
    }
    candidates_.assign(senders.begin() + first[gi], senders.begin() + first[gi + 1]);
    if (absl::Status s = PlanCandidates(dst_groups[gi]); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status Planner::PlanCandidates(const std::vector<int>& dst_slots) {
  const Box& box = dst_.slot_box(dst_slots[0]);
  if (box.is_empty()) return absl::OkStatus();
  if (!std::is_sorted(candidates_.begin(), candidates_.end())) {
    std::sort(candidates_.begin(), candidates_.end());
  }
  const int alias_group = AliasGroup(box);
  if (absl::Status s = ComputeCells(box, candidates_, groups_, options_.max_copies,
                                    index_.is_grid(), &cells_, cells_scratch_);
      !s.ok()) {
    return s;
  }
  // Each slot gets at most one piece per cell (before merging).
  const int64_t new_pieces =
      static_cast<int64_t>(cells_.size()) * static_cast<int64_t>(dst_slots.size());
  if (new_pieces > options_.max_copies - num_pieces_) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "Reshard plan too large: more than ", options_.max_copies, " copies (destination box ",
        box.ToString(), " of ", dst_slots.size(), " slots splits into ", cells_.size(),
        " pieces after ", num_pieces_, " pieces for earlier slots)"));
  }
  num_pieces_ += new_pieces;
  remote_.resize(cells_.size());
  for (std::vector<int>& r : remote_) r.clear();
  cell_box_.assign(cells_.size(), -1);
  for (int slot : dst_slots) PlanSlot(slot, alias_group);
  for (size_t i = 0; i < cells_.size(); ++i) {
    if (remote_[i].empty()) continue;
    if (options_.fan_out) {
      FetchFanOut(i, remote_[i]);
    } else {
      FetchDirect(i, remote_[i]);
    }
  }
  return absl::OkStatus();
}

int Planner::AliasGroup(const Box& box) const {
  int alias_group = -1;
  for (int c : candidates_) {
    if (groups_[c].box == box) alias_group = c;
  }
  return alias_group;
}

void Planner::PlanSlot(int slot, int alias_group) {
  const int64_t location = dst_locations_[slot];
  if (alias_group >= 0) {
    const int src_slot = FindSlotAtLocation(groups_[alias_group], location);
    if (src_slot >= 0) {
      alias_of_[slot] = src_slot;
      return;
    }
  }
  const bool counts = dst_in_part_.empty() || dst_in_part_[slot];
  pieces_[slot].reserve(pieces_[slot].size() + cells_.size());
  for (size_t i = 0; i < cells_.size(); ++i) {
    int local = -1;
    for (int h : cells_[i].holders) {
      local = FindSlotAtLocation(groups_[h], location);
      if (local >= 0) break;
    }
    if (local >= 0) {
      pieces_[slot].push_back({false, local, 0, CellBox(i)});
    } else {
      remote_[i].push_back(slot);
      if (counts) lower_bound_elements_ += cells_[i].box.num_elements();
    }
  }
}

int Planner::ChooseRemote(const Cell& cell, int dst_slot) {
  int best_slot = -1;
  int64_t best_load = 0;
  bool several_locations = false;
  bool touches_part = some_groups_only_ && dst_in_part_[dst_slot];
  for (int h : cell.holders) {
    for (const auto& [location, slot] : groups_[h].by_location) {
      const int64_t load = sent_[src_index_[slot]];
      if (best_slot >= 0 && location != src_locations_[best_slot]) several_locations = true;
      if (some_groups_only_ && src_in_part_[slot]) touches_part = true;
      if (best_slot < 0 || load < best_load || (load == best_load && slot < best_slot)) {
        best_slot = slot;
        best_load = load;
      }
    }
  }
  if (several_locations && touches_part) exact_ = false;
  return best_slot;
}

void Planner::FetchDirect(size_t i, const std::vector<int>& needing) {
  const Cell& cell = cells_[i];
  const int64_t bytes = cell.box.num_elements() * element_bytes_;
  for (int slot : needing) {
    const int src_slot = ChooseRemote(cell, slot);
    pieces_[slot].push_back({false, src_slot, 0, CellBox(i)});
    sent_[src_index_[src_slot]] += bytes;
  }
}

void Planner::FetchFanOut(size_t i, const std::vector<int>& needing) {
  const Cell& cell = cells_[i];
  const int64_t box = CellBox(i);
  std::vector<int> receivers;
  std::vector<std::pair<int, int>> extras;  // (slot, receiver index)
  for (int slot : needing) {
    int& receiver = receiver_of_location_[dst_index_[slot]];
    if (receiver < 0) {
      receiver = static_cast<int>(receivers.size());
      receivers.push_back(slot);
    } else {
      extras.push_back({slot, receiver});
    }
  }
  for (int slot : receivers) receiver_of_location_[dst_index_[slot]] = -1;
  const int src_slot = ChooseRemote(cell, receivers[0]);
  pieces_[receivers[0]].push_back({false, src_slot, 0, box});
  sent_[src_index_[src_slot]] += cell.box.num_elements() * element_bytes_;
  for (int r = 1; r < static_cast<int>(receivers.size()); ++r) {
    pieces_[receivers[r]].push_back({true, receivers[(r - 1) / 2], TreeDepth(r), box});
  }
  for (const auto& [slot, r] : extras) {
    pieces_[slot].push_back({true, receivers[r], TreeDepth(r) + 1, box});
  }
}

BoxCopy Planner::MakeCopy(int slot, const Piece& p) const {
  const Box& frame = p.from_destination ? dst_.slot_box(p.src_slot) : src_.slot_box(p.src_slot);
  const int64_t src_location =
      p.from_destination ? dst_locations_[p.src_slot] : src_locations_[p.src_slot];
  BoxCopy copy;
  copy.kind =
      src_location == dst_locations_[slot] ? BoxCopy::Kind::kLocal : BoxCopy::Kind::kCrossLocation;
  copy.from_destination = p.from_destination;
  copy.src_slot = p.src_slot;
  const int rank = dst_.rank();
  const int64_t* origin = arena_.origin(p.box);
  Index src_origin(rank), dst_origin(rank);
  for (int d = 0; d < rank; ++d) {
    src_origin[d] = origin[d] - frame.inclusive_min(d);
    dst_origin[d] = origin[d] - dst_.slot_box(slot).inclusive_min(d);
  }
  copy.src_box = Box(std::move(src_origin), arena_.Shape(p.box));
  copy.dst_slot = slot;
  copy.dst_box = Box(std::move(dst_origin), arena_.Shape(p.box));
  copy.src_location = src_location;
  copy.dst_location = dst_locations_[slot];
  copy.bytes = copy.dst_box.num_elements() * element_bytes_;
  return copy;
}

void AddToTotals(const BoxCopy& copy, ReshardPlan& plan) {
  switch (copy.kind) {
    case BoxCopy::Kind::kAlias:
      plan.aliased_bytes += copy.bytes;
      break;
    case BoxCopy::Kind::kLocal:
      plan.local_bytes += copy.bytes;
      break;
    case BoxCopy::Kind::kCrossLocation:
      plan.cross_location_bytes += copy.bytes;
      break;
  }
  if (copy.from_destination) plan.forwarded_bytes += copy.bytes;
}

ReshardPlan Planner::Assemble() {
  ReshardPlan plan;
  plan.fan_out = options_.fan_out;
  auto emit = [&](BoxCopy&& copy) {
    plan.copies.push_back(std::move(copy));
    AddToTotals(plan.copies.back(), plan);
  };
  // Depth 0 (aliases and copies reading sources) in destination slot order; forwards after,
  // by depth, then slot, then piece order (a slot with an alias has no pieces).
  std::vector<std::tuple<int, int, int>> forwards;  // (depth, slot, piece index)
  size_t count = 0;
  for (int slot = 0; slot < dst_.num_slots(); ++slot) {
    MergePieces(pieces_[slot], arena_);
    for (const Piece& p : pieces_[slot]) count += InPart(slot, p) ? 1 : 0;
    count += alias_of_[slot] >= 0 ? 1 : 0;
  }
  plan.copies.reserve(count);
  for (int slot = 0; slot < dst_.num_slots(); ++slot) {
    if (const int src_slot = alias_of_[slot]; src_slot >= 0) {
      if (!src_in_part_.empty() && !dst_in_part_[slot] && !src_in_part_[src_slot]) continue;
      const Box& box = dst_.slot_box(slot);
      Box local = ShiftOrigin(box, box.origin());
      emit(BoxCopy{BoxCopy::Kind::kAlias, false, src_slot, local, slot, local,
                   src_locations_[src_slot], dst_locations_[slot],
                   box.num_elements() * element_bytes_});
      continue;
    }
    for (int i = 0; i < static_cast<int>(pieces_[slot].size()); ++i) {
      const Piece& p = pieces_[slot][i];
      if (!InPart(slot, p)) continue;
      if (p.depth > 0) {
        forwards.push_back({p.depth, slot, i});
      } else {
        emit(MakeCopy(slot, p));
      }
    }
  }
  std::sort(forwards.begin(), forwards.end());
  for (const auto& [depth, slot, i] : forwards) emit(MakeCopy(slot, pieces_[slot][i]));
  plan.lower_bound_bytes = lower_bound_elements_ * element_bytes_;
  return plan;
}

// Runs `fn` (returning absl::StatusOr<ReshardPlan>), turning allocation failures into
// RESOURCE_EXHAUSTED.
template <typename F>
absl::StatusOr<ReshardPlan> CatchAllocationFailures(const ShardLayout& src, const ShardLayout& dst,
                                                    F&& fn) {
  try {
    return fn();
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "Out of memory planning the reshard of [", absl::StrJoin(src.global_shape(), ","),
        "] from ", src.num_slots(), " to ", dst.num_slots(), " slots"));
  } catch (const std::length_error&) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "Reshard plan of [", absl::StrJoin(src.global_shape(), ","), "] from ", src.num_slots(),
        " to ", dst.num_slots(), " slots exceeds a container's maximum size"));
  }
}

}  // namespace

absl::StatusOr<ReshardPlan> PlanReshard(const ShardLayout& src,
                                        absl::Span<const int64_t> src_locations,
                                        const ShardLayout& dst,
                                        absl::Span<const int64_t> dst_locations,
                                        int64_t element_bytes, const PlanOptions& options) {
  if (absl::Status s =
          CheckArguments(src, src_locations, dst, dst_locations, element_bytes, options.max_copies);
      !s.ok()) {
    return s;
  }
  return CatchAllocationFailures(src, dst, [&]() -> absl::StatusOr<ReshardPlan> {
    Planner planner(src, src_locations, dst, dst_locations, element_bytes, options, nullptr);
    for (const std::vector<int>& dst_slots : dst.replica_groups()) {
      if (absl::Status s = planner.PlanGroup(dst_slots); !s.ok()) return s;
    }
    return planner.Assemble();
  });
}

absl::StatusOr<ReshardPlan> PlanReshardPart(
    const ShardLayout& src, absl::Span<const int64_t> src_locations, const ShardLayout& dst,
    absl::Span<const int64_t> dst_locations, int64_t element_bytes,
    absl::Span<const int64_t> part_locations, const PlanOptions& options) {
  if (absl::Status s =
          CheckArguments(src, src_locations, dst, dst_locations, element_bytes, options.max_copies);
      !s.ok()) {
    return s;
  }
  return CatchAllocationFailures(src, dst, [&]() -> absl::StatusOr<ReshardPlan> {
    {
      Planner planner(src, src_locations, dst, dst_locations, element_bytes, options,
                      &part_locations);
      if (absl::Status s = planner.PlanPartGroups(); !s.ok()) return s;
      if (planner.exact()) return planner.Assemble();
    }
    // A copy of the part chose among replicas by the bytes sent for earlier destination
    // groups: plan every group, keep the part.
    Planner planner(src, src_locations, dst, dst_locations, element_bytes, options,
                    &part_locations);
    for (const std::vector<int>& dst_slots : dst.replica_groups()) {
      if (absl::Status s = planner.PlanGroup(dst_slots); !s.ok()) return s;
    }
    return planner.Assemble();
  });
}

}  // namespace tessera::sharding
