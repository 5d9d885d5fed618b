// The API-contract suites (tests/conformance/) on a mixed client: 2 CPU devices and 2 lavapipe
// devices in one client, so that shards cross platforms through host staging. The Khronos
// validation layer is on; skipped, with the reason, where there is no Vulkan driver.

#include "backends/client_factory.h"
#include "backends/vulkan/vulkan_platform.h"
#include "guard/policy.h"
#include "tests/backends/vulkan/vulkan_conformance_icds.h"
#include "tests/conformance/client_factory_registry.h"

namespace tessera {
namespace {

const bool kRegistered = conformance::RegisterClientFactory({
    .name = "Mixed",
    .create =
        [] {
          testing::EnsureVulkanTestEnvironment();
          return CreateClient({.cpu_devices = 2,
                               .vulkan = VulkanMode::kRequired,
                               .transfer_guard = guard::Policy()});
        },
    .expected_devices = 4,
    .expected_cpu_devices = 2,
    .diagnostic_count = VulkanValidationMessageCount,
});

}  // namespace
}  // namespace tessera
