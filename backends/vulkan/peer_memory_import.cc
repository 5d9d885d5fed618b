#include "backends/vulkan/peer_memory_import.h"

#include <unistd.h>

#include "absl/status/status.h"
#include "backends/vulkan/vulkan_status.h"

namespace tessera::vulkan {

PeerMemoryImports::PeerMemoryImports(VkDevice device, const BlockExporter* self,
                                     std::atomic<int64_t>* live)
    : device_(device), self_(self), live_(live) {}

PeerMemoryImports::~PeerMemoryImports() { Close(); }

absl::StatusOr<VkBuffer> PeerMemoryImports::Import(MemoryBlock& block) {
  const BlockExporter* src = block.exporter;
  if (src == nullptr || self_ == nullptr) {
    return absl::FailedPreconditionError(
        "block memory is not exportable or this device cannot import");
  }
  if (src->device_uuid != self_->device_uuid || src->driver_uuid != self_->driver_uuid) {
    return absl::FailedPreconditionError(
        "source block belongs to another GPU or driver (UUIDs differ)");
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_) return absl::FailedPreconditionError("imports closed");
  if (auto it = imports_.find(block.id); it != imports_.end()) {
    if (it->second.buffer == VK_NULL_HANDLE) {
      return absl::FailedPreconditionError("an earlier import failed");
    }
    return it->second.buffer;
  }
  Imported imported;
  auto fail = [&](VkResult r, const char* what) {
    Destroy(imported);
    imports_[block.id] = Imported{};  // remembered: stage this block
    return VkStatus(r, what);
  };
  // Registered first, so that the failed entry is dropped with the block too.
  {
    std::weak_ptr<PeerMemoryImports> weak = weak_from_this();
    const uint64_t id = block.id;
    std::lock_guard<std::mutex> hooks_lock(block.on_destroy_mu);
    block.on_destroy.push_back([weak, id] {
      if (auto self = weak.lock()) self->Forget(id);
    });
  }
  VkMemoryGetFdInfoKHR get{VK_STRUCTURE_TYPE_MEMORY_GET_FD_INFO_KHR};
  get.memory = block.memory;
  get.handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT;
  int fd = -1;
  VkResult r = src->get_memory_fd(src->device, &get, &fd);
  if (r != VK_SUCCESS) return fail(r, "vkGetMemoryFdKHR");

  VkExternalMemoryBufferCreateInfo external{VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO};
  external.handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT;
  VkBufferCreateInfo bci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bci.pNext = &external;
  bci.size = static_cast<VkDeviceSize>(block.size);
  bci.usage = kBlockBufferUsage;
  bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  r = vkCreateBuffer(device_, &bci, nullptr, &imported.buffer);
  if (r != VK_SUCCESS) {
    close(fd);
    return fail(r, "vkCreateBuffer (import)");
  }
  VkImportMemoryFdInfoKHR import{VK_STRUCTURE_TYPE_IMPORT_MEMORY_FD_INFO_KHR};
  import.handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT;
  import.fd = fd;
  VkMemoryAllocateInfo mai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  mai.pNext = &import;
  mai.allocationSize = static_cast<VkDeviceSize>(block.allocation_size);
  mai.memoryTypeIndex = block.memory_type;  // same GPU: same memory types
  r = vkAllocateMemory(device_, &mai, nullptr, &imported.memory);
  if (r != VK_SUCCESS) {
    close(fd);  // a failed import does not take the fd
    return fail(r, "vkAllocateMemory (import)");
  }
  r = vkBindBufferMemory(device_, imported.buffer, imported.memory, 0);
  if (r != VK_SUCCESS) return fail(r, "vkBindBufferMemory (import)");
  imports_[block.id] = imported;
  live_->fetch_add(1);
  return imported.buffer;
}

void PeerMemoryImports::Forget(uint64_t block_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = imports_.find(block_id);
  if (it == imports_.end()) return;
  if (it->second.buffer != VK_NULL_HANDLE) live_->fetch_sub(1);
  Destroy(it->second);
  imports_.erase(it);
}

void PeerMemoryImports::Close() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [id, imported] : imports_) {
    if (imported.buffer != VK_NULL_HANDLE) live_->fetch_sub(1);
    Destroy(imported);
  }
  imports_.clear();
  closed_ = true;
}

void PeerMemoryImports::Destroy(Imported& i) {
  if (i.buffer != VK_NULL_HANDLE) vkDestroyBuffer(device_, i.buffer, nullptr);
  if (i.memory != VK_NULL_HANDLE) vkFreeMemory(device_, i.memory, nullptr);
  i = Imported{};
}

}  // namespace tessera::vulkan
