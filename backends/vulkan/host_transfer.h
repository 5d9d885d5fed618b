#ifndef TESSERA_BACKENDS_VULKAN_HOST_TRANSFER_H_
#define TESSERA_BACKENDS_VULKAN_HOST_TRANSFER_H_

// Host<->device copies of one stream op, run on the device's stream worker:
//   host->device: chunks of the copies' runs are packed on the host into staging slot k while the
//     GPU copies slot k-1 into the buffer (vkCmdCopyBuffer, regions coalesced).
//   device->host: the GPU copies up to `slots` chunks ahead; the host unpacks each chunk as soon as
//     its value is reached and refills the slot.
//   pinned_host buffers: a memcpy on the worker, in stream order (after the stream's previous
//     work).
// An op whose last step is host work signals its value from the host.
//
// Borrowed: the copies' host pointers must stay valid until the op's future is set (the SPI's
// rule); the ring, stream and counters are the device's.
// Thread-safety: worker only (the ring and the stream's submit side are the worker's).

#include <vector>

#include "absl/status/status.h"
#include "backends/vulkan/platform_counters.h"
#include "backends/vulkan/staging_ring.h"
#include "backends/vulkan/vulkan_stream.h"
#include "ifrt/spi/platform.h"

namespace tessera::vulkan {

// Errors: the first failed Vulkan call (VkStatus, vulkan_status.h).
absl::Status CopyHostToBuffers(const std::vector<HostToBufferCopy>& copies, StagingRing& ring,
                               VulkanStream& stream, PlatformCounters& counters);
absl::Status CopyBuffersToHost(const std::vector<BufferToHostCopy>& copies, StagingRing& ring,
                               VulkanStream& stream, PlatformCounters& counters);

}  // namespace tessera::vulkan

#endif  // TESSERA_BACKENDS_VULKAN_HOST_TRANSFER_H_
