// Plain tests of the value types of ifrt/: DType, Shape, IndexDomain,
// MemoryKind, AttributeMap, StridedCopy, DeviceList (over fake devices: no
// client needed) and Future/Promise.

// GCC 12 reports false -Wmaybe-uninitialized inside absl::InlinedVector moves
// (Shape, Index).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <atomic>
#include <chrono>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/hash/hash.h"
#include "absl/hash/hash_testing.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ifrt/attribute_map.h"
#include "ifrt/device.h"
#include "ifrt/device_list.h"
#include "ifrt/spi/spirv_artifact.h"
#include "ifrt/strided_copy.h"
#include "tests/ifrt/test_util.h"

namespace tessera {
namespace {

using ::tessera::testing::IsOk;
using ::tessera::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// ---------------------------------------------------------------------------------------------
// DType

TEST(DTypeTest, ByteSizesAndNames) {
  const std::vector<std::tuple<DType::Kind, int, const char*>> expected = {
      {DType::kPred, 1, "pred"}, {DType::kS8, 1, "s8"},     {DType::kS16, 2, "s16"},
      {DType::kS32, 4, "s32"},   {DType::kS64, 8, "s64"},   {DType::kU8, 1, "u8"},
      {DType::kU16, 2, "u16"},   {DType::kU32, 4, "u32"},   {DType::kU64, 8, "u64"},
      {DType::kF16, 2, "f16"},   {DType::kBF16, 2, "bf16"}, {DType::kF32, 4, "f32"},
      {DType::kF64, 8, "f64"},
  };
  for (const auto& [kind, size, name] : expected) {
    DType d(kind);
    SCOPED_TRACE(name);
    EXPECT_EQ(d.kind(), kind);
    EXPECT_EQ(d.byte_size(), size);
    EXPECT_EQ(d.DebugString(), name);
    absl::StatusOr<DType> parsed = DType::Parse(name);
    ASSERT_THAT(parsed, IsOk());
    EXPECT_EQ(*parsed, d);
  }
  EXPECT_EQ(DType(DType::kInvalid).byte_size(), std::nullopt);
  EXPECT_EQ(DType(DType::kInvalid).DebugString(), "invalid");
}

TEST(DTypeTest, ParseRejectsUnknownNames) {
  for (const char* bad : {"", "F32", "float32", "invalid", "f32 ", "i32"}) {
    EXPECT_THAT(DType::Parse(bad),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unknown dtype")))
        << bad;
  }
  EXPECT_THAT(DType::Parse("float32"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("\"float32\"")));
}

TEST(DTypeTest, ParseErrorsEscapeAndShortenTheName) {
  absl::StatusOr<DType> bad = DType::Parse("f32\n\x1b[2J" + std::string(100000, 'x'));
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("unknown dtype \"f32\\n\\x1B[2Jxxx"));
  EXPECT_LT(bad.status().message().size(), 300u);
}

TEST(DTypeTest, EqualityAndHash) {
  EXPECT_EQ(DType(DType::kF32), DType(DType::kF32));
  EXPECT_NE(DType(DType::kF32), DType(DType::kS32));
  EXPECT_TRUE(absl::VerifyTypeImplementsAbslHashCorrectly(
      {DType(DType::kF32), DType(DType::kS32), DType(DType::kInvalid), DType(DType::kBF16)}));
}

// ---------------------------------------------------------------------------------------------
// Shape, IndexDomain

TEST(ShapeTest, Basics) {
  Shape s({8, 3, 5});
  EXPECT_THAT(s.dims(), ElementsAre(8, 3, 5));
  EXPECT_EQ(s.rank(), 3);
  EXPECT_EQ(s.num_elements(), 120);
  EXPECT_EQ(s.DebugString(), "[8,3,5]");
  EXPECT_EQ(Shape().num_elements(), 1);
  EXPECT_EQ(Shape().rank(), 0);
  EXPECT_EQ(Shape().DebugString(), "[]");
  EXPECT_EQ(Shape({0, 5}).num_elements(), 0);
  EXPECT_EQ(Shape({4, 0}).num_elements(), 0);
  EXPECT_EQ(Shape({7, 13}), Shape({7, 13}));
  EXPECT_NE(Shape({7, 13}), Shape({13, 7}));
  EXPECT_NE(Shape({7}), Shape({7, 1}));
  EXPECT_TRUE(absl::VerifyTypeImplementsAbslHashCorrectly(
      {Shape(), Shape({0}), Shape({1}), Shape({7, 13}), Shape({13, 7}), Shape({1, 7, 13})}));
}

TEST(ShapeTest, ValidateShape) {
  EXPECT_THAT(ValidateShape(Shape({0, 5})), IsOk());
  EXPECT_THAT(ValidateShape(Shape()), IsOk());
  EXPECT_THAT(ValidateShape(Shape({4, -1})),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("-1")));
}

TEST(ShapeTest, ValidateShapeRejectsCountsThatOverflow) {
  constexpr int64_t k2Pow61 = int64_t{1} << 61, k2Pow62 = int64_t{1} << 62;
  const auto overflow = [](const char* what) {
    return StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(what));
  };
  // 3 * 6148914691236517206 = 2^64 + 2; 2^62 * 2^62 = 2^124.
  EXPECT_THAT(ValidateShape(Shape({3, 6148914691236517206})),
              overflow("element count that overflows int64"));
  EXPECT_THAT(ValidateShape(Shape({k2Pow62, k2Pow62})), overflow("[4611686018427387904,"));
  EXPECT_THAT(ValidateShape(Shape({0, k2Pow62, k2Pow62})), overflow("overflows int64"));
  EXPECT_THAT(ValidateShape(Shape({std::numeric_limits<int64_t>::max()})), IsOk());
  // Bytes: 2^61 f32 elements are 2^63 bytes.
  const DType f32(DType::kF32), u8(DType::kU8);
  EXPECT_THAT(ValidateShape(Shape({k2Pow61}), f32),
              overflow("f32[2305843009213693952] has a byte"));
  EXPECT_THAT(ValidateShape(Shape({k2Pow61 - 1}), u8), IsOk());
  EXPECT_THAT(ValidateShape(Shape({int64_t{1} << 60}), f32), IsOk());
  EXPECT_THAT(ValidateShape(Shape({0, k2Pow61}), f32), overflow("byte count"));
  EXPECT_THAT(ValidateShape(Shape({2}), DType(DType::kInvalid)), overflow("no element size"));
  EXPECT_THAT(ValidateShape(Shape({-2}), f32), overflow("negative dimension"));
  // num_elements never returns a wrapped value.
  EXPECT_EQ(Shape({3, 6148914691236517206}).num_elements(), -1);
  EXPECT_EQ(Shape({k2Pow62, k2Pow62}).num_elements(), -1);
}

