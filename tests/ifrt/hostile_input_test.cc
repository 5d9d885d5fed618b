// Hostile input through the public API: sizes, counts and offsets that overflow int64, and null
// handles. Each must come back as INVALID_ARGUMENT from the call that takes it, with a message
// naming the problem, never as a crash, a wrapped size or an INTERNAL error later.
// The runtime calls the ifrt/ validation written for them (ValidateShape(shape, dtype),
// HostSpanBytes, CheckHostRange) at every call that takes a shape or a host buffer.

// GCC 12 reports false -Wmaybe-uninitialized inside absl::InlinedVector moves (Shape, Index).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <cstdint>
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/ifrt/test_util.h"

namespace tessera {
namespace {

using ::tessera::testing::DevicesAt;
using ::tessera::testing::IsOk;
using ::tessera::testing::MakeArray;
using ::tessera::testing::Named;
using ::tessera::testing::ParamSharding;
using ::tessera::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t k2Pow32 = int64_t{1} << 32;
constexpr int64_t k2Pow61 = int64_t{1} << 61;
constexpr int64_t k2Pow62 = int64_t{1} << 62;
// 3 * kWrapsToTwo = 2^64 + 2: an element count that wraps to 2 (8 bytes of f32).
constexpr int64_t kWrapsToTwo = 6148914691236517206;

const DType kF32(DType::kF32);

class HostileInputTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<std::shared_ptr<Client>> c =
        CreateClient({.cpu_devices = 4, .vulkan = VulkanMode::kOff});
    ASSERT_TRUE(c.ok()) << c.status();
    client_ = new std::shared_ptr<Client>(*std::move(c));
  }
  static void TearDownTestSuite() {
    delete client_;
    client_ = nullptr;
  }
  static Client& client() { return **client_; }
  static Device* device(int i) { return client().devices()[i]; }

  // MakeArrayFromHostBuffer of `shape` from a small buffer (never read past when the call fails).
  static absl::StatusOr<ArrayRef> Make(const Shape& shape, ShardingRef sharding,
                                       std::optional<absl::Span<const int64_t>> strides = {}) {
    static std::vector<uint8_t> data(4096, 0xAB);
    return client().MakeArrayFromHostBuffer(data.data(), kF32, shape, strides, std::move(sharding),
                                            HostBufferSemantics::kImmutableOnlyDuringCall, nullptr);
  }

  static std::shared_ptr<Client>* client_;
};
std::shared_ptr<Client>* HostileInputTest::client_ = nullptr;

auto Overflow() {
  return StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("overflows int64"));
}

// ---- 1. Overflowing sizes, counts and offsets ------------------------------------------------

TEST_F(HostileInputTest, ElementCountThatWrapsToEightBytesOverTwoDevices) {
  const Shape shape({3, kWrapsToTwo});
  ShardingRef rows = ParamSharding("2x1 to [0] on 2", DevicesAt(client(), {0, 1}));
  EXPECT_THAT(Make(shape, rows),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("[3,6148914691236517206]"), HasSubstr("overflows int64"))));
  EXPECT_THAT(rows->Layout(shape), Overflow());
  EXPECT_THAT(rows->IndexDomains(shape), Overflow());
}

TEST_F(HostileInputTest, ElementCountThatWrapsToZeroIsNotAnEmptyArray) {
  const Shape shape({k2Pow62, k2Pow62});
  EXPECT_THAT(Make(shape, SingleDeviceSharding::Create(device(0), MemoryKind())), Overflow());
  EXPECT_THAT(Make(shape, Named("mesh{x=2}", "P(x)", DevicesAt(client(), {0, 1}))), Overflow());
  EXPECT_THAT(SingleDeviceSharding::Create(device(0), MemoryKind())->Layout(shape), Overflow());
}

TEST_F(HostileInputTest, AssembleRejectsAnOverflowingShape) {
  EXPECT_THAT(client().AssembleArrayFromSingleDeviceArrays(
                  kF32, Shape({k2Pow62, 8}), SingleDeviceSharding::Create(device(0), MemoryKind()),
                  {}, ArrayCopySemantics::kAlwaysCopy),
              Overflow());
}

// 2^61 elements fit; 2^63 bytes do not.
TEST_F(HostileInputTest, ByteCountOverflow) {
  EXPECT_THAT(Make(Shape({k2Pow61}), SingleDeviceSharding::Create(device(0), MemoryKind())),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("byte count")));
}

