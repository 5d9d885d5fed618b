#ifndef TESSERA_BACKENDS_VULKAN_SPIRV_KERNEL_H_
#define TESSERA_BACKENDS_VULKAN_SPIRV_KERNEL_H_

// SpirvKernel: a "spirv" KernelArtifact (ifrt/spi/program_plan.h) loaded on one VkDevice: one
// compute pipeline per dispatch, its descriptor set 0 a push-descriptor layout of storage
// buffers (binding i = the dispatch's i-th buffer). Record() writes a launch into a command
// buffer: for each dispatch in order, bind its pipeline, push its buffers' descriptors, dispatch,
// and a compute-to-compute barrier so the next dispatch sees its writes.
//
// A kernel specialized per device position (KernelArtifact::position_variants) holds one
// SpirvKernel per position; ForPosition picks the launching device's.
//
// Buffers are bound whole (offset and size of the VulkanBuffer's range), so each must fit the
// device's maxStorageBufferRange, except by a dispatch with ranges (SpirvDispatch::ranges: an
// elementwise kernel split by the compiler), dispatched once per entry, each binding the byte
// ranges it names. Validate says which buffer or range does not fit (RESOURCE_EXHAUSTED naming
// it) before anything is recorded. Zero-size buffers are bound as a small placeholder the caller
// provides (no dispatch reads a zero-size buffer: its loops are empty).
//
// Ownership: the PlatformKernel the runtime holds (through PlatformKernelRef) and each launch in
// flight (through the stream's completion); owns its pipelines and layouts, destroyed with it;
// borrows the VkDevice, which outlives it (the VulkanDevice is held).
// Thread-safety: immutable after Load; Validate and Record are thread-safe (the command buffer is
// the caller's to synchronise).

#include <vulkan/vulkan.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "backends/vulkan/compute_pipeline.h"
#include "ifrt/spi/kernel.h"
#include "ifrt/spi/program_plan.h"
#include "ifrt/spi/spirv_artifact.h"

namespace tessera::vulkan {

class VulkanDevice;
class VulkanBuffer;

class SpirvKernel final : public PlatformKernel {
 public:
  // INVALID_ARGUMENT: not a "spirv" artifact, an empty or misaligned module, bad sizes or
  // bindings; UNIMPLEMENTED without VK_KHR_push_descriptor, a work-group size above the device's
  // limits, or a module declaring the Float64 / Int64 capability on a device without
  // shaderFloat64 / shaderInt64 (the compiler refuses those at Compile already, from the device's
  // kernel target; this is the loader's own check); binding ranges of the wrong count, size or
  // alignment (INVALID_ARGUMENT); Vulkan failures (vkCreateShaderModule, vkCreateComputePipelines)
  // as VkStatus.
  static absl::StatusOr<std::shared_ptr<const SpirvKernel>> Load(
      std::shared_ptr<VulkanDevice> device, PFN_vkCmdPushDescriptorSetKHR push_descriptor,
      const VkPhysicalDeviceLimits& limits, bool float64, bool int64,
      const KernelArtifact& artifact);

  SpirvKernel(const SpirvKernel&) = delete;
  SpirvKernel& operator=(const SpirvKernel&) = delete;
  ~SpirvKernel() override;

  const std::vector<int64_t>& scratch_bytes() const { return scratch_bytes_; }
  // The kernel a device at `position` (grid coordinates) runs: this one, or its variant for that
  // position (an artifact with position_variants). INVALID_ARGUMENT: a position outside the grid.
  absl::StatusOr<const SpirvKernel*> ForPosition(absl::Span<const int64_t> position) const;

  // OK when every bound buffer (or range) fits maxStorageBufferRange (RESOURCE_EXHAUSTED
  // otherwise), `buffers` covers the bindings and every range lies in its buffer
  // (INVALID_ARGUMENT otherwise). `buffers`: the launch's
  // arguments, then its scratch buffers.
  absl::Status Validate(absl::Span<VulkanBuffer* const> buffers) const;
  // Records every dispatch. `placeholder` is bound in place of zero-size buffers (may be null when
  // none is zero-size).
  void Record(VkCommandBuffer cb, absl::Span<VulkanBuffer* const> buffers,
              const VulkanBuffer* placeholder) const;

 private:
  struct Pipeline {
    ComputePipeline objects;
    std::vector<int> bindings;
    std::vector<SpirvBufferRanges> ranges;  // empty: bound whole, one run
    uint32_t groups[3] = {0, 0, 0};
  };

  SpirvKernel(std::shared_ptr<VulkanDevice> device, PFN_vkCmdPushDescriptorSetKHR push_descriptor,
              int64_t max_storage_range)
      : device_(std::move(device)),
        push_descriptor_(push_descriptor),
        max_storage_range_(max_storage_range) {}
  absl::Status CreatePipeline(const SpirvDispatch& dispatch, Pipeline& p);
  absl::Status ValidateRanges(const Pipeline& p, absl::Span<VulkanBuffer* const> buffers) const;
  // One run of `p`: its descriptors (whole buffers, or `ranges` when not null), then the dispatch.
  void RecordRun(VkCommandBuffer cb, const Pipeline& p, absl::Span<VulkanBuffer* const> buffers,
                 const VulkanBuffer* placeholder, const SpirvBufferRanges* ranges) const;

  std::shared_ptr<VulkanDevice> device_;
  PFN_vkCmdPushDescriptorSetKHR push_descriptor_;
  int64_t max_storage_range_;
  std::vector<Pipeline> pipelines_;
  std::vector<int64_t> scratch_bytes_;
  std::vector<std::shared_ptr<const SpirvKernel>> variants_;  // by row-major position
  std::vector<int64_t> variant_grid_;
};

}  // namespace tessera::vulkan

#endif  // TESSERA_BACKENDS_VULKAN_SPIRV_KERNEL_H_
