// The device-SPI conformance suites (tests/conformance/platform_*_suite.cc) on the Vulkan platform
// over 2 lavapipe devices, with small staging chunks and blocks so that the chunked and dedicated
// paths run, and the Khronos validation layer on. Skipped, with the reason, only where there is
// no Vulkan driver (NOT_FOUND).

#include "backends/vulkan/vulkan_platform.h"
#include "tests/backends/vulkan/vulkan_conformance_icds.h"
#include "tests/conformance/client_factory_registry.h"

namespace tessera {
namespace {

absl::StatusOr<std::unique_ptr<Platform>> CreateTestVulkanPlatform() {
  testing::EnsureVulkanTestEnvironment();
  VulkanPlatformOptions options;
  options.enable_validation = true;
  options.staging_chunk_bytes = 64 << 10;
  options.staging_chunks = 3;
  options.block_bytes = 1 << 20;
  absl::StatusOr<std::unique_ptr<VulkanPlatform>> p = CreateVulkanPlatform(options);
  if (!p.ok()) return p.status();
  return std::unique_ptr<Platform>(*std::move(p));
}

const bool kRegistered = conformance::RegisterPlatformFactory({
    .name = "Vulkan",
    .create = CreateTestVulkanPlatform,
    .min_devices = 2,
    .diagnostic_count = VulkanValidationMessageCount,
});

}  // namespace
}  // namespace tessera
