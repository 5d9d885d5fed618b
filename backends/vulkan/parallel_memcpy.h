#ifndef TESSERA_BACKENDS_VULKAN_PARALLEL_MEMCPY_H_
#define TESSERA_BACKENDS_VULKAN_PARALLEL_MEMCPY_H_

// CopyPieces: the host side of a staged transfer — packing a chunk of a user
// buffer into a staging slot, or unpacking one — as a list of byte ranges,
// copied by several threads (oneTBB) when the chunk is large, so that pageable
// host<->GPU transfers are not held to one core's memcpy bandwidth.
//
//   std::vector<MemcpyPiece> pieces;
//   pieces.push_back({staging + offset, user + src, n});
//   CopyPieces(pieces);
//
// Ranges must not overlap. Thread-safe (touches only the given memory).

#include <cstddef>
#include <vector>

namespace tessera::vulkan {

struct MemcpyPiece {
  char* dst;
  const char* src;
  size_t size;
};

// Below this many bytes in all, the calling thread copies alone.
inline constexpr size_t kParallelMemcpyThreshold = size_t{1} << 20;

void CopyPieces(const std::vector<MemcpyPiece>& pieces);

}  // namespace tessera::vulkan

#endif  // TESSERA_BACKENDS_VULKAN_PARALLEL_MEMCPY_H_
