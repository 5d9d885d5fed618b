#include "backends/cpu/cpu_stream.h"

#include <memory>
#include <vector>

namespace tessera::cpu {

CpuStream::CpuStream(int threads)
    : threads_(threads),
      arena_(threads, /*reserved_for_masters=*/0),
      tail_done_(MakeReadyFuture()) {}

CpuStream::~CpuStream() {
  Future<> tail;
  {
    std::lock_guard<std::mutex> lock(mu_);
    tail = tail_done_;
  }
  tail.Await().IgnoreError();  // always OK: tail_done_ never carries an error
  // The last task may still be unwinding after it set its futures.
  std::unique_lock<std::mutex> lock(mu_);
  idle_.wait(lock, [this] { return running_tasks_ == 0; });
}

Future<> CpuStream::Enqueue(absl::Span<const Future<>> after, std::function<absl::Status()> work) {
  struct Op {
    std::function<absl::Status()> work;
    Promise<> result;
    Promise<> done;
  };
  auto op = std::make_shared<Op>();
  op->work = std::move(work);
  Future<> result = op->result.future();
  Future<> previous;
  {
    std::lock_guard<std::mutex> lock(mu_);
    previous = tail_done_;
    tail_done_ = op->done.future();
  }
  std::vector<Future<>> deps(after.begin(), after.end());
  Future<> inputs = JoinFutures(deps);
  // Wait for the previous operation (never an error), then for the inputs.
  previous.OnReady([this, op, inputs](const absl::Status&) {
    inputs.OnReady([this, op](const absl::Status& s) {
      if (!s.ok()) {
        op->result.Set(s);
        op->done.Set(absl::OkStatus());
        return;
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        ++running_tasks_;
      }
      arena_.enqueue([this, op] {
        absl::Status st = op->work();
        op->work = nullptr;  // release what the work captured before anyone is told
        op->result.Set(std::move(st));
        op->done.Set(absl::OkStatus());
        std::lock_guard<std::mutex> lock(mu_);
        if (--running_tasks_ == 0) idle_.notify_all();
      });
    });
  });
  return result;
}

}  // namespace tessera::cpu
