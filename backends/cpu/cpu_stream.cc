#include "backends/cpu/cpu_stream.h"

#include <atomic>
#include <exception>
#include <memory>
#include <new>
#include <utility>

#include "absl/strings/str_cat.h"

namespace tessera::cpu {
namespace {
std::atomic<int64_t> live_operations{0};

// `work()`, with an exception it throws as its error: RESOURCE_EXHAUSTED for std::bad_alloc, else
// INTERNAL.
template <typename Work>
absl::Status RunCaught(Work&& work) {
  try {
    return work();
  } catch (const std::bad_alloc& e) {
    return absl::ResourceExhaustedError(absl::StrCat("out of host memory: ", e.what()));
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("CPU stream operation threw: ", e.what()));
  }
}
}  // namespace

int64_t CpuStream::LiveOperations() { return live_operations.load(std::memory_order_relaxed); }

struct CpuStream::Op {
  Op() { live_operations.fetch_add(1, std::memory_order_relaxed); }
  ~Op() { live_operations.fetch_sub(1, std::memory_order_relaxed); }
  std::function<absl::Status()> work;
  Promise<> result;
  Promise<> done;
};

CpuStream::CpuStream(int threads)
    : threads_(threads),
      arena_(threads, /*reserved_for_masters=*/1),
      tail_done_(MakeReadyFuture()),
      pool_(/*threads=*/1) {}

CpuStream::~CpuStream() {
  Future<> tail;
  {
    std::lock_guard<std::mutex> lock(mu_);
    tail = tail_done_;
  }
  if (tail.valid()) tail.Await().IgnoreError();  // always OK: tail_done_ never carries an error
}

void CpuStream::Run(std::shared_ptr<Op> op) {
  // The arena has one slot for the stream's thread (so the work runs here) and threads - 1 for
  // oneTBB's workers: a parallel copy inside splits over the device's threads, a one-thread
  // device's runs serially.
  absl::Status status = RunCaught([&] {
    absl::Status s;
    arena_.execute([&] { s = op->work(); });
    return s;
  });
  op->work = nullptr;  // release what the work captured before anyone is told
  // The result first: the next operation starts only after the result's callbacks (which count
  // bytes and release buffers) have run, so that an operation that drains the stream (the
  // client's destructor enqueues one) finds nothing of this one still running.
  op->result.Set(std::move(status));
  Promise<> done = op->done;
  op.reset();                  // gone before the destructor, which waits for `done`, may return
  done.Set(absl::OkStatus());  // the last touch of this stream
}

std::optional<Future<>> CpuStream::TryRunInline(absl::Span<const Future<>> after,
                                                std::function<absl::Status()>& work) {
  for (const Future<>& f : after) {
    if (f.valid() && !f.IsReady()) return std::nullopt;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (inline_running_ || !tail_done_.IsReady()) return std::nullopt;
    inline_running_ = true;
    tail_done_ = Future<>();  // operations enqueued from now on chain on inline_done_
  }
  absl::Status status;
  for (const Future<>& f : after) {
    if (f.valid() && !f.Await().ok()) {
      status = f.Await();  // the first failed input, as JoinFutures reports it
      break;
    }
  }
  // Never let an exception leave the stream marked busy: it would wait forever.
  if (status.ok()) status = RunCaught(work);
  work = nullptr;  // release what the work captured before anyone is told
  std::optional<Promise<>> waiters;
  {
    std::lock_guard<std::mutex> lock(mu_);
    inline_running_ = false;
    if (!tail_done_.valid()) tail_done_ = MakeReadyFuture();
    waiters.swap(inline_done_);
  }
  if (waiters.has_value()) waiters->Set(absl::OkStatus());
  return MakeReadyFuture(std::move(status));
}

void CpuStream::Start(std::shared_ptr<Op> op, const absl::Status& inputs) {
  if (!inputs.ok()) {    // skipped: the inputs' error is its result
    op->work = nullptr;  // release what the work captured before anyone is told
    op->result.Set(inputs);
    Promise<> done = op->done;
    op.reset();  // before the destructor, which waits for `done`, may return
    done.Set(absl::OkStatus());
    return;
  }
  pool_.Post([this, op = std::move(op)]() mutable { Run(std::move(op)); });
}

Future<> CpuStream::Enqueue(absl::Span<const Future<>> after, std::function<absl::Status()> work,
                            bool may_run_inline) {
  if (may_run_inline) {
    if (std::optional<Future<>> done = TryRunInline(after, work)) return *std::move(done);
  }
  auto op = std::make_shared<Op>();
  op->work = std::move(work);
  Future<> result = op->result.future();
  Future<> previous;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (tail_done_.valid()) {
      previous = tail_done_;
    } else {  // behind a running inline operation
      if (!inline_done_.has_value()) inline_done_.emplace();
      previous = inline_done_->future();
    }
    tail_done_ = op->done.future();
  }
  Future<> inputs = JoinFutures(after);
  // Wait for the previous operation (never an error), then for the inputs.
  previous.OnReady([this, op = std::move(op), inputs](const absl::Status&) mutable {
    inputs.OnReady(
        [this, op = std::move(op)](const absl::Status& s) mutable { Start(std::move(op), s); });
  });
  return result;
}

}  // namespace tessera::cpu
