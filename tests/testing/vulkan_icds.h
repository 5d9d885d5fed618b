// tests/testing/vulkan_icds.h: point the Vulkan loader at the test's lavapipe devices.
//
// ctest runs the Vulkan tests with VK_DRIVER_FILES (and VK_ICD_FILENAMES) naming copies of
// lavapipe's ICD manifest, one device each (the loader drops a repeated path). SetVulkanIcdsIfUnset
// sets the same variables when they are unset, so that a test binary runs the same outside ctest;
// variables already set (a real GPU's driver, say) are left alone. Call it before a Vulkan platform
// or client is created.

#ifndef TESSERA_TESTS_TESTING_VULKAN_ICDS_H_
#define TESSERA_TESTS_TESTING_VULKAN_ICDS_H_

#include <cstdlib>
#include <string>

namespace tessera::testing {

// `icds`: the manifests, ':'-separated (empty: nothing to set).
inline void SetVulkanIcdsIfUnset(const std::string& icds) {
  if (icds.empty()) return;
  setenv("VK_DRIVER_FILES", icds.c_str(), /*overwrite=*/0);
  setenv("VK_ICD_FILENAMES", icds.c_str(), /*overwrite=*/0);
}

}  // namespace tessera::testing

#endif  // TESSERA_TESTS_TESTING_VULKAN_ICDS_H_
