#ifndef TESSERA_BACKENDS_VULKAN_VULKAN_INSTANCE_H_
#define TESSERA_BACKENDS_VULKAN_VULKAN_INSTANCE_H_

// The process's connection to the Vulkan loader: one VkInstance (API 1.3 where the loader has it,
// else 1.2) with, when requested and installed, VK_LAYER_KHRONOS_validation and a debug messenger
// that prints every validation warning or error to stderr and counts it
// (VulkanValidationMessageCount() in vulkan_platform.h).
//
//   auto instance = VulkanInstance::Create(/*enable_validation=*/true);
//   for (VkPhysicalDevice p : (*instance)->PhysicalDevices()) ...
//
// Ownership: shared (std::shared_ptr) by the platform and every VulkanDevice created from it, so it
// outlives the last VkDevice; the destructor destroys the messenger, then the instance. Not
// copyable.
// Thread-safety: immutable after Create; the message counter is atomic.

#include <vulkan/vulkan.h>

#include <memory>
#include <vector>

#include "absl/status/statusor.h"

namespace tessera::vulkan {

class VulkanInstance {
 public:
  // NOT_FOUND when the loader is older than Vulkan 1.2 or there is no driver
  // (VK_ERROR_INCOMPATIBLE_DRIVER / VK_ERROR_INITIALIZATION_FAILED); other vkCreateInstance
  // failures as VkStatus (vulkan_status.h). A missing validation layer is not an error: validation
  // is then off.
  static absl::StatusOr<std::shared_ptr<VulkanInstance>> Create(bool enable_validation);

  VulkanInstance() = default;
  VulkanInstance(const VulkanInstance&) = delete;
  VulkanInstance& operator=(const VulkanInstance&) = delete;
  ~VulkanInstance();

  VkInstance instance() const { return instance_; }

  // Every physical device the loader reports, in its order.
  std::vector<VkPhysicalDevice> PhysicalDevices() const;

 private:
  VkInstance instance_ = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
};

}  // namespace tessera::vulkan

#endif  // TESSERA_BACKENDS_VULKAN_VULKAN_INSTANCE_H_
