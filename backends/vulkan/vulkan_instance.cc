#include "backends/vulkan/vulkan_instance.h"

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "backends/vulkan/physical_device.h"
#include "backends/vulkan/vulkan_platform.h"
#include "backends/vulkan/vulkan_status.h"

#ifdef TESSERA_LSAN_PIN_VULKAN_DRIVERS
#include <dlfcn.h>

// AddressSanitizer builds only. Mesa's lavapipe (with its LLVM) and the Khronos validation layer
// keep one-time allocations that the loader's dlclose at vkDestroyInstance turns into "leaks" in an
// unknown module, in every program that creates a Vulkan client. Keep those modules loaded
// (RTLD_NODELETE) so their frames are named, and suppress leaks inside them — never in Tessera.
extern "C" const char* __lsan_default_suppressions() {
  return "leak:libvulkan_lvp\nleak:libVkLayer_khronos_validation\nleak:"
         "libLLVM\n";
}
namespace {
void PinVulkanDriversForLeakSanitizer() {
  static const bool pinned = [] {
    for (const char* lib : {"libvulkan_lvp.so", "libVkLayer_khronos_validation.so"}) {
      dlopen(lib, RTLD_NOW | RTLD_NODELETE | RTLD_GLOBAL);
    }
    return true;
  }();
  (void)pinned;
}
}  // namespace
#endif

namespace tessera {
namespace vulkan {
namespace {

std::atomic<int64_t> g_validation_messages{0};

VKAPI_ATTR VkBool32 VKAPI_CALL DebugCallback(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                             VkDebugUtilsMessageTypeFlagsEXT types,
                                             const VkDebugUtilsMessengerCallbackDataEXT* data,
                                             void* user) {
  const bool counted = (types & (VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                                 VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT)) != 0 &&
                       severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT;
  if (counted) g_validation_messages.fetch_add(1);
  if (counted || severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) {
    std::fprintf(stderr, "[tessera vulkan%s] %s\n", counted ? " validation" : "",
                 data && data->pMessage ? data->pMessage : "(no message)");
  }
  return VK_FALSE;
}

bool HasLayer(const char* name) {
  uint32_t n = 0;
  if (vkEnumerateInstanceLayerProperties(&n, nullptr) != VK_SUCCESS) return false;
  std::vector<VkLayerProperties> layers(n);
  vkEnumerateInstanceLayerProperties(&n, layers.data());
  for (auto& l : layers)
    if (std::strcmp(l.layerName, name) == 0) return true;
  return false;
}

bool HasInstanceExtension(const char* name) {
  uint32_t n = 0;
  if (vkEnumerateInstanceExtensionProperties(nullptr, &n, nullptr) != VK_SUCCESS) return false;
  std::vector<VkExtensionProperties> exts(n);
  vkEnumerateInstanceExtensionProperties(nullptr, &n, exts.data());
  for (auto& e : exts)
    if (std::strcmp(e.extensionName, name) == 0) return true;
  return false;
}

}  // namespace

absl::StatusOr<std::shared_ptr<VulkanInstance>> VulkanInstance::Create(bool enable_validation) {
  uint32_t instance_version = VK_API_VERSION_1_0;
  vkEnumerateInstanceVersion(&instance_version);
  if (instance_version < VK_API_VERSION_1_2) {
    return absl::NotFoundError(absl::StrCat("the Vulkan loader supports only Vulkan ",
                                            VersionString(instance_version),
                                            "; Tessera needs 1.2 (timeline semaphores)"));
  }
  const char* kValidation = "VK_LAYER_KHRONOS_validation";
  const bool validation = enable_validation && HasLayer(kValidation) &&
                          HasInstanceExtension(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "tessera";
  app.pEngineName = "tessera";
  app.apiVersion = instance_version >= VK_API_VERSION_1_3 ? VK_API_VERSION_1_3 : VK_API_VERSION_1_2;
  VkDebugUtilsMessengerCreateInfoEXT dm{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
  dm.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  dm.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                   VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                   VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  dm.pfnUserCallback = &DebugCallback;
  std::vector<const char*> layers, exts;
  if (validation) {
    layers.push_back(kValidation);
    exts.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
  }
  VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ci.pNext = validation ? &dm : nullptr;
  ci.pApplicationInfo = &app;
  ci.enabledLayerCount = static_cast<uint32_t>(layers.size());
  ci.ppEnabledLayerNames = layers.data();
  ci.enabledExtensionCount = static_cast<uint32_t>(exts.size());
  ci.ppEnabledExtensionNames = exts.data();
  auto instance = std::make_shared<VulkanInstance>();
#ifdef TESSERA_LSAN_PIN_VULKAN_DRIVERS
  PinVulkanDriversForLeakSanitizer();
#endif
  VkResult r = vkCreateInstance(&ci, nullptr, &instance->instance_);
  if (r == VK_ERROR_INCOMPATIBLE_DRIVER || r == VK_ERROR_INITIALIZATION_FAILED) {
    instance->instance_ = VK_NULL_HANDLE;
    return absl::NotFoundError(
        absl::StrCat("no Vulkan driver (vkCreateInstance: ", VkResultName(r), ")"));
  }
  if (r != VK_SUCCESS) {
    instance->instance_ = VK_NULL_HANDLE;
    return VkStatus(r, "vkCreateInstance");
  }
  if (validation) {
    auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance->instance_, "vkCreateDebugUtilsMessengerEXT"));
    if (create) create(instance->instance_, &dm, nullptr, &instance->messenger_);
  }
  return instance;
}

VulkanInstance::~VulkanInstance() {
  if (messenger_ != VK_NULL_HANDLE) {
    auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance_, "vkDestroyDebugUtilsMessengerEXT"));
    if (destroy) destroy(instance_, messenger_, nullptr);
  }
  if (instance_ != VK_NULL_HANDLE) vkDestroyInstance(instance_, nullptr);
}

std::vector<VkPhysicalDevice> VulkanInstance::PhysicalDevices() const {
  uint32_t n = 0;
  vkEnumeratePhysicalDevices(instance_, &n, nullptr);
  std::vector<VkPhysicalDevice> physical(n);
  vkEnumeratePhysicalDevices(instance_, &n, physical.data());
  physical.resize(n);
  return physical;
}

}  // namespace vulkan

int64_t VulkanValidationMessageCount() { return vulkan::g_validation_messages.load(); }

}  // namespace tessera
