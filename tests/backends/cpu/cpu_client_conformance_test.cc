// The API-contract suites (tests/conformance/) on a CPU-only client of 4 devices.

#include "backends/client_factory.h"
#include "guard/policy.h"
#include "tests/conformance/client_factory_registry.h"

namespace tessera {
namespace {

const bool kRegistered = conformance::RegisterClientFactory({
    .name = "Cpu",
    .create =
        [] {
          return CreateClient(
              {.cpu_devices = 4, .vulkan = VulkanMode::kOff, .transfer_guard = guard::Policy()});
        },
    .expected_devices = 4,
    .expected_cpu_devices = 4,
});

}  // namespace
}  // namespace tessera