TEST(IndexDomainTest, Basics) {
  IndexDomain d(Index{0, 4}, Shape({8, 4}));
  EXPECT_THAT(d.origin(), ElementsAre(0, 4));
  EXPECT_EQ(d.shape(), Shape({8, 4}));
  EXPECT_EQ(d.DebugString(), "IndexDomain(origin=[0,4],shape=[8,4])");
  IndexDomain whole(Shape({3, 2}));
  EXPECT_THAT(whole.origin(), ElementsAre(0, 0));
  EXPECT_EQ(whole, IndexDomain(Index{0, 0}, Shape({3, 2})));
  EXPECT_NE(d, IndexDomain(Index{4, 0}, Shape({8, 4})));
  EXPECT_NE(d, IndexDomain(Index{0, 4}, Shape({8, 3})));
  EXPECT_TRUE(absl::VerifyTypeImplementsAbslHashCorrectly(
      {d, whole, IndexDomain(), IndexDomain(Index{4, 0}, Shape({8, 4}))}));
}

// ---------------------------------------------------------------------------------------------
// DeviceList, over fake devices

// A device that is only an id and a client pointer, which DeviceList compares but never uses.
class FakeDevice final : public Device {
 public:
  FakeDevice(Client* client, int32_t id) : client_(client), id_(id) {}
  Client* client() const override { return client_; }
  DeviceId Id() const override { return DeviceId{id_}; }
  std::string_view Kind() const override { return "fake"; }
  const AttributeMap& Attributes() const override { return attributes_; }
  absl::StatusOr<Memory*> DefaultMemory() const override {
    return absl::NotFoundError("a fake device has no memory");
  }
  absl::Span<Memory* const> Memories() const override { return {}; }
  std::string ToString() const override { return absl::StrCat("fake:", id_); }
  std::string DebugString() const override { return absl::StrCat("FakeDevice(", id_, ")"); }

