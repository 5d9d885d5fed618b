// WrapHostMemory of the device SPI: caller-owned memory used in place, released exactly once after
// the last user, or UNIMPLEMENTED (then the runtime copies).
// Part of the platform conformance suite (tests/conformance/platform_conformance.h).

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ifrt/spi/platform.h"
#include "tests/conformance/platform_conformance.h"
#include "tests/ifrt/test_util.h"

namespace tessera::conformance {
namespace {

using ::tessera::testing::Eventually;
using ::tessera::testing::IsOk;
using ::tessera::testing::Pattern;
using ::tessera::testing::StatusIs;

class PlatformHostMemoryTest : public PlatformConformanceTest {};

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

TEST_P(PlatformHostMemoryTest, WrapHostMemoryWorksInPlaceOrIsUnimplemented) {
  // Page-aligned and a multiple of 4096: what every importer asks for at most.
  constexpr int64_t kBytes = 64 * 1024;
  std::unique_ptr<uint8_t, FreeDeleter> host(
      static_cast<uint8_t*>(std::aligned_alloc(4096, kBytes)));
  ASSERT_NE(host, nullptr);
  int wrapped = 0;
  for (int d = 0; d < devices(); ++d) {
    for (int m = 0; m < memories(d); ++m) {
      SCOPED_TRACE(::testing::Message() << "device " << d << " memory " << m);
      const std::vector<uint8_t> data = Pattern(kBytes, 7 + d * 4 + m);
      std::memcpy(host.get(), data.data(), kBytes);
      auto releases = std::make_shared<std::atomic<int>>(0);
      absl::StatusOr<PlatformBufferRef> b =
          platform().WrapHostMemory(d, m, host.get(), kBytes, [releases] { ++*releases; });
      if (absl::IsUnimplemented(b.status())) {
        EXPECT_FALSE(b.status().message().empty());
        continue;
      }
      ASSERT_THAT(b, IsOk());
      ++wrapped;
      EXPECT_EQ((*b)->size_bytes(), kBytes);
      // Reads see the caller's bytes...
      EXPECT_TRUE(ReadAll(d, *b) == data);
      // ...and writes land in the caller's memory: no copy in between.
      const std::vector<uint8_t> update = Pattern(kBytes, 70 + d * 4 + m);
      ASSERT_THAT(Write(d, *b, update.data(), Dense(kBytes)), IsOk());
      EXPECT_EQ(std::memcmp(host.get(), update.data(), kBytes), 0);
      // A buffer->buffer copy out of it works like any buffer's.
      PlatformBufferRef copy = Alloc(d, platform().device_info(d).default_memory, kBytes);
      ASSERT_NE(copy, nullptr);
      ASSERT_THAT(platform().CopyBuffersToBuffers(d, {{*b, copy, Dense(kBytes)}}, {}).Await(),
                  IsOk());
      EXPECT_TRUE(ReadAll(d, copy) == update);
      // Released once, after the last reference is gone.
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      EXPECT_EQ(releases->load(), 0);
      b->reset();
      EXPECT_TRUE(Eventually([&] { return releases->load() == 1; }));
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      EXPECT_EQ(releases->load(), 1);
    }
  }
  if (wrapped == 0) {
    GTEST_SKIP() << "WrapHostMemory is UNIMPLEMENTED on every memory of " << platform().name();
  }
}

TESSERA_INSTANTIATE_PLATFORM_SUITE(PlatformHostMemoryTest);

}  // namespace
}  // namespace tessera::conformance
