// The Vulkan platform: VulkanPlatformImpl and CreateVulkanPlatform. The parts, one concept per file
// (all internal to backends/vulkan/):
//
//   vulkan_instance      the VkInstance, validation layer and messenger
//   physical_device      what a physical device is; its published attributes
//   vulkan_device        one VkDevice: memories, rings, pipeline, stream; runs
//                        the stream's ops
//   vulkan_stream        the per-device in-order stream: worker thread,
//                        timeline semaphore, completion thread
//   device_memory_allocator  block sub-allocation (BytesInUse)
//   vulkan_buffer        the PlatformBuffer
//   staging_ring         host-visible staging slots
//   chunk_plan           cutting strided copies into staging chunks
//   command_recording    command-buffer helpers shared by the transfer paths
//   host_transfer        host<->device copies (staged, or memcpy for
//                        pinned_host)
//   compute_copy         the strided-copy compute pipeline
//   cross_device_copy    GPU-to-GPU copies between VkDevices
//   host_memory_import   VK_EXT_external_memory_host imports
//   peer_memory_import   VK_KHR_external_memory_fd imports of other devices'
//                        blocks (copies between VkDevices of one GPU)
//   vulkan_status        VkResult -> absl::Status
//   platform_counters    the counters behind stats()

#include "backends/vulkan/vulkan_platform.h"

#include <vulkan/vulkan.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "backends/vulkan/heap_budget.h"
#include "backends/vulkan/physical_device.h"
#include "backends/vulkan/platform_counters.h"
#include "backends/vulkan/vulkan_device.h"
#include "backends/vulkan/vulkan_instance.h"
#include "backends/vulkan/vulkan_stream.h"

namespace tessera {
namespace {

using vulkan::PlatformCounters;
using vulkan::StreamOp;
using vulkan::VulkanDevice;
using vulkan::VulkanInstance;

// Owns the devices; its destructor drains every stream.
class VulkanPlatformImpl : public VulkanPlatform {
 public:
  explicit VulkanPlatformImpl(std::shared_ptr<VulkanInstance> instance)
      : instance_(std::move(instance)) {}
  ~VulkanPlatformImpl() override {
    for (auto& d : devices_) d->BeginShutdown();
    // Let every operation whose dependencies are (or become) ready run: wait until no stream is
    // executing or has a runnable head and no completion is pending, twice in a row.
    int quiet_rounds = 0;
    while (quiet_rounds < 2) {
      bool quiet = true;
      for (auto& d : devices_) quiet = quiet && d->Quiet();
      quiet_rounds = quiet ? quiet_rounds + 1 : 0;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    // What is left waits on futures nobody in this platform will set: cancel it.
    for (auto& d : devices_) d->CancelAndJoin();
  }

  std::string_view name() const override { return "vulkan"; }
  int device_count() const override { return static_cast<int>(devices_.size()); }
  const PlatformDeviceInfo& device_info(int device) const override {
    return devices_[device]->info();
  }
  absl::StatusOr<PlatformBufferRef> Allocate(int device, int memory, int64_t bytes) override {
    return devices_[device]->Allocate(memory, bytes);
  }
  absl::StatusOr<PlatformBufferRef> WrapHostMemory(int device, int memory, void* data,
                                                   int64_t bytes,
                                                   std::function<void()> on_release) override {
    return devices_[device]->WrapHost(memory, data, bytes, std::move(on_release));
  }
  Future<> CopyHostToBuffers(int device, std::vector<HostToBufferCopy> copies,
                             absl::Span<const Future<>> after) override {
    auto op = std::make_shared<StreamOp>();
    op->kind = StreamOp::Kind::kHostToBuffer;
    op->h2b = std::move(copies);
    return devices_[device]->Enqueue(std::move(op), after);
  }
  Future<> CopyBuffersToHost(int device, std::vector<BufferToHostCopy> copies,
                             absl::Span<const Future<>> after) override {
    auto op = std::make_shared<StreamOp>();
    op->kind = StreamOp::Kind::kBufferToHost;
    op->b2h = std::move(copies);
    return devices_[device]->Enqueue(std::move(op), after);
  }
  Future<> CopyBuffersToBuffers(int device, std::vector<BufferToBufferCopy> copies,
                                absl::Span<const Future<>> after) override {
    auto op = std::make_shared<StreamOp>();
    op->kind = StreamOp::Kind::kBufferToBuffer;
    op->b2b = std::move(copies);
    return devices_[device]->Enqueue(std::move(op), after);
  }
  Future<> EnqueueHostCallback(int device, std::function<absl::Status()> fn,
                               absl::Span<const Future<>> after) override {
    auto op = std::make_shared<StreamOp>();
    op->kind = StreamOp::Kind::kCallback;
    op->fn = std::move(fn);
    return devices_[device]->Enqueue(std::move(op), after);
  }
  int64_t BytesInUse(int device, int memory) const override {
    return devices_[device]->allocator(memory).in_use();
  }
  void InjectSubmitFailuresForTesting(int device, int count) override {
    devices_[device]->InjectSubmitFailures(count);
  }
  VulkanPlatformStats stats() const override {
    VulkanPlatformStats s;
    s.submissions = counters_.submissions.load();
    s.staged_chunks = counters_.staged_chunks.load();
    s.compute_copies = counters_.compute_copies.load();
    s.region_copies = counters_.region_copies.load();
    s.cross_device_copies = counters_.cross_device_copies.load();
    s.host_memcpy_copies = counters_.host_memcpy_copies.load();
    s.shared_staging_copies = counters_.shared_staging_copies.load();
    s.peer_import_copies = counters_.peer_import_copies.load();
    s.peer_imports_live = counters_.peer_imports_live.load();
    return s;
  }

  std::shared_ptr<VulkanInstance> instance_;
  PlatformCounters counters_;
  std::vector<std::shared_ptr<VulkanDevice>> devices_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<VulkanPlatform>> CreateVulkanPlatform(
    const VulkanPlatformOptions& options) {
  if (options.logical_devices_per_gpu < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("VulkanPlatformOptions::logical_devices_per_gpu must be >= 1, not ",
                     options.logical_devices_per_gpu));
  }
  if (options.staging_chunk_bytes < 4096 || options.block_bytes < 4096) {
    return absl::InvalidArgumentError(absl::StrCat(
        "VulkanPlatformOptions::staging_chunk_bytes and block_bytes must be >= 4096, not ",
        options.staging_chunk_bytes, " and ", options.block_bytes));
  }
  if (options.heap_limit_bytes < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "VulkanPlatformOptions::heap_limit_bytes must be >= 0 (0: the heap's size), not ",
        options.heap_limit_bytes));
  }
  auto instance = VulkanInstance::Create(options.enable_validation);
  if (!instance.ok()) return instance.status();
  const std::vector<VkPhysicalDevice> physical = (*instance)->PhysicalDevices();
  const uint32_t n = static_cast<uint32_t>(physical.size());

