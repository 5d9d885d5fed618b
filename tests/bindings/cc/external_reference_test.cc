// Array::AcquireExternalReference, the zero-copy export the bindings build DLPack on: the address
// of a single-device CPU array's bytes, which keeps them alive; the errors it names otherwise.

#include <cstring>
#include <memory>
#include <numeric>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tessera.h"
#include "tests/testing/status_matchers.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;

class ExternalReferenceTest : public ::testing::Test {
 protected:
  void SetUp() override { client_ = *CreateClient({.cpu_devices = 2, .vulkan = VulkanMode::kOff}); }
  ArrayRef Put(const std::vector<float>& data, ShardingRef sharding) {
    return *client_->MakeArrayFromHostBuffer(
        data.data(), DType(DType::kF32), Shape({static_cast<int64_t>(data.size())}), std::nullopt,
        std::move(sharding), HostBufferSemantics::kImmutableOnlyDuringCall, {});
  }
  std::shared_ptr<Client> client_;
};

TEST_F(ExternalReferenceTest, SingleDeviceCpuArraySharesItsBytesAndKeepsThemAlive) {
  std::vector<float> data(1000);
  std::iota(data.begin(), data.end(), 0.0f);
  ArrayRef a = Put(data, SingleDeviceSharding::Create(client_->devices()[1], MemoryKind()));
  ASSERT_TRUE(a->GetReadyFuture().Await().ok());
  absl::StatusOr<std::shared_ptr<void>> ref = a->AcquireExternalReference();
  ASSERT_TRUE(ref.ok()) << ref.status();
  absl::StatusOr<std::shared_ptr<void>> again = a->AcquireExternalReference();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(ref->get(), again->get());  // the buffer itself, not a copy
  a->Delete().Await().IgnoreError();
  a.reset();
  EXPECT_EQ(std::memcmp(ref->get(), data.data(), data.size() * sizeof(float)), 0);
}

TEST_F(ExternalReferenceTest, ZeroCopyImportExportsTheCallersMemory) {
  alignas(64) static float data[64];
  for (int i = 0; i < 64; ++i) data[i] = static_cast<float>(i);
  ArrayRef a = *client_->MakeArrayFromHostBuffer(
      data, DType(DType::kF32), Shape({64}), std::nullopt,
      SingleDeviceSharding::Create(client_->devices()[0], MemoryKind()),
      HostBufferSemantics::kImmutableZeroCopy, {});
  absl::StatusOr<std::shared_ptr<void>> ref = a->AcquireExternalReference();
  ASSERT_TRUE(ref.ok()) << ref.status();
  EXPECT_EQ(ref->get(), static_cast<void*>(data));
}

TEST_F(ExternalReferenceTest, ShardedAndDeletedArraysHaveNone) {
  std::vector<float> data(8, 1.0f);
  DeviceListRef both = *client_->MakeDeviceList(client_->devices());
  ArrayRef sharded =
      Put(data, *ShardingParamSharding::Create(*sharding::ShardingParam::Parse("2 to [0] on 2"),
                                               both, MemoryKind()));
  EXPECT_THAT(sharded->AcquireExternalReference().status(),
              testing::StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("on 2 devices")));
  ArrayRef one = Put(data, SingleDeviceSharding::Create(client_->devices()[0], MemoryKind()));
  one->Delete().Await().IgnoreError();
  EXPECT_THAT(one->AcquireExternalReference().status(),
              testing::StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("deleted")));
}

}  // namespace
}  // namespace tessera
