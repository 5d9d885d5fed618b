#include "backends/cpu/host_allocator.h"

#include <cstdlib>

#include "backends/common/shared_host_memory.h"

namespace tessera::cpu {
namespace {

void Release(void* data) {
  if (!backends::FreeSharedHostMemory(data)) std::free(data);
}

}  // namespace

HostAllocator::~HostAllocator() {
  for (auto& [size, blocks] : free_) {
    for (void* p : blocks) Release(p);
  }
}

int64_t HostAllocator::RoundedSize(int64_t bytes) {
  // Small sizes to 64 bytes, large ones to whole pages (so that blocks are reusable across sizes
  // that differ by a few elements).
  const int64_t granule = bytes >= (int64_t{1} << 20) ? 4096 : kAlignment;
  return std::max<int64_t>(kAlignment, (bytes + granule - 1) / granule * granule);
}

void* HostAllocator::Allocate(int64_t rounded_bytes) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = free_.find(rounded_bytes);
    if (it != free_.end() && !it->second.empty()) {
      void* p = it->second.back();
      it->second.pop_back();
      cached_bytes_ -= rounded_bytes;
      return p;
    }
  }
  if (void* shared = backends::AllocateSharedHostMemory(rounded_bytes); shared != nullptr) {
    return shared;
  }
  return std::aligned_alloc(kAlignment, rounded_bytes);
}

void HostAllocator::Free(void* data, int64_t rounded_bytes) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (cached_bytes_ + rounded_bytes <= max_cached_bytes_) {
      free_[rounded_bytes].push_back(data);
      cached_bytes_ += rounded_bytes;
      return;
    }
  }
  Release(data);
}

}  // namespace tessera::cpu
