#ifndef TESSERA_BACKENDS_VULKAN_VULKAN_STATUS_H_
#define TESSERA_BACKENDS_VULKAN_VULKAN_STATUS_H_

// Turning VkResult codes into absl::Status, for the Vulkan platform's internal files (this header
// includes <vulkan/vulkan.h>; vulkan_platform.h does not).
//
//   TESSERA_VK_RETURN_IF_ERROR(vkCreateBuffer(...), "vkCreateBuffer");
//
// Error mapping: VK_ERROR_OUT_OF_DEVICE_MEMORY and VK_ERROR_OUT_OF_HOST_MEMORY are
// RESOURCE_EXHAUSTED, every other failure is INTERNAL; the message names the call and the VkResult.
// Everything here is stateless and thread-safe.

#include <vulkan/vulkan.h>

#include <cstdint>
#include <string>

#include "absl/status/status.h"

namespace tessera::vulkan {

// "VK_ERROR_DEVICE_LOST", or "VkResult(<n>)" for codes without a name here.
std::string VkResultName(VkResult r);

// OK for VK_SUCCESS; else "<what> failed: <name>" with the code above.
absl::Status VkStatus(VkResult r, const std::string& what);

// `x` rounded up to a multiple of `a` (a > 0, x >= 0).
inline int64_t RoundUp(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

}  // namespace tessera::vulkan

// Returns VkStatus(expr, what) from the enclosing function unless `expr` is VK_SUCCESS.
#define TESSERA_VK_RETURN_IF_ERROR(expr, what)                            \
  do {                                                                    \
    VkResult _r = (expr);                                                 \
    if (_r != VK_SUCCESS) return ::tessera::vulkan::VkStatus(_r, (what)); \
  } while (0)

#endif  // TESSERA_BACKENDS_VULKAN_VULKAN_STATUS_H_
