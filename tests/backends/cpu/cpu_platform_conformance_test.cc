// The device-SPI conformance suites (tests/conformance/platform_*_suite.cc) on the CPU platform
// of 4 devices.

#include "backends/cpu/cpu_platform.h"
#include "tests/conformance/client_factory_registry.h"

namespace tessera {
namespace {

const bool kRegistered = conformance::RegisterPlatformFactory({
    .name = "Cpu",
    .create = [] { return CreateCpuPlatform({.num_devices = 4}); },
    .min_devices = 4,
});

}  // namespace
}  // namespace tessera
