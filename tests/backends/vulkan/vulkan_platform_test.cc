// SPI-level tests of the Vulkan platform. In CI they run on lavapipe: the test points
// VK_DRIVER_FILES (and VK_ICD_FILENAMES) at one or two copies of lavapipe's ICD manifest. With
// TESSERA_VULKAN_TEST_SYSTEM_DRIVERS=1 they use the system's drivers instead (a real GPU; two
// devices then come from logical_devices_per_gpu=2 where only one GPU exists). The Khronos
// validation layer is enabled when installed; any validation message fails the test.

#include "backends/vulkan/vulkan_platform.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <ostream>
#include <random>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

// Under LeakSanitizer, the Vulkan platform keeps lavapipe and the validation layer loaded and
// suppresses their one-time allocations (see backends/vulkan/vulkan_instance.cc).

namespace tessera {
namespace {

using ::testing::HasSubstr;

constexpr int kDevice = 0;
constexpr int kPinned = 1;
constexpr int64_t kChunk = 64 << 10;

bool UseSystemDrivers() {
  const char* v = std::getenv("TESSERA_VULKAN_TEST_SYSTEM_DRIVERS");
  return v && std::string(v) == "1";
}

void SelectLavapipe(int count) {
  if (UseSystemDrivers()) return;
  std::string files = TESSERA_VULKAN_TEST_ICD_A;
  if (count > 1) files += std::string(":") + TESSERA_VULKAN_TEST_ICD_B;
  setenv("VK_DRIVER_FILES", files.c_str(), 1);
  setenv("VK_ICD_FILENAMES", files.c_str(), 1);
}

VulkanPlatformOptions TestOptions() {
  VulkanPlatformOptions o;
  o.staging_chunk_bytes = kChunk;
  o.staging_chunks = 3;
  o.block_bytes = 1 << 20;
  return o;
}

std::vector<uint8_t> Pattern(int64_t n, uint32_t seed) {
  std::vector<uint8_t> v(n);
  std::mt19937 rng(seed);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

StridedCopy Dense(int64_t bytes) {
  StridedCopy c;
  c.element_bytes = 1;
  c.extent = {bytes};
  c.src_byte_strides = {1};
  c.dst_byte_strides = {1};
  return c;
}

// Applies `c` on the host (the reference).
void HostCopy(const StridedCopy& c, const void* src, void* dst) {
  c.ForEachRun([&](int64_t s, int64_t d, int64_t n) {
    std::memcpy(static_cast<char*>(dst) + d, static_cast<const char*>(src) + s, n);
  });
}

class VulkanPlatformTest : public ::testing::Test {
 protected:
  void SetUp() override { messages_before_ = VulkanValidationMessageCount(); }
  void TearDown() override {
    EXPECT_EQ(VulkanValidationMessageCount() - messages_before_, 0)
        << "validation-layer messages were printed above";
  }

  // A platform with `lavapipe` lavapipe devices (or the system's devices), skipping when there is
  // no Vulkan driver at all.
  std::unique_ptr<VulkanPlatform> Make(int lavapipe = 1, VulkanPlatformOptions o = TestOptions()) {
    SelectLavapipe(lavapipe);
    auto p = CreateVulkanPlatform(o);
    if (absl::IsNotFound(p.status())) {
      ADD_FAILURE_IF_CI(p.status());
      return nullptr;
    }
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? std::move(*p) : nullptr;
  }
  static void ADD_FAILURE_IF_CI(const absl::Status& s) {
    if (std::getenv("CI")) ADD_FAILURE() << "CI must have lavapipe: " << s;
  }
  // A platform with at least two VkDevices: two lavapipe ICDs, or logical devices.
  std::unique_ptr<VulkanPlatform> MakeTwo(bool logical) {
    VulkanPlatformOptions o = TestOptions();
    if (logical) o.logical_devices_per_gpu = 2;
    auto p = Make(logical ? 1 : 2, o);
    if (p && p->device_count() < 2) {
      o.logical_devices_per_gpu = 2;
      p = Make(1, o);
    }
    return p;
  }

  static PlatformBufferRef Alloc(Platform& p, int dev, int mem, int64_t bytes) {
    auto b = p.Allocate(dev, mem, bytes);
    EXPECT_TRUE(b.ok()) << b.status();
    return b.ok() ? *b : nullptr;
  }
  static absl::Status Write(Platform& p, int dev, const PlatformBufferRef& b, const void* src,
                            StridedCopy g, absl::Span<const Future<>> after = {}) {
    return p.CopyHostToBuffers(dev, {HostToBufferCopy{src, b, g}}, after).Await();
  }
  static absl::Status Read(Platform& p, int dev, const PlatformBufferRef& b, void* dst,
                           StridedCopy g) {
    return p.CopyBuffersToHost(dev, {BufferToHostCopy{b, dst, g}}, {}).Await();
  }
  static std::vector<uint8_t> ReadAll(Platform& p, int dev, const PlatformBufferRef& b) {
    std::vector<uint8_t> out(b->size_bytes());
    EXPECT_TRUE(Read(p, dev, b, out.data(), Dense(b->size_bytes())).ok());
    return out;
  }

  int64_t messages_before_ = 0;
};

#define MAKE_OR_SKIP(var, ...) \
  auto var = __VA_ARGS__;      \
  if (!var) GTEST_SKIP() << "no Vulkan driver (lavapipe) on this machine"

TEST_F(VulkanPlatformTest, DiscoversOneAndTwoLavapipeDevices) {
  if (UseSystemDrivers()) GTEST_SKIP() << "counts lavapipe devices";
  MAKE_OR_SKIP(one, Make(1));
  EXPECT_EQ(one->name(), "vulkan");
  EXPECT_EQ(one->device_count(), 1);
  one.reset();
  MAKE_OR_SKIP(two, Make(2));
  EXPECT_EQ(two->device_count(), 2);
  EXPECT_EQ(two->device_info(1).attributes.GetInt("physical_device_index"), 1);
}

TEST_F(VulkanPlatformTest, NoDriverIsNotFound) {
  if (UseSystemDrivers()) GTEST_SKIP() << "changes the driver list";
  setenv("VK_DRIVER_FILES", "/nonexistent/tessera_icd.json", 1);
  setenv("VK_ICD_FILENAMES", "/nonexistent/tessera_icd.json", 1);
  auto p = CreateVulkanPlatform(TestOptions());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kNotFound) << p.status();
  EXPECT_THAT(std::string(p.status().message()),
              ::testing::AnyOf(HasSubstr("no Vulkan driver"), HasSubstr("no compute-capable")));
}

TEST_F(VulkanPlatformTest, LogicalDevicesSplitAPhysicalDevice) {
  VulkanPlatformOptions o = TestOptions();
  o.logical_devices_per_gpu = 2;
  MAKE_OR_SKIP(p, Make(1, o));
  ASSERT_EQ(p->device_count() % 2, 0);
  EXPECT_EQ(p->device_info(0).attributes.GetInt("logical_device_index"), 0);
  EXPECT_EQ(p->device_info(1).attributes.GetInt("logical_device_index"), 1);
  EXPECT_EQ(p->device_info(0).attributes.GetInt("physical_device_index"),
            p->device_info(1).attributes.GetInt("physical_device_index"));
}

TEST_F(VulkanPlatformTest, AttributesAndMemories) {
  MAKE_OR_SKIP(p, Make(1));
  const PlatformDeviceInfo& info = p->device_info(0);
  EXPECT_EQ(info.kind, "vulkan");
  EXPECT_FALSE(info.name.empty());
  for (const char* name : {"name", "vendor", "driver_version", "api_version", "device_type",
                           "driver_name", "device_uuid"}) {
    EXPECT_TRUE(info.attributes.GetString(name).has_value()) << name;
  }
  for (const char* name : {"vendor_id", "device_id", "subgroup_size", "max_storage_buffer_range",
                           "max_memory_allocation_size", "min_storage_buffer_offset_alignment",
                           "device_memory_bytes"}) {
    EXPECT_TRUE(info.attributes.GetInt(name).has_value()) << name;
  }
  EXPECT_NE(info.attributes.Get("heap_sizes"), nullptr);
  for (const char* name :
       {"shader_float64", "shader_int64", "shader_signed_zero_inf_nan_preserve_float32",
        "shader_signed_zero_inf_nan_preserve_float64"}) {
    const AttributeMap::Value* v = info.attributes.Get(name);
    EXPECT_TRUE(v != nullptr && std::holds_alternative<bool>(*v)) << name;
  }
  EXPECT_GT(*info.attributes.GetInt("subgroup_size"), 0);
  ASSERT_EQ(info.memories.size(), 2u);
  EXPECT_EQ(info.memories[0].kind, "device");
  EXPECT_FALSE(info.memories[0].host_addressable);
  EXPECT_EQ(info.memories[1].kind, "pinned_host");
  EXPECT_TRUE(info.memories[1].host_addressable);
  EXPECT_EQ(info.default_memory, 0);
  EXPECT_GT(info.memories[0].capacity_bytes, 0);
}

// The test knob lowers the range the platform reports (and binds by): never raises it.
TEST_F(VulkanPlatformTest, MaxStorageBufferRangeOverrideLowersTheRange) {
  VulkanPlatformOptions o = TestOptions();
  o.max_storage_buffer_range_override = 4096;
  MAKE_OR_SKIP(p, Make(1, o));
  EXPECT_EQ(p->device_info(0).attributes.GetInt("max_storage_buffer_range"), 4096);
  MAKE_OR_SKIP(plain, Make(1));
  const int64_t range = *plain->device_info(0).attributes.GetInt("max_storage_buffer_range");
  o.max_storage_buffer_range_override = range * 2;
  MAKE_OR_SKIP(higher, Make(1, o));
  EXPECT_EQ(higher->device_info(0).attributes.GetInt("max_storage_buffer_range"), range);
}

TEST_F(VulkanPlatformTest, AllocationSizesUsageAndLimits) {
  MAKE_OR_SKIP(p, Make(1));
  for (int mem : {kDevice, kPinned}) {
    auto zero = Alloc(*p, 0, mem, 0);
    ASSERT_NE(zero, nullptr);
    EXPECT_EQ(zero->size_bytes(), 0);
    EXPECT_EQ(p->BytesInUse(0, mem), 0);
    {
      auto small = Alloc(*p, 0, mem, 100);
      auto big = Alloc(*p, 0, mem, 3 * kChunk + 1);
      auto dedicated = Alloc(*p, 0, mem, 900 << 10);  // above block_bytes / 2
      ASSERT_TRUE(small && big && dedicated);
      EXPECT_EQ(small->host_address() != nullptr, mem == kPinned);
      EXPECT_GE(p->BytesInUse(0, mem), 100 + 3 * kChunk + 1 + (900 << 10));
      // Distinct allocations do not overlap (pinned: check addresses).
      if (mem == kPinned) {
        char* a = static_cast<char*>(small->host_address());
        char* b = static_cast<char*>(big->host_address());
        EXPECT_TRUE(a + 100 <= b || b + big->size_bytes() <= a);
      }
    }
    EXPECT_EQ(p->BytesInUse(0, mem), 0);
  }
  const int64_t max = *p->device_info(0).attributes.GetInt("max_buffer_bytes");
  const int64_t heap = p->device_info(0).memories[kDevice].capacity_bytes;
  auto too_big = p->Allocate(0, kDevice, max + 1);
  if (max + 1 > heap) {  // lavapipe: its largest buffer is its whole heap
    EXPECT_EQ(too_big.status().code(), absl::StatusCode::kResourceExhausted) << too_big.status();
    EXPECT_THAT(std::string(too_big.status().message()), HasSubstr("heap holds"));
  } else {
    EXPECT_EQ(too_big.status().code(), absl::StatusCode::kInvalidArgument) << too_big.status();
    EXPECT_THAT(std::string(too_big.status().message()), HasSubstr("at most"));
  }
  auto huge = p->Allocate(0, kPinned, int64_t{1} << 50);
  EXPECT_EQ(huge.status().code(), absl::StatusCode::kResourceExhausted) << huge.status();
  EXPECT_THAT(std::string(huge.status().message()), HasSubstr("heap holds"));
}

// Memory is counted per heap, against heap_limit_bytes (or the heap's size), by every logical
// device of the GPU together: lavapipe would otherwise hand out host RAM far past its heap.
TEST_F(VulkanPlatformTest, HeapLimitIsAccountedAcrossLogicalDevices) {
  VulkanPlatformOptions o = TestOptions();
  o.logical_devices_per_gpu = 2;
  o.heap_limit_bytes = 4 << 20;  // four dedicated 900 KiB buffers (block_bytes is 1 MiB)
  MAKE_OR_SKIP(p, Make(1, o));
  ASSERT_EQ(p->device_count(), 2);
  EXPECT_EQ(p->device_info(0).memories[kDevice].capacity_bytes, 4 << 20);
  constexpr int64_t kBuffer = 900 << 10;
  std::vector<PlatformBufferRef> held;
  for (int i = 0; i < 4; ++i) held.push_back(Alloc(*p, i % 2, kDevice, kBuffer));
  // The fifth fits neither device: the heap is theirs together.
  for (int dev : {0, 1}) {
    auto more = p->Allocate(dev, kDevice, kBuffer);
    EXPECT_EQ(more.status().code(), absl::StatusCode::kResourceExhausted) << more.status();
    EXPECT_THAT(std::string(more.status().message()), HasSubstr("memory heap"));
  }
  // A buffer larger than the whole limit says so.
  auto too_big = p->Allocate(0, kDevice, 5 << 20);
  EXPECT_EQ(too_big.status().code(), absl::StatusCode::kResourceExhausted) << too_big.status();
  EXPECT_THAT(std::string(too_big.status().message()), HasSubstr("heap holds 4194304 bytes"));
  // Freeing gives the room back; nothing stays counted.
  held.pop_back();
  auto again = p->Allocate(1, kDevice, kBuffer);
  ASSERT_TRUE(again.ok()) << again.status();
  std::vector<uint8_t> data = Pattern(kBuffer, 7);
  ASSERT_TRUE(Write(*p, 1, *again, data.data(), Dense(kBuffer)).ok());
  EXPECT_EQ(ReadAll(*p, 1, *again), data);
  held.clear();
  again->reset();
  for (int i = 0; i < 4; ++i) held.push_back(Alloc(*p, i % 2, kDevice, kBuffer));
  EXPECT_EQ(p->BytesInUse(0, kDevice) + p->BytesInUse(1, kDevice), 4 * kBuffer);
}

// A freed dedicated block (above block_bytes / 2) is kept and handed to the next request of its
// size: a program's outputs of the same size on every call reuse memory instead of allocating and
// faulting it in. Kept blocks still count against the heap, and are given back, by every logical
// device of the GPU, when an allocation would not fit otherwise.
TEST_F(VulkanPlatformTest, FreedDedicatedBlocksAreReusedAndGivenBackWhenTheHeapIsFull) {
  VulkanPlatformOptions o = TestOptions();
  o.logical_devices_per_gpu = 2;
  o.heap_limit_bytes = 4 << 20;  // four dedicated 900 KiB buffers (block_bytes is 1 MiB)
  MAKE_OR_SKIP(p, Make(1, o));
  ASSERT_EQ(p->device_count(), 2);
  constexpr int64_t kBuffer = 900 << 10;
  // Reuse: the same pinned (mapped) memory comes back for the same size, and for a little less.
  void* first = nullptr;
  {
    auto a = Alloc(*p, 0, kPinned, kBuffer);
    ASSERT_NE(a, nullptr);
    first = a->host_address();
  }
  EXPECT_EQ(p->BytesInUse(0, kPinned), 0);
  {
    auto b = Alloc(*p, 0, kPinned, kBuffer - 4096);
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(b->host_address(), first);
    std::vector<uint8_t> data = Pattern(kBuffer - 4096, 3);
    ASSERT_TRUE(Write(*p, 0, b, data.data(), Dense(kBuffer - 4096)).ok());
    EXPECT_EQ(ReadAll(*p, 0, b), data);
  }
  // Pressure: device 0 fills the heap, frees everything (keeping a spare), then device 1 takes
  // the whole heap: device 0's spare is given back for it.
  for (int round = 0; round < 3; ++round) {
    for (int dev : {0, 1}) {
      SCOPED_TRACE(::testing::Message() << "round " << round << ", device " << dev);
      std::vector<PlatformBufferRef> held;
      for (int i = 0; i < 4; ++i) {
        absl::StatusOr<PlatformBufferRef> b = p->Allocate(dev, kDevice, kBuffer);
        ASSERT_TRUE(b.ok()) << "buffer " << i << ": " << b.status();
        held.push_back(*std::move(b));
      }
      auto fifth = p->Allocate(dev, kDevice, kBuffer);
      EXPECT_EQ(fifth.status().code(), absl::StatusCode::kResourceExhausted) << fifth.status();
      EXPECT_EQ(p->BytesInUse(dev, kDevice), 4 * kBuffer);
    }
  }
  EXPECT_EQ(p->BytesInUse(0, kDevice) + p->BytesInUse(1, kDevice), 0);
}

TEST_F(VulkanPlatformTest, NegativeHeapLimitIsRejected) {
  VulkanPlatformOptions o = TestOptions();
  o.heap_limit_bytes = -1;
  SelectLavapipe(1);
  auto p = CreateVulkanPlatform(o);
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument) << p.status();
  EXPECT_THAT(std::string(p.status().message()), HasSubstr("heap_limit_bytes must be >= 0"));
}

class RoundTripTest : public VulkanPlatformTest,
                      public ::testing::WithParamInterface<std::tuple<int, int64_t>> {};

TEST_P(RoundTripTest, HostBufferHostIsBitExact) {
  const auto [mem, bytes] = GetParam();
  MAKE_OR_SKIP(p, Make(1));
  auto buf = Alloc(*p, 0, mem, bytes);
  ASSERT_NE(buf, nullptr);
  auto data = Pattern(bytes, 7);
  ASSERT_TRUE(Write(*p, 0, buf, data.data(), Dense(bytes)).ok());
  EXPECT_EQ(ReadAll(*p, 0, buf), data);
  if (mem == kPinned && bytes > 0) {
    EXPECT_EQ(std::memcmp(buf->host_address(), data.data(), bytes), 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, RoundTripTest,
                         ::testing::Combine(::testing::Values(kDevice, kPinned),
                                            ::testing::Values(int64_t{1}, int64_t{1000}, kChunk,
                                                              3 * kChunk + 1, 10 * kChunk + 17)),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param) == kDevice ? "device"
                                                                                 : "pinned_host") +
                                  "_" + std::to_string(std::get<1>(info.param));
                         });

