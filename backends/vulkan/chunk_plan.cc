#include "backends/vulkan/chunk_plan.h"

namespace tessera::vulkan {

RunCursor::RunCursor(const StridedCopy& c) : n_(c.Normalized()) {
  if (n_.num_elements() == 0) return;
  done_ = false;
  const int rank = static_cast<int>(n_.extent.size());
  const bool contiguous = n_.inner_contiguous();
  outer_rank_ = contiguous ? rank - 1 : rank;
  run_bytes_ = contiguous ? n_.extent.back() * n_.element_bytes : n_.element_bytes;
  idx_.assign(outer_rank_, 0);
  src_ = n_.src_offset;
  dst_ = n_.dst_offset;
}

void RunCursor::Advance(int64_t bytes) {
  consumed_ += bytes;
  if (consumed_ < run_bytes_) return;
  consumed_ = 0;
  int d = outer_rank_ - 1;
  for (; d >= 0; --d) {
    ++idx_[d];
    src_ += n_.src_byte_strides[d];
    dst_ += n_.dst_byte_strides[d];
    if (idx_[d] < n_.extent[d]) break;
    src_ -= n_.src_byte_strides[d] * n_.extent[d];
    dst_ -= n_.dst_byte_strides[d] * n_.extent[d];
    idx_[d] = 0;
  }
  if (d < 0) done_ = true;
}

void SkipDone(PlanCursor& pc, const std::vector<const StridedCopy*>& geoms) {
  while (pc.run.done() && pc.copy < geoms.size()) {
    if (++pc.copy < geoms.size()) pc.run = RunCursor(*geoms[pc.copy]);
  }
}

PlanCursor StartCursor(const std::vector<const StridedCopy*>& geoms) {
  PlanCursor pc;
  if (!geoms.empty()) pc.run = RunCursor(*geoms[0]);
  SkipDone(pc, geoms);
  return pc;
}

bool CursorDone(const PlanCursor& pc, const std::vector<const StridedCopy*>& geoms) {
  return pc.copy >= geoms.size();
}

void AddRegion(std::vector<Region>* regions, size_t copy, int64_t src, int64_t dst, int64_t n) {
  if (!regions->empty()) {
    Region& last = regions->back();
    if (last.copy == copy && last.src + last.size == src && last.dst + last.size == dst) {
      last.size += n;
      return;
    }
  }
  regions->push_back(Region{copy, src, dst, n});
}

}  // namespace tessera::vulkan
