// The Vulkan platform. Structure:
//
//   VulkanPlatformImpl: owns the devices; its destructor drains every stream.
//   Dev (shared_ptr): one VkDevice with its queue, memory pools, staging
//     rings, compute pipeline, the timeline semaphore of its stream, and its
//     worker and completion threads. Buffers hold a reference, so a buffer
//     may outlive the platform.
//   VkPlatformBuffer: a sub-allocation of a block (VkDeviceMemory + one
//     VkBuffer over it), or an imported host range (WrapHostMemory).
//
// Stream: Enqueue* push an Op into the device's FIFO. The worker thread takes
// the head op once its `after` futures are set (an OnReady callback wakes it;
// callers never block), records command buffers and submits them: each
// submission waits for the previous timeline value and signals the next, so
// the stream is in order on the GPU. Host work in an op (packing staging
// chunks, memcpy into pinned_host, host callbacks) runs on the worker after
// the values it depends on are reached; an op whose last step is host work
// signals its value from the host (vkSignalSemaphore). The op's promise, its
// command buffers and references to its buffers go to the completion thread,
// which waits for the op's value (vkWaitSemaphores with a timeout, no
// spinning), releases the resources and sets the promise, in order. A failed
// step fails the op's future (and so every op that waits on it); the op keeps
// the last value it submitted, so later ops are unaffected.
//
// Transfers:
//   host->device: chunks of the copies' runs are packed on the host into
//     staging slot k while the GPU copies slot k-1 into the buffer
//     (vkCmdCopyBuffer, regions coalesced).
//   device->host: the GPU copies up to `staging_chunks` chunks ahead; the host
//     unpacks each chunk as soon as its value is reached and refills the slot.
//   pinned_host: host copies are a memcpy on the worker, in stream order.
//   device->device, one VkDevice: vkCmdCopyBuffer with one region per run, or
//     the strided-copy compute shader for boxes with many short rows.
//   device->device, two VkDevices (one op on the destination's stream):
//     - shared staging (default where both have VK_EXT_external_memory_host):
//       a host ring imported into both devices; the source GPU copies chunk i
//       into it (up to staging_chunks ahead, on the source's queue and export
//       timeline semaphore), the destination GPU copies it out. No memcpy.
//     - otherwise: the source copies into its export ring, the host memcpys
//       each chunk into the destination's staging ring, the destination
//       uploads it.

#include "backends/vulkan/vulkan_platform.h"

#include <vulkan/vulkan.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"

namespace tessera {
namespace {

std::atomic<int64_t> g_validation_messages{0};

constexpr int kDeviceMemory = 0;
constexpr int kPinnedHostMemory = 1;
constexpr size_t kMaxRegionsPerChunk = 65536;

VKAPI_ATTR VkBool32 VKAPI_CALL
DebugCallback(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
              VkDebugUtilsMessageTypeFlagsEXT types,
              const VkDebugUtilsMessengerCallbackDataEXT* data, void* user) {
  const bool counted =
      (types & (VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT)) != 0 &&
      severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT;
  if (counted) g_validation_messages.fetch_add(1);
  if (counted || severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) {
    std::fprintf(stderr, "[tessera vulkan%s] %s\n",
                 counted ? " validation" : "",
                 data && data->pMessage ? data->pMessage : "(no message)");
  }
  return VK_FALSE;
}

std::string VkResultName(VkResult r) {
  switch (r) {
    case VK_SUCCESS:
      return "VK_SUCCESS";
    case VK_TIMEOUT:
      return "VK_TIMEOUT";
    case VK_ERROR_OUT_OF_HOST_MEMORY:
      return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY:
      return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED:
      return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST:
      return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_MEMORY_MAP_FAILED:
      return "VK_ERROR_MEMORY_MAP_FAILED";
    case VK_ERROR_LAYER_NOT_PRESENT:
      return "VK_ERROR_LAYER_NOT_PRESENT";
    case VK_ERROR_EXTENSION_NOT_PRESENT:
      return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_FEATURE_NOT_PRESENT:
      return "VK_ERROR_FEATURE_NOT_PRESENT";
    case VK_ERROR_INCOMPATIBLE_DRIVER:
      return "VK_ERROR_INCOMPATIBLE_DRIVER";
    case VK_ERROR_TOO_MANY_OBJECTS:
      return "VK_ERROR_TOO_MANY_OBJECTS";
    default:
      return absl::StrCat("VkResult(", static_cast<int>(r), ")");
  }
}

absl::Status VkStatus(VkResult r, const std::string& what) {
  if (r == VK_SUCCESS) return absl::OkStatus();
  std::string msg = absl::StrCat(what, " failed: ", VkResultName(r));
  if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY) {
    return absl::ResourceExhaustedError(msg);
  }
  return absl::InternalError(msg);
}

#define TESSERA_VK_RETURN_IF_ERROR(expr, what)         \
  do {                                                 \
    VkResult _r = (expr);                              \
    if (_r != VK_SUCCESS) return VkStatus(_r, (what)); \
  } while (0)

int64_t RoundUp(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

// -----------------------------------------------------------------------------
// RunCursor: the contiguous runs of a StridedCopy, one at a time, consumable in
// parts.
class RunCursor {
 public:
  RunCursor() = default;
  explicit RunCursor(const StridedCopy& c) : n_(c.Normalized()) {
    if (n_.num_elements() == 0) return;
    done_ = false;
    const int rank = static_cast<int>(n_.extent.size());
    const bool contiguous = n_.inner_contiguous();
    outer_rank_ = contiguous ? rank - 1 : rank;
    run_bytes_ =
        contiguous ? n_.extent.back() * n_.element_bytes : n_.element_bytes;
    idx_.assign(outer_rank_, 0);
    src_ = n_.src_offset;
    dst_ = n_.dst_offset;
  }
  bool done() const { return done_; }
  int64_t src() const { return src_ + consumed_; }
  int64_t dst() const { return dst_ + consumed_; }
  int64_t remaining() const { return run_bytes_ - consumed_; }
  void Advance(int64_t bytes) {
    consumed_ += bytes;
    if (consumed_ < run_bytes_) return;
    consumed_ = 0;
    int d = outer_rank_ - 1;
    for (; d >= 0; --d) {
      ++idx_[d];
      src_ += n_.src_byte_strides[d];
      dst_ += n_.dst_byte_strides[d];
      if (idx_[d] < n_.extent[d]) break;
      src_ -= n_.src_byte_strides[d] * n_.extent[d];
      dst_ -= n_.dst_byte_strides[d] * n_.extent[d];
      idx_[d] = 0;
    }
    if (d < 0) done_ = true;
  }

 private:
  StridedCopy n_;
  bool done_ = true;
  int outer_rank_ = 0;
  int64_t run_bytes_ = 0;
  Index idx_;
  int64_t src_ = 0, dst_ = 0, consumed_ = 0;
};

// A position in a list of copies' runs.
struct PlanCursor {
  size_t copy = 0;
  RunCursor run;
};

struct Region {
  size_t copy;
  int64_t src, dst, size;
};

void SkipDone(PlanCursor& pc, const std::vector<const StridedCopy*>& geoms) {
  while (pc.run.done() && pc.copy < geoms.size()) {
    if (++pc.copy < geoms.size()) pc.run = RunCursor(*geoms[pc.copy]);
  }
}

PlanCursor StartCursor(const std::vector<const StridedCopy*>& geoms) {
  PlanCursor pc;
  if (!geoms.empty()) pc.run = RunCursor(*geoms[0]);
  SkipDone(pc, geoms);
  return pc;
}

bool CursorDone(const PlanCursor& pc,
                const std::vector<const StridedCopy*>& geoms) {
  return pc.copy >= geoms.size();
}

void AddRegion(std::vector<Region>* regions, size_t copy, int64_t src,
               int64_t dst, int64_t n) {
  if (!regions->empty()) {
    Region& last = regions->back();
    if (last.copy == copy && last.src + last.size == src &&
        last.dst + last.size == dst) {
      last.size += n;
      return;
    }
  }
  regions->push_back(Region{copy, src, dst, n});
}

// Packs up to `capacity` bytes of runs into a chunk laid out run after run.
// Adds (buffer -> staging) regions to `src_regions` and (staging -> buffer)
// regions to `dst_regions` (either may be null) and calls on_piece(copy, src,
// dst, bytes, staging_offset) for each piece. Stops early when a region list
// reaches kMaxRegionsPerChunk. Returns the bytes packed.
template <typename F>
int64_t PlanChunk(PlanCursor& pc, const std::vector<const StridedCopy*>& geoms,
                  int64_t capacity, std::vector<Region>* src_regions,
                  std::vector<Region>* dst_regions, F&& on_piece) {
  int64_t filled = 0;
  while (!CursorDone(pc, geoms) && filled < capacity) {
    if ((src_regions && src_regions->size() >= kMaxRegionsPerChunk) ||
        (dst_regions && dst_regions->size() >= kMaxRegionsPerChunk)) {
      break;
    }
    const int64_t n = std::min(pc.run.remaining(), capacity - filled);
    const int64_t src = pc.run.src(), dst = pc.run.dst();
    if (src_regions) AddRegion(src_regions, pc.copy, src, filled, n);
    if (dst_regions) AddRegion(dst_regions, pc.copy, filled, dst, n);
    on_piece(pc.copy, src, dst, n, filled);
    filled += n;
    pc.run.Advance(n);
    SkipDone(pc, geoms);
  }
  return filled;
}

struct NoPiece {
  void operator()(size_t, int64_t, int64_t, int64_t, int64_t) const {}
};

// -----------------------------------------------------------------------------
struct InstanceCore {
  VkInstance instance = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
  ~InstanceCore() {
    if (messenger != VK_NULL_HANDLE) {
      auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
          vkGetInstanceProcAddr(instance, "vkDestroyDebugUtilsMessengerEXT"));
      if (destroy) destroy(instance, messenger, nullptr);
    }
    if (instance != VK_NULL_HANDLE) vkDestroyInstance(instance, nullptr);
  }
};

struct Block {
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VkBuffer buffer = VK_NULL_HANDLE;
  void* mapped = nullptr;
  int64_t size = 0;
  bool dedicated = false;
  std::map<int64_t, int64_t> free_ranges;  // offset -> size
};

class Dev;

// Sub-allocator of one memory type of one VkDevice.
class MemoryPool {
 public:
  MemoryPool(VkDevice device, uint32_t type_index, bool map,
             int64_t block_bytes, int64_t alignment)
      : device_(device),
        type_index_(type_index),
        map_(map),
        block_bytes_(block_bytes),
        alignment_(alignment) {}
  ~MemoryPool() {
    for (auto& b : blocks_) DestroyBlock(*b);
  }

  struct Allocation {
    Block* block = nullptr;
    int64_t offset = 0;
    int64_t size = 0;
  };

