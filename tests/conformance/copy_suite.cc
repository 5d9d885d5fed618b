// Client::CopyArrays: same, reversed and other devices, batches, donation, memory kinds.
// Part of the API-contract suite (tests/conformance/client_conformance.h), instantiated for every
// registered client factory.

// GCC 12 reports false -Wmaybe-uninitialized inside absl::InlinedVector moves (Shape, Index).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tessera.h"
#include "tests/conformance/client_conformance.h"
#include "tests/ifrt/test_util.h"

namespace tessera::conformance {
namespace {

using ::tessera::testing::IsOk;
using ::tessera::testing::MakeArray;
using ::tessera::testing::Pattern;
using ::tessera::testing::RowSharding;
using ::tessera::testing::StatusIs;
using ::testing::HasSubstr;

class CopyArraysTest : public ClientConformanceTest {};

// CopyArrays

TEST_P(CopyArraysTest, CopyArraysSameAndReversedDevices) {
  const Shape shape({8, 6});
  const std::vector<uint8_t> data = Pattern(8 * 6 * 4, 7);
  for (const ShardingRef& s : {RowSharding(All()), PartiallyTiled(All())}) {
    SCOPED_TRACE(s->DebugString());
    ASSERT_OK_AND_ASSIGN(ArrayRef a, MakeArray(client(), data, kS32, shape, s));
    ASSERT_THAT(a->GetReadyFuture().Await(), IsOk());
    std::vector<ArrayRef> in = {a};

    // Same devices, kReuseInput: nothing moves.
    TransferStats before = client().transfer_stats();
    ASSERT_OK_AND_ASSIGN(std::vector<ArrayRef> same,
                         client().CopyArrays(absl::MakeSpan(in), std::nullopt, std::nullopt,
                                             ArrayCopySemantics::kReuseInput));
    ASSERT_EQ(same.size(), 1u);
    EXPECT_EQ(same[0]->sharding(), *s);
    ExpectContents(same[0], data);
    EXPECT_EQ(client().transfer_stats().local, before.local);
    EXPECT_EQ(client().transfer_stats().device_to_device, before.device_to_device);

    // Same devices, kAlwaysCopy: local copies only.
    before = client().transfer_stats();
    ASSERT_OK_AND_ASSIGN(std::vector<ArrayRef> copy,
                         client().CopyArrays(absl::MakeSpan(in), All(), std::nullopt,
                                             ArrayCopySemantics::kAlwaysCopy));
    ASSERT_THAT(copy[0]->GetReadyFuture().Await(), IsOk());
    TransferStats after = client().transfer_stats();
    EXPECT_GT(after.local.bytes, before.local.bytes);
    EXPECT_EQ(after.device_to_device, before.device_to_device);
    EXPECT_EQ(copy[0]->sharding(), *s);
    ExpectContents(copy[0], data);

    // Reversed devices.
    ASSERT_OK_AND_ASSIGN(std::vector<ArrayRef> rev,
                         client().CopyArrays(absl::MakeSpan(in), Reversed(), std::nullopt,
                                             ArrayCopySemantics::kAlwaysCopy));
    ASSERT_OK_AND_ASSIGN(ShardingRef expected, s->WithDeviceAssignment(Reversed(), std::nullopt));
    EXPECT_EQ(rev[0]->sharding(), *expected);
    ExpectContents(rev[0], data);
    static_cast<void>(a->Delete());
    ExpectContents(copy[0], data);
    ExpectContents(rev[0], data);
  }
}

TEST_P(CopyArraysTest, CopyArraysBatchedAndDonated) {
  const Shape shape({6, 4});
  const std::vector<uint8_t> d1 = Pattern(6 * 4 * 4, 1), d2 = Pattern(6 * 4 * 4, 2);
  ShardingRef s = RowSharding(FirstHalf());
  ASSERT_OK_AND_ASSIGN(ArrayRef a, MakeArray(client(), d1, kS32, shape, s));
  ASSERT_OK_AND_ASSIGN(ArrayRef b, MakeArray(client(), d2, kF32, shape, s));
  std::vector<ArrayRef> in = {a, b};
  ASSERT_OK_AND_ASSIGN(std::vector<ArrayRef> out,
                       client().CopyArrays(absl::MakeSpan(in), SecondHalf(), std::nullopt,
                                           ArrayCopySemantics::kDonateInput));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_TRUE(a->IsDeleted());
  EXPECT_TRUE(b->IsDeleted());
  EXPECT_EQ(*out[0]->sharding().devices(), *SecondHalf());
  EXPECT_EQ(out[1]->dtype(), kF32);
  ExpectContents(out[0], d1);
  ExpectContents(out[1], d2);
  // No arrays: nothing to do.
  EXPECT_THAT(client().CopyArrays({}, All(), std::nullopt, ArrayCopySemantics::kAlwaysCopy),
              IsOk());
}

TEST_P(CopyArraysTest, CopyArraysRejectsMixedInputsAndBadTargets) {
  const Shape shape({4, 4});
  const std::vector<uint8_t> data = Pattern(64, 1);
  ASSERT_OK_AND_ASSIGN(ArrayRef a, MakeArray(client(), data, kS32, shape, RowSharding(All())));
  ASSERT_OK_AND_ASSIGN(ArrayRef b, MakeArray(client(), data, kS32, shape, RowSharding(Reversed())));
  std::vector<ArrayRef> mixed = {a, b};
  EXPECT_THAT(client().CopyArrays(absl::MakeSpan(mixed), std::nullopt, std::nullopt,
                                  ArrayCopySemantics::kDonateInput),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("same device list")));
  EXPECT_FALSE(a->IsDeleted());
  EXPECT_FALSE(b->IsDeleted());
  std::vector<ArrayRef> one = {a};
  EXPECT_THAT(client().CopyArrays(absl::MakeSpan(one), FirstHalf(), std::nullopt,
                                  ArrayCopySemantics::kAlwaysCopy),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("devices")));
  EXPECT_THAT(client().CopyArrays(absl::MakeSpan(one), std::nullopt, MemoryKind("no_such_kind"),
                                  ArrayCopySemantics::kAlwaysCopy),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("no_such_kind")));
  std::vector<ArrayRef> with_null = {a, nullptr};
  EXPECT_THAT(client().CopyArrays(absl::MakeSpan(with_null), std::nullopt, std::nullopt,
                                  ArrayCopySemantics::kAlwaysCopy),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("null")));

  // Mixed memory kinds, where some devices have two.
  const std::vector<int> vk = OfKind("vulkan");
  if (vk.empty()) return;
  DeviceListRef vk_devices = At(vk);
  ASSERT_OK_AND_ASSIGN(
      ArrayRef in_device,
      MakeArray(client(), data, kS32, shape, RowSharding(vk_devices, MemoryKind("device"))));
  ASSERT_OK_AND_ASSIGN(
      ArrayRef in_pinned,
      MakeArray(client(), data, kS32, shape, RowSharding(vk_devices, MemoryKind("pinned_host"))));
  std::vector<ArrayRef> kinds = {in_device, in_pinned};
  EXPECT_THAT(client().CopyArrays(absl::MakeSpan(kinds), std::nullopt, std::nullopt,
                                  ArrayCopySemantics::kAlwaysCopy),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("same memory kind")));
}

