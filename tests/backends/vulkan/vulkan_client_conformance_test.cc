// The API-contract suites (tests/conformance/) on a Vulkan-only client of 2 lavapipe devices, with
// the Khronos validation layer on: any validation message fails the test. Skipped, with the
// reason, where there is no Vulkan driver.

#include "backends/client_factory.h"
#include "backends/vulkan/vulkan_platform.h"
#include "guard/policy.h"
#include "tests/backends/vulkan/vulkan_conformance_icds.h"
#include "tests/conformance/client_factory_registry.h"

namespace tessera {
namespace {

const bool kRegistered = conformance::RegisterClientFactory({
    .name = "Vulkan",
    .create =
        [] {
          testing::EnsureVulkanTestEnvironment();
          return CreateClient({.cpu_devices = 0,
                               .vulkan = VulkanMode::kRequired,
                               .transfer_guard = guard::Policy()});
        },
    .expected_devices = 2,
    .expected_cpu_devices = 0,
    .diagnostic_count = VulkanValidationMessageCount,
});

}  // namespace
}  // namespace tessera