  absl::StatusOr<Allocation> Allocate(int64_t bytes) {
    const int64_t size = RoundUp(bytes, alignment_);
    absl::MutexLock lock(&mu_);
    if (size > block_bytes_ / 2) {
      auto block = CreateBlock(size, /*dedicated=*/true);
      if (!block.ok()) return block.status();
      Block* b = block->get();
      blocks_.push_back(std::move(*block));
      in_use_ += size;
      return Allocation{b, 0, size};
    }
    for (auto& b : blocks_) {
      if (b->dedicated) continue;
      for (auto it = b->free_ranges.begin(); it != b->free_ranges.end(); ++it) {
        if (it->second < size) continue;
        const int64_t offset = it->first, rest = it->second - size;
        b->free_ranges.erase(it);
        if (rest > 0) b->free_ranges[offset + size] = rest;
        in_use_ += size;
        return Allocation{b.get(), offset, size};
      }
    }
    auto block = CreateBlock(block_bytes_, /*dedicated=*/false);
    if (!block.ok()) return block.status();
    Block* b = block->get();
    blocks_.push_back(std::move(*block));
    b->free_ranges.clear();
    if (block_bytes_ > size) b->free_ranges[size] = block_bytes_ - size;
    in_use_ += size;
    return Allocation{b, 0, size};
  }

  void Free(const Allocation& a) {
    absl::MutexLock lock(&mu_);
    in_use_ -= a.size;
    Block* b = a.block;
    if (!b->dedicated) {
      auto [it, inserted] = b->free_ranges.emplace(a.offset, a.size);
      auto next = std::next(it);
      if (next != b->free_ranges.end() &&
          it->first + it->second == next->first) {
        it->second += next->second;
        b->free_ranges.erase(next);
      }
      if (it != b->free_ranges.begin()) {
        auto prev = std::prev(it);
        if (prev->first + prev->second == it->first) {
          prev->second += it->second;
          b->free_ranges.erase(it);
        }
      }
      const bool empty = b->free_ranges.size() == 1 &&
                         b->free_ranges.begin()->second == b->size;
      if (!empty) return;
      // Keep one empty block around to avoid churn.
      int empty_blocks = 0;
      for (auto& other : blocks_) {
        if (!other->dedicated && other->free_ranges.size() == 1 &&
            other->free_ranges.begin()->second == other->size) {
          ++empty_blocks;
        }
      }
      if (empty_blocks <= 1) return;
    }
    for (auto it = blocks_.begin(); it != blocks_.end(); ++it) {
      if (it->get() == b) {
        DestroyBlock(*b);
        blocks_.erase(it);
        break;
      }
    }
  }

  int64_t in_use() const {
    absl::MutexLock lock(&mu_);
    return in_use_;
  }

 private:
  absl::StatusOr<std::unique_ptr<Block>> CreateBlock(int64_t size,
                                                     bool dedicated) {
    auto b = std::make_unique<Block>();
    b->size = size;
    b->dedicated = dedicated;
    b->free_ranges[0] = size;
    VkBufferCreateInfo bci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    bci.size = static_cast<VkDeviceSize>(size);
    bci.usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                VK_BUFFER_USAGE_TRANSFER_DST_BIT |
                VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
    bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    TESSERA_VK_RETURN_IF_ERROR(
        vkCreateBuffer(device_, &bci, nullptr, &b->buffer), "vkCreateBuffer");
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(device_, b->buffer, &req);
    if ((req.memoryTypeBits & (1u << type_index_)) == 0) {
      vkDestroyBuffer(device_, b->buffer, nullptr);
      return absl::InternalError("memory type not usable for storage buffers");
    }
    VkMemoryAllocateInfo mai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    mai.allocationSize = req.size;
    mai.memoryTypeIndex = type_index_;
    VkResult r = vkAllocateMemory(device_, &mai, nullptr, &b->memory);
    if (r != VK_SUCCESS) {
      vkDestroyBuffer(device_, b->buffer, nullptr);
      return absl::ResourceExhaustedError(absl::StrCat(
          "vkAllocateMemory of ", size, " bytes failed: ", VkResultName(r)));
    }
    r = vkBindBufferMemory(device_, b->buffer, b->memory, 0);
    if (r == VK_SUCCESS && map_)
      r = vkMapMemory(device_, b->memory, 0, VK_WHOLE_SIZE, 0, &b->mapped);
    if (r != VK_SUCCESS) {
      DestroyBlock(*b);
      return VkStatus(r, "vkBindBufferMemory/vkMapMemory");
    }
    return b;
  }
  void DestroyBlock(Block& b) {
    if (b.buffer != VK_NULL_HANDLE) vkDestroyBuffer(device_, b.buffer, nullptr);
    if (b.memory != VK_NULL_HANDLE)
      vkFreeMemory(device_, b.memory, nullptr);  // unmaps
    b.buffer = VK_NULL_HANDLE;
    b.memory = VK_NULL_HANDLE;
  }

  VkDevice device_;
  uint32_t type_index_;
  bool map_;
  int64_t block_bytes_;
  int64_t alignment_;
  mutable absl::Mutex mu_;
  std::vector<std::unique_ptr<Block>> blocks_;
  int64_t in_use_ = 0;
};

class VkPlatformBuffer : public PlatformBuffer {
 public:
  VkPlatformBuffer(std::shared_ptr<Dev> dev, int memory,
                   MemoryPool::Allocation alloc, int64_t size);
  // A buffer over imported host memory (WrapHostMemory): owns `block`.
  VkPlatformBuffer(std::shared_ptr<Dev> dev, int memory,
                   std::unique_ptr<Block> block,
                   std::function<void()> on_release);
  ~VkPlatformBuffer() override;
  int64_t size_bytes() const override { return size_; }
  void* host_address() const override { return host_address_; }

  Dev* dev() const { return dev_.get(); }
  VkBuffer vk_buffer() const {
    return alloc_.block ? alloc_.block->buffer : VK_NULL_HANDLE;
  }
  int64_t offset() const { return alloc_.offset; }
  int64_t allocated_size() const { return alloc_.size; }
  // The mapping of the bytes (pinned_host only), whatever host_address() says.
  char* mapped() const {
    return alloc_.block && alloc_.block->mapped
               ? static_cast<char*>(alloc_.block->mapped) + alloc_.offset
               : nullptr;
  }

 private:
  std::shared_ptr<Dev> dev_;
  int memory_;
  MemoryPool::Allocation alloc_;
  int64_t size_;
  void* host_address_ = nullptr;
  std::unique_ptr<Block> owned_;
  std::function<void()> on_release_;
};

VkPlatformBuffer* AsVk(const PlatformBufferRef& b) {
  return static_cast<VkPlatformBuffer*>(b.get());
}

// One stream operation.
struct Op {
  enum class Kind { kHostToBuffer, kBufferToHost, kBufferToBuffer, kCallback };
  Kind kind;
  std::vector<HostToBufferCopy> h2b;
  std::vector<BufferToHostCopy> b2h;
  std::vector<BufferToBufferCopy> b2b;
  std::function<absl::Status()> fn;
  Future<> after;
  bool after_ready = false;  // guarded by the stream's mutex
  Promise<> promise;
};

struct Completion {
  uint64_t value = 0;
  absl::Status status;
  Promise<> promise;
  std::vector<PlatformBufferRef> keep_alive;
  std::vector<VkCommandBuffer> cmds;
};

// Stream state shared with OnReady callbacks (which may outlive the platform).
struct StreamSync {
  absl::Mutex mu;
  std::deque<std::shared_ptr<Op>> ops;
  bool shutdown = false;
  bool cancel = false;
  bool executing = false;
};

struct Counters {
  std::atomic<int64_t> submissions{0}, staged_chunks{0}, compute_copies{0},
      region_copies{0}, cross_device_copies{0}, host_memcpy_copies{0},
      shared_staging_copies{0};
};

// A ring of host-visible staging slots with one command buffer each.
struct StagingRing {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  char* mapped = nullptr;
  VkCommandPool pool = VK_NULL_HANDLE;
  std::vector<VkCommandBuffer> cmds;
  std::vector<uint64_t> values;  // timeline value of each slot's last use
};

struct ComputeParams {
  uint32_t rank, total, src_offset, dst_offset;
  uint32_t extent[6], src_stride[6], dst_stride[6];
};

constexpr uint32_t kStridedCopySpv[] = {
#include "strided_copy.spv.inc"
};

// -----------------------------------------------------------------------------
class Dev : public std::enable_shared_from_this<Dev> {
 public:
  Dev(std::shared_ptr<InstanceCore> instance, VkPhysicalDevice physical,
      const VulkanPlatformOptions& options, Counters* counters)
      : instance_(std::move(instance)),
        physical_(physical),
        options_(options),
        counters_(counters) {}

  ~Dev() {
    if (device_ == VK_NULL_HANDLE) return;
    vkDeviceWaitIdle(device_);
    pools_[0].reset();
    pools_[1].reset();
    for (StagingRing* ring : {&staging_, &export_}) {
      if (ring->pool) vkDestroyCommandPool(device_, ring->pool, nullptr);
      if (ring->buffer) vkDestroyBuffer(device_, ring->buffer, nullptr);
      if (ring->memory) vkFreeMemory(device_, ring->memory, nullptr);
    }
    if (cmd_pool_) vkDestroyCommandPool(device_, cmd_pool_, nullptr);
    if (pipeline_) vkDestroyPipeline(device_, pipeline_, nullptr);
    if (pipeline_layout_)
      vkDestroyPipelineLayout(device_, pipeline_layout_, nullptr);
    if (set_layout_)
      vkDestroyDescriptorSetLayout(device_, set_layout_, nullptr);
    if (timeline_) vkDestroySemaphore(device_, timeline_, nullptr);
    if (export_timeline_)
      vkDestroySemaphore(device_, export_timeline_, nullptr);
    vkDestroyDevice(device_, nullptr);
  }

  absl::Status Init(int physical_index, int logical_index);
  void Start() {
    worker_ = std::thread([this] { WorkerLoop(); });
    completer_ = std::thread([this] { CompletionLoop(); });
  }

  const PlatformDeviceInfo& info() const { return info_; }
  MemoryPool& pool(int memory) { return *pools_[memory]; }
  int64_t max_buffer_bytes() const { return max_buffer_bytes_; }
  int64_t heap_bytes(int memory) const { return heap_bytes_[memory]; }

