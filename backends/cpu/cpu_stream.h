#ifndef TESSERA_BACKENDS_CPU_CPU_STREAM_H_
#define TESSERA_BACKENDS_CPU_CPU_STREAM_H_

// CpuStream: the in-order stream of one CPU device. Each enqueued operation runs inside the
// device's task arena after the previous operation finished and after its `after` futures are set;
// an error in `after` skips the operation and becomes its result. No thread blocks while an
// operation waits: waiting is done with future callbacks.
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
// happens-before edges).
//
// Lifetime: an operation (its work, its captures, its state) is released before its future is set
// and before the stream counts it done, never later by whichever thread ran it: so nothing of it
// outlives the stream. Thread-safe. The destructor waits until every enqueued operation has
// finished.

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/types/span.h"
#include "ifrt/future.h"
#include "oneapi/tbb/task_arena.h"

namespace tessera::cpu {

class CpuStream {
 public:
  explicit CpuStream(int threads);
  ~CpuStream();
  CpuStream(const CpuStream&) = delete;
  CpuStream& operator=(const CpuStream&) = delete;

  // Inline, an exception thrown by `work` becomes the operation's error (RESOURCE_EXHAUSTED for
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
  // The arena task of an operation. oneTBB keeps a task's functor (const) until after the task
  // has returned, so after this stream may have counted it done and been destroyed, and in
  // memory LeakSanitizer does not scan (tbbmalloc): an op still held there at exit would be
  // reported as leaked. So the task holds the op only by address, with the reference in the op
  // itself (Op::self), which the task takes when it runs; Run drops it before it counts the task
  // done; what TBB destroys later holds nothing.
  //
  // ThreadSanitizer: the handoff to the arena thread goes through oneTBB, which TSan cannot see.
  // The op is handed over on an annotated edge keyed by its address (tsan_annotations.h): Start
  // releases once the op is complete, the task acquires before it touches it. The task's own
  // members are not checked (LoadUnchecked, StoreUnchecked): they live in memory oneTBB's
  // small-object pool recycles between threads and object types (the next task, or a parallel_for
  // task built by oneTBB's header code inlined into a Tessera function, which no suppression can
  // name) without TSan seeing the free or the reuse, and enqueue constructs the task unchecked
  // anyway (ScopedIgnoreLibraryAccesses). Out of line, so that TSan names the op's accesses as
  // Tessera's: the `race_top:^tbb::detail::d1::` suppressions in build_tools/tsan.supp never match
  // them.
  struct Task {
    Task(CpuStream* stream, Op* op);
    Task(Task&& other) noexcept;
    Task(const Task&) = delete;
    Task& operator=(const Task&) = delete;
    Task& operator=(Task&&) = delete;
    ~Task();  // drops the op if it never ran (the arena never destroys a task unrun)
    void operator()() const;

    // Only ever accessed through LoadUnchecked and StoreUnchecked.
    CpuStream* stream;
    mutable Op* op;  // null once taken
  };
  // Once the previous operation and the inputs are done: skips `op` if `inputs` failed, else
  // hands it to the arena.
  void Start(std::shared_ptr<Op> op, const absl::Status& inputs);
  // Runs `op` on an arena thread, sets its futures, releases it, then counts the task done.
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
  std::condition_variable idle_;
  int running_tasks_ ABSL_GUARDED_BY(mu_) = 0;  // arena tasks not yet returned
};

}  // namespace tessera::cpu

#endif  // TESSERA_BACKENDS_CPU_CPU_STREAM_H_
