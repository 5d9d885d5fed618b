#include "backends/vulkan/vulkan_buffer.h"

#include <utility>

#include "backends/vulkan/vulkan_device.h"

namespace tessera::vulkan {

VulkanBuffer::VulkanBuffer(std::shared_ptr<VulkanDevice> dev, int memory,
                           DeviceMemoryAllocator::Allocation alloc, int64_t size)
    : dev_(std::move(dev)), memory_(memory), alloc_(alloc), size_(size) {
  if (memory_ == kPinnedHostMemory) {
    host_address_ = mapped();
    // Zero-byte pinned buffers still get a (unique, never dereferenced) non-null address.
    if (host_address_ == nullptr) host_address_ = this;
  }
}

VulkanBuffer::VulkanBuffer(std::shared_ptr<VulkanDevice> dev, int memory,
                           std::unique_ptr<MemoryBlock> block, std::function<void()> on_release)
    : dev_(std::move(dev)),
      memory_(memory),
      alloc_{block.get(), 0, block->size},
      size_(block->size),
      host_address_(block->mapped),
      owned_(std::move(block)),
      on_release_(std::move(on_release)) {}

VulkanBuffer::~VulkanBuffer() {
  if (owned_) {
    dev_->DestroyImported(*owned_);
    if (on_release_) on_release_();
    return;
  }
  if (alloc_.block) dev_->allocator(memory_).Free(alloc_);
}

}  // namespace tessera::vulkan
