// tests/conformance/platform_conformance.h: the fixture of the device-SPI suites.
//
// A conformance suite for implementations of ifrt/spi/platform.h, in the manner of IREE's HAL
// CTS: streams (order, `after` futures, error propagation), buffers, copies, host callbacks,
// WrapHostMemory and concurrent use. PlatformConformanceTest is parameterised by a registered
// PlatformFactory (client_factory_registry.h): SetUp creates a fresh platform, skipping when the
// factory reports NOT_FOUND or UNAVAILABLE (no driver), TearDown fails the test when the
// backend's checker (the Vulkan validation layer) reported anything. Each suite
// (platform_*_suite.cc) derives its own empty fixture and instantiates it with
// TESSERA_INSTANTIATE_PLATFORM_SUITE.
//
// Not thread-safe, as gtest fixtures are not; the helpers that only touch platform() may be called
// from several threads, as the platform may.

#ifndef TESSERA_TESTS_CONFORMANCE_PLATFORM_CONFORMANCE_H_
#define TESSERA_TESTS_CONFORMANCE_PLATFORM_CONFORMANCE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "gtest/gtest.h"
#include "ifrt/future.h"
#include "ifrt/spi/platform.h"
#include "ifrt/strided_copy.h"
#include "tests/conformance/client_factory_registry.h"

namespace tessera::conformance {

// A dense copy of `bytes` bytes (element_bytes 1).
StridedCopy Dense(int64_t bytes);
// The same copy with both offsets moved by `src_offset` and `dst_offset` bytes.
StridedCopy Offset(StridedCopy copy, int64_t src_offset, int64_t dst_offset);
// Applies `copy` on the host: the reference the platforms are compared with.
void HostCopy(const StridedCopy& copy, const void* src, void* dst);

// The instance name of a factory in test names.
std::string PlatformFactoryName(const ::testing::TestParamInfo<PlatformFactory>& info);

class PlatformConformanceTest : public ::testing::TestWithParam<PlatformFactory> {
 protected:
  void SetUp() override;
  void TearDown() override;

  Platform& platform() { return *platform_; }
  int devices() const { return platform_->device_count(); }
  int memories(int device) const {
    return static_cast<int>(platform_->device_info(device).memories.size());
  }
  bool host_addressable(int device, int memory) const {
    return platform_->device_info(device).memories[memory].host_addressable;
  }

  // Allocates, failing the test (and returning null) on an error.
  PlatformBufferRef Alloc(int device, int memory, int64_t bytes);
  // One copy on the stream of `device`, awaited.
  absl::Status Write(int device, const PlatformBufferRef& buffer, const void* src,
                     const StridedCopy& geometry, absl::Span<const Future<>> after = {});
  absl::Status Read(int device, const PlatformBufferRef& buffer, void* dst,
                    const StridedCopy& geometry);
  // The whole buffer, read on the stream of `device`.
  std::vector<uint8_t> ReadAll(int device, const PlatformBufferRef& buffer);

  std::unique_ptr<Platform> platform_;
  int64_t diagnostics_ = 0;
};

}  // namespace tessera::conformance

// Instantiates the suite `suite` (a fixture derived from PlatformConformanceTest) for every
// registered platform factory; its tests are named `suite.Test/<factory name>`.
#define TESSERA_INSTANTIATE_PLATFORM_SUITE(suite)                                          \
  INSTANTIATE_TEST_SUITE_P(                                                                \
      , suite, ::testing::ValuesIn(::tessera::conformance::RegisteredPlatformFactories()), \
      ::tessera::conformance::PlatformFactoryName)

#endif  // TESSERA_TESTS_CONFORMANCE_PLATFORM_CONFORMANCE_H_
