#ifndef TESSERA_BACKENDS_VULKAN_PLATFORM_COUNTERS_H_
#define TESSERA_BACKENDS_VULKAN_PLATFORM_COUNTERS_H_

// The counters behind VulkanPlatform::stats() (see VulkanPlatformStats in vulkan_platform.h for
// what each counts). One instance per platform, owned by it; every device of the platform holds a
// borrowed pointer (devices are drained before the platform goes). Thread-safe: every counter is
// atomic.

#include <atomic>
#include <cstdint>

namespace tessera::vulkan {

struct PlatformCounters {
  std::atomic<int64_t> submissions{0}, staged_chunks{0}, compute_copies{0}, region_copies{0},
      cross_device_copies{0}, host_memcpy_copies{0}, shared_staging_copies{0},
      peer_import_copies{0}, peer_imports_live{0}, kernel_launches{0};
};

}  // namespace tessera::vulkan

#endif  // TESSERA_BACKENDS_VULKAN_PLATFORM_COUNTERS_H_
