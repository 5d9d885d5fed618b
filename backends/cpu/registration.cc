// The CPU platform's registration entry point (backends/registry.h): ClientOptions::cpu_devices CPU
// devices, created first (order 100, so their ids are 0..cpu_devices-1); none when it is 0.

#include "backends/cpu/cpu_platform.h"
#include "backends/registry.h"

namespace tessera {

absl::Status RegisterCpuPlatform(PlatformRegistry& registry) {
  return registry.Register(PlatformFactory{
      .name = "cpu",
      .display_name = "CPU",
      .order = 100,
      .demand =
          [](const ClientOptions& options) {
            return options.cpu_devices > 0 ? PlatformDemand::kRequired : PlatformDemand::kNone;
          },
      .create = [](const ClientOptions& options) -> absl::StatusOr<std::unique_ptr<Platform>> {
        return CreateCpuPlatform({.num_devices = options.cpu_devices,
                                  .threads_per_device = options.cpu_threads_per_device});
      },
  });
}

}  // namespace tessera
