#ifndef TESSERA_BACKENDS_VULKAN_HOST_MEMORY_IMPORT_H_
#define TESSERA_BACKENDS_VULKAN_HOST_MEMORY_IMPORT_H_

// Importing a host range into a VkDevice (VK_EXT_external_memory_host): a VkBuffer bound to
// VkDeviceMemory that aliases `host`. Used by WrapHostMemory and by the shared staging of
// cross-device copies.
//
// Ownership: on success (and on failure, for whatever was created) the caller owns *buffer and
// *memory and destroys them before `host` is freed.
// Thread-safety: stateless.

#include <vulkan/vulkan.h>

#include <cstdint>

#include "absl/status/status.h"

namespace tessera::vulkan {

// `host` and `bytes` must be multiples of the device's minImportedHostPointerAlignment.
// UNIMPLEMENTED when the device cannot back a buffer with this memory; Vulkan failures as VkStatus
// (vulkan_status.h).
absl::Status ImportHostMemory(VkDevice device, PFN_vkGetMemoryHostPointerPropertiesEXT props_fn,
                              void* host, int64_t bytes, VkBufferUsageFlags usage, VkBuffer* buffer,
                              VkDeviceMemory* memory);

}  // namespace tessera::vulkan

#endif  // TESSERA_BACKENDS_VULKAN_HOST_MEMORY_IMPORT_H_
