#include "backends/vulkan/parallel_memcpy.h"

#include <algorithm>
#include <cstring>

#include "backends/parallel_for.h"
#include "oneapi/tbb/blocked_range.h"

namespace tessera::vulkan {

void CopyPieces(const std::vector<MemcpyPiece>& pieces) {
  size_t total = 0;
  for (const MemcpyPiece& p : pieces) total += p.size;
  if (total < kParallelMemcpyThreshold) {
    for (const MemcpyPiece& p : pieces) std::memcpy(p.dst, p.src, p.size);
    return;
  }
  // Cut every piece into parts of at most `part` bytes and copy the parts in
  // parallel: one long run and many short runs alike spread over the threads.
  constexpr size_t kPart = size_t{256} << 10;
  std::vector<MemcpyPiece> parts;
  parts.reserve(pieces.size() + total / kPart + 1);
  for (const MemcpyPiece& p : pieces) {
    for (size_t off = 0; off < p.size; off += kPart) {
      parts.push_back({p.dst + off, p.src + off, std::min(kPart, p.size - off)});
    }
  }
  backends::ParallelFor(tbb::blocked_range<size_t>(0, parts.size()),
                        [&](const tbb::blocked_range<size_t>& r) {
                          for (size_t i = r.begin(); i < r.end(); ++i) {
                            std::memcpy(parts[i].dst, parts[i].src, parts[i].size);
                          }
                        });
}

}  // namespace tessera::vulkan
