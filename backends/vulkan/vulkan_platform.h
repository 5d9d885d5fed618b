#ifndef TESSERA_BACKENDS_VULKAN_VULKAN_PLATFORM_H_
#define TESSERA_BACKENDS_VULKAN_VULKAN_PLATFORM_H_

// The Vulkan compute platform: an implementation of the device SPI (ifrt/spi/platform.h) over
// Vulkan.
//
//   auto p = tessera::CreateVulkanPlatform();
//   if (!p.ok()) ...;  // NOT_FOUND: no Vulkan driver / compute device
//   auto buf = (*p)->Allocate(/*device=*/0, /*memory=*/0, 1 << 20);
//
// Devices: one per VkPhysicalDevice that has a compute queue and Vulkan >= 1.2 (timeline
// semaphores), times `logical_devices_per_gpu` (each logical device is its own VkDevice). Physical
// devices are never de-duplicated by UUID.
//
// Memories (indices into PlatformDeviceInfo::memories):
//   0 "device": DEVICE_LOCAL memory, the default. host_address() is always nullptr, even on drivers
//     (lavapipe, integrated GPUs) where it is mappable: host transfers go through the staging ring.
//   1 "pinned_host": HOST_VISIBLE|HOST_COHERENT memory, persistently mapped; host_address() is the
//     mapping and host copies into/out of it are a memcpy done in stream order.
//
// Allocation sub-allocates (first fit, coalescing free list) from blocks of `block_bytes`; requests
// above block_bytes / 2 get a dedicated VkDeviceMemory, kept for reuse when freed
// (device_memory_allocator.h). Offsets are aligned to max(256,
// minStorageBufferOffsetAlignment, nonCoherentAtomSize). A request above
// min(maxMemoryAllocationSize, maxBufferSize) or above the memory heap is INVALID_ARGUMENT; a
// failed vkAllocateMemory is RESOURCE_EXHAUSTED. Buffers above maxStorageBufferRange are fine
// (copies on them use vkCmdCopyBuffer, never the compute shader). BytesInUse (the SPI's) counts the
// bytes of live buffers after this rounding.
//
// WrapHostMemory: pinned_host only, through VK_EXT_external_memory_host; the address and size must
// be multiples of minImportedHostPointerAlignment (4096 on most drivers), else UNIMPLEMENTED (the
// caller then copies). Wrapped bytes are not counted by BytesInUse.
//
// Streams: one in-order stream per device; operations are recorded by a per-device worker thread,
// submitted with a timeline semaphore (each submission waits for the previous value and signals the
// next), and their futures are set by a per-device completion thread that waits on the semaphore.
// See vulkan_stream.h, host_transfer.h and cross_device_copy.h for the transfer paths.
//
// Kernels: LoadKernel takes "spirv" artifacts (compiler/, one compute pipeline per dispatch, on the
// device's VkDevice); LaunchKernel runs one on the device's stream after `after`, allocating its
// scratch buffers in device memory (backends/vulkan/spirv_kernel.h). Needs
// VK_KHR_push_descriptor (else LoadKernel is UNIMPLEMENTED); every buffer a kernel binds must fit
// maxStorageBufferRange, or be bound by ranges the artifact gives (SpirvDispatch::ranges: split
// elementwise kernels), else the launch's future is RESOURCE_EXHAUSTED.
//
// Thread-safety: everything here is thread-safe. No Vulkan header is included by this file.

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "ifrt/spi/platform.h"

