#ifndef TESSERA_IFRT_FUTURE_H_
#define TESSERA_IFRT_FUTURE_H_

// Future<T> / Promise<T>: the result of asynchronous work, set once by the producer.
//
//   tessera::Promise<> promise;
//   tessera::Future<> future = promise.future();
//   future.OnReady([](absl::Status s) { ... });   // runs when set (inline if already set)
//   std::thread([promise]() mutable { promise.Set(absl::OkStatus()); }).detach();
//   absl::Status s = future.Await();               // blocks without spinning
//
// Future<> carries an absl::Status, Future<T> an absl::StatusOr<T>. Both are cheap, copyable
// handles to shared state; all methods are thread-safe and may be called from device threads and
// user threads alike. Callbacks run exactly once, on the thread that sets the promise (or inline
// in OnReady when the future is already set); they must not block for long.
//
// A promise that is destroyed without being set resolves its futures with an INTERNAL error, so
// a waiter never hangs on work that was abandoned. Setting a promise twice is a bug; the second
// value is ignored.
//
// Future is [[nodiscard]], as IFRT's and Abseil's must-use results are: a call that returns one
// (Array::Delete, Executable::Delete, a ready future) reports its errors only there. A caller who
// means to drop it says so: `static_cast<void>(array->Delete());`.

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace tessera {

namespace internal {

template <typename T>
struct FutureValue {
  using type = absl::StatusOr<T>;
};
template <>
struct FutureValue<void> {
  using type = absl::Status;
};

template <typename T>
class FutureState {
 public:
  using Value = typename FutureValue<T>::type;
  using Callback = absl::AnyInvocable<void(const Value&) &&>;

  // Lock-free: `ready_` is stored (release) after `value_` is written, under `mu_`, and `value_`
  // never changes afterwards, so a reader that sees `ready_` (acquire) may read `value_` unlocked.
  bool IsReady() const { return ready_.load(std::memory_order_acquire); }

  // Returns false if the state was already set.
  bool Set(Value value) {
    std::vector<Callback> callbacks;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (value_.has_value()) return false;
      value_.emplace(std::move(value));
      ready_.store(true, std::memory_order_release);
      callbacks.swap(callbacks_);
    }
    cv_.notify_all();
    // value_ is immutable from here on: safe to read without the lock.
    for (Callback& cb : callbacks) std::move(cb)(*value_);
    return true;
  }

  void OnReady(Callback cb) {
    if (IsReady()) {
      std::move(cb)(*value_);
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!value_.has_value()) {
        callbacks_.push_back(std::move(cb));
        return;
      }
    }
    std::move(cb)(*value_);
  }

  const Value& Await() const {
    if (IsReady()) return *value_;  // set already: no lock
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return value_.has_value(); });
    return *value_;
  }

 private:
  // std::mutex rather than absl::Mutex: Debian's Abseil is not built for ThreadSanitizer, which
  // then cannot see absl::Mutex's synchronisation.
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::optional<Value> value_;
  std::atomic<bool> ready_{false};  // value_ is set (see IsReady)
  std::vector<Callback> callbacks_;
};

// Owned by the promises of a state: when the last promise goes away unset, it sets an error.
template <typename T>
class PromiseGuard {
 public:
  explicit PromiseGuard(std::shared_ptr<FutureState<T>> state) : state_(std::move(state)) {}
  ~PromiseGuard() {
    state_->Set(
        absl::InternalError("promise abandoned: the work producing this value was dropped"));
  }
  FutureState<T>& state() const { return *state_; }
  const std::shared_ptr<FutureState<T>>& shared_state() const { return state_; }

 private:
  std::shared_ptr<FutureState<T>> state_;
};

}  // namespace internal

template <typename T = void>
class Promise;

template <typename T = void>
class [[nodiscard]] Future {
 public:
  using Value = typename internal::FutureValue<T>::type;

  // An invalid future; only assignment and valid() may be used.
  Future() = default;
  // A future that is already set.
  explicit Future(Value value) : state_(std::make_shared<internal::FutureState<T>>()) {
    state_->Set(std::move(value));
  }

  bool valid() const { return state_ != nullptr; }
  bool IsReady() const { return state_->IsReady(); }
  // Blocks until set and returns the value.
  Value Await() const { return state_->Await(); }
  // Calls `callback(value)` once the future is set (at once if it already is).
  template <typename F>
  void OnReady(F&& callback) const {
    if (state_->IsReady()) {  // no wrapping, no lock
      std::forward<F>(callback)(state_->Await());
      return;
    }
    state_->OnReady([cb = std::forward<F>(callback)](const Value& v) mutable { std::move(cb)(v); });
  }

 private:
  friend class Promise<T>;
  explicit Future(std::shared_ptr<internal::FutureState<T>> state) : state_(std::move(state)) {}
  std::shared_ptr<internal::FutureState<T>> state_;
};

template <typename T>
class Promise {
 public:
  using Value = typename internal::FutureValue<T>::type;

  Promise()
      : guard_(std::make_shared<internal::PromiseGuard<T>>(
            std::make_shared<internal::FutureState<T>>())) {}

  Future<T> future() const { return Future<T>(guard_->shared_state()); }
  // Sets the value and runs the callbacks. Only the first Set of a state has an effect.
  void Set(Value value) const { guard_->state().Set(std::move(value)); }
  bool IsSet() const { return guard_->state().IsReady(); }

 private:
  std::shared_ptr<internal::PromiseGuard<T>> guard_;
};

namespace internal {
// One shared, already set OK future: MakeReadyFuture() allocates nothing.
const Future<>& ReadyOkFuture();
}  // namespace internal

// A ready Future<> with `status`. An OK one is shared (its state never changes once set), so it
// costs neither an allocation nor any synchronisation beyond a reference count.
inline Future<> MakeReadyFuture(absl::Status status = absl::OkStatus()) {
  if (status.ok()) return internal::ReadyOkFuture();
  return Future<>(std::move(status));
}

// A future set once every input is set: OK if all are OK, else the error of the first input (in
// order) that failed. An empty span gives a ready OK future. Invalid inputs are ignored.
Future<> JoinFutures(absl::Span<const Future<>> futures);

}  // namespace tessera

#endif  // TESSERA_IFRT_FUTURE_H_
