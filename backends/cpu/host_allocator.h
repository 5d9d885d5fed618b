#ifndef TESSERA_BACKENDS_CPU_HOST_ALLOCATOR_H_
#define TESSERA_BACKENDS_CPU_HOST_ALLOCATOR_H_

// HostAllocator: 64-byte aligned host allocations with a cache of freed blocks by exact (rounded)
// size, so that repeated reshards of the same arrays reuse memory whose pages are already mapped
// instead of paying a page fault per 4 KiB on every new buffer. The cache holds at most
// `max_cached_bytes`; beyond it, blocks go back to the system.
//
// Blocks of kSharedHostMemoryMinBytes or more come from shared host memory
// (backends/common/shared_host_memory.h) when the process enabled it (a multi-process client on a
// host it shares with another process of its job), so that the other process can read a shard in
// place; otherwise, and whenever that fails, from aligned_alloc, as before.
//
// Thread-safe. Held through shared_ptr by the platform and by every live buffer, so it outlives
// both.

#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

namespace tessera::cpu {

class HostAllocator {
 public:
  static constexpr int64_t kAlignment = 64;

  explicit HostAllocator(int64_t max_cached_bytes) : max_cached_bytes_(max_cached_bytes) {}
  ~HostAllocator();
  HostAllocator(const HostAllocator&) = delete;
  HostAllocator& operator=(const HostAllocator&) = delete;

  // The size actually reserved for a request of `bytes` (at least kAlignment).
  static int64_t RoundedSize(int64_t bytes);
  // nullptr when the system is out of memory.
  void* Allocate(int64_t rounded_bytes);
  void Free(void* data, int64_t rounded_bytes);

 private:
  const int64_t max_cached_bytes_;
  std::mutex mu_;
  std::map<int64_t, std::vector<void*>> free_;  // rounded size -> blocks
  int64_t cached_bytes_ = 0;
};

}  // namespace tessera::cpu

#endif  // TESSERA_BACKENDS_CPU_HOST_ALLOCATOR_H_
