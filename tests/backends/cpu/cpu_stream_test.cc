// CpuStream's inline path (backends/cpu/cpu_stream.h): small work runs on the calling thread only
// when the stream is idle and its inputs are set, never overtakes or overlaps another operation of
// the stream, and reports its inputs' errors; and the CPU platform's inline threshold option.

#include "backends/cpu/cpu_stream.h"

#include <atomic>
#include <cstdlib>
#include <limits>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "backends/cpu/cpu_platform.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tessera::cpu {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(CpuStreamInlineTest, RunsOnTheCallingThreadWhenIdleAndReady) {
  CpuStream stream(1);
  std::thread::id ran_on;
  Future<> done = stream.Enqueue(
      {MakeReadyFuture()},
      [&] {
        ran_on = std::this_thread::get_id();
        return absl::OkStatus();
      },
      /*may_run_inline=*/true);
  EXPECT_TRUE(done.IsReady());  // set before Enqueue returned
  EXPECT_EQ(ran_on, std::this_thread::get_id());
  EXPECT_TRUE(done.Await().ok());
}

TEST(CpuStreamInlineTest, NotInlineWhenTheWorkMayNotBe) {
  CpuStream stream(1);
  std::atomic<bool> on_caller{true};
  const std::thread::id caller = std::this_thread::get_id();
  Future<> done = stream.Enqueue({}, [&] {
    on_caller = std::this_thread::get_id() == caller;
    return absl::OkStatus();
  });
  ASSERT_TRUE(done.Await().ok());
  EXPECT_FALSE(on_caller.load());
}

TEST(CpuStreamInlineTest, WaitsForAnInputThatIsNotSet) {
  CpuStream stream(1);
  Promise<> input;
  std::atomic<bool> ran{false};
  Future<> done = stream.Enqueue(
      {input.future()},
      [&] {
        ran = true;
        return absl::OkStatus();
      },
      /*may_run_inline=*/true);
  EXPECT_FALSE(ran.load());
  input.Set(absl::OkStatus());
  ASSERT_TRUE(done.Await().ok());
  EXPECT_TRUE(ran.load());
}

TEST(CpuStreamInlineTest, NeverOvertakesAnEarlierOperation) {
  CpuStream stream(1);
  Promise<> gate;
  std::vector<int> order;  // written by one operation at a time (the stream is in order)
  Future<> first = stream.Enqueue({gate.future()}, [&] {
    order.push_back(1);
    return absl::OkStatus();
  });
  Future<> second = stream.Enqueue(
      {},
      [&] {
        order.push_back(2);
        return absl::OkStatus();
      },
      /*may_run_inline=*/true);
  EXPECT_FALSE(second.IsReady());  // the first has not run: the second may not run inline
  gate.Set(absl::OkStatus());
  ASSERT_TRUE(second.Await().ok());
  ASSERT_TRUE(first.Await().ok());
  EXPECT_THAT(order, ElementsAre(1, 2));
}

TEST(CpuStreamInlineTest, OperationsEnqueuedDuringAnInlineOneRunAfterIt) {
  CpuStream stream(1);
  std::vector<int> order;
  Future<> inner;
  Future<> outer = stream.Enqueue(
      {},
      [&] {
        // Enqueued while this inline operation runs: it waits until this one has finished.
        inner = stream.Enqueue(
            {},
            [&] {
              order.push_back(2);
              return absl::OkStatus();
            },
            /*may_run_inline=*/true);
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        order.push_back(1);
        return absl::OkStatus();
      },
      /*may_run_inline=*/true);
  ASSERT_TRUE(outer.IsReady());
  ASSERT_TRUE(inner.Await().ok());
  EXPECT_THAT(order, ElementsAre(1, 2));
}

TEST(CpuStreamInlineTest, ConsecutiveInlineOperationsAllRunInline) {
  CpuStream stream(1);
  std::vector<int> order;
  for (int i = 0; i < 3; ++i) {
    Future<> done = stream.Enqueue(
        {},
        [&order, i] {
          order.push_back(i);
          return absl::OkStatus();
        },
        /*may_run_inline=*/true);
    EXPECT_TRUE(done.IsReady()) << "operation " << i;
  }
  EXPECT_THAT(order, ElementsAre(0, 1, 2));
}

