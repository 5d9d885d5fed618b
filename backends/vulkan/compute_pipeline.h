#ifndef TESSERA_BACKENDS_VULKAN_COMPUTE_PIPELINE_H_
#define TESSERA_BACKENDS_VULKAN_COMPUTE_PIPELINE_H_

// ComputePipeline: the Vulkan objects of one compute pipeline whose descriptor set 0 is a
// push-descriptor layout of storage buffers (binding i = the i-th buffer), with optional push
// constants. Shared by the strided-copy shader (compute_copy.h) and compiled kernels
// (spirv_kernel.h).
//
//   ComputePipeline p;
//   TESSERA_RETURN_IF_ERROR(p.Create(device, {.buffers = 2, .code = words, .entry = "main"}));
//   ...  // vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, p.pipeline), push descriptors
//   p.Destroy(device);
//
// Ownership: a plain handle holder; its owner calls Destroy (with the VkDevice it was created on)
// once no command buffer uses it. Thread-safety: none (created and destroyed by one thread, then
// read-only).

#include <vulkan/vulkan.h>

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/types/span.h"

namespace tessera::vulkan {

struct ComputePipelineSpec {
  uint32_t buffers = 0;              // storage-buffer bindings of set 0
  uint32_t push_constant_bytes = 0;  // 0: none
  absl::Span<const uint32_t> code;   // the SPIR-V module
  std::string entry;                 // its entry point
};

struct ComputePipeline {
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkPipeline pipeline = VK_NULL_HANDLE;

  // Creates the three objects (the shader module is destroyed once the pipeline is made). Vulkan
  // failures as VkStatus naming the call; what was created before a failure is left for Destroy.
  absl::Status Create(VkDevice device, const ComputePipelineSpec& spec);
  // Destroys what Create made (null handles are skipped) and resets the handles.
  void Destroy(VkDevice device);
};

}  // namespace tessera::vulkan

#endif  // TESSERA_BACKENDS_VULKAN_COMPUTE_PIPELINE_H_
