#ifndef TESSERA_BACKENDS_CPU_CPU_WORKER_POOL_H_
#define TESSERA_BACKENDS_CPU_CPU_WORKER_POOL_H_

// CpuWorkerPool: threads that run posted tasks, in the order posted as threads free up; idle
// threads sleep on a condition variable, never spinning or yielding. Each CPU device's stream runs
// its operations on a pool of one thread of its own (cpu_stream.h).
//
// Why they sleep: on a machine where another job holds cores, threads that spin or call
// sched_yield while they wait hand their time to that job instead of to the devices that compute.
// oneTBB's idle workers do both before they sleep, and with a oneTBB arena per device every device
// thread was one of them: the Megatron MLP on 8 devices on 2 cores beside a busy loop made about
// 650 context switches per call, nearly all sched_yield (`perf record -e sched:sched_switch`), and
// took 25-27 ms against 21-25 ms with sleeping threads (quiet: the same). Why one pool per device,
// not one shared by the devices: with a shared queue a thread that finished one device's copy took
// the next device's while the others were still waking, and 64 MiB reshards over 8 devices were
// 10-25% slower.
//
// Idle threads help: before a thread sleeps it runs blocks of work other threads share where that
// shortens it (shared_blocks.h: a matmul of a device that is behind), and while any work is shared
// it looks again every 200 us instead of sleeping until a task comes. A posted task waits at most
// for the block in hand.
//
// Thread-safe. The destructor runs the tasks already posted, then joins the threads; when it runs
// on a pool thread itself (the last reference dropped by a task), that thread ends by itself.

#include <memory>

#include "absl/functional/any_invocable.h"

namespace tessera::cpu {

class CpuWorkerPool {
 public:
  // `threads` >= 1.
  explicit CpuWorkerPool(int threads);
  ~CpuWorkerPool();
  CpuWorkerPool(const CpuWorkerPool&) = delete;
  CpuWorkerPool& operator=(const CpuWorkerPool&) = delete;

  // Runs `task` on a pool thread. `task` must not throw.
  void Post(absl::AnyInvocable<void() &&> task);
  int threads() const { return threads_; }

 private:
  struct State;  // the queue and the threads; shared with the threads, which may outlive the pool
  const int threads_;
  std::shared_ptr<State> state_;
};

}  // namespace tessera::cpu

#endif  // TESSERA_BACKENDS_CPU_CPU_WORKER_POOL_H_
