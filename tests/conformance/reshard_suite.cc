// Client::ReshardArrays: chains of shardings, device counts, batches; bad specs.
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
using ::tessera::testing::ReplicatedSharding;
using ::tessera::testing::RowSharding;
using ::tessera::testing::StatusIs;
using ::testing::_;
using ::testing::HasSubstr;

class ReshardTest : public ClientConformanceTest {};

// ReshardArrays

TEST_P(ReshardTest, ReshardRoundTripsOnTheSameDevices) {
  const Shape shape({8, 6});
  const std::vector<uint8_t> data = Pattern(8 * 6 * 4, 12);
  ASSERT_OK_AND_ASSIGN(ArrayRef a,
                       MakeArray(client(), data, kF32, shape, ReplicatedSharding(All(), shape)));
  const std::vector<ShardingRef> chain = {
      RowSharding(All()), PartiallyTiled(All()),
      testing::Named(absl::StrCat("mesh{x=", n_ / 2, ",y=2}"), "P(x,y)", Reversed()),
      ReplicatedSharding(All(), shape)};
  for (ArrayCopySemantics sem : {ArrayCopySemantics::kAlwaysCopy, ArrayCopySemantics::kReuseInput,
                                 ArrayCopySemantics::kDonateInput}) {
    for (const ShardingRef& s : chain) {
      SCOPED_TRACE(absl::StrCat(ArrayCopySemanticsName(sem), " -> ", s->DebugString()));
      std::vector<ArrayRef> in = {a};
      std::vector<ArraySpec> specs = {{kF32, shape, s}};
      ASSERT_OK_AND_ASSIGN(std::vector<ArrayRef> out,
                           client().ReshardArrays(absl::MakeSpan(in), specs, sem));
      ASSERT_EQ(out.size(), 1u);
      EXPECT_EQ(out[0]->sharding(), *s);
      EXPECT_EQ(a->IsDeleted(), sem == ArrayCopySemantics::kDonateInput);
      ExpectContents(out[0], data);
      a = out[0];
    }
  }
}

TEST_P(ReshardTest, ReshardAcrossDeviceCounts) {
  const Shape shape({13, 7});
  const std::vector<uint8_t> data = Pattern(13 * 7 * 2, 13);
  const DType bf16(DType::kBF16);
  ASSERT_OK_AND_ASSIGN(ArrayRef a,
                       MakeArray(client(), data, bf16, shape, ReplicatedSharding(All(), shape)));
  const std::vector<ShardingRef> chain = {
      RowSharding(SecondHalf()),
      SingleDeviceSharding::Create(client().devices()[0], MemoryKind()),
      testing::ParamSharding(absl::StrCat("1x", n_ / 2, " to [0] on ", n_ / 2), FirstHalf()),
      PartiallyTiled(All()),
      ReplicatedSharding(FirstHalf(), shape),
      ReplicatedSharding(All(), shape)};
  for (const ShardingRef& s : chain) {
    SCOPED_TRACE(s->DebugString());
    std::vector<ArrayRef> in = {a};
    std::vector<ArraySpec> specs = {{bf16, shape, s}};
    ASSERT_OK_AND_ASSIGN(
        std::vector<ArrayRef> out,
        client().ReshardArrays(absl::MakeSpan(in), specs, ArrayCopySemantics::kDonateInput));
    ExpectContents(out[0], data);
    a = out[0];
  }
}

TEST_P(ReshardTest, ReshardBatchedOverSeveralArrays) {
  const std::vector<Shape> shapes = {Shape({7, 5}), Shape({0, 5}), Shape({13}), Shape({4, 4, 2})};
  const std::vector<DType> dtypes = {kS32, kF32, DType(DType::kU8), DType(DType::kF64)};
  std::vector<ArrayRef> in;
  std::vector<std::vector<uint8_t>> data;
  std::vector<ArraySpec> specs;
  for (size_t i = 0; i < shapes.size(); ++i) {
    data.push_back(Pattern(testing::ByteSize(dtypes[i], shapes[i]), 50 + i));
    ShardingRef src = shapes[i].rank() == 1
                          ? testing::ParamSharding(absl::StrCat(n_, " to [0] on ", n_), All())
                          : ReplicatedSharding(All(), shapes[i]);
    ASSERT_OK_AND_ASSIGN(ArrayRef a, MakeArray(client(), data.back(), dtypes[i], shapes[i], src));
    in.push_back(a);
    ShardingRef dst =
        shapes[i].rank() == 1 ? ReplicatedSharding(Reversed(), shapes[i])
        : shapes[i].rank() == 2
            ? RowSharding(Reversed())
            : testing::ParamSharding(absl::StrCat("1x", n_, "x1 to [0] on ", n_), All());
    specs.push_back({dtypes[i], shapes[i], dst});
  }
  ASSERT_OK_AND_ASSIGN(
      std::vector<ArrayRef> out,
      client().ReshardArrays(absl::MakeSpan(in), specs, ArrayCopySemantics::kAlwaysCopy));
  ASSERT_EQ(out.size(), in.size());
  ASSERT_THAT(client().GetReadyFuture(out).Await(), IsOk());
  for (size_t i = 0; i < out.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(out[i]->sharding(), *specs[i].sharding);
    EXPECT_EQ(out[i]->dtype(), dtypes[i]);
    ExpectContents(out[i], data[i]);
    ExpectContents(in[i], data[i]);
  }
}