  absl::StatusOr<PlatformBufferRef> Allocate(int memory, int64_t bytes) {
    if (bytes > max_buffer_bytes_) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cannot allocate ", bytes, " bytes on ", info_.name,
          ": one buffer may hold at most ", max_buffer_bytes_,
          " bytes (min of maxMemoryAllocationSize and maxBufferSize)"));
    }
    if (bytes > heap_bytes_[memory]) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cannot allocate ", bytes, " bytes: the ",
          info_.memories[memory].kind, " heap holds ", heap_bytes_[memory]));
    }
    MemoryPool::Allocation alloc;
    if (bytes > 0) {
      auto a = pools_[memory]->Allocate(bytes);
      if (!a.ok()) return a.status();
      alloc = *a;
    }
    return PlatformBufferRef(std::make_shared<VkPlatformBuffer>(
        shared_from_this(), memory, alloc, bytes));
  }

  Future<> Enqueue(std::shared_ptr<Op> op, absl::Span<const Future<>> after) {
    Future<> result = op->promise.future();
    op->after = JoinFutures(after);
    std::shared_ptr<StreamSync> sync = sync_;
    op->after.OnReady([sync, op](const absl::Status&) {
      absl::MutexLock lock(&sync->mu);
      op->after_ready = true;
    });
    absl::MutexLock lock(&sync_->mu);
    sync_->ops.push_back(std::move(op));
    return result;
  }

  // Drain protocol, see ~VulkanPlatformImpl.
  void BeginShutdown() {
    absl::MutexLock lock(&sync_->mu);
    sync_->shutdown = true;
  }
  bool Quiet() {
    {
      absl::MutexLock lock(&sync_->mu);
      if (sync_->executing) return false;
      if (!sync_->ops.empty() && sync_->ops.front()->after_ready) return false;
    }
    absl::MutexLock lock(&cq_mu_);
    return cq_.empty() && completing_ == 0;
  }
  void CancelAndJoin() {
    {
      absl::MutexLock lock(&sync_->mu);
      sync_->cancel = true;
    }
    if (worker_.joinable()) worker_.join();
    {
      absl::MutexLock lock(&cq_mu_);
      cq_stop_ = true;
    }
    if (completer_.joinable()) completer_.join();
    bridges_.clear();  // while every device of the platform is alive
  }

  absl::StatusOr<PlatformBufferRef> WrapHost(int memory, void* data,
                                             int64_t bytes,
                                             std::function<void()> on_release);
  void DestroyImported(Block& b) {
    if (b.buffer) vkDestroyBuffer(device_, b.buffer, nullptr);
    if (b.memory) vkFreeMemory(device_, b.memory, nullptr);
  }

  std::atomic<int> inject_submit_failures{0};

  // Used by other devices' workers reading this device's buffers (cross-device
  // copies).
  absl::Mutex export_mu;

 private:
  friend class VulkanPlatformImpl;

  // ---- worker ----
  void WorkerLoop();
  absl::Status Execute(Op& op, Completion& c);
  absl::Status RunHostToBuffer(Op& op, Completion& c);
  absl::Status RunBufferToHost(Op& op, Completion& c);
  absl::Status RunBufferToBuffer(Op& op, Completion& c);
  absl::Status RunCrossDevice(const BufferToBufferCopy& copy);
  bool UseCompute(const StridedCopy& g, VkPlatformBuffer* src,
                  VkPlatformBuffer* dst) const;
  void RecordCompute(VkCommandBuffer cb, const StridedCopy& g,
                     VkPlatformBuffer* src, VkPlatformBuffer* dst);

  absl::StatusOr<VkCommandBuffer> AcquireCmd();
  // Submits `cb` waiting for the previous value of the stream; returns the
  // signalled value.
  absl::StatusOr<uint64_t> Submit(VkCommandBuffer cb);
  // Submits on the export ring's semaphore (any thread holding export_mu).
  absl::StatusOr<uint64_t> SubmitExport(VkCommandBuffer cb);
  absl::Status WaitValue(VkSemaphore sem, uint64_t value);
  absl::Status HostSignal();
  absl::Status WaitStream() { return WaitValue(timeline_, last_value_); }

  void CompletionLoop();

  std::shared_ptr<InstanceCore> instance_;
  VkPhysicalDevice physical_;
  VulkanPlatformOptions options_;
  Counters* counters_;
  PlatformDeviceInfo info_;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  uint32_t queue_family_ = 0;
  absl::Mutex queue_mu_;
  std::unique_ptr<MemoryPool> pools_[2];
  int64_t heap_bytes_[2] = {0, 0};
  int64_t max_buffer_bytes_ = 0;
  int64_t max_storage_range_ = 0;
  uint32_t max_groups_x_ = 65535, max_groups_y_ = 65535;
  bool compute_ok_ = false;
  int64_t compute_min_runs_ = 4096;
  PFN_vkCmdPushDescriptorSetKHR push_descriptor_ = nullptr;
  // VK_EXT_external_memory_host: cross-device copies share an imported host
  // staging ring.
  bool host_import_ = false;
  int64_t host_import_alignment_ = 4096;
  PFN_vkGetMemoryHostPointerPropertiesEXT host_pointer_props_ = nullptr;
  struct Bridge;
  absl::StatusOr<Bridge*> GetBridge(Dev* src);
  absl::Status RunCrossDeviceBridge(const BufferToBufferCopy& copy,
                                    Bridge& bridge);
  std::map<Dev*, std::unique_ptr<Bridge>>
      bridges_;  // worker only; keyed by source device
  VkDescriptorSetLayout set_layout_ = VK_NULL_HANDLE;
  VkPipelineLayout pipeline_layout_ = VK_NULL_HANDLE;
  VkPipeline pipeline_ = VK_NULL_HANDLE;

  VkSemaphore timeline_ = VK_NULL_HANDLE;
  uint64_t last_value_ = 0;  // worker only
  VkSemaphore export_timeline_ = VK_NULL_HANDLE;
  uint64_t export_value_ = 0;                // under export_mu
  StagingRing staging_;                      // worker only
  StagingRing export_;                       // under export_mu
  VkCommandPool cmd_pool_ = VK_NULL_HANDLE;  // worker only
  absl::Mutex free_cmds_mu_;
  std::vector<VkCommandBuffer> free_cmds_;

  std::shared_ptr<StreamSync> sync_ = std::make_shared<StreamSync>();
  absl::Mutex cq_mu_;
  std::deque<Completion> cq_;
  bool cq_stop_ = false;
  int completing_ = 0;  // completions popped whose promises are still being set
  std::thread worker_, completer_;
};

VkPlatformBuffer::VkPlatformBuffer(std::shared_ptr<Dev> dev, int memory,
                                   MemoryPool::Allocation alloc, int64_t size)
    : dev_(std::move(dev)), memory_(memory), alloc_(alloc), size_(size) {
  if (memory_ == kPinnedHostMemory) {
    host_address_ = mapped();
    // Zero-byte pinned buffers still get a (unique, never dereferenced)
    // non-null address.
    if (host_address_ == nullptr) host_address_ = this;
  }
}

VkPlatformBuffer::VkPlatformBuffer(std::shared_ptr<Dev> dev, int memory,
                                   std::unique_ptr<Block> block,
                                   std::function<void()> on_release)
    : dev_(std::move(dev)),
      memory_(memory),
      alloc_{block.get(), 0, block->size},
      size_(block->size),
      host_address_(block->mapped),
      owned_(std::move(block)),
      on_release_(std::move(on_release)) {}

VkPlatformBuffer::~VkPlatformBuffer() {
  if (owned_) {
    dev_->DestroyImported(*owned_);
    if (on_release_) on_release_();
    return;
  }
  if (alloc_.block) dev_->pool(memory_).Free(alloc_);
}

// ---- set-up -----------------------------------------------------------------

std::string VendorName(uint32_t id) {
  switch (id) {
    case 0x10DE:
      return "NVIDIA";
    case 0x1002:
      return "AMD";
    case 0x8086:
      return "Intel";
    case 0x13B5:
      return "ARM";
    case 0x5143:
      return "Qualcomm";
    case 0x106B:
      return "Apple";
    case 0x10005:
      return "Mesa";
    default:
      return absl::StrFormat("0x%04x", id);
  }
}

std::string DeviceTypeName(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
      return "integrated_gpu";
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
      return "discrete_gpu";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
      return "virtual_gpu";
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
      return "cpu";
    default:
      return "other";
  }
}

std::string VersionString(uint32_t v) {
  return absl::StrCat(VK_API_VERSION_MAJOR(v), ".", VK_API_VERSION_MINOR(v),
                      ".", VK_API_VERSION_PATCH(v));
}

std::string DriverVersionString(uint32_t vendor, uint32_t v) {
  if (vendor == 0x10DE) {
    return absl::StrCat((v >> 22) & 0x3ff, ".", (v >> 14) & 0xff, ".",
                        (v >> 6) & 0xff);
  }
  return VersionString(v);
}

// Picks the memory type with all `required` flags, preferring more of
// `preferred` and none of `avoided`. Returns -1 if none.
int PickMemoryType(const VkPhysicalDeviceMemoryProperties& mp,
                   VkMemoryPropertyFlags required,
                   VkMemoryPropertyFlags preferred,
                   VkMemoryPropertyFlags avoided) {
  int best = -1, best_score = -1;
  for (uint32_t i = 0; i < mp.memoryTypeCount; ++i) {
    const VkMemoryPropertyFlags f = mp.memoryTypes[i].propertyFlags;
    if ((f & required) != required) continue;
    int score = 0;
    if ((f & preferred) == preferred) score += 2;
    if ((f & avoided) == 0) score += 1;
    if (score > best_score) {
      best = static_cast<int>(i);
      best_score = score;
    }
  }
  return best;
}

