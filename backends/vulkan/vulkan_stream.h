#ifndef TESSERA_BACKENDS_VULKAN_VULKAN_STREAM_H_
#define TESSERA_BACKENDS_VULKAN_VULKAN_STREAM_H_

// The in-order stream of one VkDevice: its queue, its timeline semaphore, a worker thread that runs
// operations and a completion thread that sets their futures.
//
// Enqueue pushes a StreamOp into a FIFO. The worker takes the head op once its `after` futures are
// set (an OnReady callback wakes it; callers never block) and hands it to the executor given to
// Start, which records command buffers and submits them with Submit: each submission waits for the
// previous timeline value and signals the next, so the stream is in order on the GPU. Host work in
// an op runs on the worker after the values it depends on are reached (WaitValue); an op whose last
// step is host work signals its value from the host (HostSignal). The op's promise, its command
// buffers and references to its buffers go to the completion thread, which waits for the op's value
// (vkWaitSemaphores with a timeout, no spinning), releases the resources and sets the promise, in
// order. A failed step fails the op's future; the op keeps the last value it submitted, so later
// ops are unaffected. A failed wait on the semaphore fails every pending op.
//
// A second timeline semaphore, the export timeline, orders the submissions other devices' workers
// make on this queue to read this device's buffers (SubmitExport, cross_device_copy.h).
//
// Ownership: owned by its VulkanDevice; borrows the VkDevice, the VkQueue and the platform's
// counters. Owns the semaphores and the command pool, destroyed with it (after the GPU is idle).
// CancelAndJoin must have been called (or Start never) before destruction.
// Thread-safety: Enqueue, BeginShutdown, Quiet, CancelAndJoin, InjectSubmitFailures and WaitValue
// are thread-safe. AcquireCmd, Submit, HostSignal, WaitStream and last_value are for the worker
// (the executor) only. SubmitExport is for one thread at a time: the caller holds the owning
// device's export mutex.

#include <vulkan/vulkan.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "backends/vulkan/platform_counters.h"
#include "ifrt/spi/platform.h"

namespace tessera::vulkan {

// One stream operation: exactly one of h2b, b2h, b2b, fn, launch is used, per `kind`.
struct StreamOp {
  enum class Kind { kHostToBuffer, kBufferToHost, kBufferToBuffer, kCallback, kKernel };
  Kind kind;
  std::vector<HostToBufferCopy> h2b;
  std::vector<BufferToHostCopy> b2h;
  std::vector<BufferToBufferCopy> b2b;
  std::function<absl::Status()> fn;
  KernelLaunch launch;  // a compiled kernel's launch (spirv_kernel.h)
  Future<> after;
  bool after_ready = false;  // guarded by the stream's mutex
  Promise<> promise;
};

// What the completion thread needs to finish an op: the timeline value that completes it, its
// result, and what to release first.
struct StreamCompletion {
  uint64_t value = 0;
  absl::Status status;
  Promise<> promise;
  std::vector<PlatformBufferRef> keep_alive;
  std::vector<PlatformKernelRef> keep_kernels;  // kernels whose pipelines the op runs
  std::vector<VkCommandBuffer> cmds;            // from AcquireCmd, recycled when done
};

class VulkanStream {
 public:
  // Runs one op on the worker; fills `c.keep_alive` and `c.cmds`, returns the op's result.
  using Executor = std::function<absl::Status(StreamOp&, StreamCompletion&)>;

  VulkanStream(VkDevice device, VkQueue queue, uint32_t queue_family, PlatformCounters* counters);
  VulkanStream(const VulkanStream&) = delete;
  VulkanStream& operator=(const VulkanStream&) = delete;
  ~VulkanStream();

  // Creates the timeline semaphores and the command pool.
  absl::Status Init();
  // Starts the worker and completion threads.
  void Start(Executor execute);

  // Appends `op`, to run once `after` are all set; returns its future.
  Future<> Enqueue(std::shared_ptr<StreamOp> op, absl::Span<const Future<>> after);

  // Drain protocol (see ~VulkanPlatformImpl): BeginShutdown, then poll Quiet (nothing executing, no
  // runnable head, no pending completion), then CancelAndJoin fails what is left with CANCELLED and
  // joins both threads.
  void BeginShutdown();
  bool Quiet();
  void CancelAndJoin();

  // Testing: the next `count` Submit calls fail with VK_ERROR_DEVICE_LOST.
  void InjectSubmitFailures(int count) { inject_submit_failures_.store(count); }

  // ---- for the worker ----
  // A reset command buffer from the stream's pool (return it through StreamCompletion::cmds).
  absl::StatusOr<VkCommandBuffer> AcquireCmd();
  // Submits `cb` waiting for the previous value of the stream; returns the signalled value.
  absl::StatusOr<uint64_t> Submit(VkCommandBuffer cb);
  // Signals the next value from the host.
  absl::Status HostSignal();
  // Waits until everything submitted so far is done.
  absl::Status WaitStream() { return WaitValue(timeline_, last_value_); }
  uint64_t last_value() const { return last_value_; }

  // ---- any thread ----
  VkSemaphore timeline() const { return timeline_; }
  VkSemaphore export_timeline() const { return export_timeline_; }
  // Waits (no timeout) until `sem` of this device reaches `value`.
  absl::Status WaitValue(VkSemaphore sem, uint64_t value);
  // Submits `cb` on the export timeline, after the stream's current value; returns the signalled
  // export value.
  absl::StatusOr<uint64_t> SubmitExport(VkCommandBuffer cb);

 private:
  VkResult QueueSubmit(VkCommandBuffer cb, uint64_t wait_value, VkSemaphore signal,
                       uint64_t signal_value);
  // Stream state shared with OnReady callbacks (which may outlive the stream).
  struct Sync {
    std::mutex mu;
    std::condition_variable cv;  // ops, after_ready or cancel changed
    std::deque<std::shared_ptr<StreamOp>> ops;
    bool shutdown = false;
    bool cancel = false;
    bool executing = false;
  };

  void WorkerLoop();
  void CompletionLoop();

  VkDevice device_;
  VkQueue queue_;
  uint32_t queue_family_;
  PlatformCounters* counters_;
  Executor execute_;
  std::atomic<int> inject_submit_failures_{0};
  std::mutex queue_mu_;  // vkQueueSubmit

  VkSemaphore timeline_ = VK_NULL_HANDLE;
  uint64_t last_value_ = 0;  // worker only
  VkSemaphore export_timeline_ = VK_NULL_HANDLE;
  uint64_t export_value_ = 0;                // under the export mutex
  VkCommandPool cmd_pool_ = VK_NULL_HANDLE;  // worker only
  std::mutex free_cmds_mu_;
  std::vector<VkCommandBuffer> free_cmds_;

  std::shared_ptr<Sync> sync_ = std::make_shared<Sync>();
  std::mutex cq_mu_;
  std::condition_variable cq_cv_;  // cq_ or cq_stop_ changed
  std::deque<StreamCompletion> cq_;
  bool cq_stop_ = false;
  int completing_ = 0;  // completions popped whose promises are still being set
  std::thread worker_, completer_;
};

}  // namespace tessera::vulkan

#endif  // TESSERA_BACKENDS_VULKAN_VULKAN_STREAM_H_
