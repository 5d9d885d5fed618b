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

// Paints each source shard with the global row-major id of its elements,
// runs `plan`, and checks that every destination element is written exactly
// once with the right id, that forwards only read filled elements, that
// every copy's bookkeeping (devices, kinds, bytes) is consistent, and that
// alias copies cover whole equal shards on one device.
inline ::testing::AssertionResult SimulatePlan(const ReshardPlan& plan, const ShardLayout& src,
                                               absl::Span<const int64_t> src_devices,
                                               const ShardLayout& dst,
                                               absl::Span<const int64_t> dst_devices,
                                               int64_t element_bytes) {
  const Index& global = src.global_shape();
  std::vector<std::vector<int64_t>> src_buf(src.num_slots());
  for (int s = 0; s < src.num_slots(); ++s) {
    const Box& box = src.slot_box(s);
    std::vector<int64_t> local = Offsets(box.shape(), Box::FromShape(box.shape()));
    std::vector<int64_t> ids = Offsets(global, box);
    src_buf[s].assign(box.num_elements(), -1);
    for (size_t i = 0; i < ids.size(); ++i) src_buf[s][local[i]] = ids[i];
  }
  std::vector<std::vector<int64_t>> dst_buf(dst.num_slots()), writes(dst.num_slots());
  for (int s = 0; s < dst.num_slots(); ++s) {
    dst_buf[s].assign(dst.slot_box(s).num_elements(), -1);
    writes[s].assign(dst.slot_box(s).num_elements(), 0);
  }
  int64_t cross = 0, local_bytes = 0, alias = 0, forwarded = 0;
  for (size_t c = 0; c < plan.copies.size(); ++c) {
    const BoxCopy& copy = plan.copies[c];
    const std::string where = absl::StrCat("copy #", c, " ", copy.src_slot, copy.src_box.ToString(),
                                           " -> ", copy.dst_slot, copy.dst_box.ToString());
    if (copy.src_box.shape() != copy.dst_box.shape()) {
      return ::testing::AssertionFailure() << where << ": shapes differ";
    }
    if (copy.bytes != copy.src_box.num_elements() * element_bytes) {
      return ::testing::AssertionFailure() << where << ": bad bytes";
    }
    if (copy.src_box.is_empty()) {
      return ::testing::AssertionFailure() << where << ": empty copy";
    }
    const int64_t expect_src_device =
        copy.from_destination ? dst_devices[copy.src_slot] : src_devices[copy.src_slot];
    if (copy.src_device != expect_src_device || copy.dst_device != dst_devices[copy.dst_slot]) {
      return ::testing::AssertionFailure() << where << ": wrong devices";
    }
    const bool same = copy.src_device == copy.dst_device;
    switch (copy.kind) {
      case BoxCopy::Kind::kAlias:
        if (!same || copy.from_destination ||
            src.slot_box(copy.src_slot) != dst.slot_box(copy.dst_slot) ||
            copy.dst_box != Box::FromShape(dst.slot_box(copy.dst_slot).shape())) {
          return ::testing::AssertionFailure() << where << ": bad alias";
        }
        alias += copy.bytes;
        break;
      case BoxCopy::Kind::kLocal:
        if (!same) return ::testing::AssertionFailure() << where << ": not local";
        local_bytes += copy.bytes;
        break;
      case BoxCopy::Kind::kCrossDevice:
        if (same) return ::testing::AssertionFailure() << where << ": not cross";
        cross += copy.bytes;
        break;
    }
    if (copy.from_destination) forwarded += copy.bytes;
    const Box& src_frame =
        copy.from_destination ? dst.slot_box(copy.src_slot) : src.slot_box(copy.src_slot);
    const Box& dst_frame = dst.slot_box(copy.dst_slot);
    if (!Contains(Box::FromShape(src_frame.shape()), copy.src_box) ||
        !Contains(Box::FromShape(dst_frame.shape()), copy.dst_box)) {
      return ::testing::AssertionFailure() << where << ": box out of shard";
    }
    std::vector<int64_t> from = Offsets(src_frame.shape(), copy.src_box);
    std::vector<int64_t> to = Offsets(dst_frame.shape(), copy.dst_box);
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
  for (int s = 0; s < dst.num_slots(); ++s) {
    const Box& box = dst.slot_box(s);
    std::vector<int64_t> local = Offsets(box.shape(), Box::FromShape(box.shape()));
    std::vector<int64_t> ids = Offsets(global, box);
    for (size_t i = 0; i < ids.size(); ++i) {
      if (writes[s][local[i]] != 1) {
        return ::testing::AssertionFailure() << "dst slot " << s << " element " << ids[i]
                                             << " written " << writes[s][local[i]] << " times";
      }
      if (dst_buf[s][local[i]] != ids[i]) {
        return ::testing::AssertionFailure()
               << "dst slot " << s << " element " << ids[i] << " holds " << dst_buf[s][local[i]];
      }
    }
  }
  if (cross != plan.cross_device_bytes || local_bytes != plan.local_bytes ||
      alias != plan.aliased_bytes || forwarded != plan.forwarded_bytes ||
      plan.num_copies != static_cast<int64_t>(plan.copies.size())) {
    return ::testing::AssertionFailure() << "totals disagree with the copies";
  }
  return ::testing::AssertionSuccess();
}

// Brute force: bytes of each destination slot that no source slot on its
// device holds, summed over destination slots.
inline int64_t BruteForceLowerBound(const ShardLayout& src, absl::Span<const int64_t> src_devices,
                                    const ShardLayout& dst, absl::Span<const int64_t> dst_devices,
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
        held = src_devices[s] == dst_devices[d] && Contains(src.slot_box(s), point);
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
