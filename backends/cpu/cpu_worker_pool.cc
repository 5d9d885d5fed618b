#include "backends/cpu/cpu_worker_pool.h"

#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "backends/cpu/shared_blocks.h"

namespace tessera::cpu {

struct CpuWorkerPool::State {
  // Runs tasks until `stopping` is set and the queue is empty. Idle while work is shared, it helps
  // the devices that are behind (shared_blocks.h) and looks again every kPollInterval instead of
  // sleeping until a task comes; with nothing shared (the common case: reshards, small calls) it
  // waits as it would without help, at the cost of one atomic load.
  void Loop() {
    std::unique_lock<std::mutex> lock(mu);
    while (true) {
      if (queue.empty() && !stopping && BlocksAreShared()) {
        lock.unlock();
        // A task posted meanwhile stops the help before the next block (a lock per block of
        // about 0.2 ms; no counter for Post to keep).
        const bool shared = HelpSharedBlocks([this] {
          std::lock_guard<std::mutex> queue_lock(mu);
          return !queue.empty();
        });
        lock.lock();
        if (queue.empty() && !stopping && shared) {
          ready.wait_for(lock, kPollInterval);
          continue;
        }
      }
      ready.wait(lock, [this] { return stopping || !queue.empty() || BlocksAreShared(); });
      if (queue.empty() && !stopping) continue;  // work was shared: help
      if (queue.empty()) return;                 // stopping, and nothing left
      absl::AnyInvocable<void()&&> task = std::move(queue.front());
      queue.pop_front();
      lock.unlock();
      std::move(task)();
      task = nullptr;  // what the task captured goes before the thread waits again
      lock.lock();
    }
  }

  static constexpr std::chrono::microseconds kPollInterval{200};
  std::mutex mu;
  std::condition_variable ready;
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
  }
  state_->ready.notify_one();
}

}  // namespace tessera::cpu
