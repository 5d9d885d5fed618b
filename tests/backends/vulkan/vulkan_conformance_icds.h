// tests/backends/vulkan/vulkan_conformance_icds.h: the driver environment of the Vulkan
// conformance binaries.
//
// ctest runs them with VK_DRIVER_FILES (and VK_ICD_FILENAMES) naming two copies of lavapipe's ICD
// manifest, i.e. two lavapipe devices, and TESSERA_VULKAN_VALIDATION=1
// (tests/conformance/CMakeLists.txt). EnsureVulkanTestEnvironment sets the same variables when
// they are unset, so that the binaries run the same outside ctest; variables already set (a real
// GPU's driver, say) are left alone. Call it from a factory, before the platform is created.

#ifndef TESSERA_TESTS_BACKENDS_VULKAN_VULKAN_CONFORMANCE_ICDS_H_
#define TESSERA_TESTS_BACKENDS_VULKAN_VULKAN_CONFORMANCE_ICDS_H_

#include <cstdlib>
#include <string>

#include "tests/testing/vulkan_icds.h"

namespace tessera::testing {

inline void EnsureVulkanTestEnvironment() {
  SetVulkanIcdsIfUnset(TESSERA_CONFORMANCE_VULKAN_ICDS);
  setenv("TESSERA_VULKAN_VALIDATION", "1", /*overwrite=*/0);
}

}  // namespace tessera::testing

#endif  // TESSERA_TESTS_BACKENDS_VULKAN_VULKAN_CONFORMANCE_ICDS_H_
