#include "backends/vulkan/compute_copy.h"

#include <algorithm>

#include "base/status_macros.h"

namespace tessera::vulkan {
namespace {

// The shader's push constants (shaders/strided_copy.comp).
struct ComputeParams {
  uint32_t rank, total, src_offset, dst_offset;
  uint32_t extent[6], src_stride[6], dst_stride[6];
};

constexpr uint32_t kStridedCopySpv[] = {
#include "strided_copy.spv.inc"
};

}  // namespace

ComputeCopyPipeline::ComputeCopyPipeline(VkDevice device,
                                         PFN_vkCmdPushDescriptorSetKHR push_descriptor,
                                         int64_t min_runs, int64_t max_storage_range,
                                         uint32_t max_groups_x)
    : device_(device),
      push_descriptor_(push_descriptor),
      min_runs_(min_runs),
      max_storage_range_(max_storage_range),
      max_groups_x_(max_groups_x) {}

absl::StatusOr<std::unique_ptr<ComputeCopyPipeline>> ComputeCopyPipeline::Create(
    VkDevice device, PFN_vkCmdPushDescriptorSetKHR push_descriptor, int64_t min_runs,
    int64_t max_storage_range, uint32_t max_groups_x) {
  std::unique_ptr<ComputeCopyPipeline> c(
      new ComputeCopyPipeline(device, push_descriptor, min_runs, max_storage_range, max_groups_x));
  TESSERA_RETURN_IF_ERROR(c->pipeline_.Create(device, {.buffers = 2,
                                                       .push_constant_bytes = sizeof(ComputeParams),
                                                       .code = kStridedCopySpv,
                                                       .entry = "main"}));
  return c;
}

ComputeCopyPipeline::~ComputeCopyPipeline() { pipeline_.Destroy(device_); }

bool ComputeCopyPipeline::Accepts(const StridedCopy& g, const VulkanBuffer* src,
                                  const VulkanBuffer* dst) const {
  StridedCopy n = g.Normalized();
  const int64_t elements = n.num_elements();
  const bool contiguous = n.inner_contiguous();
  const int64_t runs = contiguous ? elements / n.extent.back() : elements;
  const int64_t run_bytes = contiguous ? n.extent.back() * n.element_bytes : n.element_bytes;
  if (runs <= min_runs_ || run_bytes >= 256) return false;
  if (n.element_bytes % 4 || n.src_offset % 4 || n.dst_offset % 4) return false;
  for (size_t i = 0; i < n.extent.size(); ++i) {
    if (n.src_byte_strides[i] % 4 || n.dst_byte_strides[i] % 4) return false;
    if (n.src_byte_strides[i] < 0 || n.dst_byte_strides[i] < 0) return false;
  }
  if (n.extent.size() + 1 > 6) return false;
  if (src->allocated_size() > max_storage_range_ || dst->allocated_size() > max_storage_range_) {
    return false;
  }
  if (elements * (n.element_bytes / 4) >= (int64_t{1} << 31)) return false;
  return true;
}

void ComputeCopyPipeline::Record(VkCommandBuffer cb, const StridedCopy& g, const VulkanBuffer* src,
                                 const VulkanBuffer* dst) const {
  StridedCopy n = g.Normalized();
  ComputeParams p{};
  const int rank = static_cast<int>(n.extent.size());
  for (int i = 0; i < rank; ++i) {
    p.extent[i] = static_cast<uint32_t>(n.extent[i]);
    p.src_stride[i] = static_cast<uint32_t>(n.src_byte_strides[i] / 4);
    p.dst_stride[i] = static_cast<uint32_t>(n.dst_byte_strides[i] / 4);
  }
  p.extent[rank] = static_cast<uint32_t>(n.element_bytes / 4);  // words of one element
  p.src_stride[rank] = 1;
  p.dst_stride[rank] = 1;
  p.rank = static_cast<uint32_t>(rank + 1);
  p.total = static_cast<uint32_t>(n.num_elements() * (n.element_bytes / 4));
  p.src_offset = static_cast<uint32_t>(n.src_offset / 4);
  p.dst_offset = static_cast<uint32_t>(n.dst_offset / 4);

  VkDescriptorBufferInfo infos[2] = {{src->vk_buffer(), static_cast<VkDeviceSize>(src->offset()),
                                      static_cast<VkDeviceSize>(src->allocated_size())},
                                     {dst->vk_buffer(), static_cast<VkDeviceSize>(dst->offset()),
                                      static_cast<VkDeviceSize>(dst->allocated_size())}};
  VkWriteDescriptorSet writes[2] = {};
  for (uint32_t i = 0; i < 2; ++i) {
    writes[i].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
    writes[i].dstBinding = i;
    writes[i].descriptorCount = 1;
    writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[i].pBufferInfo = &infos[i];
  }
  vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline_.pipeline);
  push_descriptor_(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline_.layout, 0, 2, writes);
  vkCmdPushConstants(cb, pipeline_.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(p), &p);
  const uint64_t groups = (uint64_t{p.total} + 63) / 64;
  const uint32_t gx = static_cast<uint32_t>(std::min<uint64_t>(groups, max_groups_x_));
  const uint32_t gy = static_cast<uint32_t>((groups + gx - 1) / gx);
  vkCmdDispatch(cb, gx, gy, 1);
}

}  // namespace tessera::vulkan
