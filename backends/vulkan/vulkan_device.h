#ifndef TESSERA_BACKENDS_VULKAN_VULKAN_DEVICE_H_
#define TESSERA_BACKENDS_VULKAN_VULKAN_DEVICE_H_

// One device of the Vulkan platform: one VkDevice (a physical device may back several,
// VulkanPlatformOptions::logical_devices_per_gpu) with its compute queue and in-order stream
// (vulkan_stream.h), the allocators of its two memories (device, pinned_host), its staging and
// export rings (staging_ring.h), the strided-copy compute pipeline where push descriptors exist
// (compute_copy.h), its imports of other devices' memory (peer_memory_import.h) and its
// cross-device copier (cross_device_copy.h). It runs the stream's ops: host<->device transfers
// (host_transfer.h), buffer->buffer copies on one VkDevice (vkCmdCopyBuffer with one region per
// run, or the compute shader for boxes with many short rows), copies from other devices (region
// copies from the source block imported into this device where both are one GPU, else staged), and
// host callbacks.
//
// Lifecycle: construct, Init (creates everything; NOT_FOUND when the physical device lacks a
// compute queue or usable memory types), Start (threads), and at the end BeginShutdown / Quiet /
// CancelAndJoin (see ~VulkanPlatformImpl).
//
// Ownership: shared (std::shared_ptr): the platform holds every device and each buffer holds its
// own, so a buffer may outlive the platform; the destructor waits for the GPU to be idle and
// destroys everything, the VkDevice last. Holds the VulkanInstance; borrows the platform's
// counters.
// Thread-safety: Allocate, WrapHost, DestroyImported, allocator, Enqueue, the drain protocol and
// InjectSubmitFailures are thread-safe. staging_ring() is the stream worker's; export_ring() is
// used under export_mu() (held by other devices' workers during cross-device copies).

#include <vulkan/vulkan.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "backends/vulkan/compute_copy.h"
#include "backends/vulkan/cross_device_copy.h"
#include "backends/vulkan/device_memory_allocator.h"
#include "backends/vulkan/heap_budget.h"
#include "backends/vulkan/peer_memory_import.h"
#include "backends/vulkan/platform_counters.h"
#include "backends/vulkan/staging_ring.h"
#include "backends/vulkan/vulkan_instance.h"
#include "backends/vulkan/vulkan_platform.h"
#include "backends/vulkan/vulkan_stream.h"
#include "ifrt/spi/platform.h"

namespace tessera::vulkan {

struct PhysicalDeviceDescription;  // physical_device.h

class VulkanDevice : public std::enable_shared_from_this<VulkanDevice> {
 public:
  VulkanDevice(std::shared_ptr<VulkanInstance> instance, VkPhysicalDevice physical,
               const VulkanPlatformOptions& options, PlatformCounters* counters);
  VulkanDevice(const VulkanDevice&) = delete;
  VulkanDevice& operator=(const VulkanDevice&) = delete;
  ~VulkanDevice();

  // NOT_FOUND: no compute queue, no usable memory type or no staging memory (the platform then
  // skips the physical device); other Vulkan failures as VkStatus (vulkan_status.h).
  // `same_gpu_peers`: another device of the platform is the same GPU (then blocks are allocated
  // exportable where VulkanPlatformOptions::cross_device_peer_import and the driver allow).
  // `heaps`: the ledger of the physical device's heaps, shared by its logical devices (null: one of
  // this device's own).
  absl::Status Init(int physical_index, int logical_index, bool same_gpu_peers = false,
                    std::shared_ptr<HeapBudgets> heaps = nullptr);
  // Starts the stream's threads.
  void Start();

  const PlatformDeviceInfo& info() const { return info_; }
  DeviceMemoryAllocator& allocator(int memory) { return *pools_[memory]; }

  // RESOURCE_EXHAUSTED above what the memory's heap has left (heap_budget.h) or when the memory
  // cannot be allocated; INVALID_ARGUMENT above the largest buffer the device can make.
  absl::StatusOr<PlatformBufferRef> Allocate(int memory, int64_t bytes);
  // UNIMPLEMENTED unless pinned_host memory, VK_EXT_external_memory_host and an aligned non-empty
  // range (the caller then copies).
  absl::StatusOr<PlatformBufferRef> WrapHost(int memory, void* data, int64_t bytes,
                                             std::function<void()> on_release);
  // Destroys the Vulkan objects of a block made by WrapHost.
  void DestroyImported(MemoryBlock& b);

