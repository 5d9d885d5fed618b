#ifndef TESSERA_BACKENDS_VULKAN_HEAP_BUDGET_H_
#define TESSERA_BACKENDS_VULKAN_HEAP_BUDGET_H_

// HeapBudgets: the bytes this platform has committed in each memory heap of one physical device,
// checked against a limit before every vkAllocateMemory. Vulkan drivers that back memory with host
// RAM (lavapipe) accept allocations far beyond their heap's size; without this ledger four 600 MiB
// arrays fit on a 2 GiB heap. The limit of a heap is its size, or VulkanPlatformOptions::
// heap_limit_bytes when that is smaller; where the device has VK_EXT_memory_budget, the driver's
// budget for this process (heapBudget - heapUsage, which counts other clients in the process and
// other processes' pressure) is asked too. Going over either is RESOURCE_EXHAUSTED, before any
// memory is allocated.
//
// Shared (std::shared_ptr) by the logical devices of one physical device, whose allocators all draw
// from the same heaps.
//
//   HeapBudgets heaps(physical, "llvmpipe", /*limit_bytes=*/0, /*driver_budget=*/true);
//   TESSERA_RETURN_IF_ERROR(heaps.Reserve(heap_index, bytes));  // before vkAllocateMemory
//   heaps.Release(heap_index, bytes);                           // after vkFreeMemory
//
// Thread-safety: every member is thread-safe (a mutex for the ledger, another for the reclaimers).

#include <vulkan/vulkan.h>

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"

namespace tessera::vulkan {

class HeapBudgets {
 public:
  // `limit_bytes`: 0 for each heap's size, else the smaller of it and the heap's size.
  // `driver_budget`: the physical device has VK_EXT_memory_budget.
  HeapBudgets(VkPhysicalDevice physical, std::string device_name, int64_t limit_bytes,
              bool driver_budget);
  HeapBudgets(const HeapBudgets&) = delete;
  HeapBudgets& operator=(const HeapBudgets&) = delete;

  // Counts `bytes` against heap `heap_index`. RESOURCE_EXHAUSTED (naming the device, the heap, what
  // is committed and the limit) when they do not fit; then nothing is counted.
  absl::Status Reserve(uint32_t heap_index, int64_t bytes);
  // Gives back bytes that Reserve counted (the memory was freed).
  void Release(uint32_t heap_index, int64_t bytes);

  // Memory kept only for reuse (an allocator's spare blocks) can be handed back when a Reserve
  // would fail: ReserveOrReclaim runs every reclaimer of the heap (which frees what it keeps,
  // calling Release) and tries once more. A reclaimer is never run after RemoveReclaimer returns;
  // it must not call AddReclaimer, RemoveReclaimer or ReserveOrReclaim.
  int AddReclaimer(uint32_t heap_index, std::function<void()> reclaimer);
  void RemoveReclaimer(int id);
  absl::Status ReserveOrReclaim(uint32_t heap_index, int64_t bytes);

  // The limit of heap `heap_index` and the bytes committed in it now.
  int64_t limit(uint32_t heap_index) const;
  int64_t committed(uint32_t heap_index) const;

 private:
  // The driver's view: bytes this process may still allocate in the heap (VK_EXT_memory_budget),
  // or -1 when the device does not say.
  int64_t DriverAvailable(uint32_t heap_index) const;

  const VkPhysicalDevice physical_;
  const std::string device_name_;
  const bool driver_budget_;
  std::vector<int64_t> limits_;  // per heap; fixed after construction
  mutable std::mutex mu_;
  std::vector<int64_t> committed_ ABSL_GUARDED_BY(mu_);  // per heap
  // Held while reclaimers run (never with mu_): RemoveReclaimer waits for a run in progress.
  std::mutex reclaim_mu_;
  struct Reclaimer {
    uint32_t heap_index;
    std::function<void()> reclaim;
  };
  std::map<int, Reclaimer> reclaimers_ ABSL_GUARDED_BY(reclaim_mu_);
  int next_reclaimer_ ABSL_GUARDED_BY(reclaim_mu_) = 0;
};

}  // namespace tessera::vulkan

#endif  // TESSERA_BACKENDS_VULKAN_HEAP_BUDGET_H_
