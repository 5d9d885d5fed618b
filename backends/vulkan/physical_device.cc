#include "backends/vulkan/physical_device.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace tessera::vulkan {
namespace {

std::string VendorName(uint32_t id) {
  switch (id) {
    case 0x10DE:
      return "NVIDIA";
    case 0x1002:
      return "AMD";
    case 0x8086:
      return "Intel";
    case 0x13B5:
      return "ARM";
    case 0x5143:
      return "Qualcomm";
    case 0x106B:
      return "Apple";
    case 0x10005:
      return "Mesa";
    default:
      return absl::StrFormat("0x%04x", id);
  }
}

std::string DeviceTypeName(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
      return "integrated_gpu";
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
      return "discrete_gpu";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
      return "virtual_gpu";
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
      return "cpu";
    default:
      return "other";
  }
}

std::string DriverVersionString(uint32_t vendor, uint32_t v) {
  if (vendor == 0x10DE) {
    return absl::StrCat((v >> 22) & 0x3ff, ".", (v >> 14) & 0xff, ".", (v >> 6) & 0xff);
  }
  return VersionString(v);
}

}  // namespace

bool PhysicalDeviceDescription::HasExtension(const char* name) const {
  for (auto& e : extensions)
    if (std::strcmp(e.extensionName, name) == 0) return true;
  return false;
}

PhysicalDeviceDescription DescribePhysicalDevice(VkPhysicalDevice physical) {
  PhysicalDeviceDescription d;
  d.subgroup.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES;
  d.driver.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES;
  d.driver.pNext = &d.subgroup;
  d.maintenance3.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES;
  d.maintenance3.pNext = &d.driver;
  d.ids.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES;
  d.ids.pNext = &d.maintenance3;
  d.float_controls.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FLOAT_CONTROLS_PROPERTIES;
  d.float_controls.pNext = &d.ids;
  VkPhysicalDeviceProperties2 props2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  props2.pNext = &d.float_controls;
  vkGetPhysicalDeviceProperties2(physical, &props2);
  d.properties = props2.properties;
  // The chain points into `d`; clear it so copies of `d` hold no stale pointer.
  d.subgroup.pNext = d.driver.pNext = d.maintenance3.pNext = d.ids.pNext = nullptr;
  d.float_controls.pNext = nullptr;
  if (d.properties.apiVersion >= VK_API_VERSION_1_3) {
    VkPhysicalDeviceMaintenance4Properties m4{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_4_PROPERTIES};
    VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    p2.pNext = &m4;
    vkGetPhysicalDeviceProperties2(physical, &p2);
    d.max_buffer_size = m4.maxBufferSize;
  }
  uint32_t next = 0;
  vkEnumerateDeviceExtensionProperties(physical, nullptr, &next, nullptr);
  d.extensions.resize(next);
  vkEnumerateDeviceExtensionProperties(physical, nullptr, &next, d.extensions.data());
  vkGetPhysicalDeviceMemoryProperties(physical, &d.memory);
  return d;
}

int PickComputeQueueFamily(VkPhysicalDevice physical) {
  uint32_t nq = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(physical, &nq, nullptr);
  std::vector<VkQueueFamilyProperties> qf(nq);
  vkGetPhysicalDeviceQueueFamilyProperties(physical, &nq, qf.data());
  int family = -1;
  for (uint32_t i = 0; i < nq; ++i) {  // prefer a compute family without graphics
    if (!(qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT)) continue;
    if (family < 0 || !(qf[i].queueFlags & VK_QUEUE_GRAPHICS_BIT)) family = static_cast<int>(i);
  }
  return family;
}

std::string VersionString(uint32_t v) {
  return absl::StrCat(VK_API_VERSION_MAJOR(v), ".", VK_API_VERSION_MINOR(v), ".",
                      VK_API_VERSION_PATCH(v));
}

