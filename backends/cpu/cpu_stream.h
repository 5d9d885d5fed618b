#ifndef TESSERA_BACKENDS_CPU_CPU_STREAM_H_
#define TESSERA_BACKENDS_CPU_CPU_STREAM_H_

// CpuStream: the in-order stream of one CPU device. Each enqueued operation runs on the stream's
// own thread (a CpuWorkerPool of one thread, cpu_worker_pool.h: it sleeps while idle), inside the
// device's task arena (so that host copies split over the device's threads and no more), after the
// previous operation finished and after its `after` futures are set; an error in `after` skips the
// operation and becomes its result. No thread blocks while an operation waits: waiting is done
// with future callbacks.
//
// Inline operations: an operation enqueued with `may_run_inline` (small work, as the platform
// decides) runs on the calling thread, before Enqueue returns, when nothing else is in flight on
// the stream (the previous operation has finished and no other inline operation is running) and
// every `after` future is already set; its future is returned set. Waking a device thread costs
// more than copying a few hundred bytes. Otherwise it is enqueued as any other operation.
//
// Synchronisation: `mu_` guards the tail of the stream. An inline operation marks the stream busy
// (`inline_running_`, with the tail invalid) under `mu_`, runs without it, then clears the mark
// under `mu_`; an operation enqueued meanwhile chains on `inline_done_`, a promise created on
// demand and set by the inline operation once it has finished. So operations of one stream never
// overlap, inline or not, and each sees the writes of the one before (mutex and future
// happens-before edges). Ready operations reach the thread through the pool's queue (a mutex).
//
// Lifetime: an operation (its work, its captures, its state) is released before its future is set
// and before the stream counts it done. Thread-safe. The destructor waits until every enqueued
// operation has finished.

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/types/span.h"
#include "backends/cpu/cpu_worker_pool.h"
#include "ifrt/future.h"
#include "oneapi/tbb/task_arena.h"

namespace tessera::cpu {

class CpuStream {
 public:
  // `threads`: the device's threads, the stream's own thread among them (parallel copies split
  // over them).
  explicit CpuStream(int threads);
  ~CpuStream();
  CpuStream(const CpuStream&) = delete;
  CpuStream& operator=(const CpuStream&) = delete;

  // An exception thrown by `work` becomes the operation's error (RESOURCE_EXHAUSTED for
  // std::bad_alloc, else INTERNAL).
  Future<> Enqueue(absl::Span<const Future<>> after, std::function<absl::Status()> work,
                   bool may_run_inline = false);
  int threads() const { return threads_; }

  // Operations enqueued (not run inline) on any stream of this process and not yet destroyed.
  // Every one is destroyed before its stream's destructor returns, so this is 0 whenever no
  // stream has operations in flight (tests check it).
  static int64_t LiveOperations();

 private:
  // Runs `work` on this thread if the stream is idle and `after` is set; nullopt otherwise (then
  // nothing ran and `work` is untouched).
  std::optional<Future<>> TryRunInline(absl::Span<const Future<>> after,
                                       std::function<absl::Status()>& work);

  struct Op;  // an enqueued operation: its work and its two promises

  // Once the previous operation and the inputs are done: skips `op` if `inputs` failed, else
  // posts it to the stream's thread.
  void Start(std::shared_ptr<Op> op, const absl::Status& inputs);
  // On the stream's thread: runs `op` in the arena, releases it, sets its futures.
  void Run(std::shared_ptr<Op> op);

  const int threads_;
  tbb::task_arena arena_;
  std::mutex mu_;
  // Set (always OK) when the last operation finished; invalid while an inline operation runs
  // and no operation was enqueued after it.
  Future<> tail_done_ ABSL_GUARDED_BY(mu_);
  bool inline_running_ ABSL_GUARDED_BY(mu_) = false;
  // Created when an operation is enqueued behind a running inline one; set when it finishes.
  std::optional<Promise<>> inline_done_ ABSL_GUARDED_BY(mu_);
  // One thread, which runs the operations. Last: joined before the members it uses go.
  CpuWorkerPool pool_;
};

}  // namespace tessera::cpu

#endif  // TESSERA_BACKENDS_CPU_CPU_STREAM_H_