 private:
  Client* client_;
  int32_t id_;
  AttributeMap attributes_;
};

// Two distinct client identities; never dereferenced.
Client* FakeClient(int which) {
  static char tokens[2];
  return reinterpret_cast<Client*>(&tokens[which]);
}

class DeviceListTest : public ::testing::Test {
 protected:
  DeviceListTest() {
    for (int i = 0; i < 4; ++i) devices_.push_back(std::make_unique<FakeDevice>(FakeClient(0), i));
  }
  Device* d(int i) { return devices_[i].get(); }
  DeviceListRef List(std::vector<Device*> devices) {
    absl::StatusOr<DeviceListRef> list = DeviceList::Create(devices);
    EXPECT_THAT(list, IsOk());
    return list.ok() ? *list : nullptr;
  }
  std::vector<std::unique_ptr<FakeDevice>> devices_;
};

TEST_F(DeviceListTest, KeepsOrderAndAnswersQueries) {
  DeviceListRef list = List({d(2), d(0), d(3)});
  ASSERT_NE(list, nullptr);
  EXPECT_EQ(list->size(), 3);
  EXPECT_THAT(list->devices(), ElementsAre(d(2), d(0), d(3)));
  EXPECT_EQ((*list)[1], d(0));
  EXPECT_THAT(list->ids(), ElementsAre(2, 0, 3));
  EXPECT_EQ(list->IndexOf(d(3)), 2);
  EXPECT_EQ(list->IndexOf(d(2)), 0);
  EXPECT_EQ(list->IndexOf(d(1)), -1);
  EXPECT_EQ(list->IndexOf(nullptr), -1);
  EXPECT_EQ(list->DebugString(), "[fake:2,fake:0,fake:3]");
  EXPECT_EQ(List({d(1)})->DebugString(), "[fake:1]");
}

TEST_F(DeviceListTest, EqualityHashAndSameDeviceList) {
  DeviceListRef a = List({d(0), d(1)}), a2 = List({d(0), d(1)}), reversed = List({d(1), d(0)});
  DeviceListRef longer = List({d(0), d(1), d(2)});
  EXPECT_EQ(*a, *a2);
  EXPECT_NE(*a, *reversed);
  EXPECT_NE(*a, *longer);
  EXPECT_EQ(a->hash(), a2->hash());
  EXPECT_TRUE(absl::VerifyTypeImplementsAbslHashCorrectly({*a, *a2, *reversed, *longer}));
  EXPECT_TRUE(SameDeviceList(a, a2));
  EXPECT_TRUE(SameDeviceList(a, a));
  EXPECT_FALSE(SameDeviceList(a, reversed));
  EXPECT_TRUE(SameDeviceList(nullptr, nullptr));
  EXPECT_FALSE(SameDeviceList(a, nullptr));
  EXPECT_FALSE(SameDeviceList(nullptr, a));
  // The same ids of another client are other devices.
  FakeDevice other0(FakeClient(1), 0), other1(FakeClient(1), 1);
  DeviceListRef other = List({&other0, &other1});
  EXPECT_EQ(other->ids(), a->ids());
  EXPECT_NE(*other, *a);
  EXPECT_FALSE(SameDeviceList(other, a));
}

TEST_F(DeviceListTest, CreateRejectsBadLists) {
  EXPECT_THAT(DeviceList::Create({}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("must not be empty")));
  std::vector<Device*> with_null = {d(0), nullptr};
  EXPECT_THAT(DeviceList::Create(with_null),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("entry 1 is null")));
  std::vector<Device*> twice = {d(0), d(1), d(0)};
  EXPECT_THAT(DeviceList::Create(twice),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("fake:0 appears twice")));
  FakeDevice foreign(FakeClient(1), 7);
  std::vector<Device*> mixed = {d(0), &foreign};
  EXPECT_THAT(DeviceList::Create(mixed),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("mixes clients: fake:7")));
}

