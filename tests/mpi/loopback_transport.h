// tests/mpi/loopback_transport.h: a Transport (ifrt/spi/transport.h) between "processes" that
// are threads of one process, for testing the multi-process runtime without MPI (and under the
// sanitizers, which MPI's libraries do not run clean under).
//
// A LoopbackHub joins `n` participants; LoopbackHub::Transport(i) is participant i's end. The
// collectives (AllGather, Agree) block until every participant has made its call of the same
// round; messages are copied into the hub at Send and out of it at Receive, matched by
// (source, destination, tag). Thread-safe; the hub must outlive its transports.
//
// Faults (InjectFault, for tests/mpi/loopback_fault_test.cc): the k-th Send or Receive of one
// participant fails, or its k-th Send delivers a truncated message, or the k-th agreement fails
// on every participant, the way an engine failure would: a failed send's future is UNAVAILABLE
// and its receiver gets the empty message of a failed source (as MpiTransport sends when it
// cannot send a region); a failed receive consumes its message and is UNAVAILABLE; a truncated
// message fails its receive (INTERNAL, a message of another size) while its send succeeds.

#ifndef TESSERA_TESTS_MPI_LOOPBACK_TRANSPORT_H_
#define TESSERA_TESTS_MPI_LOOPBACK_TRANSPORT_H_

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ifrt/spi/transport.h"
#include "ifrt/strided_copy.h"

namespace tessera::testing {

// What InjectFault breaks.
struct LoopbackFault {
  enum class Kind { kFailSend, kTruncateSend, kFailReceive, kFailAgreement };
  Kind kind = Kind::kFailSend;
  int participant = 0;  // whose Send or Receive (ignored for kFailAgreement)
  int64_t k = 1;        // the k-th (from 1) after InjectFault
};

class LoopbackHub {
 public:
  explicit LoopbackHub(int n)
      : n_(n), gathered_(n), refusals_(n), fingerprints_(n), sends_(n), receives_(n) {}

  std::unique_ptr<tessera::Transport> Transport(int index);

  int size() const { return n_; }

  // One round of a collective: participant `index` contributes; returns once all have.
  std::vector<std::string> AllGather(int index, std::string value) {
    std::unique_lock<std::mutex> lock(mu_);
    const int64_t round = WaitForRoundStart(lock);
    gathered_[index] = std::move(value);
    Arrive(lock, round, /*agreement=*/false);
    std::vector<std::string> out = gathered_;
    Leave(lock);
    return out;
  }

  absl::StatusOr<int64_t> Agree(int index, std::string_view op, uint64_t fingerprint,
                                int64_t messages, const absl::Status& local) {
    std::unique_lock<std::mutex> lock(mu_);
    const int64_t round = WaitForRoundStart(lock);
    refusals_[index] = local;
    fingerprints_[index] = {fingerprint, messages};
    Arrive(lock, round, /*agreement=*/true);
    absl::StatusOr<int64_t> result =
        agreement_failed_ ? absl::UnavailableError(absl::StrCat(
                                "injected transport failure: the agreement of ", std::string(op)))
                          : Decide(op, local);
    Leave(lock);
    return result;
  }

  // Arms `fault` (replacing any armed one) and restarts the counts of sends and receives.
  void InjectFault(LoopbackFault fault) {
    std::lock_guard<std::mutex> lock(mu_);
    fault_ = fault;
    ResetCountsLocked();
  }
  // Disarms; the counts restart.
  void ClearFault() {
    std::lock_guard<std::mutex> lock(mu_);
    fault_.reset();
    ResetCountsLocked();
  }
  // Sends and receives participant `index` made since the last InjectFault or ClearFault.
  int64_t sends(int index) {
    std::lock_guard<std::mutex> lock(mu_);
    return sends_[index];
  }
  int64_t receives(int index) {
    std::lock_guard<std::mutex> lock(mu_);
    return receives_[index];
  }
  // How many faults have fired since construction.
  int64_t injected() {
    std::lock_guard<std::mutex> lock(mu_);
    return injected_;
  }

  // Messages: the packed bytes, or nullopt for the empty message of a failed source.
  using Message = std::optional<std::vector<uint8_t>>;
  using Key = std::tuple<int, int, int64_t>;  // source, destination, tag

