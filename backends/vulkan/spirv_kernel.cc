#include "backends/vulkan/spirv_kernel.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "backends/vulkan/vulkan_buffer.h"
#include "backends/vulkan/vulkan_device.h"
#include "base/status_macros.h"

namespace tessera::vulkan {
namespace {

absl::Status CheckDispatch(const SpirvDispatch& d, const VkPhysicalDeviceLimits& limits) {
  if (d.code.empty() || d.code.size() % 4 != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("SPIR-V module of ", d.entry, " is ", d.code.size(), " bytes"));
  }
  if (d.workgroup_size.size() != 3 || d.workgroup_count.size() != 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("dispatch ", d.entry, " needs 3 work-group sizes and counts"));
  }
  int64_t invocations = 1;
  for (int i = 0; i < 3; ++i) {
    if (d.workgroup_size[i] < 1 || d.workgroup_count[i] < 0) {
      return absl::InvalidArgumentError(absl::StrCat("dispatch ", d.entry, ": bad sizes"));
    }
    if (d.workgroup_size[i] > limits.maxComputeWorkGroupSize[i] ||
        d.workgroup_count[i] > limits.maxComputeWorkGroupCount[i]) {
      return absl::UnimplementedError(
          absl::StrCat("dispatch ", d.entry, " exceeds the device's work-group limits"));
    }
    invocations *= d.workgroup_size[i];
  }
  if (invocations > limits.maxComputeWorkGroupInvocations) {
    return absl::UnimplementedError(absl::StrCat("dispatch ", d.entry, " has ", invocations,
                                                 " invocations per work-group, above the "
                                                 "device's maxComputeWorkGroupInvocations"));
  }
  for (int b : d.bindings) {
    if (b < 0) return absl::InvalidArgumentError(absl::StrCat("dispatch ", d.entry, ": binding"));
  }
  for (const SpirvBufferRanges& r : d.ranges) {
    bool ok = r.offsets.size() == d.bindings.size() && r.sizes.size() == d.bindings.size();
    for (size_t i = 0; ok && i < r.offsets.size(); ++i) {
      ok = r.offsets[i] >= 0 && r.sizes[i] > 0 &&
           r.offsets[i] % std::max<int64_t>(1, limits.minStorageBufferOffsetAlignment) == 0;
    }
    if (!ok) {
      return absl::InvalidArgumentError(absl::StrCat(
          "dispatch ", d.entry, ": a binding range of the wrong count, size or alignment"));
    }
  }
  return absl::OkStatus();
}

