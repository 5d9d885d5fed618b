#ifndef TESSERA_BACKENDS_VULKAN_VULKAN_BUFFER_H_
#define TESSERA_BACKENDS_VULKAN_VULKAN_BUFFER_H_

// The Vulkan platform's PlatformBuffer: a sub-allocation of a MemoryBlock (a range of one VkBuffer,
// device_memory_allocator.h), or an imported host range (WrapHostMemory) that owns its own block.
//
// host_address() is the mapping for pinned_host buffers (non-null even when empty) and nullptr for
// device buffers, even where device memory is mappable; mapped() is the mapping whatever
// host_address() says.
//
// Ownership: holds a reference to its VulkanDevice, so a buffer may outlive the platform; the
// destructor returns the range to the device's allocator (or destroys the imported block and calls
// `on_release`). Not copyable.
// Thread-safety: immutable after construction; the destructor is safe on any thread.

#include <vulkan/vulkan.h>

#include <cstdint>
#include <functional>
#include <memory>

#include "backends/vulkan/device_memory_allocator.h"
#include "ifrt/spi/platform.h"

namespace tessera::vulkan {

// Memory indices (PlatformDeviceInfo::memories) of every Vulkan device.
inline constexpr int kDeviceMemory = 0;
inline constexpr int kPinnedHostMemory = 1;

class VulkanDevice;

class VulkanBuffer : public PlatformBuffer {
 public:
  VulkanBuffer(std::shared_ptr<VulkanDevice> dev, int memory,
               DeviceMemoryAllocator::Allocation alloc, int64_t size);
  // A buffer over imported host memory (WrapHostMemory): owns `block`.
  VulkanBuffer(std::shared_ptr<VulkanDevice> dev, int memory, std::unique_ptr<MemoryBlock> block,
               std::function<void()> on_release);
  VulkanBuffer(const VulkanBuffer&) = delete;
  VulkanBuffer& operator=(const VulkanBuffer&) = delete;
  ~VulkanBuffer() override;

  int64_t size_bytes() const override { return size_; }
  void* host_address() const override { return host_address_; }

  VulkanDevice* dev() const { return dev_.get(); }
  VkBuffer vk_buffer() const { return alloc_.block ? alloc_.block->buffer : VK_NULL_HANDLE; }
  // The block holding the bytes (null for an empty buffer).
  MemoryBlock* block() const { return alloc_.block; }
  // Offset of the buffer's bytes in vk_buffer().
  int64_t offset() const { return alloc_.offset; }
  // size_bytes() rounded up to the allocator's alignment.
  int64_t allocated_size() const { return alloc_.size; }
  // The mapping of the bytes (pinned_host only), whatever host_address() says.
  char* mapped() const {
    return alloc_.block && alloc_.block->mapped
               ? static_cast<char*>(alloc_.block->mapped) + alloc_.offset
               : nullptr;
  }

 private:
  std::shared_ptr<VulkanDevice> dev_;
  int memory_;
  DeviceMemoryAllocator::Allocation alloc_;
  int64_t size_;
  void* host_address_ = nullptr;
  std::unique_ptr<MemoryBlock> owned_;
  std::function<void()> on_release_;
};

// `b` must be a buffer of a Vulkan platform.
inline VulkanBuffer* AsVulkanBuffer(const PlatformBufferRef& b) {
  return static_cast<VulkanBuffer*>(b.get());
}

}  // namespace tessera::vulkan

#endif  // TESSERA_BACKENDS_VULKAN_VULKAN_BUFFER_H_