TEST_P(CopyArraysTest, CopyArraysTreatsTheDefaultKindByNameAsTheDefault) {
  // MemoryKind() and the default memory's own name are the same memory: arrays
  // placed either way may be copied together.
  Device* d0 = client().devices()[0];
  ASSERT_OK_AND_ASSIGN(Memory * memory, d0->DefaultMemory());
  const std::vector<uint8_t> data = Pattern(4 * 4 * 4, 9);
  ASSERT_OK_AND_ASSIGN(ArrayRef unnamed, MakeArray(client(), data, kS32, Shape({4, 4}),
                                                   SingleDeviceSharding::Create(d0, MemoryKind())));
  ASSERT_OK_AND_ASSIGN(ArrayRef named, MakeArray(client(), data, kS32, Shape({4, 4}),
                                                 SingleDeviceSharding::Create(d0, memory->Kind())));
  std::vector<ArrayRef> both = {unnamed, named};
  ASSERT_OK_AND_ASSIGN(std::vector<ArrayRef> copies,
                       client().CopyArrays(absl::MakeSpan(both), At({1}), std::nullopt,
                                           ArrayCopySemantics::kAlwaysCopy));
  ASSERT_EQ(copies.size(), 2u);
  ExpectContents(copies[0], data);
  ExpectContents(copies[1], data);
}

TEST_P(CopyArraysTest, CopyArraysToAnotherMemoryKind) {
  const std::vector<int> vk = OfKind("vulkan");
  if (vk.empty()) GTEST_SKIP() << "CPU devices have a single memory kind (host)";
  DeviceListRef vk_devices = At(vk);
  for (Device* d : vk_devices->devices()) {
    std::vector<std::string> kinds;
    for (Memory* m : d->Memories()) kinds.push_back(m->Kind().DebugString());
    EXPECT_THAT(kinds, ::testing::IsSupersetOf({"device", "pinned_host"})) << d->DebugString();
  }
  const Shape shape({10, 6});
  const std::vector<uint8_t> data = Pattern(10 * 6 * 4, 9);
  ASSERT_OK_AND_ASSIGN(ArrayRef a, MakeArray(client(), data, kF32, shape, RowSharding(vk_devices)));
  std::vector<ArrayRef> in = {a};
  ASSERT_OK_AND_ASSIGN(
      std::vector<ArrayRef> pinned,
      client().CopyArrays(absl::MakeSpan(in), std::nullopt, MemoryKind("pinned_host"),
                          ArrayCopySemantics::kAlwaysCopy));
  EXPECT_EQ(pinned[0]->sharding().memory_kind(), MemoryKind("pinned_host"));
  ASSERT_OK_AND_ASSIGN(ShardingRef expected,
                       a->sharding().WithDeviceAssignment(std::nullopt, MemoryKind("pinned_host")));
  EXPECT_EQ(pinned[0]->sharding(), *expected);
  ExpectContents(pinned[0], data);
  // And back, to the reversed devices, in "device" memory.
  std::vector<int> rvk(vk.rbegin(), vk.rend());
  std::vector<ArrayRef> in2 = {pinned[0]};
  ASSERT_OK_AND_ASSIGN(std::vector<ArrayRef> back,
                       client().CopyArrays(absl::MakeSpan(in2), At(rvk), MemoryKind("device"),
                                           ArrayCopySemantics::kDonateInput));
  EXPECT_TRUE(pinned[0]->IsDeleted());
  EXPECT_EQ(back[0]->sharding().memory_kind(), MemoryKind("device"));
  ExpectContents(back[0], data);
}

TESSERA_INSTANTIATE_CLIENT_SUITE(CopyArraysTest);

}  // namespace
}  // namespace tessera::conformance