// Chunks above the parallel-memcpy threshold: the host packs and unpacks them with several threads.
// Pitched rows (1000 bytes of every 1024) make many pieces per chunk.
TEST_F(VulkanPlatformTest, LargeChunksArePackedInParallelBitExactly) {
  VulkanPlatformOptions o = TestOptions();
  o.staging_chunk_bytes = 4 << 20;
  o.block_bytes = 64 << 20;
  o.direct_host_copy_min_bytes = -1;  // staged (short runs are staged anyway)
  MAKE_OR_SKIP(p, Make(1, o));
  const int64_t staged_before = p->stats().staged_chunks;
  const int64_t rows = 6000, row = 1000, pitch = 1024;
  StridedCopy in;
  in.element_bytes = 1;
  in.extent = {rows, row};
  in.src_byte_strides = {pitch, 1};
  in.dst_byte_strides = {row, 1};
  StridedCopy out = in;
  std::swap(out.src_byte_strides, out.dst_byte_strides);
  const std::vector<uint8_t> host = Pattern(rows * pitch, 11);
  std::vector<uint8_t> expected(rows * pitch, 0);
  HostCopy(in, host.data(), expected.data() + 0);  // dense rows
  for (int mem : {kDevice, kPinned}) {
    SCOPED_TRACE(mem);
    auto buf = Alloc(*p, 0, mem, rows * row);
    ASSERT_NE(buf, nullptr);
    ASSERT_TRUE(Write(*p, 0, buf, host.data(), in).ok());
    EXPECT_TRUE(ReadAll(*p, 0, buf) ==
                std::vector<uint8_t>(expected.begin(), expected.begin() + rows * row));
    std::vector<uint8_t> back(rows * pitch, 0);
    ASSERT_TRUE(Read(*p, 0, buf, back.data(), out).ok());
    for (int64_t r = 0; r < rows; ++r) {
      ASSERT_EQ(std::memcmp(back.data() + r * pitch, host.data() + r * pitch, row), 0)
          << "row " << r;
      // The pitch's padding is never written.
      ASSERT_EQ(std::count(back.begin() + r * pitch + row, back.begin() + (r + 1) * pitch, 0),
                pitch - row)
          << "row " << r;
    }
  }
  EXPECT_GT(p->stats().staged_chunks, staged_before);
}

