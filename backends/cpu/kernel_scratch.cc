#include "backends/cpu/kernel_scratch.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <new>
#include <vector>

#include "absl/container/flat_hash_map.h"

namespace tessera::cpu {
namespace {

// What precedes each block's first byte: the size it was allocated with and the distance back to
// the start of the system allocation.
struct Header {
  size_t bytes;
  size_t offset;
};

constexpr size_t kMinAlignment = 64;
static_assert(sizeof(Header) <= kMinAlignment);

// A thread's freed blocks by (bytes, alignment).
class ThreadCache {
 public:
  ~ThreadCache() {
    for (auto& [key, blocks] : free_) {
      for (void* block : blocks) std::free(Base(block));
    }
  }

  void* Take(size_t bytes, size_t alignment) {
    auto it = free_.find(Key{bytes, alignment});
    if (it == free_.end() || it->second.empty()) return nullptr;
    void* block = it->second.back();
    it->second.pop_back();
    cached_bytes_ -= static_cast<int64_t>(bytes);
    return block;
  }

  // False when the cache is full (the caller frees the block).
  bool Put(void* block) {
    const Header& header = HeaderOf(block);
    if (cached_bytes_ + static_cast<int64_t>(header.bytes) > kScratchCacheMaxBytes) return false;
    free_[Key{header.bytes, header.offset}].push_back(block);
    cached_bytes_ += static_cast<int64_t>(header.bytes);
    return true;
  }

  int64_t cached_bytes() const { return cached_bytes_; }

  static Header& HeaderOf(void* block) {
    return *reinterpret_cast<Header*>(static_cast<char*>(block) - sizeof(Header));
  }
  static void* Base(void* block) { return static_cast<char*>(block) - HeaderOf(block).offset; }

 private:
  // The header's offset equals the block's alignment (see ScratchAllocate).
  using Key = std::pair<size_t, size_t>;
  absl::flat_hash_map<Key, std::vector<void*>> free_;
  int64_t cached_bytes_ = 0;
};

ThreadCache& Cache() {
  thread_local ThreadCache cache;
  return cache;
}

// The calling thread's innermost ScratchRun, or null.
thread_local ScratchRun* current_run = nullptr;

// The machine's physical memory in bytes (the most a block may have); unbounded when unknown.
size_t PhysicalMemoryBytes() {
  static const size_t bytes = [] {
    const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGE_SIZE);
    if (pages <= 0 || page_size <= 0) return std::numeric_limits<size_t>::max();
    return static_cast<size_t>(pages) * static_cast<size_t>(page_size);
  }();
  return bytes;
}

// A block from the cache or the system; nullptr when there is none.
void* AllocateBlock(size_t alignment, size_t bytes) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0) return nullptr;
  if (bytes > PhysicalMemoryBytes()) return nullptr;
  alignment = std::max(alignment, kMinAlignment);
  if (void* block = Cache().Take(bytes, alignment)) return block;
  // The block starts `alignment` bytes into an allocation aligned to `alignment`; the header sits
  // just before it.
  const size_t total = (alignment + bytes + alignment - 1) / alignment * alignment;
  if (total < bytes) return nullptr;  // overflow
  void* base = std::aligned_alloc(alignment, total);
  if (base == nullptr) return nullptr;
  void* block = static_cast<char*>(base) + alignment;
  ThreadCache::HeaderOf(block) = Header{bytes, alignment};
  return block;
}

void FreeBlock(void* block) {
  if (!Cache().Put(block)) std::free(ThreadCache::Base(block));
}

}  // namespace

ScratchRun::ScratchRun() : outer_(current_run) { current_run = this; }

ScratchRun::~ScratchRun() {
  for (void* block : live_) FreeBlock(block);
  current_run = outer_;
}

void* ScratchAllocate(size_t alignment, size_t bytes) {
  void* block = AllocateBlock(alignment, bytes);
  ScratchRun* run = current_run;
  if (run == nullptr) return block;
  if (block != nullptr) {
    try {
      run->live_.push_back(block);
    } catch (const std::bad_alloc&) {  // the run's own list: the allocation fails too
      FreeBlock(block);
      block = nullptr;
    }
  }
  if (block == nullptr && !run->failed_bytes_) run->failed_bytes_ = bytes;
  return block;
}

void ScratchFree(void* block) {
  if (block == nullptr) return;
  if (ScratchRun* run = current_run) {
    for (size_t i = run->live_.size(); i-- > 0;) {
      if (run->live_[i] == block) {
        run->live_[i] = run->live_.back();
        run->live_.pop_back();
        break;
      }
    }
  }
  FreeBlock(block);
}

int64_t ScratchCachedBytes() { return Cache().cached_bytes(); }

}  // namespace tessera::cpu