TEST_F(HostileInputTest, HostByteStridesOverflow) {
  const std::vector<int64_t> strides = {k2Pow62, 4};  // (4-1) * 2^62 overflows
  EXPECT_THAT(Make(Shape({4, 2}), SingleDeviceSharding::Create(device(0), MemoryKind()),
                   absl::MakeConstSpan(strides)),
              Overflow());
}

TEST_F(HostileInputTest, CopyToHostBufferStridesOverflow) {
  std::vector<uint8_t> data(32, 1);
  absl::StatusOr<ArrayRef> array = MakeArray(client(), data, kF32, Shape({4, 2}),
                                             SingleDeviceSharding::Create(device(0), MemoryKind()));
  ASSERT_THAT(array, IsOk());
  const std::vector<int64_t> strides = {k2Pow62, 4};
  std::vector<uint8_t> out(32);
  EXPECT_THAT((*array)
                  ->CopyToHostBuffer(out.data(), absl::MakeConstSpan(strides),
                                     ArrayCopySemantics::kAlwaysCopy)
                  .Await(),
              Overflow());
}

TEST_F(HostileInputTest, ConcreteEvenShardingTileCountDoesNotWrap) {
  // 2^32 x 2^32 tiles of [1,1] would be 2^64 tiles, wrapping to 0 (a division by zero).
  EXPECT_THAT(ConcreteEvenSharding::Create(DevicesAt(client(), {0, 1, 2, 3}), MemoryKind(),
                                           Shape({k2Pow32, k2Pow32}), Shape({1, 1})),
              Overflow());
}

TEST_F(HostileInputTest, ConcreteShardingBoxEndOverflowIsRejectedAtCreate) {
  const Shape shape({4});
  EXPECT_THAT(ConcreteSharding::Create(
                  DevicesAt(client(), {0, 1}), MemoryKind(), shape, {Shape({4}), Shape({4})},
                  {IndexDomain(Index{0}, Shape({4})), IndexDomain(Index{kMax - 1}, Shape({4}))}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("exclusive_max")));
}

TEST_F(HostileInputTest, MeshWhoseDeviceCountWrapsIsRejected) {
  // 32 * 576460752303423489 = 2^64 + 32: it used to pass as a 32-device mesh.
  EXPECT_THAT(
      sharding::Mesh::Parse("mesh{x=32,y=576460752303423489}"),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("more than 16777216 devices")));
}

TEST_F(HostileInputTest, ArraySpecWithAnOverflowingShapeIsInvalid) {
  ArraySpec spec{kF32, Shape({k2Pow61}), SingleDeviceSharding::Create(device(0), MemoryKind())};
  EXPECT_THAT(ValidateArraySpec(spec),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("byte count")));
  spec.shape = Shape({3, kWrapsToTwo});
  EXPECT_THAT(ValidateArraySpec(spec), Overflow());
  spec.shape = Shape({8, 8});
  EXPECT_THAT(ValidateArraySpec(spec), IsOk());
}

// ---- 4. Null and foreign handles --------------------------------------------------------------

TEST_F(HostileInputTest, CheckedFactoriesRejectNull) {
  EXPECT_THAT(SingleDeviceSharding::CreateChecked(nullptr, MemoryKind()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("null device")));
  EXPECT_THAT(OpaqueSharding::CreateChecked(nullptr, MemoryKind()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("null device list")));
  absl::StatusOr<ShardingRef> single = SingleDeviceSharding::CreateChecked(device(1), MemoryKind());
  ASSERT_THAT(single, IsOk());
  EXPECT_EQ(**single, *SingleDeviceSharding::Create(device(1), MemoryKind()));
}

TEST_F(HostileInputTest, FactoriesTakingDeviceListsRejectNull) {
  const auto null_list =
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("null device list"));
  EXPECT_THAT(ConcreteSharding::Create(nullptr, MemoryKind(), Shape({4}), {Shape({4})},
                                       {IndexDomain(Shape({4}))}),
              null_list);
  EXPECT_THAT(ConcreteEvenSharding::Create(nullptr, MemoryKind(), Shape({4}), Shape({4})),
              null_list);
  EXPECT_THAT(ShardingParamSharding::Create(*sharding::ShardingParam::Parse("2 to [0] on 2"),
                                            nullptr, MemoryKind()),
              null_list);
  EXPECT_THAT(NamedSharding::Create(*sharding::Mesh::Parse("mesh{x=2}"),
                                    *sharding::PartitionSpec::Parse("P(x)"), nullptr, MemoryKind()),
              null_list);
}

