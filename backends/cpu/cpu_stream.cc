#include "backends/cpu/cpu_stream.h"

#include <atomic>
#include <exception>
#include <memory>
#include <new>
#include <vector>

#include "absl/base/attributes.h"
#include "absl/strings/str_cat.h"
#include "backends/common/tsan_annotations.h"

namespace tessera::cpu {
namespace {
std::atomic<int64_t> live_operations{0};

// Task's members (see there): accesses ThreadSanitizer does not check.
template <typename T>
T* LoadUnchecked(T* const& field) {
  backends::ScopedIgnoreLibraryAccesses in_onetbb_memory;
  return field;
}
template <typename T>
void StoreUnchecked(T*& field, T* value) {
  backends::ScopedIgnoreLibraryAccesses in_onetbb_memory;
  field = value;
}
}  // namespace

int64_t CpuStream::LiveOperations() { return live_operations.load(std::memory_order_relaxed); }

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
  if (tail.valid()) tail.Await().IgnoreError();  // always OK: tail_done_ never carries an error
  // The last task may still be unwinding after it set its futures.
  std::unique_lock<std::mutex> lock(mu_);
  idle_.wait(lock, [this] { return running_tasks_ == 0; });
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
  if (status.ok()) {
    // Never let an exception leave the stream marked busy: it would wait forever.
    try {
      status = work();
    } catch (const std::bad_alloc& e) {
      status = absl::ResourceExhaustedError(absl::StrCat("out of host memory: ", e.what()));
    } catch (const std::exception& e) {
      status = absl::InternalError(absl::StrCat("inline stream operation threw: ", e.what()));
    }
  }
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

struct CpuStream::Op {
  Op() { live_operations.fetch_add(1, std::memory_order_relaxed); }
  ~Op() { live_operations.fetch_sub(1, std::memory_order_relaxed); }
  std::function<absl::Status()> work;
  Promise<> result;
  Promise<> done;
  std::shared_ptr<Op> self;  // while in the arena: the task's reference (see Task)
};

// The members are written by StoreUnchecked only (see Task), so they are not initialised.
ABSL_ATTRIBUTE_NOINLINE CpuStream::Task::Task(CpuStream* stream, Op* op) {
  StoreUnchecked(this->stream, stream);
  StoreUnchecked(this->op, op);
}

ABSL_ATTRIBUTE_NOINLINE CpuStream::Task::Task(Task&& other) noexcept {
  StoreUnchecked(stream, LoadUnchecked(other.stream));
  StoreUnchecked(op, LoadUnchecked(other.op));
  StoreUnchecked<Op>(other.op, nullptr);
}

ABSL_ATTRIBUTE_NOINLINE CpuStream::Task::~Task() {
  if (Op* unrun = LoadUnchecked(op)) {
    backends::HandoffAcquire(unrun);
    unrun->self.reset();
  }
}

ABSL_ATTRIBUTE_NOINLINE void CpuStream::Task::operator()() const {
  Op* taken = LoadUnchecked(op);
  StoreUnchecked<Op>(op, nullptr);
  backends::HandoffAcquire(taken);
  std::shared_ptr<Op> owned = std::move(taken->self);
  LoadUnchecked(stream)->Run(std::move(owned));
}

void CpuStream::Run(std::shared_ptr<Op> op) {
  absl::Status status = op->work();
  op->work = nullptr;  // release what the work captured before anyone is told
  // The result first: the next operation starts only after the result's callbacks (which count
  // bytes and release buffers) have run, so that an operation that drains the stream (the
  // client's destructor enqueues one) finds nothing of this one still running.
  op->result.Set(std::move(status));
  op->done.Set(absl::OkStatus());
  op.reset();  // the last reference: gone before the destructor may return (see Task)
  std::lock_guard<std::mutex> lock(mu_);
  if (--running_tasks_ == 0) idle_.notify_all();
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
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++running_tasks_;
  }
  Op* handed = op.get();
  handed->self = std::move(op);
  backends::HandoffRelease(handed);  // the op, complete: see Task
  // oneTBB's header code, inlined here, builds its task wrapper around the Task in memory from its
  // small-object pool, which libtbb recycles across threads unseen by TSan (a client destroyed on
  // one thread, then another's enqueue reusing the block, would look like a race in Start).
  backends::ScopedIgnoreLibraryAccesses tbb_internals;
  arena_.enqueue(Task(this, handed));
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
