#ifndef TESSERA_BACKENDS_COMMON_PARALLEL_MEMCPY_H_
#define TESSERA_BACKENDS_COMMON_PARALLEL_MEMCPY_H_

// The host memcpy of both platforms. A copy of kParallelMemcpyThresholdBytes or more is split into
// parts of about 256 KiB that the threads of the calling oneTBB task arena copy in parallel (the
// default arena, all hardware threads, when called outside any arena); a smaller copy runs on the
// calling thread alone. Two entry points share that one splitting rule:
//
// StridedMemcpy copies a StridedCopy between two host-addressable regions: every copy of the CPU
// platform, and the Vulkan platform's copies into and out of pinned_host memory.
//
//   StridedMemcpy(src_base, dst_base, copy);  // src_base + copy.src_offset -> dst_base + ...
//
// CopyPieces copies a list of byte ranges: the host side of a staged Vulkan transfer, packing a
// chunk of a user buffer into a staging slot or unpacking one, so that pageable host<->GPU
// transfers are not held to one core's memcpy bandwidth.
//
//   std::vector<MemcpyPiece> pieces;
//   pieces.push_back({.dst = staging + offset, .src = user + src, .size = n});
//   CopyPieces(pieces);
//
// Sources and destinations must not overlap. Thread-safe: touches only the given memory; what the
// helper threads wrote is visible to the caller on return (parallel_for.h).

#include <cstddef>
#include <cstdint>

#include "absl/types/span.h"
#include "ifrt/strided_copy.h"

namespace tessera::backends {

// Copies below this many bytes in all run on the calling thread alone.
inline constexpr int64_t kParallelMemcpyThresholdBytes = int64_t{1} << 20;

// Copies `copy` from src_base + copy.src_offset (+ strides) to dst_base + copy.dst_offset (+ ...).
void StridedMemcpy(const void* src_base, void* dst_base, const StridedCopy& copy);

// One contiguous range: `size` bytes from `src` to `dst`.
struct MemcpyPiece {
  char* dst;
  const char* src;
  size_t size;
};

// Copies every piece.
void CopyPieces(absl::Span<const MemcpyPiece> pieces);

}  // namespace tessera::backends

#endif  // TESSERA_BACKENDS_COMMON_PARALLEL_MEMCPY_H_
