// The Vulkan platform's registration entry point (backends/registry.h): one device per Vulkan GPU
// (times ClientOptions::vulkan_logical_devices_per_gpu), created after the CPU devices (order 200).
// ClientOptions::vulkan says whether they are wanted: kOff, kIfAvailable (a failure is logged once)
// or kRequired (a failure fails CreateClient). TESSERA_VULKAN_VALIDATION=1 turns on the Khronos
// validation layer (when installed); it costs time, so it is on only when asked for (tests do).
// TESSERA_VULKAN_MAX_STORAGE_BUFFER_RANGE=<bytes> (a test / debug knob) lowers every device's
// maxStorageBufferRange to that (VulkanPlatformOptions::max_storage_buffer_range_override).

#include <cstdlib>
#include <string>

#include "backends/registry.h"
#include "backends/vulkan/vulkan_platform.h"

namespace tessera {
namespace {

PlatformDemand VulkanDemand(const ClientOptions& options) {
  switch (options.vulkan) {
    case VulkanMode::kOff:
      return PlatformDemand::kNone;
    case VulkanMode::kIfAvailable:
      return PlatformDemand::kIfAvailable;
    case VulkanMode::kRequired:
      return PlatformDemand::kRequired;
  }
  return PlatformDemand::kNone;
}

absl::StatusOr<std::unique_ptr<Platform>> CreateVulkanPlatformForClient(
    const ClientOptions& options) {
  VulkanPlatformOptions vulkan_options;
  vulkan_options.logical_devices_per_gpu = options.vulkan_logical_devices_per_gpu;
  const char* validation = std::getenv("TESSERA_VULKAN_VALIDATION");
  vulkan_options.enable_validation = validation != nullptr && std::string(validation) == "1";
  if (const char* range = std::getenv("TESSERA_VULKAN_MAX_STORAGE_BUFFER_RANGE")) {
    vulkan_options.max_storage_buffer_range_override = std::strtoll(range, nullptr, 10);
  }
  absl::StatusOr<std::unique_ptr<VulkanPlatform>> platform = CreateVulkanPlatform(vulkan_options);
  if (!platform.ok()) return platform.status();
  return std::unique_ptr<Platform>(*std::move(platform));
}

}  // namespace

absl::Status RegisterVulkanPlatform(PlatformRegistry& registry) {
  return registry.Register(PlatformFactory{.name = "vulkan",
                                           .display_name = "Vulkan",
                                           .order = 200,
                                           .demand = VulkanDemand,
                                           .create = CreateVulkanPlatformForClient});
}

}  // namespace tessera