// Long runs (256 KiB rows with a padded pitch, from a host pointer that is not page-aligned) go
// direct: the user's host pages are imported into the device (VK_EXT_external_memory_host) and
// copied without the staging ring, bit-exactly, leaving the padding alone.
TEST_F(VulkanPlatformTest, LongRunsCopyDirectlyThroughImportedHostPages) {
  MAKE_OR_SKIP(p, Make(1));
  const AttributeMap::Value* host_import = p->device_info(0).attributes.Get("external_memory_host");
  if (host_import == nullptr || !std::get<bool>(*host_import)) {
    GTEST_SKIP() << "the driver lacks VK_EXT_external_memory_host";
  }
  const int64_t rows = 24, row = 256 << 10, pitch = row + 72, skew = 8;
  StridedCopy in;
  in.element_bytes = 1;
  in.extent = {rows, row};
  in.src_offset = skew;
  in.src_byte_strides = {pitch, 1};
  in.dst_byte_strides = {row, 1};
  StridedCopy out = in;
  std::swap(out.src_byte_strides, out.dst_byte_strides);
  std::swap(out.src_offset, out.dst_offset);
  const std::vector<uint8_t> host = Pattern(rows * pitch + skew, 5);
  const int64_t staged_before = p->stats().staged_chunks;
  auto buf = Alloc(*p, 0, kDevice, rows * row);
  ASSERT_NE(buf, nullptr);
  ASSERT_TRUE(Write(*p, 0, buf, host.data(), in).ok());
  std::vector<uint8_t> dense(rows * row);
  HostCopy(in, host.data(), dense.data());
  EXPECT_TRUE(ReadAll(*p, 0, buf) == dense);  // a dense read: one run, direct too
  std::vector<uint8_t> back(rows * pitch + skew, 0);
  ASSERT_TRUE(Read(*p, 0, buf, back.data(), out).ok());
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t at = skew + r * pitch;
    ASSERT_EQ(std::memcmp(back.data() + at, host.data() + at, row), 0) << "row " << r;
    ASSERT_EQ(std::count(back.begin() + at + row, back.begin() + at + pitch, 0), pitch - row)
        << "row " << r;
  }
  EXPECT_EQ(std::count(back.begin(), back.begin() + skew, 0), skew);
  EXPECT_EQ(p->stats().staged_chunks, staged_before);
}

