#include "sharding/box_index.h"

#include <algorithm>
#include <map>
#include <vector>

namespace tessera::sharding::internal {
namespace {

int64_t IndexOf(const std::vector<int64_t>& sorted, int64_t v) {
  return std::lower_bound(sorted.begin(), sorted.end(), v) - sorted.begin();
}

// Recursive sweep: does the union of boxes `ids` contain `region` in dims [d, rank)? All boxes
// already span region's extent in dims [0, d). The answer depends only on (d, ids), so it is
// memoized per dim in `memo`: the sweep visits each distinct set of boxes spanning a slab once, not
// each cell of the grid of all boundaries (which grows as the product of boundaries per dim). (A
// std::map: it stays destructible if an allocation throws.)
bool SweepCovers(const std::vector<Box>& boxes, const std::vector<int>& ids, const Box& region,
                 int d, std::vector<std::map<std::vector<int>, bool>>& memo) {
  if (ids.empty()) return false;
  if (d == region.rank()) return true;
  for (int i : ids) {  // one box spanning the rest of the region settles it
    bool spans = true;
    for (int e = d; e < region.rank() && spans; ++e) {
      spans = boxes[i].inclusive_min(e) <= region.inclusive_min(e) &&
              boxes[i].exclusive_max(e) >= region.exclusive_max(e);
    }
    if (spans) return true;
  }
  if (auto it = memo[d].find(ids); it != memo[d].end()) return it->second;
  const int64_t lo = region.inclusive_min(d), hi = region.exclusive_max(d);
  std::vector<int64_t> cuts = {lo, hi};
  for (int i : ids) {
    int64_t a = boxes[i].inclusive_min(d), b = boxes[i].exclusive_max(d);
    if (a > lo && a < hi) cuts.push_back(a);
    if (b > lo && b < hi) cuts.push_back(b);
  }
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  bool covered = true;
  std::vector<int> sub;
  for (size_t c = 0; c + 1 < cuts.size() && covered; ++c) {
    sub.clear();
    for (int i : ids) {
      if (boxes[i].inclusive_min(d) <= cuts[c] && boxes[i].exclusive_max(d) >= cuts[c + 1]) {
        sub.push_back(i);
      }
    }
    covered = SweepCovers(boxes, sub, region, d + 1, memo);
  }
  memo[d].emplace(ids, covered);
  return covered;
}

}  // namespace

BoxIndex::BoxIndex(int rank, const std::vector<Box>& boxes) : rank_(rank), boxes_(boxes) {
  std::vector<int> nonempty;
  for (int i = 0; i < static_cast<int>(boxes_.size()); ++i) {
    if (!boxes_[i].is_empty()) nonempty.push_back(i);
  }
  // Grid detection.
  bounds_.assign(rank_, {});
  for (int d = 0; d < rank_; ++d) {
    for (int i : nonempty) {
      bounds_[d].push_back(boxes_[i].inclusive_min(d));
      bounds_[d].push_back(boxes_[i].exclusive_max(d));
    }
    std::sort(bounds_[d].begin(), bounds_[d].end());
    bounds_[d].erase(std::unique(bounds_[d].begin(), bounds_[d].end()), bounds_[d].end());
  }
  int64_t cells = nonempty.empty() ? 0 : 1;
  for (int d = 0; d < rank_ && cells > 0; ++d) {
    cells *= static_cast<int64_t>(bounds_[d].size()) - 1;
    if (cells > static_cast<int64_t>(nonempty.size())) break;
  }
  if (cells == static_cast<int64_t>(nonempty.size()) && cells > 0) {
    is_grid_ = true;
    cell_to_box_.assign(cells, -1);
    for (int i : nonempty) {
      int64_t cell = 0;
      for (int d = 0; d < rank_; ++d) {
        int64_t a = IndexOf(bounds_[d], boxes_[i].inclusive_min(d));
        int64_t b = IndexOf(bounds_[d], boxes_[i].exclusive_max(d));
        if (b != a + 1) {
          is_grid_ = false;
          break;
        }
        cell = cell * (static_cast<int64_t>(bounds_[d].size()) - 1) + a;
      }
      if (!is_grid_) break;
      if (cell_to_box_[cell] != -1) {
        is_grid_ = false;  // duplicate box
        break;
      }
      cell_to_box_[cell] = i;
    }
  }
  if (!is_grid_) {
    bounds_.clear();
    cell_to_box_.clear();
    by_min0_ = nonempty;
    if (rank_ > 0) {
      std::stable_sort(by_min0_.begin(), by_min0_.end(), [&](int a, int b) {
        return boxes_[a].inclusive_min(0) < boxes_[b].inclusive_min(0);
      });
      for (int i : nonempty) {
        max_size0_ = std::max(max_size0_, boxes_[i].size(0));
      }
    }
  }
}

void BoxIndex::ForEachIntersecting(const Box& query, absl::FunctionRef<void(int)> fn) const {
  if (query.is_empty()) return;
  if (is_grid_) {
    // Per dim the interval range [lo, hi) of cells overlapping the query.
    absl::InlinedVector<int64_t, 6> lo(rank_), hi(rank_), cur(rank_);
    for (int d = 0; d < rank_; ++d) {
      const auto& b = bounds_[d];
      const int64_t n = static_cast<int64_t>(b.size()) - 1;
      // First interval whose end > query min; last whose start < query max.
      lo[d] = std::upper_bound(b.begin(), b.end(), query.inclusive_min(d)) - b.begin() - 1;
      lo[d] = std::max<int64_t>(lo[d], 0);
      hi[d] = std::lower_bound(b.begin(), b.end(), query.exclusive_max(d)) - b.begin();
      hi[d] = std::min(hi[d], n);
      if (lo[d] >= hi[d] || b[lo[d] + 1] <= query.inclusive_min(d)) return;
      cur[d] = lo[d];
    }
    while (true) {
      int64_t cell = 0;
      for (int d = 0; d < rank_; ++d) {
        cell = cell * (static_cast<int64_t>(bounds_[d].size()) - 1) + cur[d];
      }
      fn(cell_to_box_[cell]);
      int d = rank_ - 1;
      for (; d >= 0; --d) {
        if (++cur[d] < hi[d]) break;
        cur[d] = lo[d];
      }
      if (d < 0) return;
    }
  }
  if (rank_ == 0) {
    for (int i : by_min0_) fn(i);
    return;
  }
  const int64_t qlo = query.inclusive_min(0), qhi = query.exclusive_max(0);
  auto first = std::lower_bound(by_min0_.begin(), by_min0_.end(), qlo - max_size0_ + 1,
                                [&](int i, int64_t v) { return boxes_[i].inclusive_min(0) < v; });
  std::vector<int> hits;
  for (auto it = first; it != by_min0_.end(); ++it) {
    const Box& b = boxes_[*it];
    if (b.inclusive_min(0) >= qhi) break;
    if (!Intersect(b, query).is_empty()) hits.push_back(*it);
  }
  std::sort(hits.begin(), hits.end());
  for (int i : hits) fn(i);
}

bool BoxIndex::Covers(const Box& region) const {
  if (region.is_empty()) return true;
  if (is_grid_) {
    for (int d = 0; d < rank_; ++d) {
      if (bounds_[d].front() > region.inclusive_min(d) ||
          bounds_[d].back() < region.exclusive_max(d)) {
        return false;
      }
    }
    return true;
  }
  std::vector<int> ids;
  ForEachIntersecting(region, [&](int i) { ids.push_back(i); });
  std::vector<std::map<std::vector<int>, bool>> memo(rank_);
  return SweepCovers(boxes_, ids, region, 0, memo);
}

}  // namespace tessera::sharding::internal