// ---------------------------------------------------------------------------------------------
// MemoryKind, AttributeMap

TEST(MemoryKindTest, Basics) {
  MemoryKind unspecified;
  EXPECT_EQ(unspecified.memory_kind(), std::nullopt);
  EXPECT_EQ(unspecified.DebugString(), "(default)");
  MemoryKind pinned("pinned_host");
  ASSERT_TRUE(pinned.memory_kind().has_value());
  EXPECT_EQ(*pinned.memory_kind(), "pinned_host");
  EXPECT_EQ(pinned.DebugString(), "pinned_host");
  EXPECT_EQ(pinned, MemoryKind(std::string("pinned_host")));
  EXPECT_NE(pinned, MemoryKind("device"));
  EXPECT_NE(pinned, unspecified);
  // An explicit "" is a kind, different from the unspecified one.
  EXPECT_NE(MemoryKind(""), unspecified);
  EXPECT_TRUE(absl::VerifyTypeImplementsAbslHashCorrectly(
      {unspecified, pinned, MemoryKind("device"), MemoryKind("host"), MemoryKind("")}));
}

TEST(AttributeMapTest, SetGetAndPrint) {
  AttributeMap attrs;
  EXPECT_EQ(attrs.size(), 0u);
  EXPECT_EQ(attrs.Get("vendor"), nullptr);
  EXPECT_EQ(attrs.DebugString(), "{}");
  attrs.Set("vendor", std::string("Mesa"));
  attrs.Set("subgroup_size", int64_t{32});
  attrs.Set("unified", true);
  attrs.Set("ratio", 0.5);
  attrs.Set("dims", std::vector<int64_t>{1, 2});
  EXPECT_EQ(attrs.size(), 5u);
  EXPECT_EQ(attrs.GetString("vendor"), "Mesa");
  EXPECT_EQ(attrs.GetInt("subgroup_size"), 32);
  // Typed getters do not convert.
  EXPECT_EQ(attrs.GetString("subgroup_size"), std::nullopt);
  EXPECT_EQ(attrs.GetInt("vendor"), std::nullopt);
  EXPECT_EQ(attrs.GetInt("missing"), std::nullopt);
  EXPECT_EQ(attrs.DebugString(),
            "{dims=[1,2], ratio=0.5, subgroup_size=32, unified=true, vendor=Mesa}");
  attrs.Set("vendor", std::string("NVIDIA"));  // overwrites
  EXPECT_EQ(attrs.GetString("vendor"), "NVIDIA");
  EXPECT_EQ(attrs.size(), 5u);
  AttributeMap copy = attrs;
  EXPECT_TRUE(copy == attrs);
  copy.Set("x", false);
  EXPECT_FALSE(copy == attrs);
  EXPECT_EQ(AttributeMap::ValueToString(std::vector<int64_t>{}), "[]");
  EXPECT_EQ(AttributeMap::ValueToString(false), "false");
}

// ---------------------------------------------------------------------------------------------
// StridedCopy

std::vector<std::tuple<int64_t, int64_t, int64_t>> Runs(const StridedCopy& c) {
  std::vector<std::tuple<int64_t, int64_t, int64_t>> runs;
  c.ForEachRun([&](int64_t s, int64_t d, int64_t n) { runs.emplace_back(s, d, n); });
  return runs;
}

// Applies `c` byte by byte with plain loops (the reference).
void ReferenceCopy(const StridedCopy& c, const uint8_t* src, uint8_t* dst) {
  const int rank = static_cast<int>(c.extent.size());
  const int64_t n = c.num_elements();
  std::vector<int64_t> idx(rank, 0);
  for (int64_t e = 0; e < n; ++e) {
    int64_t so = c.src_offset, d_o = c.dst_offset;
    for (int d = 0; d < rank; ++d) {
      so += idx[d] * c.src_byte_strides[d];
      d_o += idx[d] * c.dst_byte_strides[d];
    }
    std::memcpy(dst + d_o, src + so, c.element_bytes);
    for (int d = rank - 1; d >= 0; --d) {
      if (++idx[d] < c.extent[d]) break;
      idx[d] = 0;
    }
  }
}

