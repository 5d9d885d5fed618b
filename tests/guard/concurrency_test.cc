// Many threads checking one guard while others change its policy and sinks:
// results stay exact, and the test is meant to run clean under ThreadSanitizer
// (-DTESSERA_SANITIZE=thread).

#include <atomic>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "guard/level.h"
#include "guard/policy.h"
#include "guard/recording_transfer_sink.h"
#include "guard/scoped_transfer_guard.h"
#include "guard/transfer_guard.h"
#include "guard/transfer_sink.h"
#include "tests/guard/test_events.h"

namespace tessera::guard {
namespace {

using testing::MakeEvent;

class CountingSink : public TransferSink {
 public:
  void OnTransfer(const TransferEvent& event, Action action) override {
    (action == Action::kLog ? logged_ : refused_).fetch_add(1, std::memory_order_relaxed);
  }
  std::atomic<int64_t> logged_{0}, refused_{0};
};

TEST(TransferGuardConcurrencyTest, ChecksWhilePolicyAndSinksChange) {
  constexpr int kCheckers = 6;
  constexpr int kChecksPerThread = 2000;
  TransferGuard guard;
  guard.SetDefaultLogSinkEnabled(false);
  auto counting = std::make_shared<CountingSink>();
  guard.AddSink(counting);

  std::atomic<bool> stop{false};
  std::atomic<int64_t> refused_seen{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kCheckers; ++t) {
    threads.emplace_back([&, t] {
      // Even threads refuse everything through their own scope, whatever the
      // policy; odd threads follow the policy, which only ever allows or logs.
      std::optional<ScopedTransferGuard> scope;
      if (t % 2 == 0) scope.emplace(Level::kDisallowExplicit);
      for (int i = 0; i < kChecksPerThread; ++i) {
        const Direction d = kAllDirections[i % 3];
        const absl::Status status = guard.Check(MakeEvent(d, i % 2 == 0, 8));
        if (!status.ok()) refused_seen.fetch_add(1, std::memory_order_relaxed);
        EXPECT_EQ(status.ok(), t % 2 == 1);
      }
    });
  }
  std::thread mutator([&] {
    int i = 0;
    while (!stop.load()) {
      guard.SetPolicy(i % 2 ? Policy::Uniform(Level::kLogExplicit) : Policy{});
      const int id = guard.AddSink(std::make_shared<RecordingTransferSink>());
      (void)guard.counters(Direction::kHostToDevice);
      (void)guard.policy();
      guard.SetDefaultLogSinkEnabled(false);
      guard.RemoveSink(id);
      ++i;
    }
  });
  for (std::thread& thread : threads) thread.join();
  stop.store(true);
  mutator.join();

  int64_t events = 0, refused = 0, logged = 0, bytes = 0;
  for (Direction d : kAllDirections) {
    const TransferGuard::DirectionCounters c = guard.counters(d);
    events += c.allowed_events + c.logged_events + c.refused_events;
    bytes += c.allowed_bytes + c.logged_bytes + c.refused_bytes;
    refused += c.refused_events;
    logged += c.logged_events;
  }
  EXPECT_EQ(events, kCheckers * kChecksPerThread);
  EXPECT_EQ(bytes, 8 * events);
  EXPECT_EQ(refused, (kCheckers / 2) * kChecksPerThread);
  EXPECT_EQ(refused, refused_seen.load());
  EXPECT_EQ(counting->refused_.load(), refused);
  EXPECT_EQ(counting->logged_.load(), logged);
}

}  // namespace
}  // namespace tessera::guard
