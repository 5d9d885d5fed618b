// Small operations on a CPU client run inline on the calling thread (backends/cpu/cpu_stream.h):
// their futures are set when the call returns, their bytes are bit-exact and already counted, and
// the same calls are exact with the inline threshold forced to everything and to nothing
// (TESSERA_CPU_INLINE_MAX_BYTES, read when the client is created).

#include <cstdlib>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tessera.h"
#include "tests/testing/status_matchers.h"

namespace tessera {
namespace {

using ::tessera::testing::IsOk;

class InlineDispatchTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam().empty()) {
      unsetenv("TESSERA_CPU_INLINE_MAX_BYTES");
    } else {
      setenv("TESSERA_CPU_INLINE_MAX_BYTES", GetParam().c_str(), 1);
    }
    absl::StatusOr<std::shared_ptr<Client>> client =
        CreateClient({.cpu_devices = 8, .vulkan = VulkanMode::kOff});
    unsetenv("TESSERA_CPU_INLINE_MAX_BYTES");
    ASSERT_THAT(client.status(), IsOk());
    client_ = *client;
    absl::StatusOr<DeviceListRef> devices = client_->MakeDeviceList(client_->devices());
    ASSERT_THAT(devices.status(), IsOk());
    devices_ = *devices;
  }

  // Nothing of a few bytes runs inline (a threshold of 0 inlines only empty operations).
  bool ForcedOff() const { return GetParam() == "never" || GetParam() == "0"; }

  ShardingRef Named(const std::string& spec) const {
    return *NamedSharding::Create(*sharding::Mesh::Parse("mesh{x=8}"),
                                  *sharding::PartitionSpec::Parse(spec), devices_, MemoryKind());
  }

  std::shared_ptr<Client> client_;
  DeviceListRef devices_;
};

TEST_P(InlineDispatchTest, SmallUploadIsReadyOnReturnAndCounted) {
  const std::vector<float> host = {1, 2, 3, 4, 5, 6, 7, 8};
  ASSERT_OK_AND_ASSIGN(ArrayRef a,
                       client_->MakeArrayFromHostBuffer(
                           host.data(), DType(DType::kF32), Shape({8}), std::nullopt,
                           SingleDeviceSharding::Create(client_->devices()[3], MemoryKind()),
                           HostBufferSemantics::kImmutableUntilTransferCompletes, nullptr));
  if (!ForcedOff()) {
    EXPECT_TRUE(a->GetReadyFuture().IsReady());
    EXPECT_EQ(client_->transfer_stats().host_to_device.bytes, 32);
  }
  std::vector<float> back(8, 0.0f);
  Future<> copied = a->CopyToHostBuffer(back.data(), std::nullopt, ArrayCopySemantics::kAlwaysCopy);
  if (!ForcedOff()) {
    EXPECT_TRUE(copied.IsReady());
  }
  ASSERT_THAT(copied.Await(), IsOk());
  EXPECT_EQ(back, host);
  EXPECT_EQ(client_->transfer_stats().device_to_host.bytes, 32);
}

TEST_P(InlineDispatchTest, SmallReshardIsReadyOnReturnAndExact) {
  std::vector<float> host(64);
  std::iota(host.begin(), host.end(), 0.0f);
  const Shape shape({8, 8});
  ASSERT_OK_AND_ASSIGN(ArrayRef rows,
                       client_->MakeArrayFromHostBuffer(
                           host.data(), DType(DType::kF32), shape, std::nullopt, Named("P(x,None)"),
                           HostBufferSemantics::kImmutableOnlyDuringCall, nullptr));
  ASSERT_THAT(rows->GetReadyFuture().Await(), IsOk());
  const TransferStats before = client_->transfer_stats();
  // Twice: the second finds its plan by the shardings' identity.
  for (int round = 0; round < 2; ++round) {
    ASSERT_OK_AND_ASSIGN(
        std::vector<ArrayRef> cols,
        client_->ReshardArrays(absl::MakeSpan(&rows, 1),
                               {ArraySpec{DType(DType::kF32), shape, Named("P(None,x)")}},
                               ArrayCopySemantics::kReuseInput));
    if (!ForcedOff()) {
      EXPECT_TRUE(cols[0]->GetReadyFuture().IsReady());
    }
    std::vector<float> back(64, -1.0f);
    ASSERT_THAT(cols[0]
                    ->CopyToHostBuffer(back.data(), std::nullopt, ArrayCopySemantics::kAlwaysCopy)
                    .Await(),
                IsOk());
    EXPECT_EQ(back, host) << "round " << round;
  }
  // 56 of the 64 elements cross devices in each round (the diagonal stays in place).
  EXPECT_EQ(client_->transfer_stats().device_to_device.bytes - before.device_to_device.bytes,
            2 * 56 * 4);
}

TEST_P(InlineDispatchTest, LargeReshardIsExact) {
  const int64_t n = 1024;  // 4 MiB: each device's share is above the default threshold
  std::vector<float> host(n * n);
  std::iota(host.begin(), host.end(), 0.0f);
  const Shape shape({n, n});
  ASSERT_OK_AND_ASSIGN(ArrayRef rows,
                       client_->MakeArrayFromHostBuffer(
                           host.data(), DType(DType::kF32), shape, std::nullopt, Named("P(x,None)"),
                           HostBufferSemantics::kImmutableOnlyDuringCall, nullptr));
  ASSERT_OK_AND_ASSIGN(
      std::vector<ArrayRef> cols,
      client_->ReshardArrays(absl::MakeSpan(&rows, 1),
                             {ArraySpec{DType(DType::kF32), shape, Named("P(None,x)")}},
                             ArrayCopySemantics::kAlwaysCopy));
  std::vector<float> back(n * n, -1.0f);
  ASSERT_THAT(
      cols[0]->CopyToHostBuffer(back.data(), std::nullopt, ArrayCopySemantics::kAlwaysCopy).Await(),
      IsOk());
  EXPECT_EQ(back, host);
}

INSTANTIATE_TEST_SUITE_P(Thresholds, InlineDispatchTest,
                         ::testing::Values(std::string(), std::string("always"),
                                           std::string("never"), std::string("0")),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param.empty()  ? std::string("Default")
                                  : info.param == "0" ? std::string("Zero")
                                                      : info.param;
                         });

}  // namespace
}  // namespace tessera