MATCHER_P(IsOkAndHolds, value, "is OK and holds " + ::testing::PrintToString(value)) {
  if (!arg.ok()) {
    *result_listener << "status " << arg.status();
    return false;
  }
  *result_listener << "holds " << *arg;
  return *arg == value;
}

TEST(HostSpanBytesTest, SpansOfStridedBuffers) {
  // Dense f32[4,2]: the last element ends at byte 32.
  EXPECT_THAT(HostSpanBytes({4, 2}, {8, 4}, 4), IsOkAndHolds(32));
  // Column-major f32[4,2].
  EXPECT_THAT(HostSpanBytes({4, 2}, {4, 16}, 4), IsOkAndHolds(32));
  // Padded rows: 3 rows of 2 elements, 100 bytes apart: 2*100 + 4 + 4.
  EXPECT_THAT(HostSpanBytes({3, 2}, {100, 4}, 4), IsOkAndHolds(208));
  // Broadcast (stride 0), scalars and empty arrays.
  EXPECT_THAT(HostSpanBytes({5}, {0}, 8), IsOkAndHolds(8));
  EXPECT_THAT(HostSpanBytes({}, {}, 2), IsOkAndHolds(2));
  EXPECT_THAT(HostSpanBytes({0, 7}, {1 << 20, 4}, 4), IsOkAndHolds(0));
  // The largest span that fits.
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  EXPECT_THAT(HostSpanBytes({2}, {kMax - 1}, 1), IsOkAndHolds(kMax));
}

TEST(HostSpanBytesTest, RejectsOffsetsThatOverflow) {
  constexpr int64_t k2Pow62 = int64_t{1} << 62;
  const auto invalid = [](const char* what) {
    return StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(what));
  };
  // (4-1) * 2^62 overflows: the copy engines would read wild addresses.
  EXPECT_THAT(HostSpanBytes({4, 2}, {k2Pow62, 4}, 4),
              invalid("byte_strides [4611686018427387904,4] for shape [4,2]: the offset of the "
                      "last element overflows int64 (in dimension 0)"));
  // Each term fits but the sum does not.
  EXPECT_THAT(HostSpanBytes({2, 2}, {k2Pow62, k2Pow62}, 4), invalid("overflows int64"));
  // The element size pushes it over.
  EXPECT_THAT(HostSpanBytes({2}, {std::numeric_limits<int64_t>::max() - 1}, 2),
              invalid("overflows int64"));
  EXPECT_THAT(HostSpanBytes({4, 2}, {8}, 4), invalid("the ranks differ"));
  EXPECT_THAT(HostSpanBytes({4, 2}, {8, -4}, 4), invalid("stride of dimension 1 is negative"));
  EXPECT_THAT(HostSpanBytes({-4, 2}, {8, 4}, 4), invalid("dimension 0 is negative"));
  EXPECT_THAT(HostSpanBytes({4}, {4}, 0), invalid("element size 0"));
}

TEST(HostSpanBytesTest, CheckHostRange) {
  std::vector<uint8_t> buffer(16);
  EXPECT_THAT(CheckHostRange(buffer.data(), 16), IsOk());
  EXPECT_THAT(CheckHostRange(nullptr, 0), IsOk());
  EXPECT_THAT(CheckHostRange(reinterpret_cast<void*>(~uintptr_t{0} - 8), 16),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("end of the address space")));
  EXPECT_THAT(CheckHostRange(buffer.data(), -1),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
}

TEST(StridedCopyTest, NumElementsNeverWraps) {
  StridedCopy c;
  c.extent = {int64_t{1} << 62, int64_t{1} << 62};
  EXPECT_EQ(c.num_elements(), -1);
  c.extent = {3, 5};
  EXPECT_EQ(c.num_elements(), 15);
}

