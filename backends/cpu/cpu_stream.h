#ifndef TESSERA_BACKENDS_CPU_CPU_STREAM_H_
#define TESSERA_BACKENDS_CPU_CPU_STREAM_H_

// CpuStream: the in-order stream of one CPU device. Each enqueued operation runs inside the
// device's task arena after the previous operation finished and after its `after` futures are set;
// an error in `after` skips the operation and becomes its result. No thread blocks while an
// operation waits: waiting is done with future callbacks.
//
// Thread-safe. The destructor waits until every enqueued operation has finished.

#include <condition_variable>
#include <functional>
#include <mutex>

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

  Future<> Enqueue(absl::Span<const Future<>> after, std::function<absl::Status()> work);
  int threads() const { return threads_; }

 private:
  const int threads_;
  tbb::task_arena arena_;
  std::mutex mu_;
  Future<> tail_done_ ABSL_GUARDED_BY(mu_);  // set (always OK) when the last operation finished
  std::condition_variable idle_;
  int running_tasks_ ABSL_GUARDED_BY(mu_) = 0;  // arena tasks not yet returned
};

}  // namespace tessera::cpu

#endif  // TESSERA_BACKENDS_CPU_CPU_STREAM_H_
