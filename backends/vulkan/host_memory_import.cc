#include "backends/vulkan/host_memory_import.h"

#include "backends/vulkan/vulkan_status.h"

namespace tessera::vulkan {

absl::Status ImportHostMemory(VkDevice device, PFN_vkGetMemoryHostPointerPropertiesEXT props_fn,
                              void* host, int64_t bytes, VkBufferUsageFlags usage, VkBuffer* buffer,
                              VkDeviceMemory* memory) {
  VkExternalMemoryBufferCreateInfo ext{VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO};
  ext.handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT;
  VkBufferCreateInfo bci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bci.pNext = &ext;
  bci.size = static_cast<VkDeviceSize>(bytes);
  bci.usage = usage;
  TESSERA_VK_RETURN_IF_ERROR(vkCreateBuffer(device, &bci, nullptr, buffer),
                             "vkCreateBuffer(imported)");
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(device, *buffer, &req);
  VkMemoryHostPointerPropertiesEXT hp{VK_STRUCTURE_TYPE_MEMORY_HOST_POINTER_PROPERTIES_EXT};
  TESSERA_VK_RETURN_IF_ERROR(
      props_fn(device, VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT, host, &hp),
      "vkGetMemoryHostPointerPropertiesEXT");
  const uint32_t bits = req.memoryTypeBits & hp.memoryTypeBits;
  if (bits == 0 || static_cast<int64_t>(req.size) > bytes) {
    return absl::UnimplementedError("host memory cannot back a buffer on this device");
  }
  uint32_t type = 0;
  while (!(bits & (1u << type))) ++type;
  VkImportMemoryHostPointerInfoEXT import{VK_STRUCTURE_TYPE_IMPORT_MEMORY_HOST_POINTER_INFO_EXT};
  import.handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT;
  import.pHostPointer = host;
  VkMemoryAllocateInfo mai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  mai.pNext = &import;
  mai.allocationSize = static_cast<VkDeviceSize>(bytes);
  mai.memoryTypeIndex = type;
  TESSERA_VK_RETURN_IF_ERROR(vkAllocateMemory(device, &mai, nullptr, memory),
                             "vkAllocateMemory(imported host pointer)");
  TESSERA_VK_RETURN_IF_ERROR(vkBindBufferMemory(device, *buffer, *memory, 0),
                             "vkBindBufferMemory(imported)");
  return absl::OkStatus();
}

}  // namespace tessera::vulkan