TEST(StridedCopyTest, RowMajorByteStrides) {
  EXPECT_THAT(StridedCopy::RowMajorByteStrides({8, 16}, 4), ElementsAre(64, 4));
  EXPECT_THAT(StridedCopy::RowMajorByteStrides({2, 3, 5}, 2), ElementsAre(30, 10, 2));
  EXPECT_TRUE(StridedCopy::RowMajorByteStrides({}, 4).empty());
}

TEST(StridedCopyTest, DenseBoxNormalizesToRowRuns) {
  // Rows 2..5 of an 8x16 f32 array into rows 0..3 of a 4x16 one: one contiguous
  // run.
  StridedCopy c = StridedCopy::BetweenDenseArrays(4, {8, 16}, {2, 0}, {4, 16}, {0, 0}, {4, 16});
  EXPECT_EQ(c.num_elements(), 64);
  EXPECT_EQ(c.bytes(), 256);
  StridedCopy n = c.Normalized();
  EXPECT_THAT(n.extent, ElementsAre(64));
  EXPECT_TRUE(n.inner_contiguous());
  EXPECT_THAT(Runs(c), ElementsAre(std::make_tuple(2 * 64, 0, 256)));

  // Columns 4..11 of every row: one run per row.
  StridedCopy cols = StridedCopy::BetweenDenseArrays(4, {3, 16}, {0, 4}, {3, 8}, {0, 0}, {3, 8});
  EXPECT_THAT(Runs(cols), ElementsAre(std::make_tuple(16, 0, 32), std::make_tuple(80, 32, 32),
                                      std::make_tuple(144, 64, 32)));
}

TEST(StridedCopyTest, NormalizedDropsUnitDimsAndHandlesEmpty) {
  StridedCopy c;
  c.element_bytes = 2;
  c.extent = {1, 3, 1};
  c.src_byte_strides = {100, 2, 50};
  c.dst_byte_strides = {200, 4, 70};
  StridedCopy n = c.Normalized();
  EXPECT_THAT(n.extent, ElementsAre(3));
  EXPECT_THAT(n.src_byte_strides, ElementsAre(2));
  EXPECT_THAT(n.dst_byte_strides, ElementsAre(4));
  EXPECT_FALSE(n.inner_contiguous());
  // Strided inner dimension: one element per run.
  EXPECT_THAT(Runs(c), ElementsAre(std::make_tuple(0, 0, 2), std::make_tuple(2, 4, 2),
                                   std::make_tuple(4, 8, 2)));

  StridedCopy empty = c;
  empty.extent = {4, 0, 1};
  EXPECT_EQ(empty.num_elements(), 0);
  EXPECT_THAT(empty.Normalized().extent, ElementsAre(0));
  EXPECT_TRUE(Runs(empty).empty());

  StridedCopy scalar;
  scalar.element_bytes = 8;
  scalar.src_offset = 16;
  scalar.dst_offset = 24;
  EXPECT_EQ(scalar.num_elements(), 1);
  EXPECT_THAT(Runs(scalar), ElementsAre(std::make_tuple(16, 24, 8)));
}

TEST(StridedCopyTest, ForEachRunMatchesReferenceOnAwkwardLayouts) {
  // Column-major source, row-major destination, offsets, gaps, unit dims, zero
  // strides (a broadcast read).
  struct Case {
    int64_t element_bytes;
    Index extent, src_strides, dst_strides;
    int64_t src_offset, dst_offset;
  };
  const std::vector<Case> cases = {
      {4, {5, 7}, {4, 20}, {28, 4}, 0, 0},
      {2, {3, 4}, {40, 6}, {8, 2}, 6, 2},
      {1, {2, 1, 3, 4}, {100, 7, 30, 1}, {12, 12, 4, 1}, 3, 0},
      {8, {4, 2}, {0, 8}, {16, 8}, 8, 0},
      {4, {2, 3, 2}, {24, 8, 4}, {24, 8, 4}, 0, 0},
  };
  for (const Case& k : cases) {
    StridedCopy c;
    c.element_bytes = k.element_bytes;
    c.extent = k.extent;
    c.src_byte_strides = k.src_strides;
    c.dst_byte_strides = k.dst_strides;
    c.src_offset = k.src_offset;
    c.dst_offset = k.dst_offset;
    SCOPED_TRACE(c.DebugString());
    std::vector<uint8_t> src = testing::Pattern(1024, 3);
    std::vector<uint8_t> expected(1024, 0), actual(1024, 0);
    ReferenceCopy(c, src.data(), expected.data());
    int64_t total = 0;
    c.ForEachRun([&](int64_t s, int64_t d, int64_t n) {
      ASSERT_GE(s, 0);
      ASSERT_GE(d, 0);
      ASSERT_LE(s + n, 1024);
      ASSERT_LE(d + n, 1024);
      std::memcpy(actual.data() + d, src.data() + s, n);
      total += n;
    });
    EXPECT_EQ(total, c.bytes());
    EXPECT_EQ(actual, expected);
    // Normalising does not change what is copied.
    std::vector<uint8_t> normalized(1024, 0);
    ReferenceCopy(c.Normalized(), src.data(), normalized.data());
    EXPECT_EQ(normalized, expected);
  }
}

