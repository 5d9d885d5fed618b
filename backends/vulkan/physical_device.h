#ifndef TESSERA_BACKENDS_VULKAN_PHYSICAL_DEVICE_H_
#define TESSERA_BACKENDS_VULKAN_PHYSICAL_DEVICE_H_

// What a VkPhysicalDevice is: the properties, limits, memory heaps and extensions the platform
// reads once when it opens a device, and how they are published as PlatformDeviceInfo::attributes
// ("vendor", "driver_version", "device_uuid", "heap_sizes", ...).
//
// PhysicalDeviceDescription is a plain value (its Vulkan structs' pNext pointers are cleared); the
// functions here are pure queries and thread-safe.

#include <vulkan/vulkan.h>

#include <cstdint>
#include <string>
#include <vector>

#include "ifrt/attribute_map.h"

namespace tessera::vulkan {

struct PhysicalDeviceDescription {
  VkPhysicalDeviceProperties properties{};
  VkPhysicalDeviceDriverProperties driver{};
  VkPhysicalDeviceSubgroupProperties subgroup{};
  VkPhysicalDeviceMaintenance3Properties maintenance3{};
  VkPhysicalDeviceIDProperties ids{};
  VkPhysicalDeviceFloatControlsProperties float_controls{};
  VkPhysicalDeviceMemoryProperties memory{};
  // VkPhysicalDeviceMaintenance4Properties::maxBufferSize on Vulkan >= 1.3 devices, else
  // UINT64_MAX.
  uint64_t max_buffer_size = UINT64_MAX;
  std::vector<VkExtensionProperties> extensions;

  bool HasExtension(const char* name) const;
};

PhysicalDeviceDescription DescribePhysicalDevice(VkPhysicalDevice physical);

// The queue family the device's stream uses: one with compute, preferring one without graphics. -1
// when there is none.
int PickComputeQueueFamily(VkPhysicalDevice physical);

// "1.3.239" for a VK_MAKE_API_VERSION value.
std::string VersionString(uint32_t v);

// Facts about one logical device (VkDevice) that are published next to the physical device's.
struct LogicalDeviceFacts {
  int64_t device_memory_bytes = 0;
  int64_t pinned_host_memory_bytes = 0;
  int64_t max_buffer_bytes = 0;
  int physical_device_index = 0;
  int logical_device_index = 0;
  bool compute_copy = false;
  int64_t compute_copy_min_runs = 0;
  int64_t staging_chunk_bytes = 0;
  int staging_chunks = 0;
  bool peer_memory_import = false;
  bool shader_float64 = false;
  bool shader_int64 = false;
  // The maxStorageBufferRange the platform uses (VulkanPlatformOptions can lower the device's).
  int64_t max_storage_buffer_range = 0;
};

// Sets the device's attributes: the physical device's identity, driver, limits and heaps, then
// `facts`.
void SetDeviceAttributes(const PhysicalDeviceDescription& d, const LogicalDeviceFacts& facts,
                         AttributeMap* a);

}  // namespace tessera::vulkan

#endif  // TESSERA_BACKENDS_VULKAN_PHYSICAL_DEVICE_H_
