// Vulkan device memory is accounted per heap (backends/vulkan/heap_budget.h): a client whose GPUs
// are full gets RESOURCE_EXHAUSTED at the call that would overflow them, before any byte moves; the
// call's partial allocations are released and its inputs stay readable, bit for bit. Runs on two
// logical devices of one lavapipe device with a 4 MiB heap limit; skips where there is no Vulkan
// driver at all.

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backends/vulkan/vulkan_platform.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ifrt/runtime/runtime_client.h"
#include "tests/ifrt/test_util.h"
#include "tests/testing/vulkan_icds.h"

namespace tessera {
namespace {

using testing::DevicesAt;
using ::testing::HasSubstr;
using testing::MakeArray;
using testing::Pattern;
using testing::ReadBack;
using testing::RowSharding;

// The array's bytes, or a failure naming the status.
void ExpectContents(const ArrayRef& array, const std::vector<uint8_t>& expected) {
  absl::StatusOr<std::vector<uint8_t>> back = ReadBack(array);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(*back == expected) << "read back differs";
}

constexpr int64_t kHeapLimit = 4 << 20;

class HeapLimitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::tessera::testing::SetVulkanIcdsIfUnset(TESSERA_IFRT_TEST_ICDS);
    VulkanPlatformOptions o;
    o.logical_devices_per_gpu = 2;
    o.heap_limit_bytes = kHeapLimit;
    o.block_bytes = 1 << 20;
    o.staging_chunk_bytes = 64 << 10;
    absl::StatusOr<std::unique_ptr<VulkanPlatform>> vk = CreateVulkanPlatform(o);
    if (!vk.ok()) GTEST_SKIP() << "no Vulkan platform: " << vk.status();
    std::vector<std::unique_ptr<Platform>> platforms;
    platforms.push_back(*std::move(vk));
    auto c = runtime::RuntimeClient::Create(std::move(platforms), guard::Policy());
    ASSERT_TRUE(c.ok()) << c.status();
    client_ = *std::move(c);
    client_->transfer_guard().SetDefaultLogSinkEnabled(false);
    // Devices 0 and 1 are the two logical devices of the first GPU: one heap between them.
    ASSERT_GE(client_->devices().size(), 2u);
    both_ = DevicesAt(*client_, {0, 1});
    reversed_ = DevicesAt(*client_, {1, 0});
  }

  int64_t BytesInUse() const {
    int64_t total = 0;
    for (Device* d : client_->devices()) {
      for (Memory* m : d->Memories()) total += m->BytesInUse();
    }
    return total;
  }

  // A [rows, 1024] f32 array in rows over both devices: rows * 2 KiB on each.
  absl::StatusOr<ArrayRef> Make(int64_t rows, const std::vector<uint8_t>& data) {
    return MakeArray(*client_, data, DType(DType::kF32), Shape({rows, 1024}), RowSharding(both_));
  }

  std::shared_ptr<runtime::RuntimeClient> client_;
  DeviceListRef both_, reversed_;
};

TEST_F(HeapLimitTest, MakeArrayPastTheHeapIsResourceExhaustedAndReleasesItsShards) {
  // 1.5 MiB per device, twice: 3 MiB of the 4 MiB heap both devices share.
  const int64_t rows = 768;
  std::vector<uint8_t> a_data = Pattern(rows * 4096, 1), b_data = Pattern(rows * 4096, 2);
  absl::StatusOr<ArrayRef> a = Make(rows, a_data);
  ASSERT_TRUE(a.ok()) << a.status();
  const int64_t in_use = BytesInUse();
  // The second array's first shard fits, its second does not.
  absl::StatusOr<ArrayRef> b = Make(rows, b_data);
  ASSERT_EQ(b.status().code(), absl::StatusCode::kResourceExhausted) << b.status();
  EXPECT_THAT(std::string(b.status().message()), HasSubstr("memory heap"));
  EXPECT_EQ(BytesInUse(), in_use) << "the failed call's first shard is still held";
  ExpectContents(*a, a_data);
  // Once the first array is gone, the second fits.
  (*a)->Delete().Await().IgnoreError();
  a->reset();
  b = Make(rows, b_data);
  ASSERT_TRUE(b.ok()) << b.status();
  ExpectContents(*b, b_data);
}

TEST_F(HeapLimitTest, ReshardPastTheHeapFailsBeforeAnyByteMovesAndKeepsTheInput) {
  const int64_t rows = 768;
  std::vector<uint8_t> data = Pattern(rows * 4096, 3);
  absl::StatusOr<ArrayRef> a = Make(rows, data);
  ASSERT_TRUE(a.ok()) << a.status();
  const TransferStats before = client_->transfer_stats();
  // Swapping the rows between the devices needs a second copy of everything: 3 MiB more.
  std::vector<ArrayRef> in = {*a};
  std::vector<ArraySpec> specs = {
      ArraySpec{DType(DType::kF32), Shape({rows, 1024}), RowSharding(reversed_)}};
  auto out = client_->ReshardArrays(absl::MakeSpan(in), specs, ArrayCopySemantics::kDonateInput);
  ASSERT_EQ(out.status().code(), absl::StatusCode::kResourceExhausted) << out.status();
  EXPECT_EQ(client_->transfer_stats().device_to_device.bytes, before.device_to_device.bytes)
      << "bytes moved before the allocation failed";
  EXPECT_FALSE((*a)->IsDeleted()) << "a failed donation deleted its input";
  ExpectContents(*a, data);
}

}  // namespace
}  // namespace tessera
