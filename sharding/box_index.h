// sharding/box_index.h: internal spatial index over a set of boxes, used by ShardLayout (coverage
// check) and the planner (overlap queries). Not part of the public API.
#ifndef TESSERA_SHARDING_BOX_INDEX_H_
#define TESSERA_SHARDING_BOX_INDEX_H_

#include <cstdint>
#include <vector>

#include "absl/functional/function_ref.h"
#include "sharding/box.h"

namespace tessera::sharding::internal {

// BoxIndex: finds which of a fixed set of boxes (all of one rank) intersect a query box. Immutable
// after construction; thread-compatible. Borrows nothing.
//
// When the non-empty boxes form a grid (per dim a sorted list of boundaries, every box exactly one
// cell, every cell one box) -- as every layout from a ShardingParam and every 1-D partition does --
// a query costs a binary search per dim plus one step per hit. Otherwise boxes are sorted by their
// dim-0 minimum and a query scans the window of boxes that can reach it.
class BoxIndex {
 public:
  BoxIndex(int rank, const std::vector<Box>& boxes);

  // Calls fn(i) for each box i with a non-empty intersection with `query`, in increasing i for the
  // fallback path and in row-major cell order for grids.
  void ForEachIntersecting(const Box& query, absl::FunctionRef<void(int)> fn) const;
  // True iff the union of the boxes contains `region` (precondition: the boxes and `region` have
  // the index's rank).
  bool Covers(const Box& region) const;
  // True iff the non-empty boxes form a grid (see above): then they are pairwise disjoint and no
  // box boundary crosses the interior of another box.
  bool is_grid() const { return is_grid_; }

 private:
  int rank_;
  std::vector<Box> boxes_;
  bool is_grid_ = false;
  // Grid: per dim boundaries; cell (row-major over intervals) -> box id.
  std::vector<std::vector<int64_t>> bounds_;
  std::vector<int> cell_to_box_;
  // Fallback: non-empty box ids sorted by dim-0 minimum, largest dim-0 size.
  std::vector<int> by_min0_;
  int64_t max_size0_ = 0;
};

}  // namespace tessera::sharding::internal

#endif  // TESSERA_SHARDING_BOX_INDEX_H_