// A column-major host array (rows x cols of 4-byte elements) into a row-major buffer, then out
// again into a host array with padded (non-compact) rows.
TEST_F(VulkanPlatformTest, StridedGeometryBothWays) {
  MAKE_OR_SKIP(p, Make(1));
  const int64_t rows = 150, cols = 131, eb = 4;  // 78600 bytes: crosses a chunk
  for (int mem : {kDevice, kPinned}) {
    auto host = Pattern(rows * cols * eb, 3);
    auto buf = Alloc(*p, 0, mem, rows * cols * eb);
    StridedCopy in;
    in.element_bytes = eb;
    in.extent = {rows, cols};
    in.src_byte_strides = {eb, rows * eb};  // column-major source
    in.dst_byte_strides = {cols * eb, eb};
    ASSERT_TRUE(Write(*p, 0, buf, host.data(), in).ok());
    std::vector<uint8_t> expect(rows * cols * eb);
    HostCopy(in, host.data(), expect.data());
    EXPECT_EQ(ReadAll(*p, 0, buf), expect);

    // Read rows 10..109, columns 3..102 into a padded host array (row pitch 1000 bytes).
    StridedCopy out;
    out.element_bytes = eb;
    out.extent = {100, 100};
    out.src_offset = (10 * cols + 3) * eb;
    out.src_byte_strides = {cols * eb, eb};
    out.dst_offset = 8;
    out.dst_byte_strides = {1000, eb};
    std::vector<uint8_t> got(100 * 1000 + 8, 0xAB), want(100 * 1000 + 8, 0xAB);
    ASSERT_TRUE(Read(*p, 0, buf, got.data(), out).ok());
    HostCopy(out, expect.data(), want.data());
    EXPECT_EQ(got, want);
  }
}

