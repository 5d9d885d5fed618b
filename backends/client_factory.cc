#include "backends/client_factory.h"

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

#include "absl/strings/str_cat.h"
#include "backends/cpu/cpu_platform.h"
#include "ifrt/runtime/runtime_client.h"
#ifdef TESSERA_HAVE_VULKAN
#include "backends/vulkan/vulkan_platform.h"
#endif

namespace tessera {
namespace {

void LogOnce(const std::string& message) {
  static std::once_flag once;
  std::call_once(once, [&] { std::fprintf(stderr, "tessera: %s\n", message.c_str()); });
}

}  // namespace

absl::StatusOr<std::shared_ptr<Client>> CreateClient(const ClientOptions& options) {
  if (options.cpu_devices < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("cpu_devices must be >= 0, got ", options.cpu_devices));
  }
  if (options.vulkan_logical_devices_per_gpu < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("vulkan_logical_devices_per_gpu must be >= 1, got ",
                     options.vulkan_logical_devices_per_gpu));
  }
  guard::Policy policy;
  if (options.transfer_guard.has_value()) {
    policy = *options.transfer_guard;
  } else {
    absl::StatusOr<guard::Policy> from_env = guard::Policy::FromEnvironment();
    if (!from_env.ok()) return from_env.status();
    policy = *from_env;
  }

  std::vector<std::unique_ptr<Platform>> platforms;
  if (options.cpu_devices > 0) {
    absl::StatusOr<std::unique_ptr<Platform>> cpu = CreateCpuPlatform(
        {.num_devices = options.cpu_devices, .threads_per_device = options.cpu_threads_per_device});
    if (!cpu.ok()) return cpu.status();
    platforms.push_back(*std::move(cpu));
  }
  if (options.vulkan != VulkanMode::kOff) {
#ifdef TESSERA_HAVE_VULKAN
    VulkanPlatformOptions vk_options;
    vk_options.logical_devices_per_gpu = options.vulkan_logical_devices_per_gpu;
    // The Khronos validation layer costs time: on only when asked for (tests
    // ask for it).
    const char* validation = std::getenv("TESSERA_VULKAN_VALIDATION");
    vk_options.enable_validation = validation != nullptr && std::string(validation) == "1";
    auto vulkan = CreateVulkanPlatform(vk_options);
    if (vulkan.ok()) {
      platforms.push_back(*std::move(vulkan));
    } else if (options.vulkan == VulkanMode::kRequired) {
      return vulkan.status();
    } else {
      LogOnce(absl::StrCat("no Vulkan devices: ", vulkan.status().message()));
    }
#else
    if (options.vulkan == VulkanMode::kRequired) {
      return absl::UnavailableError("this build of Tessera has no Vulkan platform");
    }
#endif
  }
  if (platforms.empty()) {
    return absl::InvalidArgumentError(
        "no devices: cpu_devices is 0 and no Vulkan device is available");
  }
  absl::StatusOr<std::shared_ptr<runtime::RuntimeClient>> client =
      runtime::RuntimeClient::Create(std::move(platforms), policy);
  if (!client.ok()) return client.status();
  return std::shared_ptr<Client>(*std::move(client));
}

}  // namespace tessera
