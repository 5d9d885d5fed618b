// Streams of the device SPI: one in-order stream per device; an operation starts after the one
// enqueued before it and after its `after` futures; an error in `after` fails the operation (which
// then does not run) and nothing enqueued later; a host callback's status becomes its future's.
// Part of the platform conformance suite (tests/conformance/platform_conformance.h).

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ifrt/future.h"
#include "ifrt/spi/platform.h"
#include "tests/conformance/platform_conformance.h"
#include "tests/ifrt/test_util.h"

namespace tessera::conformance {
namespace {

using ::tessera::testing::IsOk;
using ::tessera::testing::Pattern;
using ::tessera::testing::StatusIs;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

class PlatformStreamTest : public PlatformConformanceTest {};

TEST_P(PlatformStreamTest, OperationsRunInEnqueueOrder) {
  constexpr int kOps = 16;
  constexpr int64_t kBytes = 4096 + 24;
  for (int d = 0; d < devices(); ++d) {
    SCOPED_TRACE(d);
    PlatformBufferRef buffer = Alloc(d, platform().device_info(d).default_memory, kBytes);
    ASSERT_NE(buffer, nullptr);
    // Write i, read into out[i], note i; nothing awaited until all are enqueued.
    std::vector<std::vector<uint8_t>> in, out(kOps, std::vector<uint8_t>(kBytes));
    std::mutex mu;
    std::vector<int> order, expected_order;
    std::vector<Future<>> futures;
    for (int i = 0; i < kOps; ++i) {
      in.push_back(Pattern(kBytes, 100 + i));
      futures.push_back(
          platform().CopyHostToBuffers(d, {{in[i].data(), buffer, Dense(kBytes)}}, {}));
      futures.push_back(
          platform().CopyBuffersToHost(d, {{buffer, out[i].data(), Dense(kBytes)}}, {}));
      futures.push_back(platform().EnqueueHostCallback(d,
                                                       [&, i] {
                                                         std::lock_guard<std::mutex> lock(mu);
                                                         order.push_back(i);
                                                         return absl::OkStatus();
                                                       },
                                                       {}));
      expected_order.push_back(i);
    }
    for (const Future<>& f : futures) EXPECT_THAT(f.Await(), IsOk());
    for (int i = 0; i < kOps; ++i) EXPECT_TRUE(out[i] == in[i]) << "read " << i;
    EXPECT_THAT(order, ElementsAreArray(expected_order));
  }
}

TEST_P(PlatformStreamTest, OperationsWaitForTheirAfterFuturesAndTheOperationBefore) {
  const int d = devices() - 1;
  constexpr int64_t kBytes = 1000;
  PlatformBufferRef buffer = Alloc(d, platform().device_info(d).default_memory, kBytes);
  ASSERT_NE(buffer, nullptr);
  const std::vector<uint8_t> data = Pattern(kBytes, 7);
  Promise<> gate;
  std::atomic<bool> callback_ran{false};
  Future<> write =
      platform().CopyHostToBuffers(d, {{data.data(), buffer, Dense(kBytes)}}, {gate.future()});
  // Enqueued after the gated write, with no `after` of its own: in stream order it waits too.
  Future<> callback = platform().EnqueueHostCallback(d,
                                                     [&] {
                                                       callback_ran = true;
                                                       return absl::OkStatus();
                                                     },
                                                     {});
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_FALSE(write.IsReady());
  EXPECT_FALSE(callback.IsReady());
  EXPECT_FALSE(callback_ran.load());
  gate.Set(absl::OkStatus());
  EXPECT_THAT(write.Await(), IsOk());
  EXPECT_THAT(callback.Await(), IsOk());
  EXPECT_TRUE(callback_ran.load());
  EXPECT_TRUE(ReadAll(d, buffer) == data);
}

TEST_P(PlatformStreamTest, AfterFuturesOrderOperationsAcrossDevices) {
  // Written by device 0, copied by device 1 reading device 0's buffer: ordered only by `after`.
  constexpr int64_t kBytes = 64 * 1024 + 3;
  for (int round = 0; round < 4; ++round) {
    SCOPED_TRACE(round);
    PlatformBufferRef src = Alloc(0, platform().device_info(0).default_memory, kBytes);
    PlatformBufferRef dst = Alloc(1, platform().device_info(1).default_memory, kBytes);
    ASSERT_NE(src, nullptr);
    ASSERT_NE(dst, nullptr);
    const std::vector<uint8_t> data = Pattern(kBytes, 20 + round);
    Future<> written = platform().CopyHostToBuffers(0, {{data.data(), src, Dense(kBytes)}}, {});
    Future<> copied = platform().CopyBuffersToBuffers(1, {{src, dst, Dense(kBytes)}}, {written});
    std::vector<uint8_t> out(kBytes);
    Future<> read = platform().CopyBuffersToHost(1, {{dst, out.data(), Dense(kBytes)}}, {});
    src.reset();  // operations in flight keep their buffers alive
    EXPECT_THAT(read.Await(), IsOk());
    EXPECT_THAT(copied.Await(), IsOk());
    EXPECT_TRUE(out == data);
  }
}

TEST_P(PlatformStreamTest, AnErrorInAfterFailsTheOperationButNotLaterOnes) {
  const int d = 0;
  constexpr int64_t kBytes = 512;
  PlatformBufferRef buffer = Alloc(d, platform().device_info(d).default_memory, kBytes);
  ASSERT_NE(buffer, nullptr);
  const std::vector<uint8_t> before = Pattern(kBytes, 1), ignored = Pattern(kBytes, 2),
                             later = Pattern(kBytes, 3);
  ASSERT_THAT(Write(d, buffer, before.data(), Dense(kBytes)), IsOk());

  Promise<> upstream;
  std::atomic<int> callbacks{0};
  Future<> failed_write = platform().CopyHostToBuffers(d, {{ignored.data(), buffer, Dense(kBytes)}},
                                                       {upstream.future()});
  Future<> failed_callback = platform().EnqueueHostCallback(d,
                                                            [&] {
                                                              ++callbacks;
                                                              return absl::OkStatus();
                                                            },
                                                            {upstream.future(), MakeReadyFuture()});
  Future<> unrelated = platform().EnqueueHostCallback(d,
                                                      [&] {
                                                        callbacks += 10;
                                                        return absl::OkStatus();
                                                      },
                                                      {});
  upstream.Set(absl::DataLossError("injected upstream failure"));
  const auto upstream_error =
      StatusIs(absl::StatusCode::kDataLoss, HasSubstr("injected upstream failure"));
  EXPECT_THAT(failed_write.Await(), upstream_error);
  EXPECT_THAT(failed_callback.Await(), upstream_error);
  EXPECT_THAT(unrelated.Await(), IsOk());
  EXPECT_EQ(callbacks.load(), 10) << "an operation whose `after` failed must not run";
  EXPECT_TRUE(ReadAll(d, buffer) == before) << "the failed write must not have written";
  // The stream goes on working.
  ASSERT_THAT(Write(d, buffer, later.data(), Dense(kBytes)), IsOk());
  EXPECT_TRUE(ReadAll(d, buffer) == later);
}

TEST_P(PlatformStreamTest, HostCallbackStatusBecomesItsFuture) {
  for (int d = 0; d < devices(); ++d) {
    SCOPED_TRACE(d);
    Future<> no = platform().EnqueueHostCallback(
        d, [] { return absl::InvalidArgumentError("the callback said no"); }, {});
    std::atomic<bool> next_ran{false};
    Future<> next = platform().EnqueueHostCallback(d,
                                                   [&] {
                                                     next_ran = true;
                                                     return absl::OkStatus();
                                                   },
                                                   {});
    // A failed callback fails what names it in `after`, and only that.
    Future<> dependent =
        platform().EnqueueHostCallback(d, [] { return absl::InternalError("must not run"); }, {no});
    EXPECT_THAT(no.Await(),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("the callback said no")));
    EXPECT_THAT(next.Await(), IsOk());
    EXPECT_TRUE(next_ran.load());
    EXPECT_THAT(dependent.Await(),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("the callback said no")));
    // A callback on another device waits for this one's future.
    const int other = (d + 1) % devices();
    Promise<> gate;
    std::atomic<bool> ran{false};
    Future<> waiting = platform().EnqueueHostCallback(
        other,
        [&] {
          ran = true;
          return absl::OkStatus();
        },
        {platform().EnqueueHostCallback(d, [] { return absl::OkStatus(); }, {gate.future()})});
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    EXPECT_FALSE(ran.load());
    gate.Set(absl::OkStatus());
    EXPECT_THAT(waiting.Await(), IsOk());
    EXPECT_TRUE(ran.load());
  }
}

TESSERA_INSTANTIATE_PLATFORM_SUITE(PlatformStreamTest);

}  // namespace
}  // namespace tessera::conformance