namespace tessera {

struct VulkanPlatformOptions {
  // Split each physical device into N logical devices (one VkDevice each).
  int logical_devices_per_gpu = 1;
  // Enable VK_LAYER_KHRONOS_validation when installed; every validation warning or error is printed
  // to stderr and counted (VulkanValidationMessageCount()).
  bool enable_validation = true;
  // Staging ring per device: `staging_chunks` chunks of `staging_chunk_bytes` host-visible memory.
  int64_t staging_chunk_bytes = int64_t{16} << 20;
  int staging_chunks = 3;
  // Size of the VkDeviceMemory blocks buffers are sub-allocated from.
  int64_t block_bytes = int64_t{64} << 20;
  // Buffer->buffer copies on one VkDevice use the strided-copy compute shader when they have more
  // than this many contiguous runs, each shorter than 256 bytes (and everything is 4-byte aligned).
  // -1: 4096 on GPUs, never on CPU-type devices (lavapipe), where vkCmdCopyBuffer regions measured
  // ~2x faster than the emulated shader.
  int64_t compute_copy_min_runs = -1;
  // Buffer->buffer copies between two VkDevices that both have VK_EXT_external_memory_host go
  // through a host staging ring imported into both devices (source GPU writes it, destination GPU
  // reads it: no host memcpy). Otherwise (or when false) the source copies into its own staging
  // ring, the host memcpys into the destination's, and the destination uploads.
  bool cross_device_shared_staging = true;
  // Buffer->buffer copies between two VkDevices of one GPU (logical devices of one physical device,
  // or one driver listed twice: equal deviceUUID and driverUUID) are one vkCmdCopyBuffer on the
  // destination device, reading the source's memory imported into it (VK_KHR_external_memory_fd,
  // opaque fds; blocks are then allocated exportable). Takes precedence over both paths above; they
  // remain for other pairs or when an import fails.
  bool cross_device_peer_import = true;
  // The most each memory heap of a physical device may hold of this platform's buffers (blocks),
  // all its logical devices together; 0: the heap's size. Allocations past it, or past the driver's
  // budget where VK_EXT_memory_budget exists, are RESOURCE_EXHAUSTED before any memory is
  // allocated.
  int64_t heap_limit_bytes = 0;
  // Host<->device copies of at least this many bytes (one op's staged copies together) on a device
  // with VK_EXT_external_memory_host import the user's host pages and copy directly, without the
  // staging ring (backends/vulkan/host_transfer.h); smaller ones, and any whose import fails, are
  // staged. Negative: always staged.
  int64_t direct_host_copy_min_bytes = int64_t{1} << 20;
  // Testing / debugging: when positive, the platform acts as if each device's
  // maxStorageBufferRange were at most this many bytes (the "max_storage_buffer_range" attribute,
  // the kernels' binding check, the compute copies), so that the split binding of large kernel
  // buffers (spirv_kernel.h) runs with small ones. registration.cc reads it from the environment
  // variable TESSERA_VULKAN_MAX_STORAGE_BUFFER_RANGE.
  int64_t max_storage_buffer_range_override = 0;
};

// Counters of what the platform did, for tests and benchmarks.
struct VulkanPlatformStats {
  int64_t submissions = 0;            // vkQueueSubmit calls (all devices)
  int64_t staged_chunks = 0;          // staging chunks moved (host<->device and cross-device)
  int64_t compute_copies = 0;         // buffer->buffer copies done by the compute shader
  int64_t region_copies = 0;          // buffer->buffer copies done with vkCmdCopyBuffer regions
  int64_t cross_device_copies = 0;    // buffer->buffer copies between different VkDevices
  int64_t host_memcpy_copies = 0;     // copies done by a host memcpy (pinned_host buffers)
  int64_t shared_staging_copies = 0;  // cross-device copies through imported host memory
  int64_t peer_import_copies = 0;     // cross-device copies reading the source's imported memory
  int64_t peer_imports_live = 0;      // blocks imported into other devices now (not cumulative)
  int64_t kernel_launches = 0;        // compiled kernels launched (LaunchKernel, spirv_kernel.h)
};

// The Platform returned by CreateVulkanPlatform, with Vulkan-specific queries.
class VulkanPlatform : public Platform {
 public:
  virtual VulkanPlatformStats stats() const = 0;
  // Testing: the next `count` queue submissions of `device` fail as if vkQueueSubmit returned
  // VK_ERROR_DEVICE_LOST (nothing is submitted).
  virtual void InjectSubmitFailuresForTesting(int device, int count) = 0;
};

// NOT_FOUND with a message naming the reason when there is no Vulkan driver or no compute-capable
// Vulkan >= 1.2 device; INTERNAL for other Vulkan failures during set-up.
absl::StatusOr<std::unique_ptr<VulkanPlatform>> CreateVulkanPlatform(
    const VulkanPlatformOptions& options = {});

// Number of validation-layer messages (warnings and errors) seen by all Vulkan platforms of the
// process.
int64_t VulkanValidationMessageCount();

}  // namespace tessera

#endif  // TESSERA_BACKENDS_VULKAN_VULKAN_PLATFORM_H_