  Future<> Enqueue(std::shared_ptr<StreamOp> op, absl::Span<const Future<>> after) {
    return stream_->Enqueue(std::move(op), after);
  }

  // Drain protocol, see ~VulkanPlatformImpl.
  void BeginShutdown() { stream_->BeginShutdown(); }
  bool Quiet() { return stream_->Quiet(); }
  void CancelAndJoin();

  void InjectSubmitFailures(int count) { stream_->InjectSubmitFailures(count); }

  // ---- for cross-device copies (cross_device_copy.h) ----
  VkDevice vk_device() const { return device_; }
  const VulkanPlatformOptions& options() const { return options_; }
  PlatformCounters& counters() const { return *counters_; }
  VulkanStream& stream() { return *stream_; }
  StagingRing& staging_ring() { return *staging_; }  // worker only
  StagingRing& export_ring() { return *export_; }    // under export_mu()
  // Held by other devices' workers reading this device's buffers.
  std::mutex& export_mu() { return export_mu_; }
  // VK_EXT_external_memory_host is usable.
  bool host_import() const { return host_import_; }
  int64_t host_import_alignment() const { return host_import_alignment_; }
  PFN_vkGetMemoryHostPointerPropertiesEXT host_pointer_properties() const {
    return host_pointer_props_;
  }

 private:
  struct EnabledExtensions;

  // The steps of Init, in order.
  void ReadLimits(const PhysicalDeviceDescription& pd);
  EnabledExtensions ChooseExtensions(const PhysicalDeviceDescription& pd, bool same_gpu_peers);
  absl::Status CreateLogicalDevice(const EnabledExtensions& extensions);
  void LoadExtensionFunctions(const PhysicalDeviceDescription& pd,
                              const EnabledExtensions& extensions);
  absl::Status CreateMemories(const PhysicalDeviceDescription& pd);
  absl::Status CreateStreamAndRings(const VkPhysicalDeviceMemoryProperties& memory);
  absl::Status CreateComputePipeline(const PhysicalDeviceDescription& pd,
                                     const EnabledExtensions& extensions);
  void PublishInfo(const PhysicalDeviceDescription& pd, int physical_index, int logical_index);
  // Slots of each staging ring (at least 2).
  int staging_chunks() const { return std::max(2, options_.staging_chunks); }

  // The stream's executor.
  absl::Status Execute(StreamOp& op, StreamCompletion& c);
  absl::Status CopyBuffersToBuffers(StreamOp& op, StreamCompletion& c);

  std::shared_ptr<VulkanInstance> instance_;
  VkPhysicalDevice physical_;
  VulkanPlatformOptions options_;
  PlatformCounters* counters_;
  PlatformDeviceInfo info_;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  uint32_t queue_family_ = 0;
  std::shared_ptr<HeapBudgets> heaps_;  // outlives pools_
  std::unique_ptr<DeviceMemoryAllocator> pools_[2];
  uint32_t heap_index_[2] = {0, 0};
  int64_t heap_bytes_[2] = {0, 0};  // the limits of those heaps
  int64_t max_buffer_bytes_ = 0;
  int64_t compute_min_runs_ = 4096;
  // VK_EXT_external_memory_host: WrapHostMemory, and cross-device copies share an imported host
  // staging ring.
  bool host_import_ = false;
  int64_t host_import_alignment_ = 4096;
  PFN_vkGetMemoryHostPointerPropertiesEXT host_pointer_props_ = nullptr;
  // VK_KHR_external_memory_fd: blocks exportable as opaque fds (null: not).
  std::unique_ptr<BlockExporter> exporter_;
  std::shared_ptr<PeerMemoryImports> peer_imports_;

  std::unique_ptr<VulkanStream> stream_;
  std::unique_ptr<StagingRing> staging_;  // worker only
  std::mutex export_mu_;
  std::unique_ptr<StagingRing> export_;              // under export_mu_
  std::unique_ptr<ComputeCopyPipeline> compute_;     // null: no compute copies
  std::unique_ptr<CrossDeviceCopier> cross_device_;  // worker only
};

}  // namespace tessera::vulkan

#endif  // TESSERA_BACKENDS_VULKAN_VULKAN_DEVICE_H_
