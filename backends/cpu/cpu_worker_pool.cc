#include "backends/cpu/cpu_worker_pool.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "backends/cpu/shared_blocks.h"

namespace tessera::cpu {

struct CpuWorkerPool::State {
  // Runs tasks until `stopping` is set and the queue is empty.
  // Idle, it helps the devices that are behind (shared_blocks.h) before it sleeps, and while
  // work is shared it looks again every kPollInterval instead of sleeping until a task comes.
  void Loop() {
    std::unique_lock<std::mutex> lock(mu);
    while (true) {
      if (queue.empty() && !stopping) {
        lock.unlock();
        const bool shared =
            HelpSharedBlocks([this] { return queued.load(std::memory_order_relaxed) > 0; });
        lock.lock();
        if (queue.empty() && !stopping) {
          if (shared) {
            ready.wait_for(lock, kPollInterval);
          } else {
            ready.wait(lock, [this] { return stopping || !queue.empty(); });
          }
          continue;
        }
      }
      if (queue.empty()) return;  // stopping, and nothing left
      absl::AnyInvocable<void()&&> task = std::move(queue.front());
      queue.pop_front();
      queued.fetch_sub(1, std::memory_order_relaxed);
      lock.unlock();
      std::move(task)();
      task = nullptr;  // what the task captured goes before the thread waits again
      lock.lock();
    }
  }

  static constexpr std::chrono::microseconds kPollInterval{200};
  std::mutex mu;
  std::condition_variable ready;
  std::atomic<int64_t> queued{0};  // the queue's length, read without the lock by helpers
  std::deque<absl::AnyInvocable<void() &&>> queue ABSL_GUARDED_BY(mu);
  bool stopping ABSL_GUARDED_BY(mu) = false;
  std::vector<std::thread> threads;  // written only by the pool's constructor and destructor
};

CpuWorkerPool::CpuWorkerPool(int threads)
    : threads_(std::max(1, threads)), state_(std::make_shared<State>()) {
  state_->threads.reserve(threads_);
  for (int i = 0; i < threads_; ++i) {
    std::thread& t = state_->threads.emplace_back([state = state_] { state->Loop(); });
    pthread_setname_np(t.native_handle(), "tessera-cpu");  // what profilers and top show
  }
}

CpuWorkerPool::~CpuWorkerPool() {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->stopping = true;
  }
  state_->ready.notify_all();
  for (std::thread& t : state_->threads) {
    if (t.get_id() == std::this_thread::get_id()) {
      t.detach();  // destroyed by one of its own tasks: this thread ends once the task returns
    } else {
      t.join();
    }
  }
}

void CpuWorkerPool::Post(absl::AnyInvocable<void() &&> task) {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->queue.push_back(std::move(task));
    state_->queued.fetch_add(1, std::memory_order_relaxed);
  }
  state_->ready.notify_one();
}

}  // namespace tessera::cpu
