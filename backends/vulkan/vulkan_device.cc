#include "backends/vulkan/vulkan_device.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/strings/str_cat.h"
#include "backends/vulkan/command_recording.h"
#include "backends/vulkan/host_memory_import.h"
#include "backends/vulkan/host_transfer.h"
#include "backends/vulkan/physical_device.h"
#include "backends/vulkan/vulkan_buffer.h"
#include "backends/vulkan/vulkan_status.h"
#include "base/status_macros.h"

namespace tessera::vulkan {

VulkanDevice::VulkanDevice(std::shared_ptr<VulkanInstance> instance, VkPhysicalDevice physical,
                           const VulkanPlatformOptions& options, PlatformCounters* counters)
    : instance_(std::move(instance)),
      physical_(physical),
      options_(options),
      counters_(counters),
      cross_device_(std::make_unique<CrossDeviceCopier>(this)) {}

VulkanDevice::~VulkanDevice() {
  if (device_ == VK_NULL_HANDLE) return;
  vkDeviceWaitIdle(device_);
  if (peer_imports_) peer_imports_->Close();
  cross_device_.reset();  // empty after CancelAndJoin
  pools_[0].reset();
  pools_[1].reset();
  staging_.reset();
  export_.reset();
  compute_.reset();
  stream_.reset();  // its command pool and semaphores
  vkDestroyDevice(device_, nullptr);
}

namespace {

// Buffers like the allocators' can be exported and imported as opaque fds, without dedicated
// allocations.
bool OpaqueFdBuffersSupported(VkPhysicalDevice physical) {
  VkPhysicalDeviceExternalBufferInfo info{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_BUFFER_INFO};
  info.usage = kBlockBufferUsage;
  info.handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT;
  VkExternalBufferProperties props{VK_STRUCTURE_TYPE_EXTERNAL_BUFFER_PROPERTIES};
  vkGetPhysicalDeviceExternalBufferProperties(physical, &info, &props);
  const VkExternalMemoryFeatureFlags f = props.externalMemoryProperties.externalMemoryFeatures;
  return (f & VK_EXTERNAL_MEMORY_FEATURE_EXPORTABLE_BIT) &&
         (f & VK_EXTERNAL_MEMORY_FEATURE_IMPORTABLE_BIT) &&
         !(f & VK_EXTERNAL_MEMORY_FEATURE_DEDICATED_ONLY_BIT);
}

}  // namespace

// The device extensions Init enables, from what the physical device offers.
struct VulkanDevice::EnabledExtensions {
  std::vector<const char*> names;
  bool push_descriptor = false;  // VK_KHR_push_descriptor: the compute copy pipeline
  bool peer_import = false;      // VK_KHR_external_memory_fd: exportable blocks
};

absl::Status VulkanDevice::Init(int physical_index, int logical_index, bool same_gpu_peers,
                                std::shared_ptr<HeapBudgets> heaps) {
  const PhysicalDeviceDescription pd = DescribePhysicalDevice(physical_);
  heaps_ = heaps != nullptr ? std::move(heaps)
                            : std::make_shared<HeapBudgets>(
                                  physical_, pd.properties.deviceName, options_.heap_limit_bytes,
                                  pd.HasExtension(VK_EXT_MEMORY_BUDGET_EXTENSION_NAME));
  ReadLimits(pd);
  const int family = PickComputeQueueFamily(physical_);
  if (family < 0) return absl::NotFoundError("no compute queue");
  queue_family_ = static_cast<uint32_t>(family);
  const EnabledExtensions extensions = ChooseExtensions(pd, same_gpu_peers);
  TESSERA_RETURN_IF_ERROR(CreateLogicalDevice(extensions));
  LoadExtensionFunctions(pd, extensions);
  TESSERA_RETURN_IF_ERROR(CreateMemories(pd));
  TESSERA_RETURN_IF_ERROR(CreateStreamAndRings(pd.memory));
  TESSERA_RETURN_IF_ERROR(CreateComputePipeline(pd, extensions));
  PublishInfo(pd, physical_index, logical_index);
  return absl::OkStatus();
}

void VulkanDevice::ReadLimits(const PhysicalDeviceDescription& pd) {
  limits_ = pd.properties.limits;
  if (options_.max_storage_buffer_range_override > 0) {
    limits_.maxStorageBufferRange = static_cast<uint32_t>(std::min<int64_t>(
        limits_.maxStorageBufferRange, options_.max_storage_buffer_range_override));
  }
  max_buffer_bytes_ = static_cast<int64_t>(std::min<uint64_t>(
      {pd.maintenance3.maxMemoryAllocationSize, pd.max_buffer_size, uint64_t{INT64_MAX}}));
  compute_min_runs_ = options_.compute_copy_min_runs;
  if (compute_min_runs_ < 0) {
    compute_min_runs_ = pd.properties.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU ? INT64_MAX : 4096;
  }
}

VulkanDevice::EnabledExtensions VulkanDevice::ChooseExtensions(const PhysicalDeviceDescription& pd,
                                                               bool same_gpu_peers) {
  EnabledExtensions e;
  e.push_descriptor = pd.HasExtension(VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
  if (e.push_descriptor) e.names.push_back(VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
  host_import_ = pd.HasExtension(VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME);
  if (host_import_) {
    e.names.push_back(VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME);
    VkPhysicalDeviceExternalMemoryHostPropertiesEXT hp{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_MEMORY_HOST_PROPERTIES_EXT};
    VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    p2.pNext = &hp;
    vkGetPhysicalDeviceProperties2(physical_, &p2);
    host_import_alignment_ =
        std::max<int64_t>(4096, static_cast<int64_t>(hp.minImportedHostPointerAlignment));
  }
  e.peer_import = options_.cross_device_peer_import && same_gpu_peers &&
                  pd.HasExtension(VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME) &&
                  OpaqueFdBuffersSupported(physical_);
  if (e.peer_import) e.names.push_back(VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME);
  return e;
}

absl::Status VulkanDevice::CreateLogicalDevice(const EnabledExtensions& extensions) {
  float priority = 1.0f;
  VkDeviceQueueCreateInfo qci{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qci.queueFamilyIndex = queue_family_;
  qci.queueCount = 1;
  qci.pQueuePriorities = &priority;
  VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  f12.timelineSemaphore = VK_TRUE;
  // 64-bit floats and integers in compiled kernels (spirv_kernel.h), where the device has them.
  VkPhysicalDeviceFeatures supported{};
  vkGetPhysicalDeviceFeatures(physical_, &supported);
  VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  features.features.shaderFloat64 = supported.shaderFloat64;
  features.features.shaderInt64 = supported.shaderInt64;
  shader_float64_ = supported.shaderFloat64 == VK_TRUE;
  shader_int64_ = supported.shaderInt64 == VK_TRUE;
  features.pNext = &f12;
  VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  dci.pNext = &features;
  dci.queueCreateInfoCount = 1;
  dci.pQueueCreateInfos = &qci;
  dci.enabledExtensionCount = static_cast<uint32_t>(extensions.names.size());
  dci.ppEnabledExtensionNames = extensions.names.data();
  TESSERA_VK_RETURN_IF_ERROR(vkCreateDevice(physical_, &dci, nullptr, &device_), "vkCreateDevice");
  vkGetDeviceQueue(device_, queue_family_, 0, &queue_);
  return absl::OkStatus();
}

void VulkanDevice::LoadExtensionFunctions(const PhysicalDeviceDescription& pd,
                                          const EnabledExtensions& extensions) {
  if (host_import_) {
    host_pointer_props_ = reinterpret_cast<PFN_vkGetMemoryHostPointerPropertiesEXT>(
        vkGetDeviceProcAddr(device_, "vkGetMemoryHostPointerPropertiesEXT"));
    host_import_ = host_pointer_props_ != nullptr;
  }
  auto get_fd =
      extensions.peer_import
          ? reinterpret_cast<PFN_vkGetMemoryFdKHR>(vkGetDeviceProcAddr(device_, "vkGetMemoryFdKHR"))
          : nullptr;
  if (get_fd != nullptr) {
    exporter_ = std::make_unique<BlockExporter>();
    exporter_->device = device_;
    exporter_->get_memory_fd = get_fd;
    std::copy(std::begin(pd.ids.deviceUUID), std::end(pd.ids.deviceUUID),
              exporter_->device_uuid.begin());
    std::copy(std::begin(pd.ids.driverUUID), std::end(pd.ids.driverUUID),
              exporter_->driver_uuid.begin());
  }
  peer_imports_ =
      std::make_shared<PeerMemoryImports>(device_, exporter_.get(), &counters_->peer_imports_live);
}

absl::Status VulkanDevice::CreateMemories(const PhysicalDeviceDescription& pd) {
  const VkPhysicalDeviceMemoryProperties& mp = pd.memory;
  const int device_type =
      PickMemoryType(mp, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT,
                     VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT);
  const int host_type =
      PickMemoryType(mp, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                     VK_MEMORY_PROPERTY_HOST_CACHED_BIT, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
  if (device_type < 0 || host_type < 0) {
    return absl::NotFoundError("no DEVICE_LOCAL or no HOST_VISIBLE|HOST_COHERENT memory type");
  }
  const VkPhysicalDeviceLimits& limits = pd.properties.limits;
  const int64_t alignment =
      std::max<int64_t>({256, static_cast<int64_t>(limits.minStorageBufferOffsetAlignment),
                         static_cast<int64_t>(limits.nonCoherentAtomSize)});
  heap_index_[kDeviceMemory] = mp.memoryTypes[device_type].heapIndex;
  heap_index_[kPinnedHostMemory] = mp.memoryTypes[host_type].heapIndex;
  pools_[kDeviceMemory] = std::make_unique<DeviceMemoryAllocator>(
      device_, static_cast<uint32_t>(device_type), false, options_.block_bytes, alignment,
      exporter_.get(), heaps_.get(), heap_index_[kDeviceMemory]);
  pools_[kPinnedHostMemory] = std::make_unique<DeviceMemoryAllocator>(
      device_, static_cast<uint32_t>(host_type), true, options_.block_bytes, alignment,
      exporter_.get(), heaps_.get(), heap_index_[kPinnedHostMemory]);
  heap_bytes_[kDeviceMemory] = heaps_->limit(heap_index_[kDeviceMemory]);
  heap_bytes_[kPinnedHostMemory] = heaps_->limit(heap_index_[kPinnedHostMemory]);
  return absl::OkStatus();
}

absl::Status VulkanDevice::CreateStreamAndRings(const VkPhysicalDeviceMemoryProperties& memory) {
  stream_ = std::make_unique<VulkanStream>(device_, queue_, queue_family_, counters_);
  TESSERA_RETURN_IF_ERROR(stream_->Init());
  TESSERA_ASSIGN_OR_RETURN(
      staging_, StagingRing::Create(device_, memory, queue_family_, options_.staging_chunk_bytes,
                                    staging_chunks()));
  TESSERA_ASSIGN_OR_RETURN(
      export_, StagingRing::Create(device_, memory, queue_family_, options_.staging_chunk_bytes,
                                   staging_chunks()));
  return absl::OkStatus();
}

absl::Status VulkanDevice::CreateComputePipeline(const PhysicalDeviceDescription& pd,
                                                 const EnabledExtensions& extensions) {
  if (!extensions.push_descriptor) return absl::OkStatus();
  auto push_descriptor = reinterpret_cast<PFN_vkCmdPushDescriptorSetKHR>(
      vkGetDeviceProcAddr(device_, "vkCmdPushDescriptorSetKHR"));
  if (push_descriptor == nullptr) return absl::OkStatus();  // no compute copies
  push_descriptor_ = push_descriptor;
  const VkPhysicalDeviceLimits& limits = pd.properties.limits;
  TESSERA_ASSIGN_OR_RETURN(compute_,
                           ComputeCopyPipeline::Create(device_, push_descriptor, compute_min_runs_,
                                                       limits_.maxStorageBufferRange,
                                                       limits.maxComputeWorkGroupCount[0]));
  return absl::OkStatus();
}

void VulkanDevice::PublishInfo(const PhysicalDeviceDescription& pd, int physical_index,
                               int logical_index) {
  info_.kind = "vulkan";
  info_.name = pd.properties.deviceName;
  LogicalDeviceFacts facts;
  facts.device_memory_bytes = heap_bytes_[kDeviceMemory];
  facts.pinned_host_memory_bytes = heap_bytes_[kPinnedHostMemory];
  facts.max_buffer_bytes = max_buffer_bytes_;
  facts.physical_device_index = physical_index;
  facts.logical_device_index = logical_index;
  facts.compute_copy = compute_ != nullptr;
  facts.compute_copy_min_runs = compute_min_runs_;
  facts.staging_chunk_bytes = options_.staging_chunk_bytes;
  facts.staging_chunks = staging_chunks();
  facts.peer_memory_import = exporter_ != nullptr;
  facts.shader_float64 = shader_float64_;
  facts.shader_int64 = shader_int64_;
  facts.max_storage_buffer_range = limits_.maxStorageBufferRange;
  SetDeviceAttributes(pd, facts, &info_.attributes);
  info_.memories.push_back(PlatformMemoryInfo{"device", false, heap_bytes_[kDeviceMemory]});
  info_.memories.push_back(PlatformMemoryInfo{"pinned_host", true, heap_bytes_[kPinnedHostMemory]});
  info_.default_memory = kDeviceMemory;
}

void VulkanDevice::Start() {
  stream_->Start([this](StreamOp& op, StreamCompletion& c) { return Execute(op, c); });
}

void VulkanDevice::CancelAndJoin() {
  stream_->CancelAndJoin();
  // While every device of the platform is alive.
  cross_device_->ReleaseSharedStaging();
}

absl::StatusOr<PlatformBufferRef> VulkanDevice::Allocate(int memory, int64_t bytes) {
  if (bytes > heap_bytes_[memory]) {
    // Cannot fit whatever is freed; a buffer that fits the heap but not what is left of it fails in
    // the allocator (HeapBudgets::Reserve), also as RESOURCE_EXHAUSTED.
    return absl::ResourceExhaustedError(absl::StrCat(
        "cannot allocate ", bytes, " bytes of ", info_.memories[memory].kind, " memory on ",
        info_.name, ": its heap holds ", heap_bytes_[memory], " bytes"));
  }
  if (bytes > max_buffer_bytes_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot allocate ", bytes, " bytes on ", info_.name, ": one buffer may hold at most ",
        max_buffer_bytes_, " bytes (min of maxMemoryAllocationSize and maxBufferSize)"));
  }
  DeviceMemoryAllocator::Allocation alloc;
  if (bytes > 0) {
    auto a = pools_[memory]->Allocate(bytes);
    if (!a.ok()) return a.status();
    alloc = *a;
  }
  return PlatformBufferRef(
      std::make_shared<VulkanBuffer>(shared_from_this(), memory, alloc, bytes));
}

absl::StatusOr<PlatformBufferRef> VulkanDevice::WrapHost(int memory, void* data, int64_t bytes,
                                                         std::function<void()> on_release) {
  if (memory != kPinnedHostMemory) {
    return absl::UnimplementedError("only pinned_host memory can use host memory in place");
  }
  if (!host_import_) {
    return absl::UnimplementedError(absl::StrCat(info_.name, " lacks VK_EXT_external_memory_host"));
  }
  const int64_t align = host_import_alignment_;
  if (bytes <= 0 || reinterpret_cast<uintptr_t>(data) % align != 0 || bytes % align != 0) {
    return absl::UnimplementedError(
        absl::StrCat("importing host memory needs a non-empty range whose address and size "
                     "are multiples of ",
                     align, " bytes"));
  }
  auto b = std::make_unique<MemoryBlock>();
  b->size = bytes;
  b->dedicated = true;
  b->mapped = data;
  absl::Status s = ImportHostMemory(device_, host_pointer_props_, data, bytes, kBlockBufferUsage,
                                    &b->buffer, &b->memory);
  if (!s.ok()) {
    DestroyImported(*b);
    if (s.code() == absl::StatusCode::kInternal) {
      return absl::UnimplementedError(std::string(s.message()));
    }
    return s;
  }
  return PlatformBufferRef(std::make_shared<VulkanBuffer>(shared_from_this(), memory, std::move(b),
                                                          std::move(on_release)));
}

void VulkanDevice::DestroyImported(MemoryBlock& b) {
  if (b.buffer) vkDestroyBuffer(device_, b.buffer, nullptr);
  if (b.memory) vkFreeMemory(device_, b.memory, nullptr);
}

// ---- the stream's ops -------------------------------------------------------

absl::Status VulkanDevice::Execute(StreamOp& op, StreamCompletion& c) {
  // Direct host copies through imported user memory where the driver offers it.
  const bool direct = host_import_ && options_.direct_host_copy_min_bytes >= 0;
  const HostImport import{.device = device_,
                          .props = direct ? host_pointer_props_ : nullptr,
                          .alignment = host_import_alignment_,
                          .min_bytes = options_.direct_host_copy_min_bytes};
  switch (op.kind) {
    case StreamOp::Kind::kHostToBuffer:
      for (auto& cp : op.h2b) c.keep_alive.push_back(cp.dst);
      return CopyHostToBuffers(op.h2b, *staging_, *stream_, *counters_, &import);
    case StreamOp::Kind::kBufferToHost:
      for (auto& cp : op.b2h) c.keep_alive.push_back(cp.src);
      return CopyBuffersToHost(op.b2h, *staging_, *stream_, *counters_, &import);
    case StreamOp::Kind::kBufferToBuffer:
      for (auto& cp : op.b2b) {
        c.keep_alive.push_back(cp.src);
        c.keep_alive.push_back(cp.dst);
      }
      return CopyBuffersToBuffers(op, c);
    case StreamOp::Kind::kKernel:
      return LaunchKernel(op, c);
    case StreamOp::Kind::kCallback: {
      if (absl::Status s = stream_->WaitStream(); !s.ok()) return s;
      absl::Status status = op.fn ? op.fn() : absl::OkStatus();
      op.fn = nullptr;  // release captures now
      if (absl::Status s = stream_->HostSignal(); !s.ok()) return s;
      return status;
    }
  }
  return absl::InternalError("unknown op");
}

absl::Status VulkanDevice::CopyBuffersToBuffers(StreamOp& op, StreamCompletion& c) {
  // Copies this device's queue runs as regions, with the VkBuffer to read: its own buffers, and
  // other devices' blocks imported into it.
  std::vector<std::pair<const BufferToBufferCopy*, VkBuffer>> local;
  std::vector<const BufferToBufferCopy*> remote;
  for (const BufferToBufferCopy& cp : op.b2b) {
    if (cp.geometry.num_elements() == 0) continue;
    VulkanBuffer* src = AsVulkanBuffer(cp.src);
    if (src->dev() == this) {
      local.emplace_back(&cp, src->vk_buffer());
      continue;
    }
    absl::StatusOr<VkBuffer> imported = peer_imports_->Import(*src->block());
    if (imported.ok()) {
      local.emplace_back(&cp, *imported);
      counters_->peer_import_copies.fetch_add(1);
      counters_->cross_device_copies.fetch_add(1);
    } else {
      remote.push_back(&cp);  // staged (cross_device_copy.h)
    }
  }
  if (!local.empty()) {
    auto cb = stream_->AcquireCmd();
    if (!cb.ok()) return cb.status();
    c.cmds.push_back(*cb);
    if (absl::Status s = BeginCmd(*cb); !s.ok()) return s;
    std::vector<VkBufferCopy> regions;
    for (const auto& [cp, src_buffer] : local) {
      VulkanBuffer* src = AsVulkanBuffer(cp->src);
      VulkanBuffer* dst = AsVulkanBuffer(cp->dst);
      if (src->dev() == this && compute_ && compute_->Accepts(cp->geometry, src, dst)) {
        compute_->Record(*cb, cp->geometry, src, dst);
        counters_->compute_copies.fetch_add(1);
        continue;
      }
      regions.clear();
      auto flush = [&] {
        if (regions.empty()) return;
        vkCmdCopyBuffer(*cb, src_buffer, dst->vk_buffer(), static_cast<uint32_t>(regions.size()),
                        regions.data());
        regions.clear();
      };
      cp->geometry.ForEachRun([&](int64_t so, int64_t d, int64_t n) {
        regions.push_back(VkBufferCopy{static_cast<VkDeviceSize>(src->offset() + so),
                                       static_cast<VkDeviceSize>(dst->offset() + d),
                                       static_cast<VkDeviceSize>(n)});
        if (regions.size() >= kMaxRegionsPerChunk) flush();
      });
      flush();
      counters_->region_copies.fetch_add(1);
    }
    if (absl::Status s = EndCmd(*cb); !s.ok()) return s;
    if (auto v = stream_->Submit(*cb); !v.ok()) return v.status();
  }
  for (const BufferToBufferCopy* cp : remote) {
    if (absl::Status s = cross_device_->Copy(*cp); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<PlatformKernelRef> VulkanDevice::LoadKernel(const KernelArtifact& artifact) {
  TESSERA_ASSIGN_OR_RETURN(std::shared_ptr<const SpirvKernel> kernel,
                           SpirvKernel::Load(shared_from_this(), push_descriptor_, limits_,
                                             shader_float64_, shader_int64_, artifact));
  return PlatformKernelRef(std::move(kernel));
}

absl::Status VulkanDevice::LaunchKernel(StreamOp& op, StreamCompletion& c) {
  const auto* loaded = dynamic_cast<const SpirvKernel*>(op.launch.kernel.get());
  if (loaded == nullptr) return absl::InvalidArgumentError("not a kernel of this platform");
  TESSERA_ASSIGN_OR_RETURN(const SpirvKernel* kernel,
                           loaded->ForPosition(op.launch.device_position));
  c.keep_kernels.push_back(op.launch.kernel);
  std::vector<VulkanBuffer*> buffers;
  for (const PlatformBufferRef& b : op.launch.buffers) {
    VulkanBuffer* vb = AsVulkanBuffer(b);
    if (vb == nullptr || vb->dev() != this) {
      return absl::InvalidArgumentError("a kernel buffer lives on another device");
    }
    buffers.push_back(vb);
    c.keep_alive.push_back(b);
  }
  for (int64_t bytes : kernel->scratch_bytes()) {
    TESSERA_ASSIGN_OR_RETURN(PlatformBufferRef scratch, Allocate(kDeviceMemory, bytes));
    buffers.push_back(AsVulkanBuffer(scratch));
    c.keep_alive.push_back(std::move(scratch));
  }
  TESSERA_RETURN_IF_ERROR(kernel->Validate(buffers));
  // Zero-size buffers are bound as a small one, held by this launch only (a buffer the device kept
  // would hold the device: VulkanBuffer owns a reference to it).
  VulkanBuffer* placeholder = nullptr;
  if (absl::c_any_of(buffers, [](const VulkanBuffer* b) { return b->size_bytes() == 0; })) {
    TESSERA_ASSIGN_OR_RETURN(PlatformBufferRef small, Allocate(kDeviceMemory, 256));
    placeholder = AsVulkanBuffer(small);
    c.keep_alive.push_back(std::move(small));
  }
  TESSERA_ASSIGN_OR_RETURN(VkCommandBuffer cb, stream_->AcquireCmd());
  c.cmds.push_back(cb);
  TESSERA_RETURN_IF_ERROR(BeginCmd(cb));
  kernel->Record(cb, buffers, placeholder);
  TESSERA_RETURN_IF_ERROR(EndCmd(cb));
  TESSERA_RETURN_IF_ERROR(stream_->Submit(cb).status());
  counters_->kernel_launches.fetch_add(1);
  return absl::OkStatus();
}

}  // namespace tessera::vulkan
