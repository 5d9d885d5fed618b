#include "backends/vulkan/staging_ring.h"

#include "absl/status/status.h"
#include "backends/vulkan/vulkan_status.h"

namespace tessera::vulkan {

absl::StatusOr<std::unique_ptr<StagingRing>> StagingRing::Create(
    VkDevice device, const VkPhysicalDeviceMemoryProperties& mp, uint32_t queue_family,
    int64_t chunk, int chunks) {
  auto ring = std::make_unique<StagingRing>(device);
  ring->chunk_bytes = chunk;
  VkBufferCreateInfo bci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bci.size = static_cast<VkDeviceSize>(chunk * chunks);
  bci.usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  TESSERA_VK_RETURN_IF_ERROR(vkCreateBuffer(device, &bci, nullptr, &ring->buffer),
                             "vkCreateBuffer(staging)");
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(device, ring->buffer, &req);
  int type = -1, best = -1;
  for (uint32_t i = 0; i < mp.memoryTypeCount; ++i) {
    if (!(req.memoryTypeBits & (1u << i))) continue;
    VkMemoryPropertyFlags f = mp.memoryTypes[i].propertyFlags;
    const VkMemoryPropertyFlags need =
        VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    if ((f & need) != need) continue;
    int score = (f & VK_MEMORY_PROPERTY_HOST_CACHED_BIT) ? 2 : 0;
    score += (f & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) ? 0 : 1;
    if (score > best) {
      best = score;
      type = static_cast<int>(i);
    }
  }
  if (type < 0) return absl::NotFoundError("no HOST_VISIBLE|HOST_COHERENT memory for staging");
  VkMemoryAllocateInfo mai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  mai.allocationSize = req.size;
  mai.memoryTypeIndex = static_cast<uint32_t>(type);
  TESSERA_VK_RETURN_IF_ERROR(vkAllocateMemory(device, &mai, nullptr, &ring->memory),
                             "vkAllocateMemory(staging)");
  TESSERA_VK_RETURN_IF_ERROR(vkBindBufferMemory(device, ring->buffer, ring->memory, 0),
                             "vkBindBufferMemory(staging)");
  void* p = nullptr;
  TESSERA_VK_RETURN_IF_ERROR(vkMapMemory(device, ring->memory, 0, VK_WHOLE_SIZE, 0, &p),
                             "vkMapMemory(staging)");
  ring->mapped = static_cast<char*>(p);
  VkCommandPoolCreateInfo pci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pci.queueFamilyIndex = queue_family;
  TESSERA_VK_RETURN_IF_ERROR(vkCreateCommandPool(device, &pci, nullptr, &ring->pool),
                             "vkCreateCommandPool");
  ring->cmds.resize(chunks);
  VkCommandBufferAllocateInfo cai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  cai.commandPool = ring->pool;
  cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  cai.commandBufferCount = static_cast<uint32_t>(chunks);
  TESSERA_VK_RETURN_IF_ERROR(vkAllocateCommandBuffers(device, &cai, ring->cmds.data()),
                             "vkAllocateCommandBuffers");
  ring->values.assign(chunks, 0);
  return ring;
}

StagingRing::~StagingRing() {
  if (pool) vkDestroyCommandPool(device, pool, nullptr);
  if (buffer) vkDestroyBuffer(device, buffer, nullptr);
  if (memory) vkFreeMemory(device, memory, nullptr);
}

}  // namespace tessera::vulkan