// UNIMPLEMENTED when the module declares the Float64 (10) or Int64 (11) capability the device
// lacks: OpCapability (opcode 17) instructions follow the 5-word header.
absl::Status CheckCapabilities(const SpirvDispatch& d, bool float64, bool int64) {
  std::vector<uint32_t> words(d.code.size() / 4);
  std::memcpy(words.data(), d.code.data(), words.size() * 4);
  for (size_t i = 5; i < words.size();) {
    const uint32_t count = words[i] >> 16, opcode = words[i] & 0xffff;
    if (count == 0) break;
    if (opcode == 17 && i + 1 < words.size()) {
      if ((words[i + 1] == 10 && !float64) || (words[i + 1] == 11 && !int64)) {
        return absl::UnimplementedError(absl::StrCat(
            "kernel ", d.entry, " uses 64-bit ", words[i + 1] == 10 ? "floats" : "integers",
            ", which this device does not support (shaderFloat64 / shaderInt64)"));
      }
    } else if (opcode != 17 && opcode != 11 && opcode != 10) {
      break;  // past the capabilities, extensions and imports
    }
    i += count;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::shared_ptr<const SpirvKernel>> SpirvKernel::Load(
    std::shared_ptr<VulkanDevice> device, PFN_vkCmdPushDescriptorSetKHR push_descriptor,
    const VkPhysicalDeviceLimits& limits, bool float64, bool int64,
    const KernelArtifact& artifact) {
  if (artifact.format != "spirv") {
    return absl::InvalidArgumentError(
        absl::StrCat("the Vulkan platform runs \"spirv\" kernels, not \"", artifact.format, "\""));
  }
  if (push_descriptor == nullptr) {
    return absl::UnimplementedError(
        "running compiled kernels needs VK_KHR_push_descriptor, which this device lacks");
  }
  for (int64_t bytes : artifact.scratch_bytes) {
    if (bytes < 0) return absl::InvalidArgumentError("negative scratch buffer size");
  }
  std::shared_ptr<SpirvKernel> kernel(
      new SpirvKernel(device, push_descriptor, limits.maxStorageBufferRange));
  if (!artifact.position_variants.empty()) {
    int64_t positions = 1;
    for (int64_t d : artifact.variant_grid) positions *= d < 1 ? 0 : d;
    if (positions != static_cast<int64_t>(artifact.position_variants.size())) {
      return absl::InvalidArgumentError(
          absl::StrCat("kernel ", artifact.entry, " has ", artifact.position_variants.size(),
                       " position variants for a grid of ", positions, " positions"));
    }
    kernel->variant_grid_ = artifact.variant_grid;
    for (const KernelArtifact& variant : artifact.position_variants) {
      absl::StatusOr<std::shared_ptr<const SpirvKernel>> loaded =
          Load(device, push_descriptor, limits, float64, int64, variant);
      if (!loaded.ok()) return loaded.status();
      kernel->variants_.push_back(*std::move(loaded));
    }
    return std::shared_ptr<const SpirvKernel>(std::move(kernel));
  }
  const SpirvPayload* payload = GetSpirvPayload(artifact);
  if (payload == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "kernel ", artifact.entry, ": a \"spirv\" artifact without its SPIR-V payload"));
  }
  kernel->scratch_bytes_ = artifact.scratch_bytes;
  kernel->pipelines_.resize(payload->dispatches.size());
  for (size_t i = 0; i < payload->dispatches.size(); ++i) {
    const SpirvDispatch& d = payload->dispatches[i];
    if (absl::Status s = CheckDispatch(d, limits); !s.ok()) return s;
    if (absl::Status s = CheckCapabilities(d, float64, int64); !s.ok()) return s;
    if (absl::Status s = kernel->CreatePipeline(d, kernel->pipelines_[i]); !s.ok()) return s;
  }
  return std::shared_ptr<const SpirvKernel>(std::move(kernel));
}

absl::Status SpirvKernel::CreatePipeline(const SpirvDispatch& d, Pipeline& p) {
  p.bindings = d.bindings;
  p.ranges = d.ranges;
  for (int i = 0; i < 3; ++i) p.groups[i] = static_cast<uint32_t>(d.workgroup_count[i]);
  std::vector<uint32_t> words(d.code.size() / 4);
  std::memcpy(words.data(), d.code.data(), d.code.size());
  return p.objects.Create(
      device_->vk_device(),
      {.buffers = static_cast<uint32_t>(d.bindings.size()), .code = words, .entry = d.entry});
}

absl::StatusOr<const SpirvKernel*> SpirvKernel::ForPosition(
    absl::Span<const int64_t> position) const {
  if (variants_.empty()) return this;
  if (position.size() != variant_grid_.size()) {
    return absl::InvalidArgumentError(absl::StrCat("a launch at a position of ", position.size(),
                                                   " axes on a grid of ", variant_grid_.size()));
  }
  int64_t linear = 0;
  for (size_t axis = 0; axis < position.size(); ++axis) {
    if (position[axis] < 0 || position[axis] >= variant_grid_[axis]) {
      return absl::InvalidArgumentError("a launch at a position outside the kernel's grid");
    }
    linear = linear * variant_grid_[axis] + position[axis];
  }
  return variants_[linear].get();
}

SpirvKernel::~SpirvKernel() {
  for (Pipeline& p : pipelines_) p.objects.Destroy(device_->vk_device());
}