  // What the transport does with its next send or receive of `key` (counted for `index`).
  enum class Action { kNone, kFail, kTruncate };
  Action NextOperation(int index, bool send, const Key& key) {
    std::lock_guard<std::mutex> lock(mu_);
    const int64_t n = ++(send ? sends_ : receives_)[index];
    if (!fault_.has_value() || fault_->participant != index || fault_->k != n) {
      return Action::kNone;
    }
    const bool fires = send ? fault_->kind != LoopbackFault::Kind::kFailReceive &&
                                  fault_->kind != LoopbackFault::Kind::kFailAgreement
                            : fault_->kind == LoopbackFault::Kind::kFailReceive;
    if (!fires) return Action::kNone;
    ++injected_;
    faulted_ = key;
    return fault_->kind == LoopbackFault::Kind::kTruncateSend ? Action::kTruncate : Action::kFail;
  }
  // The message the last fault hit (source, destination, tag), if one did since construction.
  std::optional<Key> faulted() {
    std::lock_guard<std::mutex> lock(mu_);
    return faulted_;
  }

  void Post(Key key, Message message) {
    std::function<void()> deliver;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto waiting = receivers_.find(key);
      if (waiting == receivers_.end()) {
        mailbox_[key] = std::move(message);
        return;
      }
      deliver = [fn = std::move(waiting->second), m = std::move(message)]() mutable {
        fn(std::move(m));
      };
      receivers_.erase(waiting);
    }
    deliver();
  }

  void Expect(Key key, std::function<void(Message)> on_message) {
    Message message;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto there = mailbox_.find(key);
      if (there == mailbox_.end()) {
        receivers_[key] = std::move(on_message);
        return;
      }
      message = std::move(there->second);
      mailbox_.erase(there);
    }
    on_message(std::move(message));
  }

 private:
  // Rounds: arrive until all n have, then leave until all n have (so that a fast participant's
  // next round cannot overwrite this round's inputs).
  int64_t WaitForRoundStart(std::unique_lock<std::mutex>& lock) {
    cv_.wait(lock, [&] { return leaving_ == 0; });
    return round_;
  }
  void Arrive(std::unique_lock<std::mutex>& lock, int64_t round, bool agreement) {
    if (++arrived_ == n_) {
      if (agreement) {
        ++agreements_;
        agreement_failed_ = fault_.has_value() &&
                            fault_->kind == LoopbackFault::Kind::kFailAgreement &&
                            fault_->k == agreements_;
        injected_ += agreement_failed_ ? 1 : 0;
      }
      arrived_ = 0;
      leaving_ = n_;
      ++round_;
      cv_.notify_all();
    }
    cv_.wait(lock, [&] { return round_ > round; });
  }
  void Leave(std::unique_lock<std::mutex>& lock) {
    if (--leaving_ == 0) {
      next_tag_ += pending_tags_;
      pending_tags_ = 0;
      cv_.notify_all();
    }
  }
  void ResetCountsLocked() {
    std::fill(sends_.begin(), sends_.end(), 0);
    std::fill(receives_.begin(), receives_.end(), 0);
    agreements_ = 0;
  }
  absl::StatusOr<int64_t> Decide(std::string_view op, const absl::Status& local) {
    if (!local.ok()) return local;
    for (int i = 0; i < n_; ++i) {
      if (!refusals_[i].ok()) {
        return absl::Status(refusals_[i].code(),
                            absl::StrCat(std::string(op), ": process ", i,
                                         " refused the call: ", refusals_[i].message()));
      }
    }
    for (int i = 1; i < n_; ++i) {
      if (fingerprints_[i] != fingerprints_[0]) {
        return absl::InvalidArgumentError(
            absl::StrCat(std::string(op), ": the processes called it with different arguments"));
      }
    }
    pending_tags_ = fingerprints_[0].second;
    return next_tag_;
  }

  const int n_;
  std::mutex mu_;
  std::condition_variable cv_;
  int64_t round_ = 0;
  int arrived_ = 0;
  int leaving_ = 0;
  int64_t next_tag_ = 0;
  int64_t pending_tags_ = 0;
  std::vector<std::string> gathered_;
  std::vector<absl::Status> refusals_;
  std::vector<std::pair<uint64_t, int64_t>> fingerprints_;
  std::optional<LoopbackFault> fault_;
  std::vector<int64_t> sends_, receives_;
  int64_t agreements_ = 0;
  bool agreement_failed_ = false;  // the current agreement round's injected failure
  int64_t injected_ = 0;
  std::optional<Key> faulted_;
  std::map<Key, Message> mailbox_;
  std::map<Key, std::function<void(Message)>> receivers_;
};

