#ifndef TESSERA_BACKENDS_VULKAN_COMPUTE_COPY_H_
#define TESSERA_BACKENDS_VULKAN_COMPUTE_COPY_H_

// The strided-copy compute pipeline of one VkDevice: shaders/strided_copy.comp (compiled at build
// time) copies one StridedCopy between two storage buffers, one 32-bit word per invocation, with
// both buffers bound through push descriptors (VK_KHR_push_descriptor) and the geometry in push
// constants. It serves buffer->buffer copies on one VkDevice whose boxes have many short rows,
// where one vkCmdCopyBuffer region per run would be slow (Accepts says which).
//
// Ownership: owned by its VulkanDevice; owns the descriptor-set layout, the pipeline layout and the
// pipeline, destroyed with it (after the GPU is idle, before the VkDevice). Borrows the VkDevice.
// Thread-safety: immutable after Create; Accepts and Record are thread-safe (the command buffer
// passed to Record is the caller's to synchronise).

#include <vulkan/vulkan.h>

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "backends/vulkan/compute_pipeline.h"
#include "backends/vulkan/vulkan_buffer.h"
#include "ifrt/strided_copy.h"

namespace tessera::vulkan {

class ComputeCopyPipeline {
 public:
  // `push_descriptor`: vkCmdPushDescriptorSetKHR of `device` (non-null).
  // `min_runs`: copies with at most this many runs use vkCmdCopyBuffer. Vulkan failures as VkStatus
  // (vulkan_status.h).
  static absl::StatusOr<std::unique_ptr<ComputeCopyPipeline>> Create(
      VkDevice device, PFN_vkCmdPushDescriptorSetKHR push_descriptor, int64_t min_runs,
      int64_t max_storage_range, uint32_t max_groups_x);

  ComputeCopyPipeline(const ComputeCopyPipeline&) = delete;
  ComputeCopyPipeline& operator=(const ComputeCopyPipeline&) = delete;
  ~ComputeCopyPipeline();

  // Whether `g` from `src` to `dst` should (and can) use the shader: more than min_runs runs, each
  // shorter than 256 bytes; 4-byte aligned, non-negative strides, rank <= 5, both buffers within
  // maxStorageBufferRange, fewer than 2^31 words.
  bool Accepts(const StridedCopy& g, const VulkanBuffer* src, const VulkanBuffer* dst) const;
  // Records the dispatch of `g` (which Accepts) into `cb`.
  void Record(VkCommandBuffer cb, const StridedCopy& g, const VulkanBuffer* src,
              const VulkanBuffer* dst) const;

 private:
  ComputeCopyPipeline(VkDevice device, PFN_vkCmdPushDescriptorSetKHR push_descriptor,
                      int64_t min_runs, int64_t max_storage_range, uint32_t max_groups_x);

  VkDevice device_;
  PFN_vkCmdPushDescriptorSetKHR push_descriptor_;
  int64_t min_runs_;
  int64_t max_storage_range_;
  uint32_t max_groups_x_;
  ComputePipeline pipeline_;
};

}  // namespace tessera::vulkan

#endif  // TESSERA_BACKENDS_VULKAN_COMPUTE_COPY_H_
