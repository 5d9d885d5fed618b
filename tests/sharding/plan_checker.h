// tests/sharding/plan_checker.h: executes a ReshardPlan on painted host
// buffers and checks it, independently of the planner's own bookkeeping.
#ifndef TESSERA_TESTS_SHARDING_PLAN_CHECKER_H_
#define TESSERA_TESTS_SHARDING_PLAN_CHECKER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "gtest/gtest.h"
#include "sharding/box.h"
#include "sharding/reshard_plan.h"
#include "sharding/shard_layout.h"

namespace tessera::sharding::testing {

// Row-major element offsets of `box` inside a buffer of `shape`.
inline std::vector<int64_t> Offsets(const Index& shape, const Box& box) {
  std::vector<int64_t> out;
  ForEachContiguousRun(shape, box, [&](int64_t o, int64_t n) {
    for (int64_t e = 0; e < n; ++e) out.push_back(o + e);
  });
  return out;
}

// The boxes of the grid that `cuts` make: cuts[d] holds dimension d's boundaries, sorted, first 0
// and last the dimension's size (repeats give empty boxes). Row-major over the grid.
inline std::vector<Box> GridBoxes(const std::vector<std::vector<int64_t>>& cuts) {
  const int rank = static_cast<int>(cuts.size());
  std::vector<Box> boxes;
  Index cur(rank, 0);
  while (true) {
    Index origin(rank), size(rank);
    for (int d = 0; d < rank; ++d) {
      origin[d] = cuts[d][cur[d]];
      size[d] = cuts[d][cur[d] + 1] - origin[d];
    }
    boxes.emplace_back(origin, size);
    int d = rank - 1;
    for (; d >= 0; --d) {
      if (++cur[d] + 1 < static_cast<int64_t>(cuts[d].size())) break;
      cur[d] = 0;
    }
    if (d < 0) break;
  }
  return boxes;
}

namespace internal {

// Per slot, the global row-major id of each element of its box (the painted
// contents of a source shard, the expected contents of a destination shard).
inline std::vector<std::vector<int64_t>> PaintedShards(const ShardLayout& layout) {
  // The runs of a box in the global array come in the row-major order of the
  // shard's own buffer, so element i of the shard is the i-th global id.
  std::vector<std::vector<int64_t>> buffers(layout.num_slots());
  for (int s = 0; s < layout.num_slots(); ++s)
    buffers[s] = Offsets(layout.global_shape(), layout.slot_box(s));
  return buffers;
}

// Byte totals of a plan, recounted from its copies.
struct Totals {
  int64_t cross = 0, local = 0, alias = 0, forwarded = 0;
};

// Checks one copy's bookkeeping (shapes, bytes, locations, kind, boxes within
// their shards) and adds its bytes to `totals`.
inline ::testing::AssertionResult CheckCopy(const BoxCopy& copy, const std::string& where,
                                            const ShardLayout& src,
                                            absl::Span<const int64_t> src_locations,
                                            const ShardLayout& dst,
                                            absl::Span<const int64_t> dst_locations,
                                            int64_t element_bytes, Totals& totals) {
  if (copy.src_box.shape() != copy.dst_box.shape()) {
    return ::testing::AssertionFailure() << where << ": shapes differ";
  }
  if (copy.bytes != copy.src_box.num_elements() * element_bytes) {
    return ::testing::AssertionFailure() << where << ": bad bytes";
  }
  if (copy.src_box.is_empty()) return ::testing::AssertionFailure() << where << ": empty copy";
  const int64_t expect_src_location =
      copy.from_destination ? dst_locations[copy.src_slot] : src_locations[copy.src_slot];
  if (copy.src_location != expect_src_location ||
      copy.dst_location != dst_locations[copy.dst_slot]) {
    return ::testing::AssertionFailure() << where << ": wrong locations";
  }
  const bool same = copy.src_location == copy.dst_location;
  switch (copy.kind) {
    case BoxCopy::Kind::kAlias:
      if (!same || copy.from_destination ||
          src.slot_box(copy.src_slot) != dst.slot_box(copy.dst_slot) ||
          copy.dst_box != Box::FromShape(dst.slot_box(copy.dst_slot).shape())) {
        return ::testing::AssertionFailure() << where << ": bad alias";
      }
      totals.alias += copy.bytes;
      break;
    case BoxCopy::Kind::kLocal:
      if (!same) return ::testing::AssertionFailure() << where << ": not local";
      totals.local += copy.bytes;
      break;
    case BoxCopy::Kind::kCrossLocation:
      if (same) return ::testing::AssertionFailure() << where << ": not cross";
      totals.cross += copy.bytes;
      break;
  }
  if (copy.from_destination) totals.forwarded += copy.bytes;
  const Box& src_frame =
      copy.from_destination ? dst.slot_box(copy.src_slot) : src.slot_box(copy.src_slot);
  if (!Contains(Box::FromShape(src_frame.shape()), copy.src_box) ||
      !Contains(Box::FromShape(dst.slot_box(copy.dst_slot).shape()), copy.dst_box)) {
    return ::testing::AssertionFailure() << where << ": box out of shard";
  }
  return ::testing::AssertionSuccess();
}

// Checks that every destination element was written exactly once, with its id.
inline ::testing::AssertionResult CheckDestinations(
    const ShardLayout& dst, const std::vector<std::vector<int64_t>>& dst_buf,
    const std::vector<std::vector<int64_t>>& writes) {
  for (int s = 0; s < dst.num_slots(); ++s) {
    // Element i of the shard's buffer has the i-th global id of its box's runs.
    std::vector<int64_t> ids = Offsets(dst.global_shape(), dst.slot_box(s));
    for (size_t i = 0; i < ids.size(); ++i) {
      if (writes[s][i] != 1) {
        return ::testing::AssertionFailure() << "dst slot " << s << " element " << ids[i]
                                             << " written " << writes[s][i] << " times";
      }
      if (dst_buf[s][i] != ids[i]) {
        return ::testing::AssertionFailure()
               << "dst slot " << s << " element " << ids[i] << " holds " << dst_buf[s][i];
      }
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace internal

// Paints each source shard with the global row-major id of its elements,
// runs `plan`, and checks that every destination element is written exactly
// once with the right id, that forwards only read filled elements, that
// every copy's bookkeeping (locations, kinds, bytes) is consistent, and that
// alias copies cover whole equal shards at one location.
inline ::testing::AssertionResult SimulatePlan(const ReshardPlan& plan, const ShardLayout& src,
                                               absl::Span<const int64_t> src_locations,
                                               const ShardLayout& dst,
                                               absl::Span<const int64_t> dst_locations,
                                               int64_t element_bytes) {
  const std::vector<std::vector<int64_t>> src_buf = internal::PaintedShards(src);
  std::vector<std::vector<int64_t>> dst_buf(dst.num_slots()), writes(dst.num_slots());
  for (int s = 0; s < dst.num_slots(); ++s) {
    dst_buf[s].assign(dst.slot_box(s).num_elements(), -1);
    writes[s].assign(dst.slot_box(s).num_elements(), 0);
  }
  internal::Totals totals;
  for (size_t c = 0; c < plan.copies.size(); ++c) {
    const BoxCopy& copy = plan.copies[c];
    const std::string where = absl::StrCat("copy #", c, " ", copy.src_slot, copy.src_box.ToString(),
                                           " -> ", copy.dst_slot, copy.dst_box.ToString());
    if (::testing::AssertionResult r = internal::CheckCopy(copy, where, src, src_locations, dst,
                                                           dst_locations, element_bytes, totals);
        !r) {
      return r;
    }
    const Box& src_frame =
        copy.from_destination ? dst.slot_box(copy.src_slot) : src.slot_box(copy.src_slot);
    std::vector<int64_t> from = Offsets(src_frame.shape(), copy.src_box);
    std::vector<int64_t> to = Offsets(dst.slot_box(copy.dst_slot).shape(), copy.dst_box);
    const std::vector<int64_t>& in =
        copy.from_destination ? dst_buf[copy.src_slot] : src_buf[copy.src_slot];
    for (size_t i = 0; i < from.size(); ++i) {
      if (copy.from_destination && writes[copy.src_slot][from[i]] == 0) {
        return ::testing::AssertionFailure() << where << ": forwards an element not yet written";
      }
      dst_buf[copy.dst_slot][to[i]] = in[from[i]];
      ++writes[copy.dst_slot][to[i]];
    }
  }
  if (::testing::AssertionResult r = internal::CheckDestinations(dst, dst_buf, writes); !r) {
    return r;
  }
  if (totals.cross != plan.cross_location_bytes || totals.local != plan.local_bytes ||
      totals.alias != plan.aliased_bytes || totals.forwarded != plan.forwarded_bytes) {
    return ::testing::AssertionFailure() << "totals disagree with the copies";
  }
  return ::testing::AssertionSuccess();
}

// Brute force: bytes of each destination slot that no source slot at its
// location holds, summed over destination slots.
inline int64_t BruteForceLowerBound(const ShardLayout& src, absl::Span<const int64_t> src_locations,
                                    const ShardLayout& dst, absl::Span<const int64_t> dst_locations,
                                    int64_t element_bytes) {
  int64_t missing = 0;
  for (int d = 0; d < dst.num_slots(); ++d) {
    const Box& box = dst.slot_box(d);
    if (box.is_empty()) continue;
    Index idx(box.origin().begin(), box.origin().end());
    const int rank = box.rank();
    while (true) {
      Box point(idx, Index(rank, 1));
      bool held = false;
      for (int s = 0; s < src.num_slots() && !held; ++s) {
        held = src_locations[s] == dst_locations[d] && Contains(src.slot_box(s), point);
      }
      if (!held) ++missing;
      int k = rank - 1;
      for (; k >= 0; --k) {
        if (++idx[k] < box.exclusive_max(k)) break;
        idx[k] = box.inclusive_min(k);
      }
      if (k < 0) break;
    }
  }
  return missing * element_bytes;
}

}  // namespace tessera::sharding::testing

#endif  // TESSERA_TESTS_SHARDING_PLAN_CHECKER_H_
