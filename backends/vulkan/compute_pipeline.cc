#include "backends/vulkan/compute_pipeline.h"

#include <vector>

#include "backends/vulkan/vulkan_status.h"

namespace tessera::vulkan {

absl::Status ComputePipeline::Create(VkDevice device, const ComputePipelineSpec& spec) {
  std::vector<VkDescriptorSetLayoutBinding> bindings(spec.buffers);
  for (uint32_t i = 0; i < spec.buffers; ++i) {
    bindings[i].binding = i;
    bindings[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    bindings[i].descriptorCount = 1;
    bindings[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  }
  VkDescriptorSetLayoutCreateInfo dl{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  dl.flags = VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR;
  dl.bindingCount = spec.buffers;
  dl.pBindings = bindings.data();
  TESSERA_VK_RETURN_IF_ERROR(vkCreateDescriptorSetLayout(device, &dl, nullptr, &set_layout),
                             "vkCreateDescriptorSetLayout");
  VkPushConstantRange pcr{VK_SHADER_STAGE_COMPUTE_BIT, 0, spec.push_constant_bytes};
  VkPipelineLayoutCreateInfo pl{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  pl.setLayoutCount = 1;
  pl.pSetLayouts = &set_layout;
  pl.pushConstantRangeCount = spec.push_constant_bytes > 0 ? 1 : 0;
  pl.pPushConstantRanges = &pcr;
  TESSERA_VK_RETURN_IF_ERROR(vkCreatePipelineLayout(device, &pl, nullptr, &layout),
                             "vkCreatePipelineLayout");
  VkShaderModuleCreateInfo smi{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  smi.codeSize = spec.code.size() * sizeof(uint32_t);
  smi.pCode = spec.code.data();
  VkShaderModule module;
  TESSERA_VK_RETURN_IF_ERROR(vkCreateShaderModule(device, &smi, nullptr, &module),
                             "vkCreateShaderModule");
  VkComputePipelineCreateInfo cpi{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  cpi.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  cpi.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  cpi.stage.module = module;
  cpi.stage.pName = spec.entry.c_str();
  cpi.layout = layout;
  VkResult r = vkCreateComputePipelines(device, VK_NULL_HANDLE, 1, &cpi, nullptr, &pipeline);
  vkDestroyShaderModule(device, module, nullptr);
  TESSERA_VK_RETURN_IF_ERROR(r, "vkCreateComputePipelines");
  return absl::OkStatus();
}

void ComputePipeline::Destroy(VkDevice device) {
  if (pipeline) vkDestroyPipeline(device, pipeline, nullptr);
  if (layout) vkDestroyPipelineLayout(device, layout, nullptr);
  if (set_layout) vkDestroyDescriptorSetLayout(device, set_layout, nullptr);
  *this = ComputePipeline{};
}

}  // namespace tessera::vulkan