TEST_P(ReshardTest, ReshardRejectsBadInput) {
  const Shape shape({4, 6});
  const std::vector<uint8_t> data = Pattern(4 * 6 * 4, 1);
  ASSERT_OK_AND_ASSIGN(ArrayRef a, MakeArray(client(), data, kS32, shape, RowSharding(All())));
  ASSERT_OK_AND_ASSIGN(ArrayRef b, MakeArray(client(), data, kS32, shape, RowSharding(All())));
  std::vector<ArrayRef> in = {a};
  const auto sem = ArrayCopySemantics::kDonateInput;
  ShardingRef good = ReplicatedSharding(All(), shape);
  std::vector<ArraySpec> none;
  EXPECT_THAT(client().ReshardArrays(absl::MakeSpan(in), none, sem),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("specs")));
  std::vector<ArraySpec> dtype = {{kF32, shape, good}};
  EXPECT_THAT(client().ReshardArrays(absl::MakeSpan(in), dtype, sem),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("does not convert")));
  std::vector<ArraySpec> shape_spec = {
      {kS32, Shape({6, 4}), ReplicatedSharding(All(), Shape({6, 4}))}};
  EXPECT_THAT(client().ReshardArrays(absl::MakeSpan(in), shape_spec, sem),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("[6,4]")));
  std::vector<ArraySpec> null_sharding = {{kS32, shape, nullptr}};
  EXPECT_THAT(client().ReshardArrays(absl::MakeSpan(in), null_sharding, sem),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("null")));
  std::vector<ArraySpec> opaque = {{kS32, shape, OpaqueSharding::Create(All(), MemoryKind())}};
  EXPECT_THAT(client().ReshardArrays(absl::MakeSpan(in), opaque, sem),
              StatusIs(absl::StatusCode::kUnimplemented, _));
  std::vector<ArraySpec> unknown_kind = {
      {kS32, shape, ReplicatedSharding(All(), shape, MemoryKind("no_such_kind"))}};
  EXPECT_THAT(client().ReshardArrays(absl::MakeSpan(in), unknown_kind, sem),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("no_such_kind")));
  // Devices of another client.
  absl::StatusOr<std::shared_ptr<Client>> other =
      CreateClient({.cpu_devices = 1, .vulkan = VulkanMode::kOff});
  ASSERT_THAT(other, IsOk());
  std::vector<ArraySpec> foreign = {
      {kS32, shape, SingleDeviceSharding::Create((*other)->devices()[0], MemoryKind())}};
  EXPECT_THAT(client().ReshardArrays(absl::MakeSpan(in), foreign, sem),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("another client")));
  // The second of two specs is bad: the call fails as a whole and donates
  // nothing.
  std::vector<ArrayRef> two = {a, b};
  std::vector<ArraySpec> second_bad = {{kS32, shape, good}, {kF32, shape, good}};
  EXPECT_THAT(client().ReshardArrays(absl::MakeSpan(two), second_bad, sem),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("array 1")));
  EXPECT_FALSE(a->IsDeleted());
  EXPECT_FALSE(b->IsDeleted());
  // Likewise when the second fails only while planning (an unknown memory
  // kind).
  std::vector<ArraySpec> second_unknown = {{kS32, shape, good}, unknown_kind[0]};
  EXPECT_THAT(client().ReshardArrays(absl::MakeSpan(two), second_unknown, sem),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("no_such_kind")));
  EXPECT_FALSE(a->IsDeleted());
  EXPECT_FALSE(b->IsDeleted());
  ExpectContents(a, data);
  ExpectContents(b, data);
  // A device list of another client as CopyArrays' target.
  ASSERT_OK_AND_ASSIGN(DeviceListRef foreign_list, (*other)->MakeDeviceList((*other)->devices()));
  EXPECT_THAT(client().CopyArrays(absl::MakeSpan(two), foreign_list, std::nullopt, sem),
              StatusIs(absl::StatusCode::kInvalidArgument, _));
  EXPECT_FALSE(a->IsDeleted());
  // An array of another client.
  ASSERT_OK_AND_ASSIGN(ArrayRef alien, MakeArray(**other, data, kS32, shape,
                                                 SingleDeviceSharding::Create(
                                                     (*other)->devices()[0], MemoryKind())));
  std::vector<ArrayRef> alien_in = {alien};
  std::vector<ArraySpec> alien_spec = {{kS32, shape, good}};
  EXPECT_THAT(client().ReshardArrays(absl::MakeSpan(alien_in), alien_spec, sem),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("another client")));
  EXPECT_THAT(client().CopyArrays(absl::MakeSpan(alien_in), std::nullopt, std::nullopt, sem),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("another client")));
  alien.reset();
}

TESSERA_INSTANTIATE_CLIENT_SUITE(ReshardTest);

}  // namespace
}  // namespace tessera::conformance