class LoopbackTransport final : public tessera::Transport {
 public:
  LoopbackTransport(LoopbackHub* hub, int index) : hub_(hub), index_(index) {}

  int process_index() const override { return index_; }
  int process_count() const override { return hub_->size(); }
  absl::StatusOr<std::vector<std::string>> AllGather(const std::string& local) override {
    return hub_->AllGather(index_, local);
  }
  absl::StatusOr<int64_t> Agree(std::string_view op, uint64_t fingerprint, int64_t messages,
                                const absl::Status& local) override {
    return hub_->Agree(index_, op, fingerprint, messages, local);
  }
  Future<> Send(int peer, int64_t tag, HostRegion region, Future<> after,
                std::shared_ptr<void> keep_alive) override {
    Promise<> done;
    const LoopbackHub::Key key(index_, peer, tag);
    const LoopbackHub::Action action = hub_->NextOperation(index_, /*send=*/true, key);
    after.OnReady([hub = hub_, key, region, keep_alive, done, action](const absl::Status& s) {
      LoopbackHub::Message m;
      if (s.ok() && action != LoopbackHub::Action::kFail) {
        m.emplace(region.bytes());
        Copy(region, /*to_dense=*/true, m->data());
        if (action == LoopbackHub::Action::kTruncate) m->pop_back();
      }
      hub->Post(key, std::move(m));
      done.Set(action == LoopbackHub::Action::kFail
                   ? absl::UnavailableError(absl::StrCat("injected transport failure: a send of ",
                                                         region.bytes(), " bytes to process ",
                                                         std::get<1>(key)))
                   : s);
    });
    return done.future();
  }
  Future<> Receive(int peer, int64_t tag, HostRegion region,
                   std::shared_ptr<void> keep_alive) override {
    Promise<> done;
    const LoopbackHub::Key key(peer, index_, tag);
    if (hub_->NextOperation(index_, /*send=*/false, key) == LoopbackHub::Action::kFail) {
      hub_->Expect(key, [done, peer, bytes = region.bytes()](LoopbackHub::Message) {
        done.Set(absl::UnavailableError(absl::StrCat("injected transport failure: a receive of ",
                                                     bytes, " bytes from process ", peer)));
      });
      return done.future();
    }
    hub_->Expect(key, [region, keep_alive, done, peer, tag](LoopbackHub::Message m) {
      if (!m.has_value() || static_cast<int64_t>(m->size()) != region.bytes()) {
        done.Set(absl::InternalError(
            absl::StrCat("the part sent by process ", peer, " (tag ", tag, ") did not arrive")));
        return;
      }
      Copy(region, /*to_dense=*/false, m->data());
      done.Set(absl::OkStatus());
    });
    return done.future();
  }

 private:
  // Between `region` and dense bytes at `dense`.
  static void Copy(const HostRegion& region, bool to_dense, uint8_t* dense) {
    StridedCopy c;
    c.element_bytes = region.element_bytes;
    c.extent = region.extent;
    const Index dense_strides =
        StridedCopy::RowMajorByteStrides(region.extent, region.element_bytes);
    auto* base = static_cast<uint8_t*>(region.base) + region.offset;
    if (to_dense) {
      c.src_byte_strides = region.byte_strides;
      c.dst_byte_strides = dense_strides;
      c.ForEachRun([&](int64_t s, int64_t d, int64_t n) { std::memcpy(dense + d, base + s, n); });
    } else {
      c.src_byte_strides = dense_strides;
      c.dst_byte_strides = region.byte_strides;
      c.ForEachRun([&](int64_t s, int64_t d, int64_t n) { std::memcpy(base + d, dense + s, n); });
    }
  }

  LoopbackHub* hub_;
  int index_;
};

inline std::unique_ptr<tessera::Transport> LoopbackHub::Transport(int index) {
  return std::make_unique<LoopbackTransport>(this, index);
}

}  // namespace tessera::testing

#endif  // TESSERA_TESTS_MPI_LOOPBACK_TRANSPORT_H_
