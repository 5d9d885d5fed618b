#ifndef TESSERA_BACKENDS_VULKAN_CROSS_DEVICE_COPY_H_
#define TESSERA_BACKENDS_VULKAN_CROSS_DEVICE_COPY_H_

// Buffer->buffer copies between two VkDevices, run as part of one op on the destination device's
// stream (its worker):
//   - shared staging (default where both devices have VK_EXT_external_memory_host and
//     cross_device_shared_staging is set): a host ring imported into both devices; the source GPU
//     copies chunk i into slot i % K (up to K ahead, on the source's queue and export timeline
//     semaphore), then the destination GPU copies the slot out. No memcpy.
//   - otherwise (or when the import fails for a pair): the source copies into its export ring, the
//     host memcpys each chunk into the destination's staging ring, the destination uploads it.
// Either way the source device's export mutex is held for the whole copy: its export ring and
// export timeline have one user at a time.
//
// Ownership: one CrossDeviceCopier per destination VulkanDevice, owned by it; it owns the shared
// staging rings it made (one per source device, created on first use, kept until
// ReleaseSharedStaging) and borrows the devices, which must all be alive until
// ReleaseSharedStaging.
// Thread-safety: the destination device's worker only (ReleaseSharedStaging after the worker is
// joined).

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ifrt/spi/platform.h"

namespace tessera::vulkan {

class VulkanBuffer;
class VulkanDevice;
class VulkanStream;
struct StagingRing;

class CrossDeviceCopier {
 public:
  explicit CrossDeviceCopier(VulkanDevice* dst);
  CrossDeviceCopier(const CrossDeviceCopier&) = delete;
  CrossDeviceCopier& operator=(const CrossDeviceCopier&) = delete;
  ~CrossDeviceCopier();

  // Copies `copy`, whose source is on another VkDevice and destination on this copier's, and counts
  // it. Errors: the first failed Vulkan call (VkStatus, vulkan_status.h); the chunks already
  // submitted are drained first.
  absl::Status Copy(const BufferToBufferCopy& copy);

  // Destroys the shared staging rings (while every device is still alive).
  void ReleaseSharedStaging();

 private:
  struct SharedStaging;
  // What both paths of a copy start from: its two buffers, the source device, both devices'
  // streams, this device's staging ring and the source's export ring, the copy's geometry, this
  // device's chunk size. The caller holds the source's export lock while it uses them.
  struct Legs {
    VulkanBuffer* src;
    VulkanBuffer* dst;
    VulkanDevice* source;
    VulkanStream& stream;
    VulkanStream& src_stream;
    StagingRing& staging;
    StagingRing& exported;
    std::vector<const StridedCopy*> geoms;
    int64_t chunk;
  };
  Legs LegsOf(const BufferToBufferCopy& copy) const;

  // The shared ring for copies from `src`, made on first use; an error (then and for every later
  // call with `src`) when it cannot be made.
  absl::StatusOr<SharedStaging*> GetSharedStaging(VulkanDevice* src);
  absl::Status CopyThroughHost(const BufferToBufferCopy& copy);
  absl::Status CopyThroughSharedStaging(const BufferToBufferCopy& copy, SharedStaging& shared);

  VulkanDevice* dst_;
  // Keyed by source device; null: shared staging failed for that pair.
  std::map<VulkanDevice*, std::unique_ptr<SharedStaging>> shared_;
};

}  // namespace tessera::vulkan

#endif  // TESSERA_BACKENDS_VULKAN_CROSS_DEVICE_COPY_H_
