#ifndef TESSERA_BACKENDS_VULKAN_DEVICE_MEMORY_ALLOCATOR_H_
#define TESSERA_BACKENDS_VULKAN_DEVICE_MEMORY_ALLOCATOR_H_

// Sub-allocation of one memory type of one VkDevice: buffers are carved (first
// fit, coalescing free list) out of blocks of `block_bytes`, each one
// VkDeviceMemory with one VkBuffer over all of it; a request above
// block_bytes / 2 gets a dedicated block. Sizes are rounded up to `alignment`.
// One empty shared block is kept to avoid churn; further empty ones and freed
// dedicated blocks are destroyed.
//
//   DeviceMemoryAllocator pool(device, type, /*map=*/false, 64 << 20, 256);
//   auto a = pool.Allocate(1000);  // a->block->buffer at a->offset
//   pool.Free(*a);
//
// Ownership: owns its blocks (destroyed with it, which must happen before the
// VkDevice is destroyed and after the GPU is done with them). Allocations
// borrow their block until freed.
// Thread-safety: Allocate, Free and in_use are thread-safe (one mutex).

#include <vulkan/vulkan.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/status/statusor.h"

namespace tessera::vulkan {

// One VkDeviceMemory with one VkBuffer over it (mapped when host-visible), or
// an imported host range (WrapHostMemory). `free_ranges` belongs to the
// allocator that made the block.
struct MemoryBlock {
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VkBuffer buffer = VK_NULL_HANDLE;
  void* mapped = nullptr;
  int64_t size = 0;
  bool dedicated = false;
  std::map<int64_t, int64_t> free_ranges;  // offset -> size
};

class DeviceMemoryAllocator {
 public:
  // `map`: persistently map every block (HOST_VISIBLE types).
  DeviceMemoryAllocator(VkDevice device, uint32_t type_index, bool map,
                        int64_t block_bytes, int64_t alignment);
  DeviceMemoryAllocator(const DeviceMemoryAllocator&) = delete;
  DeviceMemoryAllocator& operator=(const DeviceMemoryAllocator&) = delete;
  ~DeviceMemoryAllocator();

  struct Allocation {
    MemoryBlock* block = nullptr;
    int64_t offset = 0;
    int64_t size = 0;  // after alignment rounding
  };

  // RESOURCE_EXHAUSTED when vkAllocateMemory fails; INTERNAL for other Vulkan
  // failures or a memory type that cannot back storage buffers.
  absl::StatusOr<Allocation> Allocate(int64_t bytes);
  // `a` must come from this allocator's Allocate and be freed once.
  void Free(const Allocation& a);
  // Bytes of live allocations (after alignment rounding): BytesInUse.
  int64_t in_use() const;

 private:
  absl::StatusOr<std::unique_ptr<MemoryBlock>> CreateBlock(int64_t size,
                                                           bool dedicated);
  void DestroyBlock(MemoryBlock& b);

  VkDevice device_;
  uint32_t type_index_;
  bool map_;
  int64_t block_bytes_;
  int64_t alignment_;
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<MemoryBlock>> blocks_;  // guarded by mu_
  int64_t in_use_ = 0;                                // guarded by mu_
};

// Picks the memory type with all `required` flags, preferring more of
// `preferred` and none of `avoided`. Returns -1 if none.
int PickMemoryType(const VkPhysicalDeviceMemoryProperties& mp,
                   VkMemoryPropertyFlags required,
                   VkMemoryPropertyFlags preferred,
                   VkMemoryPropertyFlags avoided);

}  // namespace tessera::vulkan

#endif  // TESSERA_BACKENDS_VULKAN_DEVICE_MEMORY_ALLOCATOR_H_
