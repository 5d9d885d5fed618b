// Shared blocks (backends/cpu/shared_blocks.h): every block runs exactly once and has run when
// RunSharedBlocks returns, whoever ran it; idle threads help an owner that is slower than they are
// and leave alone one that is faster; a helper stops when told; and an idle CPU worker-pool thread
// helps by itself.

#include "backends/cpu/shared_blocks.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "backends/cpu/cpu_worker_pool.h"
#include "gtest/gtest.h"

namespace tessera::cpu {
namespace {

using std::chrono::milliseconds;

// Calls HelpSharedBlocks until `done`, as an idle device thread does.
void HelpUntil(const std::atomic<bool>& done) {
  while (!done.load()) {
    if (!HelpSharedBlocks([] { return false; })) std::this_thread::yield();
  }
}

TEST(SharedBlocksTest, FewerThanTwoBlocksRunOnTheCallingThread) {
  const std::thread::id caller = std::this_thread::get_id();
  int runs = 0;
  RunSharedBlocks(1, 1.0, [&](int64_t b) {
    EXPECT_EQ(b, 0);
    EXPECT_EQ(std::this_thread::get_id(), caller);
    ++runs;
  });
  RunSharedBlocks(0, 1.0, [&](int64_t) { ++runs; });
  EXPECT_EQ(runs, 1);
}

TEST(SharedBlocksTest, NothingSharedNothingToHelp) {
  int stops_asked = 0;
  EXPECT_FALSE(HelpSharedBlocks([&] {
    ++stops_asked;
    return false;
  }));
  EXPECT_LE(stops_asked, 1);
}

// The owner's blocks take 2 ms, a helper's none: the helpers take blocks, each block runs once, and
// all have run (their writes visible) when RunSharedBlocks returns.
TEST(SharedBlocksTest, HelpersTakeBlocksOfASlowOwnerAndEachRunsOnce) {
  constexpr int64_t kBlocks = 40;
  const std::thread::id owner = std::this_thread::get_id();
  std::atomic<bool> done{false};
  std::vector<std::thread> helpers;
  for (int i = 0; i < 3; ++i) helpers.emplace_back([&] { HelpUntil(done); });
  std::vector<std::atomic<int>> runs(kBlocks);
  std::vector<int64_t> written(kBlocks, -1);  // plain memory: RunSharedBlocks publishes it
  std::atomic<int64_t> by_helpers{0};
  const int64_t helped_before = HelpedBlocks();
  RunSharedBlocks(kBlocks, 1e6, [&](int64_t b) {
    ASSERT_GE(b, 0);
    ASSERT_LT(b, kBlocks);
    runs[b].fetch_add(1);
    if (std::this_thread::get_id() == owner) {
      std::this_thread::sleep_for(milliseconds(2));
    } else {
      by_helpers.fetch_add(1);
    }
    written[b] = b * 3;
  });
  for (int64_t b = 0; b < kBlocks; ++b) {
    EXPECT_EQ(runs[b].load(), 1) << "block " << b;
    EXPECT_EQ(written[b], b * 3) << "block " << b;
  }
  done = true;
  for (std::thread& t : helpers) t.join();
  EXPECT_GT(by_helpers.load(), 0);
  EXPECT_EQ(HelpedBlocks() - helped_before, by_helpers.load());
}

// A helper whose own blocks of work 1 took 20 ms each expects 20 s for a block of work 1000: it
// leaves alone an owner with 10 such blocks of 1 ms, which would otherwise wait for it.
TEST(SharedBlocksTest, ASlowerHelperLeavesAFasterOwnerAlone) {
  std::atomic<bool> measured{false}, done{false};
  std::atomic<int64_t> taken{0};
  const std::thread::id owner = std::this_thread::get_id();
  std::thread helper([&] {
    // This thread's rate: 20 ms a unit of work (owned work, no one else helps it).
    RunSharedBlocks(2, 1.0, [](int64_t) { std::this_thread::sleep_for(milliseconds(20)); });
    measured = true;
    HelpUntil(done);
  });
  while (!measured.load()) std::this_thread::yield();
  RunSharedBlocks(10, 1e3, [&](int64_t) {
    if (std::this_thread::get_id() != owner) taken.fetch_add(1);
    std::this_thread::sleep_for(milliseconds(1));
  });
  done = true;
  helper.join();
  EXPECT_EQ(taken.load(), 0);
}

TEST(SharedBlocksTest, AHelperToldToStopTakesNothing) {
  std::atomic<bool> done{false};
  std::atomic<int64_t> asked{0};
  const std::thread::id owner = std::this_thread::get_id();
  std::atomic<int64_t> taken{0};
  std::thread helper([&] {
    while (!done.load()) {
      HelpSharedBlocks([&] {
        asked.fetch_add(1);
        return true;
      });
      std::this_thread::yield();
    }
  });
  RunSharedBlocks(20, 1e6, [&](int64_t) {
    if (std::this_thread::get_id() != owner) taken.fetch_add(1);
    std::this_thread::sleep_for(milliseconds(2));
  });
  done = true;
  helper.join();
  EXPECT_EQ(taken.load(), 0);
  EXPECT_GT(asked.load(), 0);
}

// A CpuWorkerPool thread that goes idle while a slow owner shares work helps it, with no one
// calling HelpSharedBlocks for it.
TEST(SharedBlocksTest, AnIdleWorkerPoolThreadHelps) {
  CpuWorkerPool pool(1);
  absl::Notification shared, task_done;
  const std::thread::id owner = std::this_thread::get_id();
  std::atomic<int64_t> taken{0};
  // The pool's thread waits in a task until the work is shared, then goes idle and finds it.
  pool.Post([&] {
    shared.WaitForNotification();
    task_done.Notify();
  });
  RunSharedBlocks(50, 1e6, [&](int64_t b) {
    if (std::this_thread::get_id() != owner) {
      taken.fetch_add(1);
      return;
    }
    if (b == 0) shared.Notify();
    std::this_thread::sleep_for(milliseconds(2));
  });
  EXPECT_TRUE(task_done.HasBeenNotified());
  EXPECT_GT(taken.load(), 0);
}

}  // namespace
}  // namespace tessera::cpu