  // Physical devices that are one GPU (equal device and driver UUIDs: the same driver listed twice)
  // can import each other's memory, as can the logical devices of one physical device.
  std::vector<VkPhysicalDeviceIDProperties> ids;
  for (VkPhysicalDevice d : physical) {
    ids.push_back(vulkan::DescribePhysicalDevice(d).ids);
  }
  std::vector<bool> same_gpu_peers(n, options.logical_devices_per_gpu > 1);
  for (uint32_t a = 0; a < n; ++a) {
    for (uint32_t b = 0; b < n; ++b) {
      if (a != b && std::memcmp(ids[a].deviceUUID, ids[b].deviceUUID, VK_UUID_SIZE) == 0 &&
          std::memcmp(ids[a].driverUUID, ids[b].driverUUID, VK_UUID_SIZE) == 0) {
        same_gpu_peers[a] = true;
      }
    }
  }

  auto platform = std::make_unique<VulkanPlatformImpl>(*instance);
  std::string skipped;
  for (uint32_t p = 0; p < n; ++p) {
    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(physical[p], &props);
    if (props.apiVersion < VK_API_VERSION_1_2) {
      absl::StrAppend(&skipped, " ", props.deviceName, " (Vulkan ",
                      vulkan::VersionString(props.apiVersion), " < 1.2);");
      continue;
    }
    // One ledger of the heaps for all the logical devices of this physical device.
    const bool driver_budget = vulkan::DescribePhysicalDevice(physical[p])
                                   .HasExtension(VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
    auto heaps = std::make_shared<vulkan::HeapBudgets>(physical[p], props.deviceName,
                                                       options.heap_limit_bytes, driver_budget);
    for (int l = 0; l < options.logical_devices_per_gpu; ++l) {
      auto dev =
          std::make_shared<VulkanDevice>(*instance, physical[p], options, &platform->counters_);
      absl::Status s = dev->Init(static_cast<int>(p), l, same_gpu_peers[p], heaps);
      if (absl::IsNotFound(s)) {
        absl::StrAppend(&skipped, " ", props.deviceName, " (", s.message(), ");");
        break;
      }
      if (!s.ok()) return s;
      platform->devices_.push_back(std::move(dev));
    }
  }
  if (platform->devices_.empty()) {
    return absl::NotFoundError(absl::StrCat("no compute-capable Vulkan >= 1.2 device (", n,
                                            " physical devices;", skipped, ")"));
  }
  for (auto& d : platform->devices_) d->Start();
  return std::unique_ptr<VulkanPlatform>(std::move(platform));
}

}  // namespace tessera