void SetDeviceAttributes(const PhysicalDeviceDescription& d, const LogicalDeviceFacts& facts,
                         AttributeMap* attrs) {
  const VkPhysicalDeviceProperties& props = d.properties;
  const VkPhysicalDeviceMemoryProperties& mp = d.memory;
  AttributeMap& a = *attrs;
  a.Set("name", std::string(props.deviceName));
  a.Set("vendor_id", int64_t{props.vendorID});
  a.Set("device_id", int64_t{props.deviceID});
  a.Set("vendor", VendorName(props.vendorID));
  a.Set("driver_version", DriverVersionString(props.vendorID, props.driverVersion));
  a.Set("driver_name", std::string(d.driver.driverName));
  a.Set("driver_info", std::string(d.driver.driverInfo));
  a.Set("api_version", VersionString(props.apiVersion));
  a.Set("device_type", DeviceTypeName(props.deviceType));
  std::string uuid;
  for (uint8_t b : d.ids.deviceUUID) uuid += absl::StrFormat("%02x", b);
  a.Set("device_uuid", uuid);
  std::vector<int64_t> heaps, local_heaps;
  for (uint32_t i = 0; i < mp.memoryHeapCount; ++i) {
    heaps.push_back(static_cast<int64_t>(mp.memoryHeaps[i].size));
    local_heaps.push_back((mp.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) ? 1 : 0);
  }
  a.Set("heap_sizes", heaps);
  a.Set("heap_device_local", local_heaps);
  a.Set("device_memory_bytes", facts.device_memory_bytes);
  a.Set("pinned_host_memory_bytes", facts.pinned_host_memory_bytes);
  a.Set("subgroup_size", int64_t{d.subgroup.subgroupSize});
  a.Set("max_storage_buffer_range", facts.max_storage_buffer_range);
  a.Set("max_memory_allocation_size", static_cast<int64_t>(d.maintenance3.maxMemoryAllocationSize));
  a.Set("max_buffer_bytes", facts.max_buffer_bytes);
  a.Set("min_storage_buffer_offset_alignment",
        static_cast<int64_t>(props.limits.minStorageBufferOffsetAlignment));
  a.Set("max_compute_shared_memory_size", int64_t{props.limits.maxComputeSharedMemorySize});
  a.Set("max_compute_work_group_invocations", int64_t{props.limits.maxComputeWorkGroupInvocations});
  a.Set("max_compute_work_group_size",
        std::vector<int64_t>{props.limits.maxComputeWorkGroupSize[0],
                             props.limits.maxComputeWorkGroupSize[1],
                             props.limits.maxComputeWorkGroupSize[2]});
  a.Set("max_push_constants_size", int64_t{props.limits.maxPushConstantsSize});
  a.Set("timestamp_period_ns", static_cast<double>(props.limits.timestampPeriod));
  a.Set("physical_device_index", int64_t{facts.physical_device_index});
  a.Set("logical_device_index", int64_t{facts.logical_device_index});
  a.Set("external_memory_fd", d.HasExtension(VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME));
  a.Set("external_memory_host", d.HasExtension(VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME));
  a.Set("compute_copy", facts.compute_copy);
  a.Set("compute_copy_min_runs", facts.compute_copy_min_runs);
  a.Set("staging_chunk_bytes", facts.staging_chunk_bytes);
  a.Set("staging_chunks", int64_t{facts.staging_chunks});
  a.Set("peer_memory_import", facts.peer_memory_import);
  a.Set("shader_float64", facts.shader_float64);
  a.Set("shader_int64", facts.shader_int64);
  // Kernels may declare SignedZeroInfNanPreserve (NaN, infinities and -0 kept exactly) for 32- /
  // 64-bit floats.
  a.Set("shader_signed_zero_inf_nan_preserve_float32",
        d.float_controls.shaderSignedZeroInfNanPreserveFloat32 == VK_TRUE);
  a.Set("shader_signed_zero_inf_nan_preserve_float64",
        d.float_controls.shaderSignedZeroInfNanPreserveFloat64 == VK_TRUE);
  // llvmpipe's loop limiter (LP_MAX_TGSI_LOOP_ITERATIONS): every loop of one shader invocation
  // together ends after this many iterations.
  if (d.driver.driverID == VK_DRIVER_ID_MESA_LLVMPIPE) {
    a.Set("max_shader_loop_iterations", int64_t{65535});
  }
}

}  // namespace tessera::vulkan
