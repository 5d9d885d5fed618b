#ifndef TESSERA_BACKENDS_VULKAN_CHUNK_PLAN_H_
#define TESSERA_BACKENDS_VULKAN_CHUNK_PLAN_H_

// Cutting a list of StridedCopy geometries into staging chunks: the copies' contiguous runs are
// walked in order and packed run after run into chunks of at most `capacity` bytes, a run split
// across chunks where it does not fit. Every staged transfer (host<->device, cross-device) plans
// its chunks here.
//
//   PlanCursor pc = StartCursor(geoms);
//   while (!CursorDone(pc, geoms)) {
//     regions.clear();
//     PlanChunk(pc, geoms, chunk_bytes, nullptr, &regions, NoPiece());
//     ...  // record `regions`
//   }
//
// Borrowed: `geoms` (and the StridedCopy objects it points to) must outlive every cursor over it.
// Cursors are values; nothing here is shared, so thread-safety is the caller's (one thread per
// cursor). No Vulkan header.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "ifrt/strided_copy.h"

namespace tessera::vulkan {

// The most regions one chunk may produce on either side (one vkCmdCopyBuffer call records them
// all).
inline constexpr size_t kMaxRegionsPerChunk = 65536;

// The contiguous runs of one StridedCopy, one at a time, consumable in parts. A default-constructed
// cursor is done.
class RunCursor {
 public:
  RunCursor() = default;
  explicit RunCursor(const StridedCopy& c);
  bool done() const { return done_; }
  // Byte offsets of the unconsumed part of the current run.
  int64_t src() const { return src_ + consumed_; }
  int64_t dst() const { return dst_ + consumed_; }
  // Unconsumed bytes of the current run.
  int64_t remaining() const { return run_bytes_ - consumed_; }
  // Consumes `bytes` (<= remaining()) of the current run; moves to the next run when the current
  // one is used up.
  void Advance(int64_t bytes);

 private:
  StridedCopy n_;
  bool done_ = true;
  int outer_rank_ = 0;
  int64_t run_bytes_ = 0;
  Index idx_;
  int64_t src_ = 0, dst_ = 0, consumed_ = 0;
};

// A position in a list of copies' runs: copy index `copy` (== geoms.size() when done) and the
// position in its runs.
struct PlanCursor {
  size_t copy = 0;
  RunCursor run;
};

// One contiguous byte range of copy `copy`, from offset `src` to offset `dst`. Which side is the
// staging chunk depends on the list it is in (PlanChunk).
struct Region {
  size_t copy;
  int64_t src, dst, size;
};

// Moves `pc` past exhausted copies (and empty ones).
void SkipDone(PlanCursor& pc, const std::vector<const StridedCopy*>& geoms);

// A cursor at the first run of `geoms`.
PlanCursor StartCursor(const std::vector<const StridedCopy*>& geoms);

// Whether `pc` has consumed every run of `geoms`.
bool CursorDone(const PlanCursor& pc, const std::vector<const StridedCopy*>& geoms);

// Appends a region, merging it into the last one when both are contiguous on both sides and belong
// to the same copy.
void AddRegion(std::vector<Region>* regions, size_t copy, int64_t src, int64_t dst, int64_t n);

// Packs up to `capacity` bytes of runs into a chunk laid out run after run. Adds (buffer ->
// staging) regions to `src_regions` and (staging -> buffer) regions to `dst_regions` (either may be
// null) and calls on_piece(copy, src, dst, bytes, staging_offset) for each piece. Stops early when
// a region list reaches kMaxRegionsPerChunk. Returns the bytes packed.
template <typename F>
int64_t PlanChunk(PlanCursor& pc, const std::vector<const StridedCopy*>& geoms, int64_t capacity,
                  std::vector<Region>* src_regions, std::vector<Region>* dst_regions,
                  F&& on_piece) {
  int64_t filled = 0;
  while (!CursorDone(pc, geoms) && filled < capacity) {
    if ((src_regions && src_regions->size() >= kMaxRegionsPerChunk) ||
        (dst_regions && dst_regions->size() >= kMaxRegionsPerChunk)) {
      break;
    }
    const int64_t n = std::min(pc.run.remaining(), capacity - filled);
    const int64_t src = pc.run.src(), dst = pc.run.dst();
    if (src_regions) AddRegion(src_regions, pc.copy, src, filled, n);
    if (dst_regions) AddRegion(dst_regions, pc.copy, filled, dst, n);
    on_piece(pc.copy, src, dst, n, filled);
    filled += n;
    pc.run.Advance(n);
    SkipDone(pc, geoms);
  }
  return filled;
}

// An on_piece for PlanChunk that does nothing.
struct NoPiece {
  void operator()(size_t, int64_t, int64_t, int64_t, int64_t) const {}
};

}  // namespace tessera::vulkan

#endif  // TESSERA_BACKENDS_VULKAN_CHUNK_PLAN_H_
