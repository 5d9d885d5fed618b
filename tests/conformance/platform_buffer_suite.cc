// Buffers of the device SPI: device and memory descriptions, allocation of 0 bytes and of large
// buffers, host_address() exactly for host-addressable memories, BytesInUse tracking.
// Part of the platform conformance suite (tests/conformance/platform_conformance.h).

#include <cstdint>
#include <cstring>
#include <vector>

#include "absl/status/status.h"
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

class PlatformBufferTest : public PlatformConformanceTest {};

TEST_P(PlatformBufferTest, DevicesAndMemoriesAreDescribed) {
  EXPECT_FALSE(platform().name().empty());
  for (int d = 0; d < devices(); ++d) {
    SCOPED_TRACE(d);
    const PlatformDeviceInfo& info = platform().device_info(d);
    EXPECT_EQ(info.kind, platform().name());
    EXPECT_FALSE(info.name.empty());
    ASSERT_FALSE(info.memories.empty());
    EXPECT_GE(info.default_memory, 0);
    EXPECT_LT(info.default_memory, memories(d));
    for (const PlatformMemoryInfo& m : info.memories) {
      EXPECT_FALSE(m.kind.empty());
      EXPECT_GE(m.capacity_bytes, 0);
    }
  }
}

TEST_P(PlatformBufferTest, AllocatesZeroBytesInEveryMemory) {
  for (int d = 0; d < devices(); ++d) {
    for (int m = 0; m < memories(d); ++m) {
      SCOPED_TRACE(::testing::Message() << "device " << d << " memory " << m);
      PlatformBufferRef empty = Alloc(d, m, 0);
      ASSERT_NE(empty, nullptr);
      EXPECT_EQ(empty->size_bytes(), 0);
      // Buffers are distinct objects even when empty, and a later allocation still works.
      PlatformBufferRef one = Alloc(d, m, 1);
      ASSERT_NE(one, nullptr);
      EXPECT_NE(one.get(), empty.get());
      const uint8_t byte = 0x5A;
      ASSERT_THAT(Write(d, one, &byte, Dense(1)), IsOk());
      EXPECT_THAT(ReadAll(d, one), ::testing::ElementsAre(0x5A));
    }
  }
}

TEST_P(PlatformBufferTest, AllocatesLargeBuffers) {
  // Above every block size the platforms sub-allocate from (the Vulkan tests use 1 MiB blocks).
  constexpr int64_t kBytes = (int64_t{40} << 20) + 4096 + 3;
  constexpr int64_t kEdge = 256 * 1024;
  for (int d = 0; d < devices(); ++d) {
    SCOPED_TRACE(d);
    PlatformBufferRef big = Alloc(d, platform().device_info(d).default_memory, kBytes);
    ASSERT_NE(big, nullptr);
    EXPECT_EQ(big->size_bytes(), kBytes);
    // Both ends are usable: the first and the last kEdge bytes round-trip.
    const std::vector<uint8_t> head = Pattern(kEdge, 1 + d), tail = Pattern(kEdge, 50 + d);
    ASSERT_THAT(Write(d, big, head.data(), Dense(kEdge)), IsOk());
    ASSERT_THAT(Write(d, big, tail.data(), Offset(Dense(kEdge), 0, kBytes - kEdge)), IsOk());
    std::vector<uint8_t> head_out(kEdge), tail_out(kEdge);
    ASSERT_THAT(Read(d, big, head_out.data(), Dense(kEdge)), IsOk());
    ASSERT_THAT(Read(d, big, tail_out.data(), Offset(Dense(kEdge), kBytes - kEdge, 0)), IsOk());
    EXPECT_TRUE(head_out == head);
    EXPECT_TRUE(tail_out == tail);
  }
}

TEST_P(PlatformBufferTest, HostAddressExactlyForHostAddressableMemories) {
  constexpr int64_t kBytes = 4096 + 100;
  int addressable = 0;
  for (int d = 0; d < devices(); ++d) {
    for (int m = 0; m < memories(d); ++m) {
      SCOPED_TRACE(::testing::Message() << "device " << d << " memory " << m);
      PlatformBufferRef b = Alloc(d, m, kBytes);
      ASSERT_NE(b, nullptr);
      if (!host_addressable(d, m)) {
        EXPECT_EQ(b->host_address(), nullptr);
        continue;
      }
      ++addressable;
      ASSERT_NE(b->host_address(), nullptr);
      // Stream writes are visible at host_address() once their future is set...
      const std::vector<uint8_t> data = Pattern(kBytes, 10 + d * 4 + m);
      ASSERT_THAT(Write(d, b, data.data(), Dense(kBytes)), IsOk());
      EXPECT_EQ(std::memcmp(b->host_address(), data.data(), kBytes), 0);
      // ...and host writes there are what later stream operations read.
      const std::vector<uint8_t> by_host = Pattern(kBytes, 90 + d * 4 + m);
      std::memcpy(b->host_address(), by_host.data(), kBytes);
      EXPECT_TRUE(ReadAll(d, b) == by_host);
    }
  }
  RecordProperty("host_addressable_memories", addressable);
}

TEST_P(PlatformBufferTest, BytesInUseTracksLiveBuffers) {
  constexpr int64_t kBytes = (int64_t{1} << 20) + 3;
  bool tracked = false;
  for (int d = 0; d < devices(); ++d) {
    for (int m = 0; m < memories(d); ++m) {
      SCOPED_TRACE(::testing::Message() << "device " << d << " memory " << m);
      const int other = (d + 1) % devices();
      const int64_t before = platform().BytesInUse(d, m);
      const int64_t other_before = platform().BytesInUse(other, 0);
      PlatformBufferRef a = Alloc(d, m, kBytes);
      ASSERT_NE(a, nullptr);
      const int64_t with_one = platform().BytesInUse(d, m);
      if (with_one == 0) continue;  // this memory is not tracked (allowed by the SPI)
      tracked = true;
      EXPECT_GE(with_one - before, kBytes);
      EXPECT_LT(with_one - before, 2 * kBytes) << "rounding should not double a 1 MiB buffer";
      if (other != d) {
        EXPECT_EQ(platform().BytesInUse(other, 0), other_before);
      }
      PlatformBufferRef b = Alloc(d, m, kBytes);
      ASSERT_NE(b, nullptr);
      EXPECT_GE(platform().BytesInUse(d, m) - with_one, kBytes);
      // A buffer used by an operation is freed once both are done with it.
      const std::vector<uint8_t> data = Pattern(kBytes, 3);
      ASSERT_THAT(Write(d, a, data.data(), Dense(kBytes)), IsOk());
      a.reset();
      EXPECT_TRUE(Eventually([&] { return platform().BytesInUse(d, m) == with_one; }));
      b.reset();
      EXPECT_TRUE(Eventually([&] { return platform().BytesInUse(d, m) == before; }))
          << platform().BytesInUse(d, m) << " bytes in use, " << before << " before";
    }
  }
  if (!tracked) GTEST_SKIP() << platform().name() << " does not track BytesInUse";
}

TESSERA_INSTANTIATE_PLATFORM_SUITE(PlatformBufferTest);

}  // namespace
}  // namespace tessera::conformance
