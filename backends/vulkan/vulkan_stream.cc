#include "backends/vulkan/vulkan_stream.h"

#include <utility>

#include "backends/vulkan/vulkan_status.h"

namespace tessera::vulkan {

VulkanStream::VulkanStream(VkDevice device, VkQueue queue, uint32_t queue_family,
                           PlatformCounters* counters)
    : device_(device), queue_(queue), queue_family_(queue_family), counters_(counters) {}

VulkanStream::~VulkanStream() {
  if (cmd_pool_) vkDestroyCommandPool(device_, cmd_pool_, nullptr);
  if (timeline_) vkDestroySemaphore(device_, timeline_, nullptr);
  if (export_timeline_) vkDestroySemaphore(device_, export_timeline_, nullptr);
}

absl::Status VulkanStream::Init() {
  VkSemaphoreTypeCreateInfo sti{VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO};
  sti.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
  VkSemaphoreCreateInfo sci{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
  sci.pNext = &sti;
  TESSERA_VK_RETURN_IF_ERROR(vkCreateSemaphore(device_, &sci, nullptr, &timeline_),
                             "vkCreateSemaphore");
  TESSERA_VK_RETURN_IF_ERROR(vkCreateSemaphore(device_, &sci, nullptr, &export_timeline_),
                             "vkCreateSemaphore");
  VkCommandPoolCreateInfo pci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pci.queueFamilyIndex = queue_family_;
  TESSERA_VK_RETURN_IF_ERROR(vkCreateCommandPool(device_, &pci, nullptr, &cmd_pool_),
                             "vkCreateCommandPool");
  return absl::OkStatus();
}

void VulkanStream::Start(Executor execute) {
  execute_ = std::move(execute);
  worker_ = std::thread([this] { WorkerLoop(); });
  completer_ = std::thread([this] { CompletionLoop(); });
}

Future<> VulkanStream::Enqueue(std::shared_ptr<StreamOp> op, absl::Span<const Future<>> after) {
  Future<> result = op->promise.future();
  op->after = JoinFutures(after);
  std::shared_ptr<Sync> sync = sync_;
  // A weak reference: the queue owns the op, and whoever runs this callback may hold it (its
  // closure) until after the op has run and completed; the op's buffers must go with the op, not
  // with that thread.
  std::weak_ptr<StreamOp> weak_op = op;
  op->after.OnReady([sync, weak_op](const absl::Status&) {
    std::lock_guard<std::mutex> lock(sync->mu);
    if (std::shared_ptr<StreamOp> queued = weak_op.lock()) {
      queued->after_ready = true;
    }
    sync->cv.notify_all();
  });
  std::lock_guard<std::mutex> lock(sync_->mu);
  sync_->ops.push_back(std::move(op));
  sync_->cv.notify_all();
  return result;
}

void VulkanStream::BeginShutdown() {
  std::lock_guard<std::mutex> lock(sync_->mu);
  sync_->shutdown = true;
}

bool VulkanStream::Quiet() {
  {
    std::lock_guard<std::mutex> lock(sync_->mu);
    if (sync_->executing) return false;
    if (!sync_->ops.empty() && sync_->ops.front()->after_ready) return false;
  }
  std::lock_guard<std::mutex> lock(cq_mu_);
  return cq_.empty() && completing_ == 0;
}

void VulkanStream::CancelAndJoin() {
  {
    std::lock_guard<std::mutex> lock(sync_->mu);
    sync_->cancel = true;
    sync_->cv.notify_all();
  }
  if (worker_.joinable()) worker_.join();
  {
    std::lock_guard<std::mutex> lock(cq_mu_);
    cq_stop_ = true;
    cq_cv_.notify_all();
  }
  if (completer_.joinable()) completer_.join();
}

// ---- submission -------------------------------------------------------------

absl::StatusOr<VkCommandBuffer> VulkanStream::AcquireCmd() {
  VkCommandBuffer cb = VK_NULL_HANDLE;
  {
    std::lock_guard<std::mutex> lock(free_cmds_mu_);
    if (!free_cmds_.empty()) {
      cb = free_cmds_.back();
      free_cmds_.pop_back();
    }
  }
  if (cb == VK_NULL_HANDLE) {
    VkCommandBufferAllocateInfo cai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
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

// One command buffer on the queue, after this stream's timeline reaches `wait_value`, signalling
// `signal` to `signal_value`.
VkResult VulkanStream::QueueSubmit(VkCommandBuffer cb, uint64_t wait_value, VkSemaphore signal,
                                   uint64_t signal_value) {
  VkTimelineSemaphoreSubmitInfo ts{VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO};
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
  si.pSignalSemaphores = &signal;
  VkResult r;
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    r = vkQueueSubmit(queue_, 1, &si, VK_NULL_HANDLE);
  }
  counters_->submissions.fetch_add(1);
  return r;
}

absl::StatusOr<uint64_t> VulkanStream::Submit(VkCommandBuffer cb) {
  const uint64_t signal_value = last_value_ + 1;
  VkResult r;
  if (inject_submit_failures_.load() > 0 && inject_submit_failures_.fetch_sub(1) > 0) {
    counters_->submissions.fetch_add(1);
    r = VK_ERROR_DEVICE_LOST;  // injected by a test
  } else {
    r = QueueSubmit(cb, last_value_, timeline_, signal_value);
  }
  TESSERA_VK_RETURN_IF_ERROR(r, "vkQueueSubmit");
  last_value_ = signal_value;
  return signal_value;
}

absl::StatusOr<uint64_t> VulkanStream::SubmitExport(VkCommandBuffer cb) {
  // Wait for the stream's current value (already reached: gives a formal memory dependency on the
  // writes of the stream's finished operations).
  uint64_t wait_value = 0;
  vkGetSemaphoreCounterValue(device_, timeline_, &wait_value);
  const uint64_t signal_value = export_value_ + 1;
  TESSERA_VK_RETURN_IF_ERROR(QueueSubmit(cb, wait_value, export_timeline_, signal_value),
                             "vkQueueSubmit(export)");
  export_value_ = signal_value;
  return signal_value;
}

absl::Status VulkanStream::WaitValue(VkSemaphore sem, uint64_t value) {
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

absl::Status VulkanStream::HostSignal() {
  VkSemaphoreSignalInfo si{VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO};
  si.semaphore = timeline_;
  si.value = last_value_ + 1;
  TESSERA_VK_RETURN_IF_ERROR(vkSignalSemaphore(device_, &si), "vkSignalSemaphore");
  last_value_ = si.value;
  return absl::OkStatus();
}

// ---- worker -----------------------------------------------------------------

void VulkanStream::WorkerLoop() {
  Sync* s = sync_.get();
  for (;;) {
    std::shared_ptr<StreamOp> op;
    bool cancelled = false;
    {
      std::unique_lock<std::mutex> lock(s->mu);
      auto ready = [s]() {
        if (s->ops.empty()) return s->cancel;
        return s->ops.front()->after_ready || s->cancel;
      };
      s->cv.wait(lock, ready);
      if (s->ops.empty()) return;  // cancel requested and nothing left
      op = std::move(s->ops.front());
      s->ops.pop_front();
      cancelled = !op->after_ready;
      s->executing = true;
    }
    StreamCompletion c;
    c.promise = op->promise;
    if (cancelled) {
      c.status = absl::CancelledError(
          "the Vulkan platform was destroyed before this operation's "
          "dependencies were ready");
    } else {
      c.status = op->after.Await();
      if (c.status.ok()) c.status = execute_(*op, c);
    }
    c.value = last_value_;
    op.reset();
    {
      std::lock_guard<std::mutex> lock(cq_mu_);
      cq_.push_back(std::move(c));
      cq_cv_.notify_all();
    }
    std::lock_guard<std::mutex> lock(s->mu);
    s->executing = false;
  }
}

// ---- completion -------------------------------------------------------------

void VulkanStream::CompletionLoop() {
  for (;;) {
    uint64_t target;
    {
      std::unique_lock<std::mutex> lock(cq_mu_);
      cq_cv_.wait(lock, [this]() { return !cq_.empty() || cq_stop_; });
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
      if (r == VK_SUCCESS) r = vkGetSemaphoreCounterValue(device_, timeline_, &reached);
    }
    if (r != VK_SUCCESS) {
      lost = VkStatus(r, "waiting for the stream's timeline semaphore");
      reached = UINT64_MAX;
    }
    std::vector<StreamCompletion> done;
    {
      std::lock_guard<std::mutex> lock(cq_mu_);
      while (!cq_.empty() && cq_.front().value <= reached) {
        done.push_back(std::move(cq_.front()));
        cq_.pop_front();
      }
      completing_ += static_cast<int>(done.size());
    }
    for (StreamCompletion& c : done) {
      if (!c.cmds.empty()) {
        std::lock_guard<std::mutex> lock(free_cmds_mu_);
        free_cmds_.insert(free_cmds_.end(), c.cmds.begin(), c.cmds.end());
      }
      c.keep_alive.clear();  // buffers are released before the future is set
      c.keep_kernels.clear();
      c.promise.Set(lost.ok() ? c.status : lost);
    }
    std::lock_guard<std::mutex> lock(cq_mu_);
    completing_ -= static_cast<int>(done.size());
  }
}

}  // namespace tessera::vulkan