TEST_F(VulkanPlatformTest, ZeroElementCopies) {
  MAKE_OR_SKIP(p, Make(1));
  auto b = Alloc(*p, 0, kDevice, 0);
  StridedCopy g = Dense(0);
  EXPECT_TRUE(Write(*p, 0, b, nullptr, g).ok());
  EXPECT_TRUE(Read(*p, 0, b, nullptr, g).ok());
  EXPECT_TRUE(p->CopyBuffersToBuffers(0, {BufferToBufferCopy{b, b, g}}, {}).Await().ok());
}

// Box (rows 2..rows-3, cols 1..cols-2) of a row-major array into another array.
StridedCopy Box(int64_t eb, int64_t rows, int64_t cols) {
  return StridedCopy::BetweenDenseArrays(eb, {rows, cols}, {2, 1}, {rows + 1, cols + 3}, {1, 2},
                                         {rows - 4, cols - 2});
}

// A row-major rows x cols array of 4-byte elements read into a column-major one: a strided inner
// dimension.
StridedCopy Transpose(int64_t rows, int64_t cols) {
  StridedCopy c;
  c.element_bytes = 4;
  c.extent = {rows, cols};
  c.src_byte_strides = {cols * 4, 4};
  c.dst_byte_strides = {4, rows * 4};
  return c;
}

void CheckBufferCopy(VulkanPlatformTest* t, Platform& p, int src_dev, int dst_dev, int src_mem,
                     int dst_mem, const StridedCopy& g, int64_t src_bytes, int64_t dst_bytes) {
  auto src = p.Allocate(src_dev, src_mem, src_bytes);
  auto dst = p.Allocate(dst_dev, dst_mem, dst_bytes);
  ASSERT_TRUE(src.ok() && dst.ok());
  auto a = Pattern(src_bytes, 11), b = Pattern(dst_bytes, 12);
  Future<> wa =
      p.CopyHostToBuffers(src_dev, {HostToBufferCopy{a.data(), *src, Dense(src_bytes)}}, {});
  Future<> wb =
      p.CopyHostToBuffers(dst_dev, {HostToBufferCopy{b.data(), *dst, Dense(dst_bytes)}}, {});
  std::vector<Future<>> after = {wa, wb};
  Future<> c = p.CopyBuffersToBuffers(dst_dev, {BufferToBufferCopy{*src, *dst, g}}, after);
  ASSERT_TRUE(c.Await().ok()) << c.Await();
  HostCopy(g, a.data(), b.data());
  std::vector<uint8_t> got(dst_bytes);
  ASSERT_TRUE(
      p.CopyBuffersToHost(dst_dev, {BufferToHostCopy{*dst, got.data(), Dense(dst_bytes)}}, {})
          .Await()
          .ok());
  EXPECT_TRUE(got == b) << g.DebugString();
}

TEST_F(VulkanPlatformTest, BufferToBufferSameDeviceRegions) {
  MAKE_OR_SKIP(p, Make(1));
  const int64_t rows = 40, cols = 33;
  for (int eb : {1, 2, 4, 8}) {
    CheckBufferCopy(this, *p, 0, 0, kDevice, kDevice, Box(eb, rows, cols), rows * cols * eb,
                    (rows + 1) * (cols + 3) * eb);
  }
  CheckBufferCopy(this, *p, 0, 0, kPinned, kDevice, Dense(3 * kChunk + 1), 3 * kChunk + 1,
                  3 * kChunk + 1);
  EXPECT_GT(p->stats().region_copies, 0);
  EXPECT_EQ(p->stats().compute_copies, 0);
}

