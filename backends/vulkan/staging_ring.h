#ifndef TESSERA_BACKENDS_VULKAN_STAGING_RING_H_
#define TESSERA_BACKENDS_VULKAN_STAGING_RING_H_

// A ring of host-visible staging slots with one command buffer each: one HOST_VISIBLE|HOST_COHERENT
// VkBuffer of `chunks` slots of `chunk_bytes`, persistently mapped, and a command pool with one
// primary command buffer per slot. Slot k is bytes [k * chunk_bytes, (k + 1) * chunk_bytes) of
// `buffer` and `mapped`; `values[k]` is the timeline value of the slot's last use (0: never used),
// which a user waits for before reusing the slot.
//
// Every VulkanDevice has two: its staging ring (host<->device transfers and the destination side of
// cross-device copies) and its export ring (the source side of cross-device copies made by other
// devices' workers).
//
// Ownership: owns its Vulkan objects and destroys them with itself, which must happen after the GPU
// is done with them and before the VkDevice goes.
// Thread-safety: none; each ring is used under one owner's discipline (the staging ring by its
// device's stream worker, the export ring under the device's export mutex).

#include <vulkan/vulkan.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"

namespace tessera::vulkan {

struct StagingRing {
  // NOT_FOUND when the device has no HOST_VISIBLE|HOST_COHERENT memory; other Vulkan failures as
  // VkStatus (vulkan_status.h).
  static absl::StatusOr<std::unique_ptr<StagingRing>> Create(
      VkDevice device, const VkPhysicalDeviceMemoryProperties& mp, uint32_t queue_family,
      int64_t chunk_bytes, int chunks);

  explicit StagingRing(VkDevice device) : device(device) {}
  StagingRing(const StagingRing&) = delete;
  StagingRing& operator=(const StagingRing&) = delete;
  ~StagingRing();

  int slots() const { return static_cast<int>(cmds.size()); }

  VkDevice device;
  int64_t chunk_bytes = 0;
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  char* mapped = nullptr;
  VkCommandPool pool = VK_NULL_HANDLE;
  std::vector<VkCommandBuffer> cmds;
  std::vector<uint64_t> values;  // timeline value of each slot's last use
};

}  // namespace tessera::vulkan

#endif  // TESSERA_BACKENDS_VULKAN_STAGING_RING_H_
