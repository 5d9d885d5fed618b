#include "backends/vulkan/command_recording.h"

#include "backends/vulkan/vulkan_status.h"

namespace tessera::vulkan {

absl::Status BeginCmd(VkCommandBuffer cb) {
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  TESSERA_VK_RETURN_IF_ERROR(vkBeginCommandBuffer(cb, &bi), "vkBeginCommandBuffer");
  return absl::OkStatus();
}

absl::Status EndCmd(VkCommandBuffer cb) {
  VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  mb.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_SHADER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT | VK_ACCESS_HOST_WRITE_BIT;
  vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                       VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, nullptr, 0, nullptr);
  TESSERA_VK_RETURN_IF_ERROR(vkEndCommandBuffer(cb), "vkEndCommandBuffer");
  return absl::OkStatus();
}

}  // namespace tessera::vulkan
