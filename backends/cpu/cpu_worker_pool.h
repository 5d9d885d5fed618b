#ifndef TESSERA_BACKENDS_CPU_CPU_WORKER_POOL_H_
#define TESSERA_BACKENDS_CPU_CPU_WORKER_POOL_H_

// CpuWorkerPool: the threads that run the CPU devices' stream operations, shared by the devices of
// a platform (one thread per device). A posted task runs on one of the pool's threads, tasks in the
// order they were posted as threads free up. Idle threads sleep on a condition variable; they never
// spin or yield.
//
// Why they sleep: on a machine where another job holds cores, threads that spin or call
// sched_yield while they wait hand their time to that job instead of to the devices that compute.
// oneTBB's idle workers do both before they sleep, and with a oneTBB arena per device every device
// thread was one of them: the Megatron MLP on 8 devices on 2 cores beside a busy loop made about
// 650 context switches per call, nearly all sched_yield (`perf record -e sched:sched_switch`), and
// took 28 ms against 25 ms with sleeping threads. Why shared: a thread that has just finished an
// operation takes the next ready one, of any device, without waking another.
//
// Streams stay in order (cpu_stream.h posts an operation only once the one before it finished),
// and no operation waits for another on a pool thread (waiting is done with future callbacks).
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
