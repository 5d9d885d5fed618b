// CpuWorkerPool (backends/cpu/cpu_worker_pool.h): every posted task runs, in order on one thread;
// the destructor runs what was posted before it; a task may drop the pool's last reference; and
// CPU devices that wait for one another take no CPU time (their threads sleep, they never spin).

#include "backends/cpu/cpu_worker_pool.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/notification.h"
#include "backends/cpu/cpu_platform.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ifrt/future.h"

namespace tessera::cpu {
namespace {

TEST(CpuWorkerPoolTest, OneThreadRunsTasksInTheOrderPosted) {
  std::vector<int> order;  // written by the pool's one thread only, read after it is joined
  {
    CpuWorkerPool pool(1);
    for (int i = 0; i < 1000; ++i) pool.Post([&order, i] { order.push_back(i); });
  }
  ASSERT_EQ(order.size(), 1000u);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(order[i], i);
}

TEST(CpuWorkerPoolTest, EveryTaskRunsOnceBeforeTheDestructorReturns) {
  std::atomic<int> ran{0};
  {
    CpuWorkerPool pool(4);
    EXPECT_EQ(pool.threads(), 4);
    std::vector<std::thread> posters;
    for (int t = 0; t < 4; ++t) {
      posters.emplace_back([&] {
        for (int i = 0; i < 2500; ++i) pool.Post([&ran] { ran.fetch_add(1); });
      });
    }
    for (std::thread& t : posters) t.join();
  }
  EXPECT_EQ(ran.load(), 10000);
}

TEST(CpuWorkerPoolTest, TasksRunOnSeveralThreadsAtOnce) {
  std::mutex mu;
  int waiting = 0;
  absl::Notification all_in;
  CpuWorkerPool pool(3);  // after what its tasks use: joined before they go
  for (int i = 0; i < 3; ++i) {
    pool.Post([&] {
      {
        std::lock_guard<std::mutex> lock(mu);
        if (++waiting == 3) all_in.Notify();
      }
      // Waits for all three to run at the same time; gives up after a minute (then the check
      // below fails) so that the pool's destructor never waits forever.
      all_in.WaitForNotificationWithTimeout(absl::Seconds(60));
    });
  }
  EXPECT_TRUE(all_in.WaitForNotificationWithTimeout(absl::Seconds(60)));
}

TEST(CpuWorkerPoolTest, ATaskMayDropThePoolsLastReference) {
  for (int i = 0; i < 200; ++i) {
    auto pool = std::make_shared<CpuWorkerPool>(2);
    absl::Notification dropped, done;
    pool->Post([&, held = pool]() mutable {
      dropped.WaitForNotification();
      held.reset();  // the last reference: the pool is destroyed on its own thread
      done.Notify();
    });
    pool.reset();
    dropped.Notify();
    ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(60))) << "iteration " << i;
  }
}

// CPU time, in seconds, of this process's threads named `name` (the kernel's per-thread schedstat,
// in nanoseconds). Only the device threads: the process also runs OpenBLAS's server thread, which
// spins for a while after it starts (Debian's pthread OpenBLAS, however many threads it is set to).
// `threads` counts them.
double ThreadsCpuSeconds(const std::string& name, int* threads) {
  double seconds = 0;
  *threads = 0;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string task_name;
    std::getline(comm, task_name);
    if (task_name != name) continue;
    ++*threads;
    std::ifstream schedstat(task.path() / "schedstat");
    int64_t on_cpu_ns = 0;
    if (schedstat >> on_cpu_ns) seconds += on_cpu_ns * 1e-9;
  }
  return seconds;
}

// Eight CPU devices, each operation waiting for the one before on the previous device and then
// sleeping for a millisecond: while one device works, the other seven wait. Their threads must
// sleep meanwhile, not spin or yield (on a busy machine, time spent spinning is taken from the
// devices that compute or handed to another job): the device threads use a small fraction of the
// wall time in CPU time, most of it the sleeping operations' own system calls. (With a oneTBB arena
// per device, idle workers spun and called sched_yield between operations.)
TEST(CpuWorkerPoolTest, WaitingDevicesTakeNoCpuTime) {
  absl::StatusOr<std::unique_ptr<Platform>> platform =
      CreateCpuPlatform({.num_devices = 8, .inline_max_bytes = -1});
  ASSERT_TRUE(platform.ok()) << platform.status();
  constexpr int kSteps = 200;
  int threads = 0;
  const double cpu_before = ThreadsCpuSeconds("tessera-cpu", &threads);
  ASSERT_GE(threads, 8) << "a thread per device, named for the CPU platform";
  const auto wall_before = std::chrono::steady_clock::now();
  Future<> previous = MakeReadyFuture();
  for (int step = 0; step < kSteps; ++step) {
    std::vector<Future<>> after = {previous};
    previous = (*platform)->EnqueueHostCallback(
        step % 8,
        [] {
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
          return absl::OkStatus();
        },
        after);
  }
  ASSERT_TRUE(previous.Await().ok());
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_before).count();
  const double cpu = ThreadsCpuSeconds("tessera-cpu", &threads) - cpu_before;
  std::printf("%d steps: %.1f ms wall, %.1f ms CPU\n", kSteps, wall * 1e3, cpu * 1e3);
  EXPECT_GE(wall, kSteps * 1e-3);
  EXPECT_LT(cpu, 0.25 * wall) << "idle CPU devices used CPU time while they waited";
}

}  // namespace
}  // namespace tessera::cpu
