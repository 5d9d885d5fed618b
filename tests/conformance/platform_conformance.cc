#include "tests/conformance/platform_conformance.h"

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace tessera::conformance {

using ::tessera::testing::IsOk;

StridedCopy Dense(int64_t bytes) {
  StridedCopy c;
  c.element_bytes = 1;
  c.extent = {bytes};
  c.src_byte_strides = {1};
  c.dst_byte_strides = {1};
  return c;
}

StridedCopy Offset(StridedCopy copy, int64_t src_offset, int64_t dst_offset) {
  copy.src_offset += src_offset;
  copy.dst_offset += dst_offset;
  return copy;
}

void HostCopy(const StridedCopy& copy, const void* src, void* dst) {
  copy.ForEachRun([&](int64_t s, int64_t d, int64_t n) {
    std::memcpy(static_cast<char*>(dst) + d, static_cast<const char*>(src) + s, n);
  });
}

std::string PlatformFactoryName(const ::testing::TestParamInfo<PlatformFactory>& info) {
  return info.param.name;
}

void PlatformConformanceTest::SetUp() {
  const PlatformFactory& factory = GetParam();
  diagnostics_ = factory.diagnostic_count ? factory.diagnostic_count() : 0;
  absl::StatusOr<std::unique_ptr<Platform>> p = factory.create();
  if (absl::IsNotFound(p.status()) || absl::IsUnavailable(p.status())) {
    GTEST_SKIP() << "no " << factory.name << " platform on this machine: " << p.status();
  }
  ASSERT_THAT(p, IsOk()) << "cannot create the " << factory.name << " platform";
  platform_ = *std::move(p);
  ASSERT_GE(platform_->device_count(), factory.min_devices);
}

void PlatformConformanceTest::TearDown() {
  platform_.reset();  // waits for every operation still enqueued
  const PlatformFactory& factory = GetParam();
  if (factory.diagnostic_count) {
    EXPECT_EQ(factory.diagnostic_count(), diagnostics_)
        << "the " << factory.name << " platform's checker (validation layer) reported problems";
  }
}

PlatformBufferRef PlatformConformanceTest::Alloc(int device, int memory, int64_t bytes) {
  absl::StatusOr<PlatformBufferRef> b = platform().Allocate(device, memory, bytes);
  EXPECT_THAT(b, IsOk()) << "device " << device << " memory " << memory << ", " << bytes
                         << " bytes";
  return b.ok() ? *b : nullptr;
}

absl::Status PlatformConformanceTest::Write(int device, const PlatformBufferRef& buffer,
                                            const void* src, const StridedCopy& geometry,
                                            absl::Span<const Future<>> after) {
  return platform()
      .CopyHostToBuffers(device, {HostToBufferCopy{src, buffer, geometry}}, after)
      .Await();
}

absl::Status PlatformConformanceTest::Read(int device, const PlatformBufferRef& buffer, void* dst,
                                           const StridedCopy& geometry) {
  return platform()
      .CopyBuffersToHost(device, {BufferToHostCopy{buffer, dst, geometry}}, {})
      .Await();
}

std::vector<uint8_t> PlatformConformanceTest::ReadAll(int device, const PlatformBufferRef& buffer) {
  std::vector<uint8_t> out(buffer->size_bytes());
  EXPECT_THAT(Read(device, buffer, out.data(), Dense(buffer->size_bytes())), IsOk());
  return out;
}

}  // namespace tessera::conformance