// ---------------------------------------------------------------------------------------------
// Future / Promise

TEST(FutureTest, ReadyFutures) {
  Future<> ok = MakeReadyFuture();
  EXPECT_TRUE(ok.valid());
  EXPECT_TRUE(ok.IsReady());
  EXPECT_THAT(ok.Await(), IsOk());
  Future<> err = MakeReadyFuture(absl::DataLossError("boom"));
  EXPECT_THAT(err.Await(), StatusIs(absl::StatusCode::kDataLoss, "boom"));
  Future<int> value(absl::StatusOr<int>(42));
  EXPECT_EQ(*value.Await(), 42);
  EXPECT_FALSE(Future<>().valid());
}

TEST(FutureTest, OnReadyBeforeAndAfterSet) {
  Promise<int> promise;
  Future<int> future = promise.future();
  EXPECT_FALSE(future.IsReady());
  EXPECT_FALSE(promise.IsSet());
  int before = 0, after = 0;
  future.OnReady([&](const absl::StatusOr<int>& v) { before = *v; });
  EXPECT_EQ(before, 0);
  promise.Set(7);
  EXPECT_EQ(before, 7);  // ran on the setting thread, during Set
  EXPECT_TRUE(promise.IsSet());
  future.OnReady([&](const absl::StatusOr<int>& v) { after = *v; });
  EXPECT_EQ(after, 7);  // inline: already set
  // A second Set is ignored.
  promise.Set(8);
  EXPECT_EQ(*future.Await(), 7);
}

TEST(FutureTest, CallbacksRunExactlyOnce) {
  Promise<> promise;
  std::atomic<int> calls{0};
  for (int i = 0; i < 10; ++i) promise.future().OnReady([&](const absl::Status&) { ++calls; });
  promise.Set(absl::OkStatus());
  promise.Set(absl::InternalError("again"));
  EXPECT_EQ(calls.load(), 10);
  EXPECT_THAT(promise.future().Await(), IsOk());
}

