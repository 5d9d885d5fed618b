// tests/mpi/loopback_transport.h: a Transport (ifrt/spi/transport.h) between "processes" that
// are threads of one process, for testing the multi-process runtime without MPI (and under the
// sanitizers, which MPI's libraries do not run clean under).
//
// A LoopbackHub joins `n` participants; LoopbackHub::Transport(i) is participant i's end. The
// collectives (AllGather, Agree) block until every participant has made its call of the same
// round; messages are copied into the hub at Send and out of it at Receive, matched by
// (source, destination, tag). Thread-safe; the hub must outlive its transports.

#ifndef TESSERA_TESTS_MPI_LOOPBACK_TRANSPORT_H_
#define TESSERA_TESTS_MPI_LOOPBACK_TRANSPORT_H_

#include <condition_variable>
#include <cstring>
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

class LoopbackHub {
 public:
  explicit LoopbackHub(int n) : n_(n), gathered_(n), refusals_(n), fingerprints_(n) {}

  std::unique_ptr<tessera::Transport> Transport(int index);

  int size() const { return n_; }

  // One round of a collective: participant `index` contributes; returns once all have.
  std::vector<std::string> AllGather(int index, std::string value) {
    std::unique_lock<std::mutex> lock(mu_);
    const int64_t round = WaitForRoundStart(lock);
    gathered_[index] = std::move(value);
    Arrive(lock, round);
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
    Arrive(lock, round);
    absl::StatusOr<int64_t> result = Decide(op, local);
    Leave(lock);
    return result;
  }

  // Messages: the packed bytes, or nullopt for the empty message of a failed source.
  using Message = std::optional<std::vector<uint8_t>>;
  using Key = std::tuple<int, int, int64_t>;  // source, destination, tag

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
  void Arrive(std::unique_lock<std::mutex>& lock, int64_t round) {
    if (++arrived_ == n_) {
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
    after.OnReady([hub = hub_, key = LoopbackHub::Key(index_, peer, tag), region, keep_alive,
                   done](const absl::Status& s) {
      LoopbackHub::Message m;
      if (s.ok()) {
        m.emplace(region.bytes());
        Copy(region, /*to_dense=*/true, m->data());
      }
      hub->Post(key, std::move(m));
      done.Set(s);
    });
    return done.future();
  }
  Future<> Receive(int peer, int64_t tag, HostRegion region,
                   std::shared_ptr<void> keep_alive) override {
    Promise<> done;
    hub_->Expect({peer, index_, tag}, [region, keep_alive, done](LoopbackHub::Message m) {
      if (!m.has_value() || static_cast<int64_t>(m->size()) != region.bytes()) {
        done.Set(absl::InternalError("the part sent did not arrive"));
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