TEST_F(VulkanPlatformTest, BufferToBufferComputeShaderForManyShortRows) {
  VulkanPlatformOptions o = TestOptions();
  o.compute_copy_min_runs = 16;
  MAKE_OR_SKIP(p, Make(1, o));
  if (!p->device_info(0).attributes.Get("compute_copy") ||
      !std::get<bool>(*p->device_info(0).attributes.Get("compute_copy"))) {
    GTEST_SKIP() << "no VK_KHR_push_descriptor: the compute path is disabled";
  }
  const int64_t rows = 300, cols = 9;
  for (int eb : {4, 8}) {
    CheckBufferCopy(this, *p, 0, 0, kDevice, kDevice, Box(eb, rows, cols), rows * cols * eb,
                    (rows + 1) * (cols + 3) * eb);
  }
  // A transpose (strided inner dimension) of 4-byte elements, into pinned memory.
  CheckBufferCopy(this, *p, 0, 0, kDevice, kPinned, Transpose(64, 48), 64 * 48 * 4, 64 * 48 * 4);
  EXPECT_EQ(p->stats().compute_copies, 3);
  // 2-byte elements fall back to regions.
  const int64_t before = p->stats().region_copies;
  CheckBufferCopy(this, *p, 0, 0, kDevice, kDevice, Box(2, rows, cols), rows * cols * 2,
                  (rows + 1) * (cols + 3) * 2);
  EXPECT_EQ(p->stats().compute_copies, 3);
  EXPECT_EQ(p->stats().region_copies, before + 1);
}

// How a copy between two VkDevices is made (VulkanPlatformOptions).
enum class CrossDevicePath { kHostMemcpy, kSharedStaging, kPeerImport };

const char* PathName(CrossDevicePath path) {
  static const char* const kNames[] = {"HostMemcpy", "SharedStaging", "PeerImport"};
  return kNames[static_cast<int>(path)];
}

// gtest prints parameters with this.
void PrintTo(CrossDevicePath path, std::ostream* os) { *os << PathName(path); }

class CrossDeviceTest : public VulkanPlatformTest,
                        public ::testing::WithParamInterface<std::tuple<bool, CrossDevicePath>> {};

bool BoolAttribute(const Platform& p, int device, const char* name) {
  const auto* v = p.device_info(device).attributes.Get(name);
  return v && std::get<bool>(*v);
}

TEST_P(CrossDeviceTest, BufferToBufferAcrossVkDevices) {
  const auto [logical, path] = GetParam();
  VulkanPlatformOptions o = TestOptions();
  o.cross_device_shared_staging = path == CrossDevicePath::kSharedStaging;
  o.cross_device_peer_import = path == CrossDevicePath::kPeerImport;
  if (logical) o.logical_devices_per_gpu = 2;
  MAKE_OR_SKIP(p, Make(logical ? 1 : 2, o));
  if (p->device_count() < 2) {
    o.logical_devices_per_gpu = 2;
    p = Make(1, o);
  }
  ASSERT_GE(p->device_count(), 2);
  const int64_t n = 3 * kChunk + 1;
  CheckBufferCopy(this, *p, 0, 1, kDevice, kDevice, Dense(n), n, n);
  CheckBufferCopy(this, *p, 1, 0, kPinned, kDevice, Dense(n), n, n);
  CheckBufferCopy(this, *p, 0, 1, kDevice, kPinned, Box(4, 200, 90), 200 * 90 * 4, 201 * 93 * 4);
  // A transpose: a strided inner dimension.
  CheckBufferCopy(this, *p, 1, 0, kDevice, kDevice, Transpose(64, 48), 64 * 48 * 4, 64 * 48 * 4);
  EXPECT_EQ(p->stats().cross_device_copies, 4);
  const bool peer =
      BoolAttribute(*p, 0, "peer_memory_import") && BoolAttribute(*p, 1, "peer_memory_import");
  const bool host_import =
      BoolAttribute(*p, 0, "external_memory_host") && BoolAttribute(*p, 1, "external_memory_host");
  EXPECT_EQ(peer,
            path == CrossDevicePath::kPeerImport && BoolAttribute(*p, 0, "external_memory_fd"));
  EXPECT_EQ(p->stats().peer_import_copies, peer ? 4 : 0);
  EXPECT_EQ(p->stats().shared_staging_copies,
            path == CrossDevicePath::kSharedStaging && host_import ? 4 : 0);
}