absl::Status CreateRing(VkDevice device,
                        const VkPhysicalDeviceMemoryProperties& mp,
                        uint32_t queue_family, int64_t chunk, int chunks,
                        StagingRing* ring) {
  VkBufferCreateInfo bci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bci.size = static_cast<VkDeviceSize>(chunk * chunks);
  bci.usage =
      VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  TESSERA_VK_RETURN_IF_ERROR(
      vkCreateBuffer(device, &bci, nullptr, &ring->buffer),
      "vkCreateBuffer(staging)");
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(device, ring->buffer, &req);
  int type = -1, best = -1;
  for (uint32_t i = 0; i < mp.memoryTypeCount; ++i) {
    if (!(req.memoryTypeBits & (1u << i))) continue;
    VkMemoryPropertyFlags f = mp.memoryTypes[i].propertyFlags;
    const VkMemoryPropertyFlags need = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                       VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    if ((f & need) != need) continue;
    int score = (f & VK_MEMORY_PROPERTY_HOST_CACHED_BIT) ? 2 : 0;
    score += (f & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) ? 0 : 1;
    if (score > best) {
      best = score;
      type = static_cast<int>(i);
    }
  }
  if (type < 0)
    return absl::NotFoundError(
        "no HOST_VISIBLE|HOST_COHERENT memory for staging");
  VkMemoryAllocateInfo mai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  mai.allocationSize = req.size;
  mai.memoryTypeIndex = static_cast<uint32_t>(type);
  TESSERA_VK_RETURN_IF_ERROR(
      vkAllocateMemory(device, &mai, nullptr, &ring->memory),
      "vkAllocateMemory(staging)");
  TESSERA_VK_RETURN_IF_ERROR(
      vkBindBufferMemory(device, ring->buffer, ring->memory, 0),
      "vkBindBufferMemory(staging)");
  void* p = nullptr;
  TESSERA_VK_RETURN_IF_ERROR(
      vkMapMemory(device, ring->memory, 0, VK_WHOLE_SIZE, 0, &p),
      "vkMapMemory(staging)");
  ring->mapped = static_cast<char*>(p);
  VkCommandPoolCreateInfo pci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pci.queueFamilyIndex = queue_family;
  TESSERA_VK_RETURN_IF_ERROR(
      vkCreateCommandPool(device, &pci, nullptr, &ring->pool),
      "vkCreateCommandPool");
  ring->cmds.resize(chunks);
  VkCommandBufferAllocateInfo cai{
      VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  cai.commandPool = ring->pool;
  cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  cai.commandBufferCount = static_cast<uint32_t>(chunks);
  TESSERA_VK_RETURN_IF_ERROR(
      vkAllocateCommandBuffers(device, &cai, ring->cmds.data()),
      "vkAllocateCommandBuffers");
  ring->values.assign(chunks, 0);
  return absl::OkStatus();
}

absl::Status Dev::Init(int physical_index, int logical_index) {
  VkPhysicalDeviceSubgroupProperties subgroup{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceDriverProperties driver{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  driver.pNext = &subgroup;
  VkPhysicalDeviceMaintenance3Properties m3{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
  m3.pNext = &driver;
  VkPhysicalDeviceIDProperties ids{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES};
  ids.pNext = &m3;
  VkPhysicalDeviceProperties2 props2{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  props2.pNext = &ids;
  vkGetPhysicalDeviceProperties2(physical_, &props2);
  const VkPhysicalDeviceProperties& props = props2.properties;
  uint64_t max_buffer = UINT64_MAX;
  if (props.apiVersion >= VK_API_VERSION_1_3) {
    VkPhysicalDeviceMaintenance4Properties m4{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_4_PROPERTIES};
    VkPhysicalDeviceProperties2 p2{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    p2.pNext = &m4;
    vkGetPhysicalDeviceProperties2(physical_, &p2);
    max_buffer = m4.maxBufferSize;
  }
  max_buffer_bytes_ = static_cast<int64_t>(std::min<uint64_t>(
      {m3.maxMemoryAllocationSize, max_buffer, uint64_t{INT64_MAX}}));
  max_storage_range_ = props.limits.maxStorageBufferRange;
  compute_min_runs_ = options_.compute_copy_min_runs;
  if (compute_min_runs_ < 0) {
    compute_min_runs_ =
        props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU ? INT64_MAX : 4096;
  }
  max_groups_x_ = props.limits.maxComputeWorkGroupCount[0];
  max_groups_y_ = props.limits.maxComputeWorkGroupCount[1];

  uint32_t nq = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(physical_, &nq, nullptr);
  std::vector<VkQueueFamilyProperties> qf(nq);
  vkGetPhysicalDeviceQueueFamilyProperties(physical_, &nq, qf.data());
  int family = -1;
  for (uint32_t i = 0; i < nq;
       ++i) {  // prefer a compute family without graphics
    if (!(qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT)) continue;
    if (family < 0 || !(qf[i].queueFlags & VK_QUEUE_GRAPHICS_BIT))
      family = static_cast<int>(i);
  }
  if (family < 0) return absl::NotFoundError("no compute queue");
  queue_family_ = static_cast<uint32_t>(family);

  uint32_t next = 0;
  vkEnumerateDeviceExtensionProperties(physical_, nullptr, &next, nullptr);
  std::vector<VkExtensionProperties> exts(next);
  vkEnumerateDeviceExtensionProperties(physical_, nullptr, &next, exts.data());
  auto has_ext = [&](const char* name) {
    for (auto& e : exts)
      if (std::strcmp(e.extensionName, name) == 0) return true;
    return false;
  };
  std::vector<const char*> enabled;
  const bool push_desc = has_ext(VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
  if (push_desc) enabled.push_back(VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
  host_import_ = has_ext(VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME);
  if (host_import_) {
    enabled.push_back(VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME);
    VkPhysicalDeviceExternalMemoryHostPropertiesEXT hp{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_MEMORY_HOST_PROPERTIES_EXT};
    VkPhysicalDeviceProperties2 p2{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    p2.pNext = &hp;
    vkGetPhysicalDeviceProperties2(physical_, &p2);
    host_import_alignment_ = std::max<int64_t>(
        4096, static_cast<int64_t>(hp.minImportedHostPointerAlignment));
  }

  float priority = 1.0f;
  VkDeviceQueueCreateInfo qci{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qci.queueFamilyIndex = queue_family_;
  qci.queueCount = 1;
  qci.pQueuePriorities = &priority;
  VkPhysicalDeviceVulkan12Features f12{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  f12.timelineSemaphore = VK_TRUE;
  VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  dci.pNext = &f12;
  dci.queueCreateInfoCount = 1;
  dci.pQueueCreateInfos = &qci;
  dci.enabledExtensionCount = static_cast<uint32_t>(enabled.size());
  dci.ppEnabledExtensionNames = enabled.data();
  TESSERA_VK_RETURN_IF_ERROR(vkCreateDevice(physical_, &dci, nullptr, &device_),
                             "vkCreateDevice");
  vkGetDeviceQueue(device_, queue_family_, 0, &queue_);
  if (host_import_) {
    host_pointer_props_ =
        reinterpret_cast<PFN_vkGetMemoryHostPointerPropertiesEXT>(
            vkGetDeviceProcAddr(device_,
                                "vkGetMemoryHostPointerPropertiesEXT"));
    host_import_ = host_pointer_props_ != nullptr;
  }

  // Memories.
  VkPhysicalDeviceMemoryProperties mp;
  vkGetPhysicalDeviceMemoryProperties(physical_, &mp);
  const int device_type = PickMemoryType(
      mp, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT,
      VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT);
  const int host_type = PickMemoryType(mp,
                                       VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                           VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                                       VK_MEMORY_PROPERTY_HOST_CACHED_BIT,
                                       VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
  if (device_type < 0 || host_type < 0) {
    return absl::NotFoundError(
        "no DEVICE_LOCAL or no HOST_VISIBLE|HOST_COHERENT memory type");
  }
  const int64_t alignment = std::max<int64_t>(
      {256, static_cast<int64_t>(props.limits.minStorageBufferOffsetAlignment),
       static_cast<int64_t>(props.limits.nonCoherentAtomSize)});
  pools_[kDeviceMemory] =
      std::make_unique<MemoryPool>(device_, static_cast<uint32_t>(device_type),
                                   false, options_.block_bytes, alignment);
  pools_[kPinnedHostMemory] =
      std::make_unique<MemoryPool>(device_, static_cast<uint32_t>(host_type),
                                   true, options_.block_bytes, alignment);
  heap_bytes_[kDeviceMemory] = static_cast<int64_t>(
      mp.memoryHeaps[mp.memoryTypes[device_type].heapIndex].size);
  heap_bytes_[kPinnedHostMemory] = static_cast<int64_t>(
      mp.memoryHeaps[mp.memoryTypes[host_type].heapIndex].size);

  // Stream.
  VkSemaphoreTypeCreateInfo sti{VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO};
  sti.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
  VkSemaphoreCreateInfo sci{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
  sci.pNext = &sti;
  TESSERA_VK_RETURN_IF_ERROR(
      vkCreateSemaphore(device_, &sci, nullptr, &timeline_),
      "vkCreateSemaphore");
  TESSERA_VK_RETURN_IF_ERROR(
      vkCreateSemaphore(device_, &sci, nullptr, &export_timeline_),
      "vkCreateSemaphore");
  VkCommandPoolCreateInfo pci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pci.queueFamilyIndex = queue_family_;
  TESSERA_VK_RETURN_IF_ERROR(
      vkCreateCommandPool(device_, &pci, nullptr, &cmd_pool_),
      "vkCreateCommandPool");
  const int chunks = std::max(2, options_.staging_chunks);
  if (absl::Status s =
          CreateRing(device_, mp, queue_family_, options_.staging_chunk_bytes,
                     chunks, &staging_);
      !s.ok()) {
    return s;
  }
  if (absl::Status s =
          CreateRing(device_, mp, queue_family_, options_.staging_chunk_bytes,
                     chunks, &export_);
      !s.ok()) {
    return s;
  }

  // Compute pipeline for strided copies (needs push descriptors).
  if (push_desc) {
    push_descriptor_ = reinterpret_cast<PFN_vkCmdPushDescriptorSetKHR>(
        vkGetDeviceProcAddr(device_, "vkCmdPushDescriptorSetKHR"));
  }
  if (push_descriptor_) {
    VkDescriptorSetLayoutBinding bindings[2] = {};
    for (uint32_t i = 0; i < 2; ++i) {
      bindings[i].binding = i;
      bindings[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      bindings[i].descriptorCount = 1;
      bindings[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
    }
    VkDescriptorSetLayoutCreateInfo dl{
        VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
    dl.flags = VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR;
    dl.bindingCount = 2;
    dl.pBindings = bindings;
    TESSERA_VK_RETURN_IF_ERROR(
        vkCreateDescriptorSetLayout(device_, &dl, nullptr, &set_layout_),
        "vkCreateDescriptorSetLayout");
    VkPushConstantRange pcr{VK_SHADER_STAGE_COMPUTE_BIT, 0,
                            sizeof(ComputeParams)};
    VkPipelineLayoutCreateInfo pl{
        VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    pl.setLayoutCount = 1;
    pl.pSetLayouts = &set_layout_;
    pl.pushConstantRangeCount = 1;
    pl.pPushConstantRanges = &pcr;
    TESSERA_VK_RETURN_IF_ERROR(
        vkCreatePipelineLayout(device_, &pl, nullptr, &pipeline_layout_),
        "vkCreatePipelineLayout");
    VkShaderModuleCreateInfo smi{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    smi.codeSize = sizeof(kStridedCopySpv);
    smi.pCode = kStridedCopySpv;
    VkShaderModule module;
    TESSERA_VK_RETURN_IF_ERROR(
        vkCreateShaderModule(device_, &smi, nullptr, &module),
        "vkCreateShaderModule");
    VkComputePipelineCreateInfo cpi{
        VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
    cpi.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
    cpi.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    cpi.stage.module = module;
    cpi.stage.pName = "main";
    cpi.layout = pipeline_layout_;
    VkResult r = vkCreateComputePipelines(device_, VK_NULL_HANDLE, 1, &cpi,
                                          nullptr, &pipeline_);
    vkDestroyShaderModule(device_, module, nullptr);
    TESSERA_VK_RETURN_IF_ERROR(r, "vkCreateComputePipelines");
    compute_ok_ = true;
  }

  // Device info.
  info_.kind = "vulkan";
  info_.name = props.deviceName;
  AttributeMap& a = info_.attributes;
  a.Set("name", std::string(props.deviceName));
  a.Set("vendor_id", int64_t{props.vendorID});
  a.Set("device_id", int64_t{props.deviceID});
  a.Set("vendor", VendorName(props.vendorID));
  a.Set("driver_version",
        DriverVersionString(props.vendorID, props.driverVersion));
  a.Set("driver_name", std::string(driver.driverName));
  a.Set("driver_info", std::string(driver.driverInfo));
  a.Set("api_version", VersionString(props.apiVersion));
  a.Set("device_type", DeviceTypeName(props.deviceType));
  std::string uuid;
  for (uint8_t b : ids.deviceUUID) uuid += absl::StrFormat("%02x", b);
  a.Set("device_uuid", uuid);
  std::vector<int64_t> heaps, local_heaps;
  for (uint32_t i = 0; i < mp.memoryHeapCount; ++i) {
    heaps.push_back(static_cast<int64_t>(mp.memoryHeaps[i].size));
    local_heaps.push_back(
        (mp.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) ? 1 : 0);
  }
  a.Set("heap_sizes", heaps);
  a.Set("heap_device_local", local_heaps);
  a.Set("device_memory_bytes", heap_bytes_[kDeviceMemory]);
  a.Set("pinned_host_memory_bytes", heap_bytes_[kPinnedHostMemory]);
  a.Set("subgroup_size", int64_t{subgroup.subgroupSize});
  a.Set("max_storage_buffer_range",
        int64_t{props.limits.maxStorageBufferRange});
  a.Set("max_memory_allocation_size",
        static_cast<int64_t>(m3.maxMemoryAllocationSize));
  a.Set("max_buffer_bytes", max_buffer_bytes_);
  a.Set("min_storage_buffer_offset_alignment",
        static_cast<int64_t>(props.limits.minStorageBufferOffsetAlignment));
  a.Set("max_compute_shared_memory_size",
        int64_t{props.limits.maxComputeSharedMemorySize});
  a.Set("max_compute_work_group_invocations",
        int64_t{props.limits.maxComputeWorkGroupInvocations});
  a.Set("max_compute_work_group_size",
        std::vector<int64_t>{props.limits.maxComputeWorkGroupSize[0],
                             props.limits.maxComputeWorkGroupSize[1],
                             props.limits.maxComputeWorkGroupSize[2]});
  a.Set("max_push_constants_size", int64_t{props.limits.maxPushConstantsSize});
  a.Set("timestamp_period_ns",
        static_cast<double>(props.limits.timestampPeriod));
  a.Set("physical_device_index", int64_t{physical_index});
  a.Set("logical_device_index", int64_t{logical_index});
  a.Set("external_memory_fd",
        has_ext(VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME));
  a.Set("external_memory_host",
        has_ext(VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME));
  a.Set("compute_copy", compute_ok_);
  a.Set("compute_copy_min_runs", compute_min_runs_);
  a.Set("staging_chunk_bytes", options_.staging_chunk_bytes);
  a.Set("staging_chunks", int64_t{chunks});
  info_.memories.push_back(
      PlatformMemoryInfo{"device", false, heap_bytes_[kDeviceMemory]});
  info_.memories.push_back(
      PlatformMemoryInfo{"pinned_host", true, heap_bytes_[kPinnedHostMemory]});
  info_.default_memory = kDeviceMemory;
  return absl::OkStatus();
}

// ---- submission helpers -----------------------------------------------------

absl::StatusOr<VkCommandBuffer> Dev::AcquireCmd() {
  VkCommandBuffer cb = VK_NULL_HANDLE;
  {
    absl::MutexLock lock(&free_cmds_mu_);
    if (!free_cmds_.empty()) {
      cb = free_cmds_.back();
      free_cmds_.pop_back();
    }
  }
  if (cb == VK_NULL_HANDLE) {
    VkCommandBufferAllocateInfo cai{
        VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    cai.commandPool = cmd_pool_;
    cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    cai.commandBufferCount = 1;
    TESSERA_VK_RETURN_IF_ERROR(vkAllocateCommandBuffers(device_, &cai, &cb),
                               "vkAllocateCommandBuffers");
  } else {
    vkResetCommandBuffer(cb, 0);
  }
  return cb;
}

absl::Status BeginCmd(VkCommandBuffer cb) {
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  TESSERA_VK_RETURN_IF_ERROR(vkBeginCommandBuffer(cb, &bi),
                             "vkBeginCommandBuffer");
  return absl::OkStatus();
}

// Makes the command buffer's transfer and shader writes visible to the host and
// later commands.
absl::Status EndCmd(VkCommandBuffer cb) {
  VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  mb.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_SHADER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT | VK_ACCESS_HOST_WRITE_BIT;
  vkCmdPipelineBarrier(
      cb, VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
      VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, nullptr, 0, nullptr);
  TESSERA_VK_RETURN_IF_ERROR(vkEndCommandBuffer(cb), "vkEndCommandBuffer");
  return absl::OkStatus();
}

// Records vkCmdCopyBuffer for `regions` (grouped by copy); buffer_of(copy)
// gives (VkBuffer, base offset) of the copy's side, `staging` the staging side
// at `staging_base`.
template <typename BufferOf>
void RecordRegions(VkCommandBuffer cb, const std::vector<Region>& regions,
                   bool to_staging, VkBuffer staging, int64_t staging_base,
                   BufferOf&& buffer_of) {
  std::vector<VkBufferCopy> vk;
  size_t i = 0;
  while (i < regions.size()) {
    const size_t copy = regions[i].copy;
    auto [buf, base] = buffer_of(copy);
    vk.clear();
    for (; i < regions.size() && regions[i].copy == copy; ++i) {
      const Region& r = regions[i];
      VkBufferCopy c;
      c.srcOffset =
          static_cast<VkDeviceSize>(r.src + (to_staging ? base : staging_base));
      c.dstOffset =
          static_cast<VkDeviceSize>(r.dst + (to_staging ? staging_base : base));
      c.size = static_cast<VkDeviceSize>(r.size);
      vk.push_back(c);
    }
    if (to_staging) {
      vkCmdCopyBuffer(cb, buf, staging, static_cast<uint32_t>(vk.size()),
                      vk.data());
    } else {
      vkCmdCopyBuffer(cb, staging, buf, static_cast<uint32_t>(vk.size()),
                      vk.data());
    }
  }
}

absl::StatusOr<uint64_t> Dev::Submit(VkCommandBuffer cb) {
  const uint64_t wait_value = last_value_;
  const uint64_t signal_value = last_value_ + 1;
  VkTimelineSemaphoreSubmitInfo ts{
      VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO};
  ts.waitSemaphoreValueCount = 1;
  ts.pWaitSemaphoreValues = &wait_value;
  ts.signalSemaphoreValueCount = 1;
  ts.pSignalSemaphoreValues = &signal_value;
  const VkPipelineStageFlags stage = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.pNext = &ts;
  si.waitSemaphoreCount = 1;
  si.pWaitSemaphores = &timeline_;
  si.pWaitDstStageMask = &stage;
  si.commandBufferCount = 1;
  si.pCommandBuffers = &cb;
  si.signalSemaphoreCount = 1;
  si.pSignalSemaphores = &timeline_;
  VkResult r;
  if (inject_submit_failures.load() > 0 &&
      inject_submit_failures.fetch_sub(1) > 0) {
    r = VK_ERROR_DEVICE_LOST;  // injected by a test
  } else {
    absl::MutexLock lock(&queue_mu_);
    r = vkQueueSubmit(queue_, 1, &si, VK_NULL_HANDLE);
  }
  counters_->submissions.fetch_add(1);
  TESSERA_VK_RETURN_IF_ERROR(r, "vkQueueSubmit");
  last_value_ = signal_value;
  return signal_value;
}

absl::StatusOr<uint64_t> Dev::SubmitExport(VkCommandBuffer cb) {
  // Wait for the stream's current value (already reached: gives a formal memory
  // dependency on the writes of the stream's finished operations).
  uint64_t wait_value = 0;
  vkGetSemaphoreCounterValue(device_, timeline_, &wait_value);
  const uint64_t signal_value = export_value_ + 1;
  VkTimelineSemaphoreSubmitInfo ts{
      VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO};
  ts.waitSemaphoreValueCount = 1;
  ts.pWaitSemaphoreValues = &wait_value;
  ts.signalSemaphoreValueCount = 1;
  ts.pSignalSemaphoreValues = &signal_value;
  const VkPipelineStageFlags stage = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.pNext = &ts;
  si.waitSemaphoreCount = 1;
  si.pWaitSemaphores = &timeline_;
  si.pWaitDstStageMask = &stage;
  si.commandBufferCount = 1;
  si.pCommandBuffers = &cb;
  si.signalSemaphoreCount = 1;
  si.pSignalSemaphores = &export_timeline_;
  VkResult r;
  {
    absl::MutexLock lock(&queue_mu_);
    r = vkQueueSubmit(queue_, 1, &si, VK_NULL_HANDLE);
  }
  counters_->submissions.fetch_add(1);
  TESSERA_VK_RETURN_IF_ERROR(r, "vkQueueSubmit(export)");
  export_value_ = signal_value;
  return signal_value;
}

absl::Status Dev::WaitValue(VkSemaphore sem, uint64_t value) {
  if (value == 0) return absl::OkStatus();
  VkSemaphoreWaitInfo wi{VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO};
  wi.semaphoreCount = 1;
  wi.pSemaphores = &sem;
  wi.pValues = &value;
  for (;;) {
    VkResult r = vkWaitSemaphores(device_, &wi, uint64_t{1000000000});
    if (r == VK_SUCCESS) return absl::OkStatus();
    if (r != VK_TIMEOUT) return VkStatus(r, "vkWaitSemaphores");
  }
}

absl::Status Dev::HostSignal() {
  VkSemaphoreSignalInfo si{VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO};
  si.semaphore = timeline_;
  si.value = last_value_ + 1;
  TESSERA_VK_RETURN_IF_ERROR(vkSignalSemaphore(device_, &si),
                             "vkSignalSemaphore");
  last_value_ = si.value;
  return absl::OkStatus();
}

// ---- worker -----------------------------------------------------------------

void Dev::WorkerLoop() {
  StreamSync* s = sync_.get();
  for (;;) {
    std::shared_ptr<Op> op;
    bool cancelled = false;
    {
      absl::MutexLock lock(&s->mu);
      auto ready = [s]() {
        if (s->ops.empty()) return s->cancel;
        return s->ops.front()->after_ready || s->cancel;
      };
      s->mu.Await(absl::Condition(&ready));
      if (s->ops.empty()) return;  // cancel requested and nothing left
      op = std::move(s->ops.front());
      s->ops.pop_front();
      cancelled = !op->after_ready;
      s->executing = true;
    }
    Completion c;
    c.promise = op->promise;
    if (cancelled) {
      c.status = absl::CancelledError(
          "the Vulkan platform was destroyed before this operation's "
          "dependencies were ready");
    } else {
      c.status = op->after.Await();
      if (c.status.ok()) c.status = Execute(*op, c);
    }
    c.value = last_value_;
    op.reset();
    {
      absl::MutexLock lock(&cq_mu_);
      cq_.push_back(std::move(c));
    }
    absl::MutexLock lock(&s->mu);
    s->executing = false;
  }
}

absl::Status Dev::Execute(Op& op, Completion& c) {
  switch (op.kind) {
    case Op::Kind::kHostToBuffer:
      for (auto& cp : op.h2b) c.keep_alive.push_back(cp.dst);
      return RunHostToBuffer(op, c);
    case Op::Kind::kBufferToHost:
      for (auto& cp : op.b2h) c.keep_alive.push_back(cp.src);
      return RunBufferToHost(op, c);
    case Op::Kind::kBufferToBuffer:
      for (auto& cp : op.b2b) {
        c.keep_alive.push_back(cp.src);
        c.keep_alive.push_back(cp.dst);
      }
      return RunBufferToBuffer(op, c);
    case Op::Kind::kCallback: {
      if (absl::Status s = WaitStream(); !s.ok()) return s;
      absl::Status status = op.fn ? op.fn() : absl::OkStatus();
      op.fn = nullptr;  // release captures now
      if (absl::Status s = HostSignal(); !s.ok()) return s;
      return status;
    }
  }
  return absl::InternalError("unknown op");
}

absl::Status Dev::RunHostToBuffer(Op& op, Completion& c) {
  std::vector<const StridedCopy*> geoms;
  std::vector<const HostToBufferCopy*> staged;
  bool host_copied = false;
  for (const HostToBufferCopy& cp : op.h2b) {
    if (cp.geometry.num_elements() == 0) continue;
    if (char* mapped = AsVk(cp.dst)->mapped();
        mapped && cp.dst->host_address()) {
      if (!host_copied) {
        if (absl::Status s = WaitStream(); !s.ok()) return s;
        host_copied = true;
      }
      const char* src = static_cast<const char*>(cp.src);
      cp.geometry.ForEachRun([&](int64_t so, int64_t d, int64_t n) {
        std::memcpy(mapped + d, src + so, static_cast<size_t>(n));
      });
      counters_->host_memcpy_copies.fetch_add(1);
      continue;
    }
    geoms.push_back(&cp.geometry);
    staged.push_back(&cp);
  }
  const uint64_t before = last_value_;
  const int64_t chunk = options_.staging_chunk_bytes;
  const int slots = static_cast<int>(staging_.cmds.size());
  PlanCursor pc = StartCursor(geoms);
  std::vector<Region> regions;
  for (int64_t i = 0; !CursorDone(pc, geoms); ++i) {
    const int slot = static_cast<int>(i % slots);
    if (absl::Status s = WaitValue(timeline_, staging_.values[slot]); !s.ok())
      return s;
    char* base = staging_.mapped + slot * chunk;
    regions.clear();
    PlanChunk(pc, geoms, chunk, nullptr, &regions,
              [&](size_t copy, int64_t src, int64_t, int64_t n, int64_t st) {
                std::memcpy(base + st,
                            static_cast<const char*>(staged[copy]->src) + src,
                            static_cast<size_t>(n));
              });
    VkCommandBuffer cb = staging_.cmds[slot];
    vkResetCommandBuffer(cb, 0);
    if (absl::Status s = BeginCmd(cb); !s.ok()) return s;
    RecordRegions(cb, regions, /*to_staging=*/false, staging_.buffer,
                  slot * chunk, [&](size_t copy) {
                    VkPlatformBuffer* b = AsVk(staged[copy]->dst);
                    return std::make_pair(b->vk_buffer(), b->offset());
                  });
    if (absl::Status s = EndCmd(cb); !s.ok()) return s;
    auto v = Submit(cb);
    if (!v.ok()) return v.status();
    staging_.values[slot] = *v;
    counters_->staged_chunks.fetch_add(1);
  }
  if (host_copied && last_value_ == before) return HostSignal();
  return absl::OkStatus();
}

absl::Status Dev::RunBufferToHost(Op& op, Completion& c) {
  std::vector<const StridedCopy*> geoms;
  std::vector<const BufferToHostCopy*> staged;
  bool host_work = false;
  for (const BufferToHostCopy& cp : op.b2h) {
    if (cp.geometry.num_elements() == 0) continue;
    if (char* mapped = AsVk(cp.src)->mapped();
        mapped && cp.src->host_address()) {
      if (!host_work) {
        if (absl::Status s = WaitStream(); !s.ok()) return s;
        host_work = true;
      }
      char* dst = static_cast<char*>(cp.dst);
      cp.geometry.ForEachRun([&](int64_t so, int64_t d, int64_t n) {
        std::memcpy(dst + d, mapped + so, static_cast<size_t>(n));
      });
      counters_->host_memcpy_copies.fetch_add(1);
      continue;
    }
    geoms.push_back(&cp.geometry);
    staged.push_back(&cp);
  }
  const int64_t chunk = options_.staging_chunk_bytes;
  const int slots = static_cast<int>(staging_.cmds.size());
  struct Pending {
    int slot;
    PlanCursor start;
    int64_t bytes;
    uint64_t value;
  };
  std::deque<Pending> pending;
  PlanCursor pc = StartCursor(geoms);
  std::vector<Region> regions;
  auto plan_submit = [&](int slot) -> absl::Status {
    // The slot may still be in use by an earlier op's upload.
    if (absl::Status s = WaitValue(timeline_, staging_.values[slot]); !s.ok())
      return s;
    PlanCursor start = pc;
    regions.clear();
    const int64_t bytes =
        PlanChunk(pc, geoms, chunk, &regions, nullptr, NoPiece());
    VkCommandBuffer cb = staging_.cmds[slot];
    vkResetCommandBuffer(cb, 0);
    if (absl::Status s = BeginCmd(cb); !s.ok()) return s;
    RecordRegions(cb, regions, /*to_staging=*/true, staging_.buffer,
                  slot * chunk, [&](size_t copy) {
                    VkPlatformBuffer* b = AsVk(staged[copy]->src);
                    return std::make_pair(b->vk_buffer(), b->offset());
                  });
    if (absl::Status s = EndCmd(cb); !s.ok()) return s;
    auto v = Submit(cb);
    if (!v.ok()) return v.status();
    staging_.values[slot] = *v;
    pending.push_back(Pending{slot, start, bytes, *v});
    counters_->staged_chunks.fetch_add(1);
    return absl::OkStatus();
  };
  absl::Status status;
  for (int slot = 0; slot < slots && !CursorDone(pc, geoms) && status.ok();
       ++slot) {
    status = plan_submit(slot);
  }
  while (!pending.empty()) {
    Pending p = pending.front();
    pending.pop_front();
    if (absl::Status s = WaitValue(timeline_, p.value); !s.ok()) return s;
    if (!status.ok()) continue;  // drain what was submitted, then report
    const char* base = staging_.mapped + p.slot * chunk;
    PlanChunk(p.start, geoms, p.bytes, nullptr, nullptr,
              [&](size_t copy, int64_t, int64_t dst, int64_t n, int64_t st) {
                std::memcpy(static_cast<char*>(staged[copy]->dst) + dst,
                            base + st, static_cast<size_t>(n));
              });
    host_work = true;
    if (!CursorDone(pc, geoms)) status = plan_submit(p.slot);
  }
  if (!status.ok()) return status;
  // The last step was host work: signal this op's value from the host.
  if (host_work) return HostSignal();
  return absl::OkStatus();
}

bool Dev::UseCompute(const StridedCopy& g, VkPlatformBuffer* src,
                     VkPlatformBuffer* dst) const {
  if (!compute_ok_) return false;
  StridedCopy n = g.Normalized();
  const int64_t elements = n.num_elements();
  const bool contiguous = n.inner_contiguous();
  const int64_t runs = contiguous ? elements / n.extent.back() : elements;
  const int64_t run_bytes =
      contiguous ? n.extent.back() * n.element_bytes : n.element_bytes;
  if (runs <= compute_min_runs_ || run_bytes >= 256) return false;
  if (n.element_bytes % 4 || n.src_offset % 4 || n.dst_offset % 4) return false;
  for (size_t i = 0; i < n.extent.size(); ++i) {
    if (n.src_byte_strides[i] % 4 || n.dst_byte_strides[i] % 4) return false;
    if (n.src_byte_strides[i] < 0 || n.dst_byte_strides[i] < 0) return false;
  }
  if (n.extent.size() + 1 > 6) return false;
  if (src->allocated_size() > max_storage_range_ ||
      dst->allocated_size() > max_storage_range_) {
    return false;
  }
  if (elements * (n.element_bytes / 4) >= (int64_t{1} << 31)) return false;
  return true;
}

void Dev::RecordCompute(VkCommandBuffer cb, const StridedCopy& g,
                        VkPlatformBuffer* src, VkPlatformBuffer* dst) {
  StridedCopy n = g.Normalized();
  ComputeParams p{};
  const int rank = static_cast<int>(n.extent.size());
  for (int i = 0; i < rank; ++i) {
    p.extent[i] = static_cast<uint32_t>(n.extent[i]);
    p.src_stride[i] = static_cast<uint32_t>(n.src_byte_strides[i] / 4);
    p.dst_stride[i] = static_cast<uint32_t>(n.dst_byte_strides[i] / 4);
  }
  p.extent[rank] =
      static_cast<uint32_t>(n.element_bytes / 4);  // words of one element
  p.src_stride[rank] = 1;
  p.dst_stride[rank] = 1;
  p.rank = static_cast<uint32_t>(rank + 1);
  p.total = static_cast<uint32_t>(n.num_elements() * (n.element_bytes / 4));
  p.src_offset = static_cast<uint32_t>(n.src_offset / 4);
  p.dst_offset = static_cast<uint32_t>(n.dst_offset / 4);

  VkDescriptorBufferInfo infos[2] = {
      {src->vk_buffer(), static_cast<VkDeviceSize>(src->offset()),
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
  vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline_);
  push_descriptor_(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline_layout_, 0, 2,
                   writes);
  vkCmdPushConstants(cb, pipeline_layout_, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                     sizeof(p), &p);
  const uint64_t groups = (uint64_t{p.total} + 63) / 64;
  const uint32_t gx =
      static_cast<uint32_t>(std::min<uint64_t>(groups, max_groups_x_));
  const uint32_t gy = static_cast<uint32_t>((groups + gx - 1) / gx);
  vkCmdDispatch(cb, gx, gy, 1);
}

absl::Status Dev::RunBufferToBuffer(Op& op, Completion& c) {
  std::vector<const BufferToBufferCopy*> local, remote;
  for (const BufferToBufferCopy& cp : op.b2b) {
    if (cp.geometry.num_elements() == 0) continue;
    (AsVk(cp.src)->dev() == this ? local : remote).push_back(&cp);
  }
  if (!local.empty()) {
    auto cb = AcquireCmd();
    if (!cb.ok()) return cb.status();
    c.cmds.push_back(*cb);
    if (absl::Status s = BeginCmd(*cb); !s.ok()) return s;
    std::vector<VkBufferCopy> regions;
    for (const BufferToBufferCopy* cp : local) {
      VkPlatformBuffer* src = AsVk(cp->src);
      VkPlatformBuffer* dst = AsVk(cp->dst);
      if (UseCompute(cp->geometry, src, dst)) {
        RecordCompute(*cb, cp->geometry, src, dst);
        counters_->compute_copies.fetch_add(1);
        continue;
      }
      regions.clear();
      auto flush = [&] {
        if (regions.empty()) return;
        vkCmdCopyBuffer(*cb, src->vk_buffer(), dst->vk_buffer(),
                        static_cast<uint32_t>(regions.size()), regions.data());
        regions.clear();
      };
      cp->geometry.ForEachRun([&](int64_t so, int64_t d, int64_t n) {
        regions.push_back(
            VkBufferCopy{static_cast<VkDeviceSize>(src->offset() + so),
                         static_cast<VkDeviceSize>(dst->offset() + d),
                         static_cast<VkDeviceSize>(n)});
        if (regions.size() >= kMaxRegionsPerChunk) flush();
      });
      flush();
      counters_->region_copies.fetch_add(1);
    }
    if (absl::Status s = EndCmd(*cb); !s.ok()) return s;
    if (auto v = Submit(*cb); !v.ok()) return v.status();
  }
  for (const BufferToBufferCopy* cp : remote) {
    Bridge* bridge = nullptr;
    if (options_.cross_device_shared_staging && host_import_ &&
        AsVk(cp->src)->dev()->host_import_) {
      auto b = GetBridge(AsVk(cp->src)->dev());
      if (b.ok()) bridge = *b;  // else: fall back to the host memcpy path
    }
    if (absl::Status s =
            bridge ? RunCrossDeviceBridge(*cp, *bridge) : RunCrossDevice(*cp);
        !s.ok()) {
      return s;
    }
    if (bridge) counters_->shared_staging_copies.fetch_add(1);
    counters_->cross_device_copies.fetch_add(1);
  }
  return absl::OkStatus();
}

// Source device S copies chunks into its export ring (up to `slots` ahead); the
// host copies each into this device's staging ring; this device uploads it. All
// on this device's worker.
absl::Status Dev::RunCrossDevice(const BufferToBufferCopy& copy) {
  VkPlatformBuffer* src = AsVk(copy.src);
  VkPlatformBuffer* dst = AsVk(copy.dst);
  Dev* s = src->dev();
  absl::MutexLock export_lock(&s->export_mu);
  std::vector<const StridedCopy*> geoms = {&copy.geometry};
  const int64_t chunk = options_.staging_chunk_bytes;
  const int64_t src_chunk = s->options_.staging_chunk_bytes;
  const int64_t cap = std::min(chunk, src_chunk);
  const int src_slots = static_cast<int>(s->export_.cmds.size());
  const int dst_slots = static_cast<int>(staging_.cmds.size());
  struct Pending {
    int slot;
    int64_t bytes;
    uint64_t value;
    std::vector<Region> dst_regions;
  };
  std::deque<Pending> pending;
  PlanCursor pc = StartCursor(geoms);
  std::vector<Region> src_regions;
  auto export_chunk = [&](int slot) -> absl::Status {
    src_regions.clear();
    Pending p;
    p.slot = slot;
    p.bytes =
        PlanChunk(pc, geoms, cap, &src_regions, &p.dst_regions, NoPiece());
    VkCommandBuffer cb = s->export_.cmds[slot];
    vkResetCommandBuffer(cb, 0);
    if (absl::Status st = BeginCmd(cb); !st.ok()) return st;
    RecordRegions(cb, src_regions, /*to_staging=*/true, s->export_.buffer,
                  slot * src_chunk, [&](size_t) {
                    return std::make_pair(src->vk_buffer(), src->offset());
                  });
    if (absl::Status st = EndCmd(cb); !st.ok()) return st;
    auto v = s->SubmitExport(cb);
    if (!v.ok()) return v.status();
    p.value = *v;
    pending.push_back(std::move(p));
    return absl::OkStatus();
  };
  absl::Status status;
  for (int slot = 0; slot < src_slots && !CursorDone(pc, geoms) && status.ok();
       ++slot) {
    status = export_chunk(slot);
  }
  int64_t j = 0;
  while (!pending.empty()) {
    Pending p = std::move(pending.front());
    pending.pop_front();
    if (absl::Status st = s->WaitValue(s->export_timeline_, p.value); !st.ok())
      return st;
    if (!status.ok()) continue;
    const int slot = static_cast<int>(j++ % dst_slots);
    if (absl::Status st = WaitValue(timeline_, staging_.values[slot]); !st.ok())
      return st;
    std::memcpy(staging_.mapped + slot * chunk,
                s->export_.mapped + p.slot * src_chunk,
                static_cast<size_t>(p.bytes));
    if (!CursorDone(pc, geoms)) status = export_chunk(p.slot);
    VkCommandBuffer cb = staging_.cmds[slot];
    vkResetCommandBuffer(cb, 0);
    if (absl::Status st = BeginCmd(cb); !st.ok()) return st;
    RecordRegions(cb, p.dst_regions, /*to_staging=*/false, staging_.buffer,
                  slot * chunk, [&](size_t) {
                    return std::make_pair(dst->vk_buffer(), dst->offset());
                  });
    if (absl::Status st = EndCmd(cb); !st.ok()) return st;
    auto v = Submit(cb);
    if (!v.ok()) {
      status = v.status();
      continue;
    }
    staging_.values[slot] = *v;
    counters_->staged_chunks.fetch_add(1);
  }
  return status;
}

// A host staging ring imported into two VkDevices
// (VK_EXT_external_memory_host): the source device copies a chunk into it, the
// destination device copies it out. No host memcpy.
struct Dev::Bridge {
  Dev* src = nullptr;
  Dev* dst = nullptr;
  void* host = nullptr;
  int64_t bytes = 0;
  VkDeviceMemory src_memory = VK_NULL_HANDLE, dst_memory = VK_NULL_HANDLE;
  VkBuffer src_buffer = VK_NULL_HANDLE, dst_buffer = VK_NULL_HANDLE;
  ~Bridge() {
    if (src_buffer) vkDestroyBuffer(src->device_, src_buffer, nullptr);
    if (src_memory) vkFreeMemory(src->device_, src_memory, nullptr);
    if (dst_buffer) vkDestroyBuffer(dst->device_, dst_buffer, nullptr);
    if (dst_memory) vkFreeMemory(dst->device_, dst_memory, nullptr);
    std::free(host);
  }
};

absl::Status ImportHost(Dev* d, VkDevice device,
                        PFN_vkGetMemoryHostPointerPropertiesEXT props_fn,
                        void* host, int64_t bytes, VkBufferUsageFlags usage,
                        VkBuffer* buffer, VkDeviceMemory* memory) {
  VkExternalMemoryBufferCreateInfo ext{
      VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO};
  ext.handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT;
  VkBufferCreateInfo bci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bci.pNext = &ext;
  bci.size = static_cast<VkDeviceSize>(bytes);
  bci.usage = usage;
  TESSERA_VK_RETURN_IF_ERROR(vkCreateBuffer(device, &bci, nullptr, buffer),
                             "vkCreateBuffer(imported)");
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(device, *buffer, &req);
  VkMemoryHostPointerPropertiesEXT hp{
      VK_STRUCTURE_TYPE_MEMORY_HOST_POINTER_PROPERTIES_EXT};
  TESSERA_VK_RETURN_IF_ERROR(
      props_fn(device, VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT,
               host, &hp),
      "vkGetMemoryHostPointerPropertiesEXT");
  const uint32_t bits = req.memoryTypeBits & hp.memoryTypeBits;
  if (bits == 0 || static_cast<int64_t>(req.size) > bytes) {
    return absl::UnimplementedError(
        "host memory cannot back a buffer on this device");
  }
  uint32_t type = 0;
  while (!(bits & (1u << type))) ++type;
  VkImportMemoryHostPointerInfoEXT import{
      VK_STRUCTURE_TYPE_IMPORT_MEMORY_HOST_POINTER_INFO_EXT};
  import.handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT;
  import.pHostPointer = host;
  VkMemoryAllocateInfo mai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  mai.pNext = &import;
  mai.allocationSize = static_cast<VkDeviceSize>(bytes);
  mai.memoryTypeIndex = type;
  TESSERA_VK_RETURN_IF_ERROR(vkAllocateMemory(device, &mai, nullptr, memory),
                             "vkAllocateMemory(imported host pointer)");
  TESSERA_VK_RETURN_IF_ERROR(vkBindBufferMemory(device, *buffer, *memory, 0),
                             "vkBindBufferMemory(imported)");
  return absl::OkStatus();
}

absl::StatusOr<Dev::Bridge*> Dev::GetBridge(Dev* src) {
  auto it = bridges_.find(src);
  if (it != bridges_.end()) {
    if (!it->second)
      return absl::UnimplementedError("no shared staging for this pair");
    return it->second.get();
  }
  auto b = std::make_unique<Bridge>();
  b->src = src;
  b->dst = this;
  const int64_t align =
      std::max(host_import_alignment_, src->host_import_alignment_);
  b->bytes = RoundUp(
      options_.staging_chunk_bytes * static_cast<int64_t>(staging_.cmds.size()),
      align);
  b->host = std::aligned_alloc(static_cast<size_t>(align),
                               static_cast<size_t>(b->bytes));
  absl::Status s = b->host ? absl::OkStatus()
                           : absl::ResourceExhaustedError("aligned_alloc");
  if (s.ok()) {
    s = ImportHost(src, src->device_, src->host_pointer_props_, b->host,
                   b->bytes, VK_BUFFER_USAGE_TRANSFER_DST_BIT, &b->src_buffer,
                   &b->src_memory);
  }
  if (s.ok()) {
    s = ImportHost(this, device_, host_pointer_props_, b->host, b->bytes,
                   VK_BUFFER_USAGE_TRANSFER_SRC_BIT, &b->dst_buffer,
                   &b->dst_memory);
  }
  if (!s.ok()) {
    bridges_[src] = nullptr;  // remember: use the memcpy path for this pair
    return s;
  }
  Bridge* raw = b.get();
  bridges_[src] = std::move(b);
  return raw;
}

absl::StatusOr<PlatformBufferRef> Dev::WrapHost(
    int memory, void* data, int64_t bytes, std::function<void()> on_release) {
  if (memory != kPinnedHostMemory) {
    return absl::UnimplementedError(
        "only pinned_host memory can use host memory in place");
  }
  if (!host_import_) {
    return absl::UnimplementedError(
        absl::StrCat(info_.name, " lacks VK_EXT_external_memory_host"));
  }
  const int64_t align = host_import_alignment_;
  if (bytes <= 0 || reinterpret_cast<uintptr_t>(data) % align != 0 ||
      bytes % align != 0) {
    return absl::UnimplementedError(absl::StrCat(
        "importing host memory needs a non-empty range whose address and size "
        "are multiples of ",
        align, " bytes"));
  }
  auto b = std::make_unique<Block>();
  b->size = bytes;
  b->dedicated = true;
  b->mapped = data;
  absl::Status s = ImportHost(this, device_, host_pointer_props_, data, bytes,
                              VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                  VK_BUFFER_USAGE_TRANSFER_DST_BIT |
                                  VK_BUFFER_USAGE_STORAGE_BUFFER_BIT,
                              &b->buffer, &b->memory);
  if (!s.ok()) {
    DestroyImported(*b);
    if (s.code() == absl::StatusCode::kInternal) {
      return absl::UnimplementedError(std::string(s.message()));
    }
    return s;
  }
  return PlatformBufferRef(std::make_shared<VkPlatformBuffer>(
      shared_from_this(), memory, std::move(b), std::move(on_release)));
}

// The source device copies chunk i into shared slot i % K (up to K ahead, on
// its export semaphore); once the host sees it done, this device copies the
// slot into the destination.
absl::Status Dev::RunCrossDeviceBridge(const BufferToBufferCopy& copy,
                                       Bridge& bridge) {
  VkPlatformBuffer* src = AsVk(copy.src);
  VkPlatformBuffer* dst = AsVk(copy.dst);
  Dev* s = src->dev();
  absl::MutexLock export_lock(&s->export_mu);
  std::vector<const StridedCopy*> geoms = {&copy.geometry};
  const int64_t chunk = options_.staging_chunk_bytes;
  const int slots = std::min(static_cast<int>(staging_.cmds.size()),
                             static_cast<int>(s->export_.cmds.size()));
  struct Pending {
    int slot;
    uint64_t value;
    std::vector<Region> dst_regions;
  };
  std::deque<Pending> pending;
  PlanCursor pc = StartCursor(geoms);
  std::vector<Region> src_regions;
  auto export_chunk = [&](int slot) -> absl::Status {
    // The slot's previous reader is this device's upload recorded in
    // staging_.cmds[slot].
    if (absl::Status st = WaitValue(timeline_, staging_.values[slot]); !st.ok())
      return st;
    src_regions.clear();
    Pending p;
    p.slot = slot;
    PlanChunk(pc, geoms, chunk, &src_regions, &p.dst_regions, NoPiece());
    VkCommandBuffer cb = s->export_.cmds[slot];
    vkResetCommandBuffer(cb, 0);
    if (absl::Status st = BeginCmd(cb); !st.ok()) return st;
    RecordRegions(cb, src_regions, /*to_staging=*/true, bridge.src_buffer,
                  slot * chunk, [&](size_t) {
                    return std::make_pair(src->vk_buffer(), src->offset());
                  });
    if (absl::Status st = EndCmd(cb); !st.ok()) return st;
    auto v = s->SubmitExport(cb);
    if (!v.ok()) return v.status();
    p.value = *v;
    pending.push_back(std::move(p));
    return absl::OkStatus();
  };
  absl::Status status;
  for (int slot = 0; slot < slots && !CursorDone(pc, geoms) && status.ok();
       ++slot) {
    status = export_chunk(slot);
  }
  while (!pending.empty()) {
    Pending p = std::move(pending.front());
    pending.pop_front();
    if (absl::Status st = s->WaitValue(s->export_timeline_, p.value); !st.ok())
      return st;
    if (!status.ok()) continue;
    VkCommandBuffer cb = staging_.cmds[p.slot];
    if (absl::Status st = WaitValue(timeline_, staging_.values[p.slot]);
        !st.ok())
      return st;
    vkResetCommandBuffer(cb, 0);
    if (absl::Status st = BeginCmd(cb); !st.ok()) return st;
    RecordRegions(cb, p.dst_regions, /*to_staging=*/false, bridge.dst_buffer,
                  p.slot * chunk, [&](size_t) {
                    return std::make_pair(dst->vk_buffer(), dst->offset());
                  });
    if (absl::Status st = EndCmd(cb); !st.ok()) return st;
    auto v = Submit(cb);
    if (!v.ok()) {
      status = v.status();
      continue;
    }
    staging_.values[p.slot] = *v;
    counters_->staged_chunks.fetch_add(1);
    if (!CursorDone(pc, geoms)) status = export_chunk(p.slot);
  }
  return status;
}

// ---- completion -------------------------------------------------------------

void Dev::CompletionLoop() {
  for (;;) {
    uint64_t target;
    {
      absl::MutexLock lock(&cq_mu_);
      auto ready = [this]() { return !cq_.empty() || cq_stop_; };
      cq_mu_.Await(absl::Condition(&ready));
      if (cq_.empty()) return;
      target = cq_.front().value;
    }
    uint64_t reached = 0;
    VkResult r = vkGetSemaphoreCounterValue(device_, timeline_, &reached);
    absl::Status lost;
    if (r == VK_SUCCESS && reached < target) {
      VkSemaphoreWaitInfo wi{VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO};
      wi.semaphoreCount = 1;
      wi.pSemaphores = &timeline_;
      wi.pValues = &target;
      r = vkWaitSemaphores(device_, &wi, uint64_t{100000000});  // 100 ms
      if (r == VK_TIMEOUT) continue;
      if (r == VK_SUCCESS)
        r = vkGetSemaphoreCounterValue(device_, timeline_, &reached);
    }
    if (r != VK_SUCCESS) {
      lost = VkStatus(r, "waiting for the stream's timeline semaphore");
      reached = UINT64_MAX;
    }
    std::vector<Completion> done;
    {
      absl::MutexLock lock(&cq_mu_);
      while (!cq_.empty() && cq_.front().value <= reached) {
        done.push_back(std::move(cq_.front()));
        cq_.pop_front();
      }
      completing_ += static_cast<int>(done.size());
    }
    for (Completion& c : done) {
      if (!c.cmds.empty()) {
        absl::MutexLock lock(&free_cmds_mu_);
        free_cmds_.insert(free_cmds_.end(), c.cmds.begin(), c.cmds.end());
      }
      c.keep_alive.clear();  // buffers are released before the future is set
      c.promise.Set(lost.ok() ? c.status : lost);
    }
    absl::MutexLock lock(&cq_mu_);
    completing_ -= static_cast<int>(done.size());
  }
}

// ---- platform ---------------------------------------------------------------

class VulkanPlatformImpl : public VulkanPlatform {
 public:
  explicit VulkanPlatformImpl(std::shared_ptr<InstanceCore> instance)
      : instance_(std::move(instance)) {}
  ~VulkanPlatformImpl() override {
    for (auto& d : devices_) d->BeginShutdown();
    // Let every operation whose dependencies are (or become) ready run: wait
    // until no stream is executing or has a runnable head and no completion is
    // pending, twice in a row.
    int quiet_rounds = 0;
    while (quiet_rounds < 2) {
      bool quiet = true;
      for (auto& d : devices_) quiet = quiet && d->Quiet();
      quiet_rounds = quiet ? quiet_rounds + 1 : 0;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    // What is left waits on futures nobody in this platform will set: cancel
    // it.
    for (auto& d : devices_) d->CancelAndJoin();
  }

  std::string_view name() const override { return "vulkan"; }
  int device_count() const override {
    return static_cast<int>(devices_.size());
  }
  const PlatformDeviceInfo& device_info(int device) const override {
    return devices_[device]->info();
  }
  absl::StatusOr<PlatformBufferRef> Allocate(int device, int memory,
                                             int64_t bytes) override {
    return devices_[device]->Allocate(memory, bytes);
  }
  absl::StatusOr<PlatformBufferRef> WrapHostMemory(
      int device, int memory, void* data, int64_t bytes,
      std::function<void()> on_release) override {
    return devices_[device]->WrapHost(memory, data, bytes,
                                      std::move(on_release));
  }
  Future<> CopyHostToBuffers(int device, std::vector<HostToBufferCopy> copies,
                             absl::Span<const Future<>> after) override {
    auto op = std::make_shared<Op>();
    op->kind = Op::Kind::kHostToBuffer;
    op->h2b = std::move(copies);
    return devices_[device]->Enqueue(std::move(op), after);
  }
  Future<> CopyBuffersToHost(int device, std::vector<BufferToHostCopy> copies,
                             absl::Span<const Future<>> after) override {
    auto op = std::make_shared<Op>();
    op->kind = Op::Kind::kBufferToHost;
    op->b2h = std::move(copies);
    return devices_[device]->Enqueue(std::move(op), after);
  }
  Future<> CopyBuffersToBuffers(int device,
                                std::vector<BufferToBufferCopy> copies,
                                absl::Span<const Future<>> after) override {
    auto op = std::make_shared<Op>();
    op->kind = Op::Kind::kBufferToBuffer;
    op->b2b = std::move(copies);
    return devices_[device]->Enqueue(std::move(op), after);
  }
  Future<> EnqueueHostCallback(int device, std::function<absl::Status()> fn,
                               absl::Span<const Future<>> after) override {
    auto op = std::make_shared<Op>();
    op->kind = Op::Kind::kCallback;
    op->fn = std::move(fn);
    return devices_[device]->Enqueue(std::move(op), after);
  }
  int64_t BytesInUse(int device, int memory) const override {
    return devices_[device]->pool(memory).in_use();
  }
  void InjectSubmitFailuresForTesting(int device, int count) override {
    devices_[device]->inject_submit_failures.store(count);
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
    return s;
  }

  std::shared_ptr<InstanceCore> instance_;
  Counters counters_;
  std::vector<std::shared_ptr<Dev>> devices_;
};

bool HasLayer(const char* name) {
  uint32_t n = 0;
  if (vkEnumerateInstanceLayerProperties(&n, nullptr) != VK_SUCCESS)
    return false;
  std::vector<VkLayerProperties> layers(n);
  vkEnumerateInstanceLayerProperties(&n, layers.data());
  for (auto& l : layers)
    if (std::strcmp(l.layerName, name) == 0) return true;
  return false;
}

bool HasInstanceExtension(const char* name) {
  uint32_t n = 0;
  if (vkEnumerateInstanceExtensionProperties(nullptr, &n, nullptr) !=
      VK_SUCCESS)
    return false;
  std::vector<VkExtensionProperties> exts(n);
  vkEnumerateInstanceExtensionProperties(nullptr, &n, exts.data());
  for (auto& e : exts)
    if (std::strcmp(e.extensionName, name) == 0) return true;
  return false;
}

}  // namespace

int64_t VulkanValidationMessageCount() { return g_validation_messages.load(); }

absl::StatusOr<std::unique_ptr<VulkanPlatform>> CreateVulkanPlatform(
    const VulkanPlatformOptions& options) {
  if (options.logical_devices_per_gpu < 1 ||
      options.staging_chunk_bytes < 4096 || options.block_bytes < 4096) {
    return absl::InvalidArgumentError("bad VulkanPlatformOptions");
  }
  uint32_t instance_version = VK_API_VERSION_1_0;
  vkEnumerateInstanceVersion(&instance_version);
  if (instance_version < VK_API_VERSION_1_2) {
    return absl::NotFoundError(
        absl::StrCat("the Vulkan loader supports only Vulkan ",
                     VersionString(instance_version),
                     "; Tessera needs 1.2 (timeline semaphores)"));
  }
  const char* kValidation = "VK_LAYER_KHRONOS_validation";
  const bool validation =
      options.enable_validation && HasLayer(kValidation) &&
      HasInstanceExtension(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "tessera";
  app.pEngineName = "tessera";
  app.apiVersion = instance_version >= VK_API_VERSION_1_3 ? VK_API_VERSION_1_3
                                                          : VK_API_VERSION_1_2;
  VkDebugUtilsMessengerCreateInfoEXT dm{
      VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
  dm.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  dm.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                   VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                   VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  dm.pfnUserCallback = &DebugCallback;
  std::vector<const char*> layers, exts;
  if (validation) {
    layers.push_back(kValidation);
    exts.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
  }
  VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ci.pNext = validation ? &dm : nullptr;
  ci.pApplicationInfo = &app;
  ci.enabledLayerCount = static_cast<uint32_t>(layers.size());
  ci.ppEnabledLayerNames = layers.data();
  ci.enabledExtensionCount = static_cast<uint32_t>(exts.size());
  ci.ppEnabledExtensionNames = exts.data();
  auto instance = std::make_shared<InstanceCore>();
  VkResult r = vkCreateInstance(&ci, nullptr, &instance->instance);
  if (r == VK_ERROR_INCOMPATIBLE_DRIVER ||
      r == VK_ERROR_INITIALIZATION_FAILED) {
    instance->instance = VK_NULL_HANDLE;
    return absl::NotFoundError(absl::StrCat(
        "no Vulkan driver (vkCreateInstance: ", VkResultName(r), ")"));
  }
  if (r != VK_SUCCESS) {
    instance->instance = VK_NULL_HANDLE;
    return VkStatus(r, "vkCreateInstance");
  }
  if (validation) {
    auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance->instance,
                              "vkCreateDebugUtilsMessengerEXT"));
    if (create) create(instance->instance, &dm, nullptr, &instance->messenger);
  }
  uint32_t n = 0;
  vkEnumeratePhysicalDevices(instance->instance, &n, nullptr);
  std::vector<VkPhysicalDevice> physical(n);
  vkEnumeratePhysicalDevices(instance->instance, &n, physical.data());

  auto platform = std::make_unique<VulkanPlatformImpl>(instance);
  std::string skipped;
  for (uint32_t p = 0; p < n; ++p) {
    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(physical[p], &props);
    if (props.apiVersion < VK_API_VERSION_1_2) {
      absl::StrAppend(&skipped, " ", props.deviceName, " (Vulkan ",
                      VersionString(props.apiVersion), " < 1.2);");
      continue;
    }
    for (int l = 0; l < options.logical_devices_per_gpu; ++l) {
      auto dev = std::make_shared<Dev>(instance, physical[p], options,
                                       &platform->counters_);
      absl::Status s = dev->Init(static_cast<int>(p), l);
      if (absl::IsNotFound(s)) {
        absl::StrAppend(&skipped, " ", props.deviceName, " (", s.message(),
                        ");");
        break;
      }
      if (!s.ok()) return s;
      platform->devices_.push_back(std::move(dev));
    }
  }
  if (platform->devices_.empty()) {
    return absl::NotFoundError(
        absl::StrCat("no compute-capable Vulkan >= 1.2 device (", n,
                     " physical devices;", skipped, ")"));
  }
  for (auto& d : platform->devices_) d->Start();
  return std::unique_ptr<VulkanPlatform>(std::move(platform));
}

}  // namespace tessera