absl::Status SpirvKernel::ValidateRanges(const Pipeline& p,
                                         absl::Span<VulkanBuffer* const> buffers) const {
  for (const SpirvBufferRanges& r : p.ranges) {
    for (size_t i = 0; i < p.bindings.size(); ++i) {
      const VulkanBuffer* b = buffers[p.bindings[i]];
      if (r.offsets[i] + r.sizes[i] > b->size_bytes()) {
        return absl::InvalidArgumentError(
            absl::StrCat("a kernel binds bytes [", r.offsets[i], ", ", r.offsets[i] + r.sizes[i],
                         ") of a buffer of ", b->size_bytes(), " bytes"));
      }
      if (r.sizes[i] > max_storage_range_) {
        return absl::ResourceExhaustedError(
            absl::StrCat("a kernel binding range of ", r.sizes[i],
                         " bytes exceeds the device's maxStorageBufferRange (", max_storage_range_,
                         " bytes): the kernel was compiled for a device with a larger range"));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status SpirvKernel::Validate(absl::Span<VulkanBuffer* const> buffers) const {
  for (const Pipeline& p : pipelines_) {
    for (int b : p.bindings) {
      if (b >= static_cast<int>(buffers.size())) {
        return absl::InvalidArgumentError(
            absl::StrCat("kernel binding ", b, " but the launch has ", buffers.size(), " buffers"));
      }
    }
    if (!p.ranges.empty()) {
      TESSERA_RETURN_IF_ERROR(ValidateRanges(p, buffers));
      continue;
    }
    for (int b : p.bindings) {
      if (buffers[b]->allocated_size() > max_storage_range_) {
        return absl::ResourceExhaustedError(
            absl::StrCat("a kernel buffer of ", buffers[b]->size_bytes(),
                         " bytes exceeds the device's maxStorageBufferRange (", max_storage_range_,
                         " bytes): shard the program further so that each device's shard fits"));
      }
    }
  }
  return absl::OkStatus();
}

void SpirvKernel::RecordRun(VkCommandBuffer cb, const Pipeline& p,
                            absl::Span<VulkanBuffer* const> buffers,
                            const VulkanBuffer* placeholder,
                            const SpirvBufferRanges* ranges) const {
  std::vector<VkDescriptorBufferInfo> infos(p.bindings.size());
  std::vector<VkWriteDescriptorSet> writes(p.bindings.size());
  for (size_t i = 0; i < p.bindings.size(); ++i) {
    const VulkanBuffer* b = buffers[p.bindings[i]];
    if (b->size_bytes() == 0) b = placeholder;
    infos[i] = {b->vk_buffer(), static_cast<VkDeviceSize>(b->offset()),
                static_cast<VkDeviceSize>(b->allocated_size())};
    if (ranges != nullptr) {
      infos[i].offset += static_cast<VkDeviceSize>(ranges->offsets[i]);
      infos[i].range = static_cast<VkDeviceSize>(ranges->sizes[i]);
    }
    writes[i].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
    writes[i].dstBinding = static_cast<uint32_t>(i);
    writes[i].descriptorCount = 1;
    writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[i].pBufferInfo = &infos[i];
  }
  push_descriptor_(cb, VK_PIPELINE_BIND_POINT_COMPUTE, p.objects.layout, 0,
                   static_cast<uint32_t>(writes.size()), writes.data());
  vkCmdDispatch(cb, p.groups[0], p.groups[1], p.groups[2]);
}

void SpirvKernel::Record(VkCommandBuffer cb, absl::Span<VulkanBuffer* const> buffers,
                         const VulkanBuffer* placeholder) const {
  for (const Pipeline& p : pipelines_) {
    if (p.groups[0] == 0 || p.groups[1] == 0 || p.groups[2] == 0) continue;
    vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, p.objects.pipeline);
    if (p.ranges.empty()) RecordRun(cb, p, buffers, placeholder, nullptr);
    // The runs of a split kernel touch disjoint elements: no barrier between them.
    for (const SpirvBufferRanges& r : p.ranges) RecordRun(cb, p, buffers, placeholder, &r);
    // The next dispatch (and the copies after the launch) read what this one wrote.
    VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
    mb.dstAccessMask =
        VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT;
    vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                         VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, 0,
                         1, &mb, 0, nullptr, 0, nullptr);
  }
}

}  // namespace tessera::vulkan