std::string CrossDeviceName(
    const ::testing::TestParamInfo<std::tuple<bool, CrossDevicePath>>& info) {
  return std::string(std::get<0>(info.param) ? "TwoLogicalDevices" : "TwoLavapipeIcds") + "_" +
         PathName(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(Topologies, CrossDeviceTest,
                         ::testing::Combine(::testing::Bool(),
                                            ::testing::Values(CrossDevicePath::kHostMemcpy,
                                                              CrossDevicePath::kSharedStaging,
                                                              CrossDevicePath::kPeerImport)),
                         CrossDeviceName);

// Imports of another device's blocks follow the blocks: a block kept for reuse keeps its import
// (the next buffer in it is read without importing again), a destroyed block drops its import in
// the destination device, and buffers may outlive their platform in any order.
TEST_F(VulkanPlatformTest, PeerImportsFollowTheSourceBlocks) {
  VulkanPlatformOptions o = TestOptions();
  o.logical_devices_per_gpu = 2;
  o.block_bytes = 1 << 20;
  MAKE_OR_SKIP(p, Make(1, o));
  ASSERT_EQ(p->device_count(), 2);
  if (!BoolAttribute(*p, 0, "peer_memory_import")) {
    GTEST_SKIP() << "no VK_KHR_external_memory_fd opaque-fd buffers";
  }
  // Dedicated blocks (above block_bytes / 2): a freed one is kept for the next buffer of its size,
  // and so is its import: each device's block is imported by the other once, in the first round.
  const int64_t n = 700 << 10;
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE(round);
    CheckBufferCopy(this, *p, 0, 1, kDevice, kDevice, Dense(n), n, n);
    CheckBufferCopy(this, *p, 1, 0, kDevice, kDevice, Dense(n), n, n);
    EXPECT_EQ(p->stats().peer_imports_live, 2);
  }
  EXPECT_EQ(p->stats().peer_import_copies, 6);
  EXPECT_EQ(p->BytesInUse(0, kDevice), 0);
  EXPECT_EQ(p->BytesInUse(1, kDevice), 0);
  // Device 0 frees more dedicated blocks of another size than it keeps: its 700 KiB block is
  // destroyed, and device 1's import of it with it.
  {
    std::vector<PlatformBufferRef> others;
    for (int i = 0; i < 4; ++i) others.push_back(Alloc(*p, 0, kDevice, 600 << 10));
  }
  EXPECT_EQ(p->stats().peer_imports_live, 1);

  // A source buffer kept past the platform, read by the other device first.
  auto src = Alloc(*p, 0, kDevice, 4096);
  auto dst = Alloc(*p, 1, kDevice, 4096);
  auto data = Pattern(4096, 5);
  ASSERT_TRUE(Write(*p, 0, src, data.data(), Dense(4096)).ok());
  ASSERT_TRUE(
      p->CopyBuffersToBuffers(1, {BufferToBufferCopy{src, dst, Dense(4096)}}, {}).Await().ok());
  EXPECT_EQ(ReadAll(*p, 1, dst), data);
  EXPECT_EQ(p->stats().peer_imports_live, 2);  // this block's, and device 1's kept block's
  dst.reset();
  p.reset();    // the importing device goes while the source block lives
  src.reset();  // then the source block: its hook finds the imports closed
}

TEST_F(VulkanPlatformTest, WrapHostMemoryInPlace) {
  MAKE_OR_SKIP(p, Make(1));
  const auto* import = p->device_info(0).attributes.Get("external_memory_host");
  if (!import || !std::get<bool>(*import)) {
    GTEST_SKIP() << "no VK_EXT_external_memory_host";
  }
  const int64_t n = 64 << 10;
  void* host = std::aligned_alloc(65536, n);
  std::memset(host, 0, n);
  std::atomic<int> released{0};
  auto wrapped = p->WrapHostMemory(0, kPinned, host, n, [&] { ++released; });
  ASSERT_TRUE(wrapped.ok()) << wrapped.status();
  EXPECT_EQ((*wrapped)->host_address(), host);
  auto data = Pattern(n, 21);
  ASSERT_TRUE(Write(*p, 0, *wrapped, data.data(), Dense(n)).ok());
  EXPECT_EQ(std::memcmp(host, data.data(), n), 0);  // written in place
  auto dev = Alloc(*p, 0, kDevice, n);
  ASSERT_TRUE(
      p->CopyBuffersToBuffers(0, {BufferToBufferCopy{*wrapped, dev, Dense(n)}}, {}).Await().ok());
  EXPECT_EQ(ReadAll(*p, 0, dev), data);
  wrapped->reset();
  EXPECT_EQ(released.load(), 1);
  std::free(host);

  auto device_memory = p->WrapHostMemory(0, kDevice, nullptr, 0, nullptr);
  EXPECT_EQ(device_memory.status().code(), absl::StatusCode::kUnimplemented);
  alignas(64) static char misaligned[4096 + 64];
  auto bad = p->WrapHostMemory(0, kPinned, misaligned + 64, 4096, nullptr);
  if (reinterpret_cast<uintptr_t>(misaligned + 64) % 4096 != 0) {
    EXPECT_EQ(bad.status().code(), absl::StatusCode::kUnimplemented);
  }
}

TEST_F(VulkanPlatformTest, AfterUnsetPromiseDelaysTheOperation) {
  MAKE_OR_SKIP(p, Make(1));
  auto buf = Alloc(*p, 0, kDevice, 4096);
  auto zeros = std::vector<uint8_t>(4096, 0), ones = std::vector<uint8_t>(4096, 1);
  ASSERT_TRUE(Write(*p, 0, buf, zeros.data(), Dense(4096)).ok());
  Promise<> gate;
  std::vector<Future<>> after = {gate.future()};
  Future<> w = p->CopyHostToBuffers(0, {HostToBufferCopy{ones.data(), buf, Dense(4096)}}, after);
  std::atomic<bool> ran{false};
  Future<> cb = p->EnqueueHostCallback(
      0,
      [&] {
        ran = true;
        return absl::OkStatus();
      },
      after);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(w.IsReady());
  EXPECT_FALSE(ran.load());
  gate.Set(absl::OkStatus());
  EXPECT_TRUE(w.Await().ok());
  EXPECT_TRUE(cb.Await().ok());
  EXPECT_TRUE(ran.load());
  EXPECT_EQ(ReadAll(*p, 0, buf), ones);
}

TEST_F(VulkanPlatformTest, AfterErrorFailsTheOperationAndTheStreamGoesOn) {
  MAKE_OR_SKIP(p, Make(1));
  auto buf = Alloc(*p, 0, kDevice, 1024);
  auto data = Pattern(1024, 5), other = Pattern(1024, 6);
  ASSERT_TRUE(Write(*p, 0, buf, data.data(), Dense(1024)).ok());
  std::vector<Future<>> bad = {MakeReadyFuture(absl::DataLossError("upstream broke"))};
  absl::Status s = Write(*p, 0, buf, other.data(), Dense(1024), bad);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(ReadAll(*p, 0, buf), data);  // the failed op did not run
  Future<> failing =
      p->EnqueueHostCallback(0, [] { return absl::AbortedError("callback failed"); }, {});
  std::vector<Future<>> after_fail = {failing};
  Future<> dependent =
      p->CopyBuffersToBuffers(0, {BufferToBufferCopy{buf, buf, Dense(0)}}, after_fail);
  EXPECT_EQ(failing.Await().code(), absl::StatusCode::kAborted);
  EXPECT_EQ(dependent.Await().code(), absl::StatusCode::kAborted);
  EXPECT_TRUE(Write(*p, 0, buf, other.data(), Dense(1024)).ok());
  EXPECT_EQ(ReadAll(*p, 0, buf), other);
}

TEST_F(VulkanPlatformTest, FailedSubmissionFailsTheOpAndItsDependents) {
  MAKE_OR_SKIP(p, Make(1));
  const int64_t n = 3 * kChunk + 1;
  auto buf = Alloc(*p, 0, kDevice, n);
  auto copy = Alloc(*p, 0, kDevice, n);
  auto data = Pattern(n, 31), other = Pattern(n, 32);
  ASSERT_TRUE(Write(*p, 0, buf, data.data(), Dense(n)).ok());
  for (int kind = 0; kind < 3; ++kind) {
    p->InjectSubmitFailuresForTesting(0, 1);
    std::vector<uint8_t> sink(n);
    Future<> failed =
        kind == 0   ? p->CopyHostToBuffers(0, {HostToBufferCopy{other.data(), buf, Dense(n)}}, {})
        : kind == 1 ? p->CopyBuffersToHost(0, {BufferToHostCopy{buf, sink.data(), Dense(n)}}, {})
                    : p->CopyBuffersToBuffers(0, {BufferToBufferCopy{buf, copy, Dense(n)}}, {});
    std::vector<Future<>> after = {failed};
    std::atomic<bool> ran{false};
    Future<> dependent = p->EnqueueHostCallback(
        0,
        [&] {
          ran = true;
          return absl::OkStatus();
        },
        after);
    EXPECT_EQ(failed.Await().code(), absl::StatusCode::kInternal) << kind;
    EXPECT_THAT(std::string(failed.Await().message()), HasSubstr("VK_ERROR_DEVICE_LOST"));
    EXPECT_EQ(dependent.Await().code(), absl::StatusCode::kInternal);
    EXPECT_FALSE(ran.load());
  }
  // The stream keeps working.
  ASSERT_TRUE(
      p->CopyBuffersToBuffers(0, {BufferToBufferCopy{buf, copy, Dense(n)}}, {}).Await().ok());
  EXPECT_EQ(ReadAll(*p, 0, copy), data);
}

TEST_F(VulkanPlatformTest, StreamOrder) {
  MAKE_OR_SKIP(p, Make(1));
  const int64_t n = 2 * kChunk + 5;
  auto buf = Alloc(*p, 0, kDevice, n);
  std::vector<std::vector<uint8_t>> versions, reads(6, std::vector<uint8_t>(n));
  for (int i = 0; i < 6; ++i) versions.push_back(Pattern(n, 100 + i));
  std::vector<int> order;
  absl::Mutex mu;
  std::vector<Future<>> futures;
  for (int i = 0; i < 6; ++i) {
    futures.push_back(
        p->CopyHostToBuffers(0, {HostToBufferCopy{versions[i].data(), buf, Dense(n)}}, {}));
    futures.push_back(
        p->CopyBuffersToHost(0, {BufferToHostCopy{buf, reads[i].data(), Dense(n)}}, {}));
    futures.push_back(p->EnqueueHostCallback(0,
                                             [&, i] {
                                               absl::MutexLock l(&mu);
                                               order.push_back(i);
                                               return absl::OkStatus();
                                             },
                                             {}));
  }
  for (auto& f : futures) EXPECT_TRUE(f.Await().ok());
  for (int i = 0; i < 6; ++i) EXPECT_TRUE(reads[i] == versions[i]) << i;
  EXPECT_THAT(order, ::testing::ElementsAre(0, 1, 2, 3, 4, 5));
}

TEST_F(VulkanPlatformTest, ConcurrentEnqueuesFromThreads) {
  MAKE_OR_SKIP(p, MakeTwo(false));
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      const int dev = t % p->device_count();
      for (int i = 0; i < 10; ++i) {
        const int64_t n = 1000 + 7919 * (t * 10 + i);
        auto data = Pattern(n, t * 100 + i);
        auto buf = p->Allocate(dev, i % 2, n);
        if (!buf.ok()) {
          ++failures;
          continue;
        }
        std::vector<uint8_t> got(n);
        Future<> w = p->CopyHostToBuffers(dev, {HostToBufferCopy{data.data(), *buf, Dense(n)}}, {});
        std::vector<Future<>> after = {w};
        Future<> r =
            p->CopyBuffersToHost(dev, {BufferToHostCopy{*buf, got.data(), Dense(n)}}, after);
        if (!r.Await().ok() || got != data) ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST_F(VulkanPlatformTest, DestructionDrainsWorkInFlight) {
  MAKE_OR_SKIP(p, MakeTwo(false));
  const int64_t n = 4 * kChunk;
  auto data = Pattern(n, 9);
  std::vector<Future<>> futures;
  PlatformBufferRef survivor;
  for (int i = 0; i < 8; ++i) {
    auto buf = Alloc(*p, i % p->device_count(), kDevice, n);
    futures.push_back(p->CopyHostToBuffers(i % p->device_count(),
                                           {HostToBufferCopy{data.data(), buf, Dense(n)}}, {}));
    if (p->device_count() > 1) {
      auto dst = Alloc(*p, 1 - i % 2, kDevice, n);
      std::vector<Future<>> after = {futures.back()};
      futures.push_back(
          p->CopyBuffersToBuffers(1 - i % 2, {BufferToBufferCopy{buf, dst, Dense(n)}}, after));
    }
    survivor = buf;
  }
  Promise<> never;
  std::vector<Future<>> blocked_after = {never.future()};
  Future<> blocked = p->EnqueueHostCallback(
      0, [] { return absl::OkStatus(); }, blocked_after);
  p.reset();
  for (auto& f : futures) EXPECT_TRUE(f.Await().ok());
  EXPECT_EQ(blocked.Await().code(), absl::StatusCode::kCancelled);
  never.Set(absl::OkStatus());  // after the platform is gone: harmless
  EXPECT_EQ(survivor->size_bytes(), n);
  survivor.reset();  // the last buffer releases its VkDevice
}

}  // namespace
}  // namespace tessera
