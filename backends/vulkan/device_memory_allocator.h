#ifndef TESSERA_BACKENDS_VULKAN_DEVICE_MEMORY_ALLOCATOR_H_
#define TESSERA_BACKENDS_VULKAN_DEVICE_MEMORY_ALLOCATOR_H_

// Sub-allocation of one memory type of one VkDevice: buffers are carved (first fit, coalescing free
// list) out of blocks of `block_bytes`, each one VkDeviceMemory with one VkBuffer over all of it; a
// request above block_bytes / 2 gets a dedicated block. Sizes are rounded up to `alignment`. One
// empty shared block is kept to avoid churn; further empty ones are destroyed. Freed dedicated
// blocks are kept as spares (up to kMaxSpareBlocks, and a quarter of the heap's limit in all) and
// handed to the next dedicated request of their size (up to 1/8 larger): a program that allocates
// the same outputs on every call reuses them instead of allocating and faulting in fresh memory
// (lavapipe: 16,384 page faults per 64 MiB). Spares count against the heap's budget; when a
// block of any allocator on the heap would not fit, every allocator gives its spares back
// (HeapBudgets::ReserveOrReclaim) and the allocation is tried again. With a BlockExporter every
// block's memory is exportable as an opaque fd, so other VkDevices of the same GPU can import it
// (peer_memory_import.h); destroying a block first runs its on_destroy hooks.
//
//   DeviceMemoryAllocator pool(device, type, /*map=*/false, 64 << 20, 256);
//   auto a = pool.Allocate(1000);  // a->block->buffer at a->offset
//   pool.Free(*a);
//
// Ownership: owns its blocks (destroyed with it, which must happen before the VkDevice is destroyed
// and after the GPU is done with them). Allocations borrow their block until freed.
// Thread-safety: Allocate, Free and in_use are thread-safe (a mutex for the blocks, a second for
// the spares, which is never held while taking another lock but the heap ledger's).

#include <vulkan/vulkan.h>

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/vulkan/heap_budget.h"

namespace tessera::vulkan {

// The usage of every buffer over a block (and of imports of one): copies both ways and the
// strided-copy shader.
inline constexpr VkBufferUsageFlags kBlockBufferUsage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                                        VK_BUFFER_USAGE_TRANSFER_DST_BIT |
                                                        VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;

// How a device exports the memory of its blocks (VK_KHR_external_memory_fd, opaque fd handles): the
// exporting VkDevice, its vkGetMemoryFdKHR and the identity an importer must share
// (peer_memory_import.h).
struct BlockExporter {
  VkDevice device = VK_NULL_HANDLE;
  PFN_vkGetMemoryFdKHR get_memory_fd = nullptr;
  std::array<uint8_t, VK_UUID_SIZE> device_uuid{};
  std::array<uint8_t, VK_UUID_SIZE> driver_uuid{};
};

// One VkDeviceMemory with one VkBuffer over it (mapped when host-visible), or an imported host
// range (WrapHostMemory). `free_ranges` belongs to the allocator that made the block.
struct MemoryBlock {
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VkBuffer buffer = VK_NULL_HANDLE;
  void* mapped = nullptr;
  int64_t size = 0;
  bool dedicated = false;
  std::map<int64_t, int64_t> free_ranges;  // offset -> size

  // Unique in the process (never reused), for caches keyed by block.
  uint64_t id = 0;
  // Set when `memory` is exportable; points into the allocator.
  const BlockExporter* exporter = nullptr;
  uint32_t memory_type = 0;
  int64_t allocation_size = 0;  // VkMemoryAllocateInfo::allocationSize
  // Run (once, without the lock) just before the block is destroyed: imports of it into other
  // devices are dropped there.
  std::mutex on_destroy_mu;
  std::vector<std::function<void()>> on_destroy;  // guarded by on_destroy_mu
  void RunDestroyHooks();
};

class DeviceMemoryAllocator {
 public:
  // `map`: persistently map every block (HOST_VISIBLE types). `exporter`: null, or blocks are
  // allocated exportable through it (it must outlive the allocator). `heaps`: null, or every
  // block is counted against heap `heap_index` of it (it must outlive the allocator).
  DeviceMemoryAllocator(VkDevice device, uint32_t type_index, bool map, int64_t block_bytes,
                        int64_t alignment, const BlockExporter* exporter = nullptr,
                        HeapBudgets* heaps = nullptr, uint32_t heap_index = 0);
  DeviceMemoryAllocator(const DeviceMemoryAllocator&) = delete;
  DeviceMemoryAllocator& operator=(const DeviceMemoryAllocator&) = delete;
  ~DeviceMemoryAllocator();

  struct Allocation {
    MemoryBlock* block = nullptr;
    int64_t offset = 0;
    int64_t size = 0;  // after alignment rounding
  };

  // RESOURCE_EXHAUSTED when a new block does not fit the heap's budget or vkAllocateMemory fails;
  // INTERNAL for other Vulkan failures or a memory
  // type that cannot back storage buffers.
  absl::StatusOr<Allocation> Allocate(int64_t bytes);
  // `a` must come from this allocator's Allocate and be freed once.
  void Free(const Allocation& a);
  // Bytes of live allocations (after alignment rounding): BytesInUse. Spares are not counted.
  int64_t in_use() const;

  static constexpr int kMaxSpareBlocks = 4;

 private:
  absl::StatusOr<std::unique_ptr<MemoryBlock>> CreateBlock(int64_t size, bool dedicated);
  void DestroyBlock(MemoryBlock& b);
  // A spare of `size` to 1/8 more bytes, the smallest; null if none.
  std::unique_ptr<MemoryBlock> TakeSpare(int64_t size);
  // Keeps `b` (a freed dedicated block) as a spare, or destroys it; destroys spares beyond the
  // limits, the oldest first.
  void KeepSpare(std::unique_ptr<MemoryBlock> b);
  // Destroys every spare (the heap's reclaimer).
  void DestroySpares();

  VkDevice device_;
  uint32_t type_index_;
  bool map_;
  int64_t block_bytes_;
  int64_t alignment_;
  const BlockExporter* exporter_;
  HeapBudgets* heaps_;
  uint32_t heap_index_;
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<MemoryBlock>> blocks_;  // guarded by mu_
  int64_t in_use_ = 0;                                // guarded by mu_
  mutable std::mutex spare_mu_;
  std::vector<std::unique_ptr<MemoryBlock>> spares_;  // guarded by spare_mu_; oldest first
  int64_t spare_limit_bytes_ = 0;                     // a quarter of the heap's limit
  int reclaimer_ = -1;                                // in heaps_, when there is one
};

// Picks the memory type with all `required` flags, preferring more of `preferred` and none of
// `avoided`. Returns -1 if none.
int PickMemoryType(const VkPhysicalDeviceMemoryProperties& mp, VkMemoryPropertyFlags required,
                   VkMemoryPropertyFlags preferred, VkMemoryPropertyFlags avoided);

}  // namespace tessera::vulkan

#endif  // TESSERA_BACKENDS_VULKAN_DEVICE_MEMORY_ALLOCATOR_H_
