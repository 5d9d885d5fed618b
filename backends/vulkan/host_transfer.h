#ifndef TESSERA_BACKENDS_VULKAN_HOST_TRANSFER_H_
#define TESSERA_BACKENDS_VULKAN_HOST_TRANSFER_H_

// Host<->device copies of one stream op, run on the device's stream worker:
//   host->device: chunks of the copies' runs are packed on the host into staging slot k while the
//     GPU copies slot k-1 into the buffer (vkCmdCopyBuffer, regions coalesced).
//   device->host: the GPU copies up to `slots` chunks ahead; the host unpacks each chunk as soon as
//     its value is reached and refills the slot.
//   pinned_host buffers: a memcpy on the worker, in stream order (after the stream's previous
//     work).
//   direct (VK_EXT_external_memory_host): an op that moves at least HostImport::min_bytes
//     through staging instead imports the pages of the user's host memory it touches (rounded out
//     to the driver's import alignment) as VkBuffers and has the GPU copy between them and the
//     device buffers in one submission, which the op then waits for before it drops the imports:
//     one copy instead of a host pack plus a GPU copy. Where an import fails (memory the driver
//     cannot import, too many runs), the op is staged as above.
// An op whose last step is host work signals its value from the host.
//
// Borrowed: the copies' host pointers must stay valid until the op's future is set (the SPI's
// rule); the ring, stream and counters are the device's.
// Thread-safety: worker only (the ring and the stream's submit side are the worker's).

#include <vulkan/vulkan.h>

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "backends/vulkan/platform_counters.h"
#include "backends/vulkan/staging_ring.h"
#include "backends/vulkan/vulkan_stream.h"
#include "ifrt/spi/platform.h"

namespace tessera::vulkan {

// What a device offers for direct copies from and to user host memory.
struct HostImport {
  VkDevice device = VK_NULL_HANDLE;
  PFN_vkGetMemoryHostPointerPropertiesEXT props = nullptr;  // null: no direct copies
  int64_t alignment = 4096;                                 // minImportedHostPointerAlignment
  int64_t min_bytes = int64_t{1} << 20;  // smaller ops are staged (VulkanPlatformOptions)
};

// Errors: the first failed Vulkan call (VkStatus, vulkan_status.h). `import` may be null (staged
// only).
absl::Status CopyHostToBuffers(const std::vector<HostToBufferCopy>& copies, StagingRing& ring,
                               VulkanStream& stream, PlatformCounters& counters,
                               const HostImport* import = nullptr);
absl::Status CopyBuffersToHost(const std::vector<BufferToHostCopy>& copies, StagingRing& ring,
                               VulkanStream& stream, PlatformCounters& counters,
                               const HostImport* import = nullptr);

}  // namespace tessera::vulkan

#endif  // TESSERA_BACKENDS_VULKAN_HOST_TRANSFER_H_
