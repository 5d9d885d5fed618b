// Concurrent use of the device SPI: several threads enqueue copies and callbacks on the same and on
// different streams at once; every operation completes, in each stream's order, with the right
// bytes. (Not yet labelled tsan: the binaries await a run under ThreadSanitizer.)
// Part of the platform conformance suite (tests/conformance/platform_conformance.h).

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
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

class PlatformConcurrencyTest : public PlatformConformanceTest {};

constexpr int kThreads = 6;
constexpr int kIterations = 12;

// Runs fn(thread) on kThreads threads at once and collects the errors they report.
template <typename F>
std::vector<std::string> OnThreads(F fn) {
  absl::Mutex mu;
  std::vector<std::string> errors;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::string error = fn(t);
      if (error.empty()) return;
      absl::MutexLock lock(&mu);
      errors.push_back(std::move(error));
    });
  }
  for (std::thread& t : threads) t.join();
  return errors;
}

TEST_P(PlatformConcurrencyTest, ConcurrentEnqueueFromManyThreads) {
  constexpr int64_t kBytes = 24 * 1024 + 8;
  std::atomic<int> callbacks{0};
  std::vector<std::string> errors = OnThreads([&](int t) -> std::string {
    const int d = t % devices();
    absl::StatusOr<PlatformBufferRef> b =
        platform().Allocate(d, platform().device_info(d).default_memory, kBytes);
    if (!b.ok()) return b.status().ToString();
    for (int i = 0; i < kIterations; ++i) {
      const std::vector<uint8_t> data = Pattern(kBytes, t * 1000 + i);
      std::vector<uint8_t> out(kBytes);
      // Not awaited in between: stream order alone makes the read see the write.
      Future<> w = platform().CopyHostToBuffers(d, {{data.data(), *b, Dense(kBytes)}}, {});
      Future<> r = platform().CopyBuffersToHost(d, {{*b, out.data(), Dense(kBytes)}}, {});
      Future<> c = platform().EnqueueHostCallback(0,
                                                  [&] {
                                                    ++callbacks;
                                                    return absl::OkStatus();
                                                  },
                                                  {r});
      for (const Future<>* f : {&w, &r, &c}) {
        absl::Status s = f->Await();
        if (!s.ok()) return s.ToString();
      }
      if (out != data) return "thread " + std::to_string(t) + " read wrong bytes";
    }
    return "";
  });
  EXPECT_THAT(errors, ::testing::IsEmpty());
  EXPECT_EQ(callbacks.load(), kThreads * kIterations);
}

TEST_P(PlatformConcurrencyTest, ConcurrentCopiesBetweenDevices) {
  // Each thread ping-pongs its own pair of buffers between two devices while the others do too.
  constexpr int64_t kBytes = 40 * 1024 + 4;
  std::vector<std::string> errors = OnThreads([&](int t) -> std::string {
    const int a = t % devices(), b = (t + 1) % devices();
    absl::StatusOr<PlatformBufferRef> on_a =
        platform().Allocate(a, platform().device_info(a).default_memory, kBytes);
    absl::StatusOr<PlatformBufferRef> on_b =
        platform().Allocate(b, platform().device_info(b).default_memory, kBytes);
    if (!on_a.ok()) return on_a.status().ToString();
    if (!on_b.ok()) return on_b.status().ToString();
    const std::vector<uint8_t> data = Pattern(kBytes, 500 + t);
    Future<> last = platform().CopyHostToBuffers(a, {{data.data(), *on_a, Dense(kBytes)}}, {});
    for (int i = 0; i < kIterations; ++i) {
      const bool forward = i % 2 == 0;
      last = platform().CopyBuffersToBuffers(
          forward ? b : a, {{forward ? *on_a : *on_b, forward ? *on_b : *on_a, Dense(kBytes)}},
          {last});
    }
    std::vector<uint8_t> out(kBytes);
    const int holder = kIterations % 2 == 0 ? a : b;
    absl::Status s =
        platform()
            .CopyBuffersToHost(holder, {{holder == a ? *on_a : *on_b, out.data(), Dense(kBytes)}},
                               {last})
            .Await();
    if (!s.ok()) return s.ToString();
    if (out != data) return "thread " + std::to_string(t) + " lost its bytes";
    return "";
  });
  EXPECT_THAT(errors, ::testing::IsEmpty());
}

TESSERA_INSTANTIATE_PLATFORM_SUITE(PlatformConcurrencyTest);

}  // namespace
}  // namespace tessera::conformance
