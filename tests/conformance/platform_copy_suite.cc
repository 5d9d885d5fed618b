// Copies of the device SPI: host->buffer and buffer->host in every memory, buffer->buffer between
// every pair of devices and memories of the platform, several copies in one call, and random
// strided boxes that must round-trip bit-exactly (bytes outside each box untouched).
// Part of the platform conformance suite (tests/conformance/platform_conformance.h).

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ifrt/future.h"
#include "ifrt/spi/platform.h"
#include "ifrt/strided_copy.h"
#include "tests/conformance/platform_conformance.h"
#include "tests/ifrt/test_util.h"

namespace tessera::conformance {
namespace {

using ::tessera::testing::IsOk;
using ::tessera::testing::Pattern;

class PlatformCopyTest : public PlatformConformanceTest {};

TEST_P(PlatformCopyTest, HostRoundTripInEveryMemory) {
  // Several staging chunks' worth on the Vulkan tests' 64 KiB chunks, and an odd tail.
  constexpr int64_t kBytes = 256 * 1024 + 13;
  for (int d = 0; d < devices(); ++d) {
    for (int m = 0; m < memories(d); ++m) {
      SCOPED_TRACE(::testing::Message() << "device " << d << " memory " << m);
      PlatformBufferRef b = Alloc(d, m, kBytes);
      ASSERT_NE(b, nullptr);
      const std::vector<uint8_t> data = Pattern(kBytes, 1 + d * 8 + m);
      ASSERT_THAT(Write(d, b, data.data(), Dense(kBytes)), IsOk());
      EXPECT_TRUE(ReadAll(d, b) == data);
    }
  }
}

TEST_P(PlatformCopyTest, BufferToBufferBetweenEveryPairOfDevicesAndMemories) {
  constexpr int64_t kBytes = 100 * 1024 + 7;
  int seed = 0;
  for (int src_d = 0; src_d < devices(); ++src_d) {
    for (int dst_d = 0; dst_d < devices(); ++dst_d) {
      for (int src_m = 0; src_m < memories(src_d); ++src_m) {
        for (int dst_m = 0; dst_m < memories(dst_d); ++dst_m) {
          SCOPED_TRACE(::testing::Message() << "device " << src_d << " memory " << src_m
                                            << " -> device " << dst_d << " memory " << dst_m);
          PlatformBufferRef src = Alloc(src_d, src_m, kBytes);
          PlatformBufferRef dst = Alloc(dst_d, dst_m, kBytes);
          ASSERT_NE(src, nullptr);
          ASSERT_NE(dst, nullptr);
          const std::vector<uint8_t> data = Pattern(kBytes, ++seed);
          ASSERT_THAT(Write(src_d, src, data.data(), Dense(kBytes)), IsOk());
          // The destination's device executes the copy.
          ASSERT_THAT(
              platform().CopyBuffersToBuffers(dst_d, {{src, dst, Dense(kBytes)}}, {}).Await(),
              IsOk());
          EXPECT_TRUE(ReadAll(dst_d, dst) == data);
          EXPECT_TRUE(ReadAll(src_d, src) == data) << "the source must be left as it was";
        }
      }
    }
  }
}

TEST_P(PlatformCopyTest, SeveralCopiesInOneCall) {
  // Eight rows of one buffer written by one call, then read back by one call into eight hosts.
  constexpr int kRows = 8;
  constexpr int64_t kRow = 3000;
  const int d = devices() - 1;
  PlatformBufferRef b = Alloc(d, platform().device_info(d).default_memory, kRows * kRow);
  ASSERT_NE(b, nullptr);
  std::vector<std::vector<uint8_t>> rows, out(kRows, std::vector<uint8_t>(kRow));
  std::vector<HostToBufferCopy> writes;
  std::vector<BufferToHostCopy> reads;
  for (int r = 0; r < kRows; ++r) rows.push_back(Pattern(kRow, 40 + r));
  for (int r = 0; r < kRows; ++r) {
    writes.push_back({rows[r].data(), b, Offset(Dense(kRow), 0, r * kRow)});
    reads.push_back({b, out[r].data(), Offset(Dense(kRow), (kRows - 1 - r) * kRow, 0)});
  }
  Future<> written = platform().CopyHostToBuffers(d, std::move(writes), {});
  ASSERT_THAT(platform().CopyBuffersToHost(d, std::move(reads), {written}).Await(), IsOk());
  for (int r = 0; r < kRows; ++r) EXPECT_TRUE(out[r] == rows[kRows - 1 - r]) << "row " << r;
}

// A random box of a random row-major array to a random place of another; with `transposed`,
// the source side walks its array column-major.
StridedCopy RandomBox(std::mt19937& rng, int64_t element_bytes, bool transposed,
                      std::vector<int64_t>* src_shape, std::vector<int64_t>* dst_shape) {
  auto uniform = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  const int rank = static_cast<int>(uniform(1, 3));
  std::vector<int64_t> extent(rank), src_origin(rank), dst_origin(rank);
  src_shape->assign(rank, 0);
  dst_shape->assign(rank, 0);
  for (int i = 0; i < rank; ++i) {
    extent[i] = uniform(1, 9);
    src_origin[i] = uniform(0, 4);
    dst_origin[i] = uniform(0, 4);
    (*src_shape)[i] = src_origin[i] + extent[i] + uniform(0, 3);
    (*dst_shape)[i] = dst_origin[i] + extent[i] + uniform(0, 3);
  }
  StridedCopy c = StridedCopy::BetweenDenseArrays(element_bytes, *src_shape, src_origin, *dst_shape,
                                                  dst_origin, extent);
  if (transposed && rank > 1) {
    // Column-major source: the stride of dimension i is the product of the dimensions before it.
    int64_t stride = element_bytes, offset = 0;
    for (int i = 0; i < rank; ++i) {
      c.src_byte_strides[i] = stride;
      offset += src_origin[i] * stride;
      stride *= (*src_shape)[i];
    }
    c.src_offset = offset;
  }
  return c;
}

int64_t Bytes(const std::vector<int64_t>& shape, int64_t element_bytes) {
  return testing::NumElements(shape) * element_bytes;
}

TEST_P(PlatformCopyTest, StridedBoxesRoundTripBitExactly) {
  // host --box--> buffer on device 0 --box--> buffer on device 1 --box--> host; each destination
  // starts filled with a pattern that must survive outside the box.
  std::mt19937 rng(20240607);
  const int src_d = 0, dst_d = devices() - 1;
  for (int round = 0; round < 24; ++round) {
    const int64_t element_bytes = int64_t{1} << (round % 4);
    SCOPED_TRACE(::testing::Message() << "round " << round << ", " << element_bytes << "-byte");
    std::vector<int64_t> host_shape, a_shape, a2_shape, b_shape, b2_shape, out_shape;
    const StridedCopy in = RandomBox(rng, element_bytes, round % 3 == 1, &host_shape, &a_shape);
    const StridedCopy across = RandomBox(rng, element_bytes, false, &a2_shape, &b_shape);
    const StridedCopy out_box =
        RandomBox(rng, element_bytes, round % 3 == 2, &b2_shape, &out_shape);
    // Each copy reads a buffer as large as the previous step's destination, or larger.
    const int64_t a_bytes = std::max(Bytes(a_shape, element_bytes), Bytes(a2_shape, element_bytes));
    const int64_t b_bytes = std::max(Bytes(b_shape, element_bytes), Bytes(b2_shape, element_bytes));
    const std::vector<uint8_t> host = Pattern(Bytes(host_shape, element_bytes), 1000 + round);
    const std::vector<uint8_t> a_fill = Pattern(a_bytes, 2000 + round);
    const std::vector<uint8_t> b_fill = Pattern(b_bytes, 3000 + round);
    std::vector<uint8_t> out(Bytes(out_shape, element_bytes) + 5, 0xEE);

    PlatformBufferRef a = Alloc(src_d, platform().device_info(src_d).default_memory, a_bytes);
    PlatformBufferRef b = Alloc(dst_d, platform().device_info(dst_d).default_memory, b_bytes);
    ASSERT_NE(a, nullptr);
    ASSERT_NE(b, nullptr);
    ASSERT_THAT(Write(src_d, a, a_fill.data(), Dense(a_bytes)), IsOk());
    ASSERT_THAT(Write(dst_d, b, b_fill.data(), Dense(b_bytes)), IsOk());
    ASSERT_THAT(Write(src_d, a, host.data(), in), IsOk());
    ASSERT_THAT(platform().CopyBuffersToBuffers(dst_d, {{a, b, across}}, {}).Await(), IsOk());
    ASSERT_THAT(Read(dst_d, b, out.data(), out_box), IsOk());

    // The same three copies on the host.
    std::vector<uint8_t> want_a = a_fill, want_b = b_fill, want_out(out.size(), 0xEE);
    HostCopy(in, host.data(), want_a.data());
    HostCopy(across, want_a.data(), want_b.data());
    HostCopy(out_box, want_b.data(), want_out.data());
    EXPECT_TRUE(ReadAll(src_d, a) == want_a) << in.DebugString();
    EXPECT_TRUE(ReadAll(dst_d, b) == want_b) << across.DebugString();
    EXPECT_TRUE(out == want_out) << out_box.DebugString();
  }
}

TESSERA_INSTANTIATE_PLATFORM_SUITE(PlatformCopyTest);

}  // namespace
}  // namespace tessera::conformance