TEST_F(HostileInputTest, DeviceListsRejectNullEntries) {
  EXPECT_THAT(DeviceList::Create({device(0), nullptr}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("entry 1 is null")));
  EXPECT_THAT(client().MakeDeviceList({nullptr}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("entry 0 is null")));
}

TEST_F(HostileInputTest, ArraySpecWithANullShardingIsInvalid) {
  EXPECT_THAT(ValidateArraySpec(ArraySpec{kF32, Shape({8}), nullptr}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("the sharding is null")));
  EXPECT_THAT(ValidateArraySpec(ArraySpec{DType(DType::kInvalid), Shape({8}),
                                          SingleDeviceSharding::Create(device(0), MemoryKind())}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no element size")));
  EXPECT_THAT(
      ValidateArraySpec(ArraySpec{kF32, Shape({8}),
                                  OpaqueSharding::Create(DevicesAt(client(), {0}), MemoryKind())}),
      StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("no geometry")));
}

TEST_F(HostileInputTest, RuntimeCallsRejectNullArraysAndShardings) {
  const auto invalid = [](const char* what) {
    return StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(what));
  };
  EXPECT_THAT(Make(Shape({8}), nullptr), invalid("argument 4 (sharding) is null"));
  std::vector<ArrayRef> null_arrays = {nullptr};
  EXPECT_THAT(client().CopyArrays(absl::MakeSpan(null_arrays), std::nullopt, std::nullopt,
                                  ArrayCopySemantics::kAlwaysCopy),
              invalid("array 0 is null"));
  std::vector<ArraySpec> specs = {
      ArraySpec{kF32, Shape({8}), SingleDeviceSharding::Create(device(0), MemoryKind())}};
  EXPECT_THAT(
      client().ReshardArrays(absl::MakeSpan(null_arrays), specs, ArrayCopySemantics::kAlwaysCopy),
      invalid("array 0 is null"));
  EXPECT_THAT(client().GetReadyFuture(null_arrays).Await(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("null")));
  EXPECT_THAT(client().AssembleArrayFromSingleDeviceArrays(
                  kF32, Shape({8}), SingleDeviceSharding::Create(device(0), MemoryKind()),
                  absl::MakeSpan(null_arrays), ArrayCopySemantics::kAlwaysCopy),
              invalid("array 0 is null"));
  // A real array resharded to a null sharding.
  std::vector<uint8_t> data(32, 7);
  absl::StatusOr<ArrayRef> array = MakeArray(client(), data, kF32, Shape({8}),
                                             SingleDeviceSharding::Create(device(0), MemoryKind()));
  ASSERT_THAT(array, IsOk());
  std::vector<ArrayRef> arrays = {*array};
  specs[0].sharding = nullptr;
  EXPECT_THAT(
      client().ReshardArrays(absl::MakeSpan(arrays), specs, ArrayCopySemantics::kAlwaysCopy),
      invalid("sharding is null"));
}

// Only the factories build device lists and shardings: no constructor that skips their checks is
// public.
static_assert(!std::is_constructible_v<DeviceList, std::vector<Device*>>);
static_assert(!std::is_constructible_v<SingleDeviceSharding, DeviceListRef, MemoryKind>);
static_assert(!std::is_constructible_v<OpaqueSharding, DeviceListRef, MemoryKind>);
static_assert(!std::is_constructible_v<ShardingParamSharding, sharding::ShardingParam,
                                       DeviceListRef, MemoryKind>);
static_assert(!std::is_constructible_v<NamedSharding, sharding::Mesh, sharding::PartitionSpec,
                                       DeviceListRef, MemoryKind, bool>);

// The unchecked factories keep their contract signature (ShardingRef) and abort with a message
// naming the call on a null argument: a clear death instead of a segfault somewhere later.
TEST(UncheckedFactoryDeathTest, NullArgumentsAbortWithAMessage) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(SingleDeviceSharding::Create(nullptr, MemoryKind()),
               "SingleDeviceSharding::Create called with a null device");
  EXPECT_DEATH(OpaqueSharding::Create(nullptr, MemoryKind()),
               "OpaqueSharding::Create called with a null device list");
}

}  // namespace
}  // namespace tessera
