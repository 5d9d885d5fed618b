#ifndef TESSERA_BACKENDS_VULKAN_COMMAND_RECORDING_H_
#define TESSERA_BACKENDS_VULKAN_COMMAND_RECORDING_H_

// Recording helpers shared by every transfer path: begin/end a one-time-submit command buffer, and
// record a chunk's regions (chunk_plan.h) as vkCmdCopyBuffer calls between a buffer and a staging
// slot.
//
// Stateless; a command buffer is recorded by one thread at a time (Vulkan's
// external-synchronisation rule), which is the caller's business.

#include <vulkan/vulkan.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "backends/vulkan/chunk_plan.h"

namespace tessera::vulkan {

// vkBeginCommandBuffer with ONE_TIME_SUBMIT. INTERNAL (or RESOURCE_EXHAUSTED) on failure.
absl::Status BeginCmd(VkCommandBuffer cb);

// Makes the command buffer's transfer and shader writes visible to the host and later commands,
// then vkEndCommandBuffer.
absl::Status EndCmd(VkCommandBuffer cb);

// Records vkCmdCopyBuffer for `regions` (grouped by copy); buffer_of(copy) gives (VkBuffer, base
// offset) of the copy's side, `staging` the staging side at `staging_base`. `to_staging`: buffer ->
// staging, else staging -> buffer.
template <typename BufferOf>
void RecordRegions(VkCommandBuffer cb, const std::vector<Region>& regions, bool to_staging,
                   VkBuffer staging, int64_t staging_base, BufferOf&& buffer_of) {
  std::vector<VkBufferCopy> vk;
  size_t i = 0;
  while (i < regions.size()) {
    const size_t copy = regions[i].copy;
    auto [buf, base] = buffer_of(copy);
    vk.clear();
    for (; i < regions.size() && regions[i].copy == copy; ++i) {
      const Region& r = regions[i];
      VkBufferCopy c;
      c.srcOffset = static_cast<VkDeviceSize>(r.src + (to_staging ? base : staging_base));
      c.dstOffset = static_cast<VkDeviceSize>(r.dst + (to_staging ? staging_base : base));
      c.size = static_cast<VkDeviceSize>(r.size);
      vk.push_back(c);
    }
    if (to_staging) {
      vkCmdCopyBuffer(cb, buf, staging, static_cast<uint32_t>(vk.size()), vk.data());
    } else {
      vkCmdCopyBuffer(cb, staging, buf, static_cast<uint32_t>(vk.size()), vk.data());
    }
  }
}

}  // namespace tessera::vulkan

#endif  // TESSERA_BACKENDS_VULKAN_COMMAND_RECORDING_H_
