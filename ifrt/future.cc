#include "ifrt/future.h"

#include <atomic>

namespace tessera {
namespace {

struct JoinState {
  explicit JoinState(size_t n) : remaining(n), statuses(n) {}
  std::atomic<size_t> remaining;
  std::vector<absl::Status> statuses;  // slot i written once by input i's callback
  Promise<> promise;
};

}  // namespace

namespace internal {

const Future<>& ReadyOkFuture() {
  // Never destroyed: futures may be copied from it during static destruction.
  static const Future<>* const ready = new Future<>(absl::OkStatus());
  return *ready;
}

}  // namespace internal

Future<> JoinFutures(absl::Span<const Future<>> futures) {
  // Every input set already (the common case of small work run inline): no state, no callbacks.
  const Future<>* only = nullptr;
  size_t num_valid = 0;
  bool all_ready = true;
  for (const Future<>& f : futures) {
    if (!f.valid()) continue;
    ++num_valid;
    only = &f;
    all_ready = all_ready && f.IsReady();
  }
  if (num_valid == 0) return MakeReadyFuture();
  if (num_valid == 1) return *only;
  if (all_ready) {
    for (const Future<>& f : futures) {
      if (f.valid() && !f.Await().ok()) return f;
    }
    return MakeReadyFuture();
  }
  std::vector<Future<>> valid;
  valid.reserve(futures.size());
  for (const Future<>& f : futures) {
    if (f.valid()) valid.push_back(f);
  }
  if (valid.empty()) return MakeReadyFuture();
  if (valid.size() == 1) return valid[0];
  auto state = std::make_shared<JoinState>(valid.size());
  Future<> result = state->promise.future();
  for (size_t i = 0; i < valid.size(); ++i) {
    valid[i].OnReady([state, i](const absl::Status& s) {
      state->statuses[i] = s;
      if (state->remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        for (const absl::Status& st : state->statuses) {
          if (!st.ok()) {
            state->promise.Set(st);
            return;
          }
        }
        state->promise.Set(absl::OkStatus());
      }
    });
  }
  return result;
}

}  // namespace tessera