TEST(FutureTest, AwaitFromOtherThreads) {
  Promise<std::string> promise;
  std::vector<std::thread> waiters;
  std::atomic<int> seen{0};
  for (int i = 0; i < 4; ++i) {
    waiters.emplace_back([f = promise.future(), &seen] {
      absl::StatusOr<std::string> v = f.Await();
      if (v.ok() && *v == "done") ++seen;
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  std::thread setter([promise] { promise.Set(std::string("done")); });
  setter.join();
  for (std::thread& t : waiters) t.join();
  EXPECT_EQ(seen.load(), 4);
}

TEST(FutureTest, AbandonedPromiseIsInternalError) {
  Future<> future;
  Future<int> int_future;
  {
    Promise<> promise;
    Promise<int> int_promise;
    future = promise.future();
    int_future = int_promise.future();
    Promise<> copy = promise;  // copies share the state: abandoned when the last one goes
  }
  EXPECT_THAT(future.Await(), StatusIs(absl::StatusCode::kInternal, HasSubstr("abandoned")));
  EXPECT_THAT(int_future.Await(), StatusIs(absl::StatusCode::kInternal, HasSubstr("abandoned")));
}

TEST(FutureTest, PromiseCopyKeepsStateAlive) {
  Future<> future;
  Promise<> survivor;
  {
    Promise<> promise;
    future = promise.future();
    survivor = promise;
  }
  EXPECT_FALSE(future.IsReady());
  survivor.Set(absl::OkStatus());
  EXPECT_THAT(future.Await(), IsOk());
}

TEST(JoinFuturesTest, EmptyAndInvalid) {
  EXPECT_THAT(JoinFutures({}).Await(), IsOk());
  std::vector<Future<>> invalid(3);
  EXPECT_THAT(JoinFutures(invalid).Await(), IsOk());
}

TEST(JoinFuturesTest, WaitsForAllAndFirstErrorInOrderWins) {
  Promise<> a, b, c;
  Future<> joined = JoinFutures({a.future(), b.future(), c.future()});
  // c fails first in time, then b: b is first in order and wins.
  c.Set(absl::NotFoundError("c"));
  EXPECT_FALSE(joined.IsReady());
  b.Set(absl::DataLossError("b"));
  EXPECT_FALSE(joined.IsReady());
  a.Set(absl::OkStatus());
  EXPECT_THAT(joined.Await(), StatusIs(absl::StatusCode::kDataLoss, "b"));

  Promise<> x, y;
  Future<> all_ok = JoinFutures({x.future(), MakeReadyFuture(), y.future()});
  y.Set(absl::OkStatus());
  EXPECT_FALSE(all_ok.IsReady());
  x.Set(absl::OkStatus());
  EXPECT_THAT(all_ok.Await(), IsOk());
}

TEST(JoinFuturesTest, AbandonedInputFailsTheJoin) {
  Future<> joined;
  {
    Promise<> p;
    joined = JoinFutures({p.future(), MakeReadyFuture()});
  }
  EXPECT_THAT(joined.Await(), StatusIs(absl::StatusCode::kInternal, HasSubstr("abandoned")));
}

TEST(FutureTest, ManyThreadsSetAndWait) {
  constexpr int kFutures = 200;
  std::vector<Promise<int>> promises(kFutures);
  std::vector<Future<>> voids;
  std::vector<Promise<>> void_promises(kFutures);
  for (auto& p : void_promises) voids.push_back(p.future());
  Future<> joined = JoinFutures(voids);
  std::atomic<int64_t> sum{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = t; i < kFutures; i += 8) {
        promises[i].future().OnReady([&](const absl::StatusOr<int>& v) { sum += *v; });
        promises[i].Set(i);
        // Racing setters: only one wins.
        void_promises[i].Set(absl::OkStatus());
        void_promises[(i + 1) % kFutures].future().OnReady([](const absl::Status&) {});
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_THAT(joined.Await(), IsOk());
  EXPECT_EQ(sum.load(), int64_t{kFutures} * (kFutures - 1) / 2);
}

// The kernel seam: a format tag and an opaque payload; the "spirv" payload made by its producer,
// read back by its consumer, copied with the artifact, and absent where another format's is.
TEST(KernelArtifact, SpirvPayloadTravelsWithTheArtifact) {
  KernelArtifact artifact;
  artifact.format = "spirv";
  EXPECT_EQ(GetSpirvPayload(artifact), nullptr);
  SpirvDispatch dispatch;
  dispatch.entry = "main_kernel";
  dispatch.bindings = {0, 1};
  MutableSpirvPayload(artifact).dispatches.push_back(dispatch);
  MutableSpirvPayload(artifact).dispatches.push_back(dispatch);  // the same payload, not a new one
  const KernelArtifact copy = artifact;
  const SpirvPayload* payload = GetSpirvPayload(copy);
  ASSERT_NE(payload, nullptr);
  ASSERT_EQ(payload->dispatches.size(), 2u);
  EXPECT_EQ(payload->dispatches[1].entry, "main_kernel");
  KernelArtifact text;
  text.format = "mlir-llvm";
  text.code = "llvm.func @k()";
  text.payload = std::string("another format's payload");
  EXPECT_EQ(GetSpirvPayload(text), nullptr);
}

}  // namespace
}  // namespace tessera
