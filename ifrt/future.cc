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

Future<> JoinFutures(absl::Span<const Future<>> futures) {
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