TEST(CpuStreamInlineTest, AFailedInputSkipsTheWorkAndIsItsResult) {
  CpuStream stream(1);
  bool ran = false;
  Future<> done = stream.Enqueue(
      {MakeReadyFuture(), MakeReadyFuture(absl::DataLossError("shard 3 lost")),
       MakeReadyFuture(absl::InternalError("second error"))},
      [&] {
        ran = true;
        return absl::OkStatus();
      },
      /*may_run_inline=*/true);
  ASSERT_TRUE(done.IsReady());
  EXPECT_EQ(done.Await().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(done.Await().message(), HasSubstr("shard 3 lost"));
  EXPECT_FALSE(ran);
}

TEST(CpuStreamInlineTest, TheWorksErrorIsTheResult) {
  CpuStream stream(1);
  Future<> done = stream.Enqueue(
      {}, [] { return absl::AbortedError("copy failed"); }, /*may_run_inline=*/true);
  ASSERT_TRUE(done.IsReady());
  EXPECT_EQ(done.Await().code(), absl::StatusCode::kAborted);
}

// Issue 16, item 8: oneTBB destroys an arena task's functor only after the task has returned, so
// after the stream may have counted it done; an op the functor still held outlived the stream
// (and, held only in tbbmalloc's memory, which LeakSanitizer does not scan, was reported as leaked
// at exit now and then). Each stream here ends right after an operation on its device thread, the
// case that raced.
TEST(CpuStreamLifetimeTest, NoOperationOutlivesItsStream) {
  ASSERT_EQ(CpuStream::LiveOperations(), 0);
  for (int i = 0; i < 2000; ++i) {
    {
      CpuStream stream(1);
      Future<> ran = stream.Enqueue({}, [] { return absl::OkStatus(); });
      Future<> skipped = stream.Enqueue({MakeReadyFuture(absl::DataLossError("input lost"))},
                                        [] { return absl::OkStatus(); });
      ASSERT_TRUE(ran.Await().ok());
      ASSERT_EQ(skipped.Await().code(), absl::StatusCode::kDataLoss);
      static_cast<void>(stream.Enqueue({}, [] { return absl::OkStatus(); }));  // ends right after
    }
    ASSERT_EQ(CpuStream::LiveOperations(), 0) << "after stream " << i;
  }
}

TEST(CpuInlineThresholdTest, OptionWinsOverTheEnvironment) {
  ASSERT_EQ(setenv("TESSERA_CPU_INLINE_MAX_BYTES", "always", 1), 0);
  CpuPlatformOptions options;
  options.inline_max_bytes = 100;
  EXPECT_EQ(*ResolveInlineMaxBytes(options), 100);
  unsetenv("TESSERA_CPU_INLINE_MAX_BYTES");
}

TEST(CpuInlineThresholdTest, ReadsTheEnvironment) {
  ASSERT_EQ(setenv("TESSERA_CPU_INLINE_MAX_BYTES", "always", 1), 0);
  EXPECT_EQ(*ResolveInlineMaxBytes({}), std::numeric_limits<int64_t>::max());
  ASSERT_EQ(setenv("TESSERA_CPU_INLINE_MAX_BYTES", "never", 1), 0);
  EXPECT_EQ(*ResolveInlineMaxBytes({}), -1);
  ASSERT_EQ(setenv("TESSERA_CPU_INLINE_MAX_BYTES", "4096", 1), 0);
  EXPECT_EQ(*ResolveInlineMaxBytes({}), 4096);
  ASSERT_EQ(setenv("TESSERA_CPU_INLINE_MAX_BYTES", "", 1), 0);
  EXPECT_EQ(*ResolveInlineMaxBytes({}), kDefaultInlineMaxBytes);
  unsetenv("TESSERA_CPU_INLINE_MAX_BYTES");
  EXPECT_EQ(*ResolveInlineMaxBytes({}), kDefaultInlineMaxBytes);
}

TEST(CpuInlineThresholdTest, RejectsAGarbledEnvironmentValue) {
  ASSERT_EQ(setenv("TESSERA_CPU_INLINE_MAX_BYTES", "lots", 1), 0);
  absl::StatusOr<int64_t> bytes = ResolveInlineMaxBytes({});
  EXPECT_EQ(bytes.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bytes.status().message(), HasSubstr("TESSERA_CPU_INLINE_MAX_BYTES"));
  EXPECT_THAT(bytes.status().message(), HasSubstr("\"lots\""));
  EXPECT_EQ(CreateCpuPlatform({}).status().code(), absl::StatusCode::kInvalidArgument);
  unsetenv("TESSERA_CPU_INLINE_MAX_BYTES");
}

}  // namespace
}  // namespace tessera::cpu
