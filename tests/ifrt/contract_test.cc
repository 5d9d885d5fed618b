// The API-contract suite of Client and Array: one parameterised suite,
// instantiated for a CPU-only client (4 devices), a Vulkan-only client (2
// lavapipe devices) and a mixed one (2 CPU + 2 Vulkan). Every case is written
// against the public API and holds for any topology with >= 2 devices. The
// Vulkan instances need VK_DRIVER_FILES to name two lavapipe ICD manifests
// (ctest sets it; the binary sets it itself when unset).

// GCC 12 reports false -Wmaybe-uninitialized inside absl::InlinedVector moves
// (Shape, Index).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cpu/cpu_platform.h"
#include "backends/vulkan/vulkan_platform.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "guard/recording_transfer_sink.h"
#include "ifrt/introspection.h"
#include "ifrt/runtime/runtime_client.h"
#include "tests/ifrt/test_util.h"

namespace tessera {
namespace {

using ::tessera::testing::IsOk;
using ::tessera::testing::MakeArray;
using ::tessera::testing::Pattern;
using ::tessera::testing::ReadBack;
using ::tessera::testing::ReplicatedSharding;
using ::tessera::testing::RowSharding;
using ::tessera::testing::SliceDomain;
using ::tessera::testing::StatusIs;
using ::testing::_;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

constexpr DType kS32(DType::kS32);
constexpr DType kF32(DType::kF32);
constexpr DType kS16(DType::kS16);

struct Topology {
  std::string name;
  int cpu_devices;
  VulkanMode vulkan;
  int expected_devices;
};

void PrintTo(const Topology& t, std::ostream* os) { *os << t.name; }

void EnsureVulkanIcds() {
  const std::string icds = TESSERA_IFRT_TEST_ICDS;
  if (icds.empty()) return;
  setenv("VK_DRIVER_FILES", icds.c_str(), /*overwrite=*/0);
  setenv("VK_ICD_FILENAMES", icds.c_str(), /*overwrite=*/0);
}

// Polls `pred` for up to 10 s.
template <typename F>
bool Eventually(F pred) {
  for (int i = 0; i < 2000; ++i) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return pred();
}

class ContractTest : public ::testing::TestWithParam<Topology> {
 protected:
  void SetUp() override {
    EnsureVulkanIcds();
    const Topology& t = GetParam();
    absl::StatusOr<std::shared_ptr<Client>> c = CreateClient(
        {.cpu_devices = t.cpu_devices, .vulkan = t.vulkan, .transfer_guard = guard::Policy()});
    if (!c.ok()) GTEST_SKIP() << "cannot create a " << t.name << " client: " << c.status();
    client_ = *std::move(c);
    client_->transfer_guard().SetDefaultLogSinkEnabled(false);
    validation_messages_ = VulkanValidationMessageCount();
    n_ = static_cast<int>(client_->devices().size());
    ASSERT_GE(n_, 2);
    ASSERT_EQ(n_ % 2, 0);
  }

  Client& client() { return *client_; }
  ClientIntrospection& runtime() { return *client_->introspection(); }
  DeviceListRef At(const std::vector<int>& positions) {
    return testing::DevicesAt(client(), positions);
  }
  DeviceListRef All() {
    std::vector<int> p;
    for (int i = 0; i < n_; ++i) p.push_back(i);
    return At(p);
  }
  DeviceListRef Reversed() {
    std::vector<int> p;
    for (int i = n_ - 1; i >= 0; --i) p.push_back(i);
    return At(p);
  }
  DeviceListRef FirstHalf() {
    std::vector<int> p;
    for (int i = 0; i < n_ / 2; ++i) p.push_back(i);
    return At(p);
  }
  DeviceListRef SecondHalf() {
    std::vector<int> p;
    for (int i = n_ / 2; i < n_; ++i) p.push_back(i);
    return At(p);
  }
  // Positions of the devices of `kind` ("cpu", "vulkan").
  std::vector<int> OfKind(std::string_view kind) {
    std::vector<int> p;
    for (int i = 0; i < n_; ++i) {
      if (client().devices()[i]->Kind() == kind) p.push_back(i);
    }
    return p;
  }
  // Rows split over the first axis, columns replicated: a partially replicated
  // sharding.
  ShardingRef PartiallyTiled(const DeviceListRef& devices) {
    return testing::Named(absl::StrCat("mesh{x=2,y=", devices->size() / 2, "}"), "P(x,None)",
                          devices);
  }

  // Every shard of `array` (read through DisassembleIntoSingleDeviceArrays)
  // holds its box of `data`, and the whole array reads back as `data`.
  void ExpectContents(const ArrayRef& array, const std::vector<uint8_t>& data) {
    SCOPED_TRACE(array->DebugString());
    absl::StatusOr<std::vector<uint8_t>> whole = ReadBack(array);
    ASSERT_THAT(whole, IsOk());
    EXPECT_TRUE(*whole == data) << "whole array differs";
    absl::StatusOr<std::vector<IndexDomain>> domains =
        array->sharding().IndexDomains(array->shape());
    ASSERT_THAT(domains, IsOk());
    absl::StatusOr<std::vector<ArrayRef>> parts =
        array->DisassembleIntoSingleDeviceArrays(ArrayCopySemantics::kReuseInput);
    ASSERT_THAT(parts, IsOk());
    ASSERT_EQ(parts->size(), domains->size());
    const int64_t element_bytes = *array->dtype().byte_size();
    for (size_t i = 0; i < parts->size(); ++i) {
      absl::StatusOr<std::vector<uint8_t>> shard = ReadBack((*parts)[i]);
      ASSERT_THAT(shard, IsOk());
      EXPECT_TRUE(*shard == SliceDomain(data, array->shape(), element_bytes, (*domains)[i]))
          << "shard " << i << " (" << (*domains)[i].DebugString() << ") differs";
    }
  }

  // Any Khronos validation message (the ctest environment turns the layer on)
  // fails the test.
  void TearDown() override {
    EXPECT_EQ(VulkanValidationMessageCount(), validation_messages_)
        << "the Vulkan validation layer reported problems";
  }

  std::shared_ptr<Client> client_;
  int n_ = 0;
  int64_t validation_messages_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Devices

TEST_P(ContractTest, Topology) {
  EXPECT_EQ(n_, GetParam().expected_devices);
  EXPECT_EQ(static_cast<int>(OfKind("cpu").size()), GetParam().cpu_devices);
  for (int i = 0; i < n_; ++i) {
    Device* d = client().devices()[i];
    EXPECT_EQ(d->Id().value, i);
    EXPECT_EQ(*client().LookupDevice(d->Id()), d);
    absl::StatusOr<Memory*> m = d->DefaultMemory();
    ASSERT_THAT(m, IsOk());
    EXPECT_THAT((*m)->Devices(), ElementsAre(d));
  }
  EXPECT_THAT(client().LookupDevice(DeviceId{n_}),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr(absl::StrCat("id ", n_))));
  EXPECT_THAT(client().LookupDevice(DeviceId{-1}), StatusIs(absl::StatusCode::kNotFound, _));
}

// ---------------------------------------------------------------------------------------------
// Host buffers

TEST_P(ContractTest, MakeAndReadBackEveryShardingAndDType) {
  const Shape shape({7, 13});
  const std::vector<ShardingRef> shardings = {
      SingleDeviceSharding::Create(client().devices()[0], MemoryKind()),
      SingleDeviceSharding::Create(client().devices()[n_ - 1], MemoryKind()),
      ReplicatedSharding(All(), shape),
      RowSharding(All()),
      RowSharding(Reversed()),
      PartiallyTiled(All()),
      testing::Named(absl::StrCat("mesh{x=", n_ / 2, ",y=2}"), "P(x,y)", All()),
  };
  int seed = 0;
  for (DType dtype : {kS32, DType(DType::kF16), DType(DType::kF64), DType(DType::kPred),
                      DType(DType::kU8), DType(DType::kBF16)}) {
    for (const ShardingRef& s : shardings) {
      SCOPED_TRACE(absl::StrCat(dtype.DebugString(), " ", s->DebugString()));
      std::vector<uint8_t> data = Pattern(testing::ByteSize(dtype, shape), ++seed);
      ASSERT_OK_AND_ASSIGN(ArrayRef a, MakeArray(client(), data, dtype, shape, s));
      EXPECT_EQ(a->dtype(), dtype);
      EXPECT_EQ(a->shape(), shape);
      EXPECT_EQ(a->sharding(), *s);
      EXPECT_EQ(a->shared_ptr_sharding(), s);
      EXPECT_EQ(a->client(), &client());
      EXPECT_THAT(a->GetReadyFuture().Await(), IsOk());
      ExpectContents(a, data);
    }
  }
}

TEST_P(ContractTest, MakeFromColumnMajorReadsBackRowMajor) {
  const Shape shape({5, 7});
  const std::vector<uint8_t> row_major = Pattern(5 * 7 * 4, 11);
  std::vector<uint8_t> col_major(row_major.size());
  for (int i = 0; i < 5; ++i) {
    for (int j = 0; j < 7; ++j) {
      std::memcpy(&col_major[(j * 5 + i) * 4], &row_major[(i * 7 + j) * 4], 4);
    }
  }
  const std::vector<int64_t> strides = {4, 20};
  for (const ShardingRef& s : {RowSharding(All()), ReplicatedSharding(All(), shape)}) {
    SCOPED_TRACE(s->DebugString());
    ASSERT_OK_AND_ASSIGN(ArrayRef a, client().MakeArrayFromHostBuffer(
                                         col_major.data(), kF32, shape, strides, s,
                                         HostBufferSemantics::kImmutableOnlyDuringCall, nullptr));
    ExpectContents(a, row_major);
    // And back out column-major.
    std::vector<uint8_t> out(col_major.size(), 0xAB);
    ASSERT_THAT(a->CopyToHostBuffer(out.data(), strides, ArrayCopySemantics::kAlwaysCopy).Await(),
                IsOk());
    EXPECT_TRUE(out == col_major);
  }
}

TEST_P(ContractTest, NonCompactStridesWithGaps) {
  // s16[3,4] in a buffer with a 40-byte row pitch and a 6-byte element pitch.
  const Shape shape({3, 4});
  const std::vector<int64_t> strides = {40, 6};
  const std::vector<uint8_t> buffer = Pattern(2 * 40 + 3 * 6 + 2, 5);
  std::vector<uint8_t> expected(3 * 4 * 2);
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 4; ++j) std::memcpy(&expected[(i * 4 + j) * 2], &buffer[i * 40 + j * 6], 2);
  }
  for (const ShardingRef& s : {RowSharding(All()), PartiallyTiled(All())}) {
    SCOPED_TRACE(s->DebugString());
    ASSERT_OK_AND_ASSIGN(ArrayRef a, client().MakeArrayFromHostBuffer(
                                         buffer.data(), kS16, shape, strides, s,
                                         HostBufferSemantics::kImmutableOnlyDuringCall, nullptr));
    ExpectContents(a, expected);
    // Out to a gappy buffer: elements land at their strides, the gaps stay
    // untouched.
    std::vector<uint8_t> out(buffer.size(), 0xCD);
    ASSERT_THAT(a->CopyToHostBuffer(out.data(), strides, ArrayCopySemantics::kAlwaysCopy).Await(),
                IsOk());
    std::vector<uint8_t> want(buffer.size(), 0xCD);
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 4; ++j) std::memcpy(&want[i * 40 + j * 6], &buffer[i * 40 + j * 6], 2);
    }
    EXPECT_TRUE(out == want);
  }
}

TEST_P(ContractTest, HostBufferSemanticsCallOnDoneExactlyOnce) {
  const Shape shape({16, 8});
  const int64_t bytes = 16 * 8 * 4;
  for (HostBufferSemantics semantics : {HostBufferSemantics::kImmutableOnlyDuringCall,
                                        HostBufferSemantics::kImmutableUntilTransferCompletes,
                                        HostBufferSemantics::kImmutableZeroCopy}) {
    for (const ShardingRef& s :
         {SingleDeviceSharding::Create(client().devices()[0], MemoryKind()),
          SingleDeviceSharding::Create(client().devices()[n_ - 1], MemoryKind()),
          RowSharding(All()), ReplicatedSharding(All(), shape)}) {
      SCOPED_TRACE(absl::StrCat(HostBufferSemanticsName(semantics), " ", s->DebugString()));
      // 64-byte aligned, so that zero copy is possible where the platform
      // supports it.
      struct alignas(64) Block {
        uint8_t bytes[16 * 8 * 4];
      };
      auto block = std::make_unique<Block>();
      const std::vector<uint8_t> data = Pattern(bytes, 21);
      std::memcpy(block->bytes, data.data(), bytes);
      auto calls = std::make_shared<std::atomic<int>>(0);
      ASSERT_OK_AND_ASSIGN(
          ArrayRef a, client().MakeArrayFromHostBuffer(block->bytes, kF32, shape, std::nullopt, s,
                                                       semantics, [calls] { ++*calls; }));
      if (semantics == HostBufferSemantics::kImmutableOnlyDuringCall) {
        EXPECT_EQ(calls->load(), 1) << "on_done must run before the call returns";
        // The caller may reuse the buffer at once.
        std::memset(block->bytes, 0, bytes);
      }
      EXPECT_THAT(a->GetReadyFuture().Await(), IsOk());
      if (semantics == HostBufferSemantics::kImmutableUntilTransferCompletes) {
        EXPECT_TRUE(Eventually([&] { return calls->load() == 1; }))
            << "on_done must run once the transfer has completed";
        std::memset(block->bytes, 0, bytes);
      }
      ExpectContents(a, data);
      a.reset();  // zero copy: the array no longer needs the buffer
      EXPECT_TRUE(Eventually([&] { return calls->load() == 1; }));
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      EXPECT_EQ(calls->load(), 1);
    }
  }
}

TEST_P(ContractTest, ReplicatedReadsBackFromEveryShard) {
  const Shape shape({9, 5});
  const std::vector<uint8_t> data = Pattern(9 * 5 * 4, 3);
  ASSERT_OK_AND_ASSIGN(ArrayRef a,
                       MakeArray(client(), data, kS32, shape, ReplicatedSharding(All(), shape)));
  EXPECT_TRUE(a->sharding().IsFullyReplicated());
  ASSERT_OK_AND_ASSIGN(std::vector<ArrayRef> parts,
                       a->DisassembleIntoSingleDeviceArrays(ArrayCopySemantics::kReuseInput));
  ASSERT_EQ(static_cast<int>(parts.size()), n_);
  for (int i = 0; i < n_; ++i) {
    EXPECT_EQ(parts[i]->sharding(),
              *SingleDeviceSharding::Create(client().devices()[i], MemoryKind()));
    EXPECT_EQ(parts[i]->shape(), shape);
    absl::StatusOr<std::vector<uint8_t>> out = ReadBack(parts[i]);
    ASSERT_THAT(out, IsOk());
    EXPECT_TRUE(*out == data) << "replica " << i;
  }
  for (ArrayCopySemantics sem :
       {ArrayCopySemantics::kAlwaysCopy, ArrayCopySemantics::kReuseInput}) {
    ASSERT_OK_AND_ASSIGN(ArrayRef one, a->FullyReplicatedShard(sem));
    EXPECT_EQ(one->sharding().devices()->size(), 1);
    EXPECT_EQ(one->shape(), shape);
    absl::StatusOr<std::vector<uint8_t>> out = ReadBack(one);
    ASSERT_THAT(out, IsOk());
    EXPECT_TRUE(*out == data);
  }
  ASSERT_OK_AND_ASSIGN(ArrayRef tiled, MakeArray(client(), data, kS32, shape, RowSharding(All())));
  EXPECT_THAT(tiled->FullyReplicatedShard(ArrayCopySemantics::kReuseInput),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not fully replicated")));
}

// ---------------------------------------------------------------------------------------------
// Assemble / disassemble

TEST_P(ContractTest, AssembleAndDisassembleEveryShardingAndSemantics) {
  const Shape shape({9, 5});
  // Irregular rows: 1, 2, 3, 3 (4 devices) or 2, 7 (2 devices).
  std::vector<IndexDomain> domains;
  std::vector<Shape> shard_shapes;
  {
    const std::vector<int64_t> cuts =
        n_ == 4 ? std::vector<int64_t>{0, 1, 3, 6, 9} : std::vector<int64_t>{0, 2, 9};
    ASSERT_EQ(static_cast<int>(cuts.size()), n_ + 1);
    for (int i = 0; i < n_; ++i) {
      domains.emplace_back(Index{cuts[i], 0}, Shape({cuts[i + 1] - cuts[i], 5}));
      shard_shapes.push_back(domains.back().shape());
    }
  }
  ASSERT_OK_AND_ASSIGN(
      ShardingRef concrete,
      ConcreteSharding::Create(Reversed(), MemoryKind(), shape, shard_shapes, domains));
  // Two ragged tiles (5 and 4 rows), each held by n/2 consecutive devices.
  ASSERT_OK_AND_ASSIGN(ShardingRef even,
                       ConcreteEvenSharding::Create(All(), MemoryKind(), shape, Shape({5, 5})));
  const std::vector<ShardingRef> shardings = {
      SingleDeviceSharding::Create(client().devices()[1], MemoryKind()),
      concrete,
      even,
      ReplicatedSharding(All(), shape),
      testing::ParamSharding(absl::StrCat("1x", 2, " to [0,1] on 2x", n_ / 2), All()),
      PartiallyTiled(Reversed()),
  };
  int seed = 100;
  for (const ShardingRef& s : shardings) {
    for (ArrayCopySemantics sem : {ArrayCopySemantics::kAlwaysCopy, ArrayCopySemantics::kReuseInput,
                                   ArrayCopySemantics::kDonateInput}) {
      SCOPED_TRACE(absl::StrCat(ArrayCopySemanticsName(sem), " ", s->DebugString()));
      const std::vector<uint8_t> data = Pattern(9 * 5 * 4, ++seed);
      ASSERT_OK_AND_ASSIGN(ArrayRef a, MakeArray(client(), data, kS32, shape, s));
      ASSERT_THAT(a->GetReadyFuture().Await(), IsOk());
      ASSERT_OK_AND_ASSIGN(std::vector<IndexDomain> doms, s->IndexDomains(shape));
      int64_t total = 0;
      for (const IndexDomain& d : doms) total += d.shape().num_elements() * 4;

      const TransferStats before = client().transfer_stats();
      ASSERT_OK_AND_ASSIGN(std::vector<ArrayRef> parts, a->DisassembleIntoSingleDeviceArrays(sem));
      ASSERT_EQ(parts.size(), doms.size());
      ASSERT_THAT(client().GetReadyFuture(parts).Await(), IsOk());
      EXPECT_EQ(a->IsDeleted(), sem == ArrayCopySemantics::kDonateInput);
      for (size_t i = 0; i < parts.size(); ++i) {
        EXPECT_EQ(parts[i]->sharding(),
                  *SingleDeviceSharding::Create(s->devices()->devices()[i], s->memory_kind()));
        EXPECT_EQ(parts[i]->shape(), doms[i].shape());
        absl::StatusOr<std::vector<uint8_t>> out = ReadBack(parts[i]);
        ASSERT_THAT(out, IsOk());
        EXPECT_TRUE(*out == SliceDomain(data, shape, 4, doms[i])) << "part " << i;
      }
      const TransferStats mid = client().transfer_stats();
      EXPECT_EQ(mid.local.bytes - before.local.bytes,
                sem == ArrayCopySemantics::kAlwaysCopy ? total : 0);
      EXPECT_EQ(mid.device_to_device, before.device_to_device);
      if (sem == ArrayCopySemantics::kAlwaysCopy) {
        // The copies do not depend on the source.
        a->Delete();
        EXPECT_TRUE(*ReadBack(parts[0]) == SliceDomain(data, shape, 4, doms[0]));
      }

      ASSERT_OK_AND_ASSIGN(ArrayRef b, client().AssembleArrayFromSingleDeviceArrays(
                                           kS32, shape, s, absl::MakeSpan(parts), sem));
      EXPECT_EQ(b->sharding(), *s);
      ExpectContents(b, data);
      for (const ArrayRef& p : parts) {
        EXPECT_EQ(p->IsDeleted(), sem == ArrayCopySemantics::kDonateInput);
      }
      const TransferStats after = client().transfer_stats();
      EXPECT_EQ(after.local.bytes - mid.local.bytes,
                sem == ArrayCopySemantics::kAlwaysCopy ? total : 0);
      if (sem != ArrayCopySemantics::kDonateInput) {
        for (const ArrayRef& p : parts) p->Delete();
        ExpectContents(b, data);  // shares or owns the buffers; either way still readable
      }
    }
  }
}

TEST_P(ContractTest, AssembleRejectsBadInput) {
  const Shape shape({4, 3});
  const std::vector<uint8_t> data = Pattern(4 * 3 * 4, 1);
  ShardingRef rows = RowSharding(FirstHalf());
  ASSERT_OK_AND_ASSIGN(ArrayRef a, MakeArray(client(), data, kS32, shape, rows));
  ASSERT_OK_AND_ASSIGN(std::vector<ArrayRef> parts,
                       a->DisassembleIntoSingleDeviceArrays(ArrayCopySemantics::kReuseInput));
  const auto sem = ArrayCopySemantics::kReuseInput;
  // Count.
  std::vector<ArrayRef> too_many = parts;
  too_many.push_back(parts[0]);
  EXPECT_THAT(client().AssembleArrayFromSingleDeviceArrays(kS32, shape, rows,
                                                           absl::MakeSpan(too_many), sem),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("arrays were given")));
  // DType.
  EXPECT_THAT(
      client().AssembleArrayFromSingleDeviceArrays(kF32, shape, rows, absl::MakeSpan(parts), sem),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("dtype")));
  // Shape (the shards of [4,3] are not those of [2,3]).
  if (n_ / 2 > 1) {
    EXPECT_THAT(client().AssembleArrayFromSingleDeviceArrays(kS32, Shape({2 * n_, 3}), rows,
                                                             absl::MakeSpan(parts), sem),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("shape")));
  }
  // Devices: the same shards assembled onto the other half.
  EXPECT_THAT(client().AssembleArrayFromSingleDeviceArrays(kS32, shape, RowSharding(SecondHalf()),
                                                           absl::MakeSpan(parts), sem),
              StatusIs(absl::StatusCode::kInvalidArgument, _));
  // A multi-device input.
  ASSERT_OK_AND_ASSIGN(ArrayRef replicated,
                       MakeArray(client(), data, kS32, shape, ReplicatedSharding(All(), shape)));
  std::vector<ArrayRef> multi = {replicated};
  EXPECT_THAT(client().AssembleArrayFromSingleDeviceArrays(
                  kS32, shape, ReplicatedSharding(At({0}), shape), absl::MakeSpan(multi), sem),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("single device")));
  // Null input.
  std::vector<ArrayRef> with_null = parts;
  with_null[0] = nullptr;
  EXPECT_THAT(client().AssembleArrayFromSingleDeviceArrays(kS32, shape, rows,
                                                           absl::MakeSpan(with_null), sem),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("null")));
  // A failed call with kDonateInput leaves the inputs usable.
  EXPECT_THAT(client().AssembleArrayFromSingleDeviceArrays(kF32, shape, rows, absl::MakeSpan(parts),
                                                           ArrayCopySemantics::kDonateInput),
              StatusIs(absl::StatusCode::kInvalidArgument, _));
  for (const ArrayRef& p : parts) EXPECT_FALSE(p->IsDeleted());
}

// ---------------------------------------------------------------------------------------------
// CopyArrays

TEST_P(ContractTest, CopyArraysSameAndReversedDevices) {
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
    a->Delete();
    ExpectContents(copy[0], data);
    ExpectContents(rev[0], data);
  }
}

TEST_P(ContractTest, CopyArraysBatchedAndDonated) {
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

TEST_P(ContractTest, CopyArraysRejectsMixedInputsAndBadTargets) {
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

TEST_P(ContractTest, CopyArraysTreatsTheDefaultKindByNameAsTheDefault) {
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

TEST_P(ContractTest, CopyArraysToAnotherMemoryKind) {
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

// ---------------------------------------------------------------------------------------------
// Zero-sized arrays

TEST_P(ContractTest, ZeroSizedArraysEverywhere) {
  const Shape shape({0, 5});
  const TransferStats before = client().transfer_stats();
  for (const ShardingRef& s : {RowSharding(All()), ReplicatedSharding(All(), shape),
                               SingleDeviceSharding::Create(client().devices()[1], MemoryKind())}) {
    SCOPED_TRACE(s->DebugString());
    // Null data is fine for no elements.
    ASSERT_OK_AND_ASSIGN(ArrayRef a, client().MakeArrayFromHostBuffer(
                                         nullptr, kS32, shape, std::nullopt, s,
                                         HostBufferSemantics::kImmutableOnlyDuringCall, nullptr));
    ASSERT_THAT(a->GetReadyFuture().Await(), IsOk());
    EXPECT_THAT(a->CopyToHostBuffer(nullptr, std::nullopt, ArrayCopySemantics::kAlwaysCopy).Await(),
                IsOk());
    int32_t sentinel = 42;
    ASSERT_OK_AND_ASSIGN(ArrayRef b,
                         client().MakeArrayFromHostBuffer(
                             &sentinel, kS32, shape, std::vector<int64_t>{20, 4}, s,
                             HostBufferSemantics::kImmutableUntilTransferCompletes, nullptr));
    EXPECT_THAT(
        b->CopyToHostBuffer(&sentinel, std::nullopt, ArrayCopySemantics::kAlwaysCopy).Await(),
        IsOk());
    EXPECT_EQ(sentinel, 42);
    ExpectContents(a, {});
    std::vector<ArrayRef> in = {a};
    ASSERT_OK_AND_ASSIGN(std::vector<ArrayRef> rev,
                         client().CopyArrays(absl::MakeSpan(in), std::nullopt, std::nullopt,
                                             ArrayCopySemantics::kAlwaysCopy));
    ExpectContents(rev[0], {});
    std::vector<ArraySpec> specs = {{kS32, shape, PartiallyTiled(Reversed())}};
    ASSERT_OK_AND_ASSIGN(
        std::vector<ArrayRef> resharded,
        client().ReshardArrays(absl::MakeSpan(in), specs, ArrayCopySemantics::kAlwaysCopy));
    ExpectContents(resharded[0], {});
    ASSERT_OK_AND_ASSIGN(std::vector<ArrayRef> parts,
                         a->DisassembleIntoSingleDeviceArrays(ArrayCopySemantics::kDonateInput));
    for (const ArrayRef& p : parts) EXPECT_EQ(p->shape().num_elements(), 0);
    ASSERT_OK_AND_ASSIGN(
        ArrayRef c, client().AssembleArrayFromSingleDeviceArrays(
                        kS32, shape, s, absl::MakeSpan(parts), ArrayCopySemantics::kAlwaysCopy));
    ExpectContents(c, {});
  }
  const TransferStats after = client().transfer_stats();
  EXPECT_EQ(after.host_to_device.bytes, before.host_to_device.bytes);
  EXPECT_EQ(after.device_to_device.bytes, before.device_to_device.bytes);
  EXPECT_EQ(after.device_to_host.bytes, before.device_to_host.bytes);
  EXPECT_EQ(after.local.bytes, before.local.bytes);
}

// ---------------------------------------------------------------------------------------------
// Ready futures and deletion

TEST_P(ContractTest, ReadyFutures) {
  const Shape shape({4, 4});
  const std::vector<uint8_t> data = Pattern(64, 1);
  std::vector<ArrayRef> arrays;
  for (int i = 0; i < 3; ++i) {
    ASSERT_OK_AND_ASSIGN(ArrayRef a, MakeArray(client(), data, kS32, shape, RowSharding(All())));
    arrays.push_back(a);
  }
  EXPECT_THAT(arrays[0]->GetReadyFuture().Await(), IsOk());
  EXPECT_TRUE(arrays[0]->GetReadyFuture().IsReady());
  EXPECT_THAT(client().GetReadyFuture(arrays).Await(), IsOk());
  EXPECT_THAT(client().GetReadyFuture({}).Await(), IsOk());
  std::vector<ArrayRef> with_null = {arrays[0], nullptr};
  EXPECT_THAT(client().GetReadyFuture(with_null).Await(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("null")));
  arrays[1]->Delete();
  EXPECT_THAT(client().GetReadyFuture(arrays).Await(),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("deleted")));
  // OnReady from another thread's point of view.
  std::atomic<bool> called{false};
  arrays[2]->GetReadyFuture().OnReady([&](const absl::Status& s) { called = s.ok(); });
  EXPECT_TRUE(Eventually([&] { return called.load(); }));
}

TEST_P(ContractTest, DeleteAndEveryUseOfADeletedArray) {
  const Shape shape({4, 6});
  const std::vector<uint8_t> data = Pattern(4 * 6 * 4, 1);
  ShardingRef s = ReplicatedSharding(All(), shape);
  ASSERT_OK_AND_ASSIGN(ArrayRef a, MakeArray(client(), data, kS32, shape, s));
  EXPECT_FALSE(a->IsDeleted());
  Future<> deleted = a->Delete();
  EXPECT_TRUE(a->IsDeleted());
  EXPECT_THAT(deleted.Await(), IsOk());
  EXPECT_THAT(a->Delete().Await(), IsOk());  // idempotent
  EXPECT_TRUE(a->IsDeleted());
  EXPECT_THAT(a->DebugString(), HasSubstr("deleted"));

  const auto deleted_error = StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("deleted"));
  EXPECT_THAT(a->GetReadyFuture().Await(), deleted_error);
  std::vector<uint8_t> out(data.size());
  EXPECT_THAT(
      a->CopyToHostBuffer(out.data(), std::nullopt, ArrayCopySemantics::kAlwaysCopy).Await(),
      deleted_error);
  for (ArrayCopySemantics sem : {ArrayCopySemantics::kAlwaysCopy, ArrayCopySemantics::kReuseInput,
                                 ArrayCopySemantics::kDonateInput}) {
    EXPECT_THAT(a->DisassembleIntoSingleDeviceArrays(sem), deleted_error);
    EXPECT_THAT(a->FullyReplicatedShard(sem), deleted_error);
  }
  std::vector<ArrayRef> in = {a};
  std::vector<ArraySpec> specs = {{kS32, shape, RowSharding(All())}};
  EXPECT_THAT(client().ReshardArrays(absl::MakeSpan(in), specs, ArrayCopySemantics::kAlwaysCopy),
              deleted_error);
  EXPECT_THAT(client().CopyArrays(absl::MakeSpan(in), Reversed(), std::nullopt,
                                  ArrayCopySemantics::kAlwaysCopy),
              deleted_error);
  EXPECT_THAT(client().GetReadyFuture(in).Await(), deleted_error);

  // As an input of assembly and of a remap.
  ASSERT_OK_AND_ASSIGN(ArrayRef b, MakeArray(client(), data, kS32, shape, s));
  ASSERT_OK_AND_ASSIGN(std::vector<ArrayRef> parts,
                       b->DisassembleIntoSingleDeviceArrays(ArrayCopySemantics::kReuseInput));
  parts[0]->Delete();
  EXPECT_THAT(client().AssembleArrayFromSingleDeviceArrays(kS32, shape, s, absl::MakeSpan(parts),
                                                           ArrayCopySemantics::kReuseInput),
              deleted_error);
  b->Delete();
  RemapPlan plan;
  plan.input_specs = {{kS32, shape, s}};
  plan.output_specs = {{kS32, shape, s}};
  plan.mappings = {{0, 0, {{0, n_, 1}}, {{0, n_, 1}}}};
  std::vector<ArrayRef> remap_in = {b};
  EXPECT_THAT(
      client().RemapArrays(plan, absl::MakeSpan(remap_in), ArrayCopySemantics::kDonateInput),
      deleted_error);
  // The surviving parts still read back.
  for (size_t i = 1; i < parts.size(); ++i) EXPECT_TRUE(*ReadBack(parts[i]) == data);
}

TEST_P(ContractTest, DeleteWhileAReshardIsInFlight) {
  const Shape shape({32, 16});
  const std::vector<uint8_t> data = Pattern(32 * 16 * 4, 8);
  for (int i = 0; i < 5; ++i) {
    ASSERT_OK_AND_ASSIGN(ArrayRef a, MakeArray(client(), data, kS32, shape, RowSharding(All())));
    std::vector<ArrayRef> in = {a};
    std::vector<ArraySpec> specs = {{kS32, shape, RowSharding(Reversed())}};
    ASSERT_OK_AND_ASSIGN(
        std::vector<ArrayRef> out,
        client().ReshardArrays(absl::MakeSpan(in), specs, ArrayCopySemantics::kAlwaysCopy));
    a->Delete();
    in.clear();
    a.reset();
    ExpectContents(out[0], data);
  }
}

// ---------------------------------------------------------------------------------------------
// RemapArrays

TEST_P(ContractTest, RemapExtractOneShard) {
  const Shape shape({2 * n_, 3});
  const std::vector<uint8_t> data = Pattern(2 * n_ * 3 * 4, 4);
  ShardingRef rows = RowSharding(All());
  for (int k = 0; k < n_; ++k) {
    SCOPED_TRACE(k);
    ASSERT_OK_AND_ASSIGN(ArrayRef a, MakeArray(client(), data, kS32, shape, rows));
    RemapPlan plan;
    plan.input_specs = {{kS32, shape, rows}};
    plan.output_specs = {
        {kS32, Shape({2, 3}), SingleDeviceSharding::Create(client().devices()[k], MemoryKind())}};
    plan.mappings = {{0, 0, {{k, k + 1, 1}}, {{0, 1, 1}}}};
    ASSERT_THAT(plan.Validate(), IsOk());
    std::vector<ArrayRef> in = {a};
    const TransferStats before = client().transfer_stats();
    ASSERT_OK_AND_ASSIGN(
        std::vector<ArrayRef> out,
        client().RemapArrays(plan, absl::MakeSpan(in), ArrayCopySemantics::kDonateInput));
    ASSERT_EQ(out.size(), 1u);
    EXPECT_TRUE(a->IsDeleted());
    ExpectContents(out[0], testing::SliceBox(data, shape.dims(), 4, {2 * k, 0}, {2, 3}));
    EXPECT_EQ(client().transfer_stats().local, before.local);  // nothing copied
    EXPECT_EQ(client().transfer_stats().device_to_device, before.device_to_device);
  }
}

TEST_P(ContractTest, RemapAcceptsTheDefaultMemoryKindByName) {
  // An array made with MemoryKind() matches a spec that names the default
  // memory's kind: both are the same memory.
  DeviceListRef devices = FirstHalf();
  const int m = devices->size();
  ASSERT_OK_AND_ASSIGN(Memory * memory, devices->devices()[0]->DefaultMemory());
  const Shape shape({2 * m, 3});
  const std::vector<uint8_t> data = Pattern(2 * m * 3 * 4, 6);
  ShardingRef rows = RowSharding(devices);
  ASSERT_OK_AND_ASSIGN(ShardingRef named, rows->WithDeviceAssignment(std::nullopt, memory->Kind()));
  ASSERT_OK_AND_ASSIGN(ArrayRef a, MakeArray(client(), data, kS32, shape, rows));
  RemapPlan plan;
  plan.input_specs = {{kS32, shape, named}};
  plan.output_specs = {{kS32, shape, named}};
  plan.mappings = {{0, 0, {{0, m, 1}}, {{0, m, 1}}}};
  std::vector<ArrayRef> in = {a};
  ASSERT_OK_AND_ASSIGN(
      std::vector<ArrayRef> out,
      client().RemapArrays(plan, absl::MakeSpan(in), ArrayCopySemantics::kDonateInput));
  ASSERT_EQ(out.size(), 1u);
  ExpectContents(out[0], data);
}

TEST_P(ContractTest, RemapInterleaveAndDeinterleave) {
  const int half = n_ / 2;
  const Shape part_shape({2 * half, 3});
  const Shape whole_shape({2 * n_, 3});
  const std::vector<uint8_t> da = Pattern(2 * half * 3 * 4, 1), db = Pattern(2 * half * 3 * 4, 2);
  ShardingRef sa = RowSharding(FirstHalf());
  ShardingRef sb = RowSharding(SecondHalf());
  // Devices 0, half, 1, half+1, ...: with 4 devices, 0,2,1,3.
  std::vector<int> interleaved;
  for (int j = 0; j < half; ++j) {
    interleaved.push_back(j);
    interleaved.push_back(half + j);
  }
  ShardingRef sw = RowSharding(At(interleaved));
  RemapPlan plan;
  plan.input_specs = {{kS32, part_shape, sa}, {kS32, part_shape, sb}};
  plan.output_specs = {{kS32, whole_shape, sw}};
  plan.mappings = {{0, 0, {{0, half, 1}}, {{0, n_, 2}}}, {1, 0, {{0, half, 1}}, {{1, n_, 2}}}};
  ASSERT_THAT(plan.Validate(), IsOk());

  ASSERT_OK_AND_ASSIGN(ArrayRef a, MakeArray(client(), da, kS32, part_shape, sa));
  ASSERT_OK_AND_ASSIGN(ArrayRef b, MakeArray(client(), db, kS32, part_shape, sb));
  std::vector<ArrayRef> in = {a, b};
  // Without donation: refused, inputs untouched.
  EXPECT_THAT(client().RemapArrays(plan, absl::MakeSpan(in), ArrayCopySemantics::kReuseInput),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("kDonateInput is required")));
  EXPECT_THAT(client().RemapArrays(plan, absl::MakeSpan(in), ArrayCopySemantics::kAlwaysCopy),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("kDonateInput is required")));
  EXPECT_FALSE(a->IsDeleted());
  EXPECT_FALSE(b->IsDeleted());

  ASSERT_OK_AND_ASSIGN(
      std::vector<ArrayRef> out,
      client().RemapArrays(plan, absl::MakeSpan(in), ArrayCopySemantics::kDonateInput));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(a->IsDeleted());
  EXPECT_TRUE(b->IsDeleted());
  std::vector<int64_t> ids;
  for (int p : interleaved) ids.push_back(client().devices()[p]->Id().value);
  EXPECT_THAT(out[0]->sharding().devices()->ids(), ElementsAreArray(ids));
  if (n_ == 4) {
    EXPECT_THAT(out[0]->sharding().devices()->ids(), ElementsAre(0, 2, 1, 3));
  }
  std::vector<uint8_t> expected;
  for (int j = 0; j < half; ++j) {
    for (const std::vector<uint8_t>* src : {&da, &db}) {
      std::vector<uint8_t> rows = testing::SliceBox(*src, part_shape.dims(), 4, {2 * j, 0}, {2, 3});
      expected.insert(expected.end(), rows.begin(), rows.end());
    }
  }
  ExpectContents(out[0], expected);

  // Deinterleave: the inverse plan gives back a and b.
  RemapPlan inverse;
  inverse.input_specs = plan.output_specs;
  inverse.output_specs = plan.input_specs;
  inverse.mappings = {{0, 0, {{0, n_, 2}}, {{0, half, 1}}}, {0, 1, {{1, n_, 2}}, {{0, half, 1}}}};
  ASSERT_OK_AND_ASSIGN(
      std::vector<ArrayRef> back,
      client().RemapArrays(inverse, absl::MakeSpan(out), ArrayCopySemantics::kDonateInput));
  ASSERT_EQ(back.size(), 2u);
  EXPECT_TRUE(out[0]->IsDeleted());
  EXPECT_EQ(back[0]->sharding(), *sa);
  EXPECT_EQ(back[1]->sharding(), *sb);
  ExpectContents(back[0], da);
  ExpectContents(back[1], db);
}

TEST_P(ContractTest, RemapRejectsBadInput) {
  const Shape shape({2 * n_, 3});
  const std::vector<uint8_t> data = Pattern(2 * n_ * 3 * 4, 4);
  ShardingRef rows = RowSharding(All());
  ASSERT_OK_AND_ASSIGN(ArrayRef a, MakeArray(client(), data, kS32, shape, rows));
  std::vector<ArrayRef> in = {a};
  auto extract = [&](ArraySpec input, Device* out_device) {
    RemapPlan plan;
    plan.input_specs = {std::move(input)};
    plan.output_specs = {
        {input.dtype, Shape({2, 3}), SingleDeviceSharding::Create(out_device, MemoryKind())}};
    plan.mappings = {{0, 0, {{0, 1, 1}}, {{0, 1, 1}}}};
    return plan;
  };
  Device* d0 = client().devices()[0];
  const auto sem = ArrayCopySemantics::kDonateInput;
  // Count.
  RemapPlan two = extract({kS32, shape, rows}, d0);
  two.input_specs.push_back(two.input_specs[0]);
  EXPECT_THAT(client().RemapArrays(two, absl::MakeSpan(in), sem),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("2 inputs")));
  // DType.
  EXPECT_THAT(client().RemapArrays(extract({kF32, shape, rows}, d0), absl::MakeSpan(in), sem),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("does not match")));
  // Shape.
  EXPECT_THAT(client().RemapArrays(extract({kS32, Shape({2 * n_ + 2, 3}), rows}, d0),
                                   absl::MakeSpan(in), sem),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("shape")));
  EXPECT_THAT(
      client().RemapArrays(extract({kS32, Shape({2 * n_, 4}), rows}, d0), absl::MakeSpan(in), sem),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("shape")));
  // Sharding (devices).
  EXPECT_THAT(client().RemapArrays(
                  extract({kS32, shape, RowSharding(Reversed())}, client().devices()[n_ - 1]),
                  absl::MakeSpan(in), sem),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("does not match")));
  // A shard sent to another device.
  EXPECT_THAT(client().RemapArrays(extract({kS32, shape, rows}, client().devices()[1]),
                                   absl::MakeSpan(in), sem),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("is on")));
  // A dtype change between input and output.
  RemapPlan convert = extract({kS32, shape, rows}, d0);
  convert.output_specs[0].dtype = kF32;
  EXPECT_THAT(client().RemapArrays(convert, absl::MakeSpan(in), sem),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("dtype")));
  // An output shard nobody writes.
  RemapPlan unwritten = extract({kS32, shape, rows}, d0);
  unwritten.mappings.clear();
  EXPECT_THAT(client().RemapArrays(unwritten, absl::MakeSpan(in), sem),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not written")));
  EXPECT_FALSE(a->IsDeleted());
  ExpectContents(a, data);
}

// ---------------------------------------------------------------------------------------------
// ReshardArrays

TEST_P(ContractTest, ReshardRoundTripsOnTheSameDevices) {
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

TEST_P(ContractTest, ReshardAcrossDeviceCounts) {
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

TEST_P(ContractTest, ReshardBatchedOverSeveralArrays) {
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

TEST_P(ContractTest, ReshardRejectsBadInput) {
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

// ---------------------------------------------------------------------------------------------
// Bad input to MakeArrayFromHostBuffer / CopyToHostBuffer

TEST_P(ContractTest, MakeAndCopyToHostRejectBadInput) {
  const Shape shape({4, 6});
  const std::vector<uint8_t> data = Pattern(4 * 6 * 4, 1);
  ShardingRef rows = RowSharding(All());
  const auto make = [&](const void* ptr, DType dtype, Shape shp,
                        std::optional<std::vector<int64_t>> strides, ShardingRef s) {
    std::optional<absl::Span<const int64_t>> span;
    if (strides.has_value()) span = *strides;
    return client().MakeArrayFromHostBuffer(ptr, dtype, std::move(shp), span, std::move(s),
                                            HostBufferSemantics::kImmutableOnlyDuringCall, nullptr);
  };
  EXPECT_THAT(make(data.data(), kS32, shape, std::nullopt,
                   ReplicatedSharding(All(), shape, MemoryKind("no_such_kind"))),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("no_such_kind")));
  EXPECT_THAT(make(data.data(), kS32, shape, std::vector<int64_t>{4}, rows),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("byte_strides")));
  EXPECT_THAT(make(data.data(), kS32, shape, std::vector<int64_t>{24, -4}, rows),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("negative")));
  EXPECT_THAT(make(data.data(), kS32, Shape({4, -6}), std::nullopt, rows),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("-6")));
  EXPECT_THAT(make(nullptr, kS32, shape, std::nullopt, rows),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("data is null")));
  EXPECT_THAT(make(data.data(), DType(DType::kInvalid), shape, std::nullopt, rows),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("invalid dtype")));
  EXPECT_THAT(make(data.data(), kS32, shape, std::nullopt, nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("null")));
  EXPECT_THAT(make(data.data(), kS32, shape, std::nullopt, OpaqueSharding::Create(All(), {})),
              StatusIs(absl::StatusCode::kUnimplemented, _));
  EXPECT_THAT(
      make(data.data(), kS32, shape, std::nullopt, ReplicatedSharding(All(), Shape({6, 4}))),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("[6,4]")));
  EXPECT_THAT(make(data.data(), kS32, Shape({4}), std::nullopt, rows),
              StatusIs(absl::StatusCode::kInvalidArgument, _));
  absl::StatusOr<std::shared_ptr<Client>> other =
      CreateClient({.cpu_devices = 1, .vulkan = VulkanMode::kOff});
  ASSERT_THAT(other, IsOk());
  EXPECT_THAT(make(data.data(), kS32, shape, std::nullopt,
                   SingleDeviceSharding::Create((*other)->devices()[0], MemoryKind())),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("another client")));

  ASSERT_OK_AND_ASSIGN(ArrayRef a, MakeArray(client(), data, kS32, shape, rows));
  std::vector<uint8_t> out(data.size());
  const std::vector<int64_t> bad_rank = {4, 4, 4};
  EXPECT_THAT(a->CopyToHostBuffer(out.data(), bad_rank, ArrayCopySemantics::kAlwaysCopy).Await(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("byte_strides")));
  EXPECT_THAT(a->CopyToHostBuffer(nullptr, std::nullopt, ArrayCopySemantics::kAlwaysCopy).Await(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("data is null")));
  ExpectContents(a, data);
}

// ---------------------------------------------------------------------------------------------
// Transfer guard wiring

TEST_P(ContractTest, GuardRefusesImplicitDeviceToDevice) {
  const Shape shape({8, 6});
  const std::vector<uint8_t> data = Pattern(8 * 6 * 4, 2);
  ASSERT_OK_AND_ASSIGN(ArrayRef a, MakeArray(client(), data, kS32, shape, RowSharding(All())));
  ASSERT_THAT(a->GetReadyFuture().Await(), IsOk());
  guard::Policy policy;
  policy.device_to_device = guard::Level::kDisallow;
  client().transfer_guard().SetPolicy(policy);

  std::vector<ArrayRef> in = {a};
  std::vector<ArraySpec> specs = {{kS32, shape, ReplicatedSharding(All(), shape)}};
  const TransferStats before = client().transfer_stats();
  EXPECT_THAT(client().ReshardArrays(absl::MakeSpan(in), specs, ArrayCopySemantics::kDonateInput,
                                     {.is_explicit = false}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Disallowed device-to-device transfer")));
  EXPECT_THAT(client().CopyArrays(absl::MakeSpan(in), Reversed(), std::nullopt,
                                  ArrayCopySemantics::kDonateInput, {.is_explicit = false}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Disallowed device-to-device transfer")));
  EXPECT_EQ(client().transfer_stats(), before);
  EXPECT_FALSE(a->IsDeleted());
  ExpectContents(a, data);
  EXPECT_EQ(client().transfer_guard().counters(guard::Direction::kDeviceToDevice).refused_events,
            2);

  // Explicit: allowed.
  ASSERT_OK_AND_ASSIGN(
      std::vector<ArrayRef> out,
      client().ReshardArrays(absl::MakeSpan(in), specs, ArrayCopySemantics::kAlwaysCopy));
  ExpectContents(out[0], data);
  EXPECT_GT(client().transfer_stats().device_to_device.bytes, before.device_to_device.bytes);
  client().transfer_guard().SetPolicy(guard::Policy());
}

TEST_P(ContractTest, GuardNeverRefusesPureAliasing) {
  const Shape shape({8, 6});
  const std::vector<uint8_t> data = Pattern(8 * 6 * 4, 3);
  ShardingRef rows = RowSharding(All());
  ASSERT_OK_AND_ASSIGN(ArrayRef a, MakeArray(client(), data, kS32, shape, rows));
  client().transfer_guard().SetPolicy(guard::Policy::Uniform(guard::Level::kDisallowExplicit));
  std::vector<ArrayRef> in = {a};
  std::vector<ArraySpec> same = {{kS32, shape, rows}};
  ASSERT_OK_AND_ASSIGN(
      std::vector<ArrayRef> out,
      client().ReshardArrays(absl::MakeSpan(in), same, ArrayCopySemantics::kReuseInput,
                             {.is_explicit = false}));
  ASSERT_OK_AND_ASSIGN(std::vector<ArrayRef> copied,
                       client().CopyArrays(absl::MakeSpan(in), std::nullopt, std::nullopt,
                                           ArrayCopySemantics::kReuseInput));
  // Copies within a device are not transfers either.
  ASSERT_OK_AND_ASSIGN(
      std::vector<ArrayRef> local,
      client().ReshardArrays(absl::MakeSpan(in), same, ArrayCopySemantics::kAlwaysCopy));
  ASSERT_THAT(client().GetReadyFuture(local).Await(), IsOk());
  // Zero-sized arrays move nothing.
  ASSERT_OK_AND_ASSIGN(ArrayRef empty, client().MakeArrayFromHostBuffer(
                                           nullptr, kS32, Shape({0, 5}), std::nullopt, rows,
                                           HostBufferSemantics::kImmutableOnlyDuringCall, nullptr,
                                           {.is_explicit = false}));
  EXPECT_THAT(
      empty->CopyToHostBuffer(nullptr, std::nullopt, ArrayCopySemantics::kAlwaysCopy).Await(),
      IsOk());
  client().transfer_guard().SetPolicy(guard::Policy());
  ExpectContents(out[0], data);
  ExpectContents(copied[0], data);
  ExpectContents(local[0], data);
}

TEST_P(ContractTest, GuardHostToDeviceAndDeviceToHost) {
  const Shape shape({8, 6});
  const std::vector<uint8_t> data = Pattern(8 * 6 * 4, 4);
  ShardingRef rows = RowSharding(All());
  ASSERT_OK_AND_ASSIGN(ArrayRef a, MakeArray(client(), data, kS32, shape, rows));
  guard::Policy policy;
  policy.host_to_device = guard::Level::kDisallow;
  policy.device_to_host = guard::Level::kDisallow;
  client().transfer_guard().SetPolicy(policy);
  const TransferStats before = client().transfer_stats();
  int on_done_calls = 0;
  EXPECT_THAT(client().MakeArrayFromHostBuffer(data.data(), kS32, shape, std::nullopt, rows,
                                               HostBufferSemantics::kImmutableOnlyDuringCall,
                                               [&] { ++on_done_calls; }, {.is_explicit = false}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Disallowed host-to-device transfer")));
  // A failed call is done with the host buffer: on_done still runs, once.
  EXPECT_EQ(on_done_calls, 1);
  std::vector<uint8_t> out(data.size(), 0);
  EXPECT_THAT(a->CopyToHostBuffer(out.data(), std::nullopt, ArrayCopySemantics::kAlwaysCopy,
                                  {.is_explicit = false})
                  .Await(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Disallowed device-to-host transfer")));
  EXPECT_EQ(client().transfer_stats(), before);
  EXPECT_TRUE(std::all_of(out.begin(), out.end(), [](uint8_t b) { return b == 0; }));
  // Explicit ones pass.
  ASSERT_OK_AND_ASSIGN(ArrayRef b, MakeArray(client(), data, kS32, shape, rows));
  ExpectContents(b, data);
  client().transfer_guard().SetPolicy(guard::Policy());
}

TEST_P(ContractTest, ScopedGuardIsPerThread) {
  const Shape shape({4, 4});
  const std::vector<uint8_t> data = Pattern(64, 5);
  ShardingRef rows = RowSharding(All());
  guard::ScopedTransferGuard scope(guard::Level::kDisallow);
  EXPECT_THAT(MakeArray(client(), data, kS32, shape, rows, {.is_explicit = false}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Disallowed host-to-device transfer")));
  absl::Status other_thread = absl::UnknownError("not run");
  std::thread t([&] {
    absl::StatusOr<ArrayRef> a =
        MakeArray(client(), data, kS32, shape, rows, {.is_explicit = false});
    other_thread = a.status();
    if (a.ok()) {
      absl::StatusOr<std::vector<uint8_t>> out = ReadBack(*a, {.is_explicit = false});
      other_thread = out.status();
      if (out.ok() && *out != data) other_thread = absl::DataLossError("wrong data");
    }
  });
  t.join();
  EXPECT_THAT(other_thread, IsOk());
  // Explicit transfers pass the scope's `disallow`.
  ASSERT_OK_AND_ASSIGN(ArrayRef b, MakeArray(client(), data, kS32, shape, rows));
  ExpectContents(b, data);
}

TEST_P(ContractTest, RecordingSinkSeesOneEventPerCallAndDirection) {
  const Shape shape({8, 6});
  const int64_t bytes = 8 * 6 * 4;
  const std::vector<uint8_t> data = Pattern(bytes, 6);
  auto sink = std::make_shared<guard::RecordingTransferSink>();
  const int id = client().transfer_guard().AddSink(sink);
  client().transfer_guard().SetPolicy(guard::Policy::Uniform(guard::Level::kLogExplicit));

  // Host to device: every region read once, replicas forwarded on the devices;
  // the forwards are legs of the upload (docs/transfer-guard.md): the event and
  // host_to_device count every byte written to every replica.
  ShardingRef replicated = ReplicatedSharding(All(), shape);
  TransferStats before = client().transfer_stats();
  ASSERT_OK_AND_ASSIGN(ArrayRef a, MakeArray(client(), data, kS32, shape, replicated));
  ASSERT_THAT(a->GetReadyFuture().Await(), IsOk());
  std::vector<guard::TransferEvent> events = sink->events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].direction, guard::Direction::kHostToDevice);
  EXPECT_EQ(events[0].operation, "MakeArrayFromHostBuffer");
  EXPECT_EQ(events[0].bytes, bytes * n_);
  EXPECT_EQ(events[0].dtype, "s32");
  EXPECT_THAT(events[0].shape, ElementsAre(8, 6));
  EXPECT_TRUE(events[0].is_explicit);
  EXPECT_EQ(client().transfer_stats().host_to_device.bytes - before.host_to_device.bytes,
            bytes * n_);
  EXPECT_EQ(client().transfer_stats().device_to_device, before.device_to_device);
  EXPECT_EQ(sink->records()[0].action, guard::Action::kLog);

  // Device to device.
  sink->Clear();
  std::vector<ArrayRef> in = {a};
  ShardingRef rows = RowSharding(Reversed());
  std::vector<ArraySpec> specs = {{kS32, shape, rows}};
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<const sharding::ReshardPlan> plan,
                       runtime().PlanReshard(*a, specs[0]));
  before = client().transfer_stats();
  ASSERT_OK_AND_ASSIGN(
      std::vector<ArrayRef> out,
      client().ReshardArrays(absl::MakeSpan(in), specs, ArrayCopySemantics::kAlwaysCopy,
                             {.is_explicit = false}));
  ASSERT_THAT(out[0]->GetReadyFuture().Await(), IsOk());
  events = sink->events();
  // From a replicated source every destination box is already on its device: no
  // d2d at all.
  EXPECT_EQ(plan->cross_location_bytes, 0);
  EXPECT_TRUE(events.empty());
  // Replicated from rows: every device needs the other rows.
  in = {out[0]};
  specs = {{kS32, shape, replicated}};
  ASSERT_OK_AND_ASSIGN(plan, runtime().PlanReshard(*out[0], specs[0]));
  ASSERT_OK_AND_ASSIGN(
      out, client().ReshardArrays(absl::MakeSpan(in), specs, ArrayCopySemantics::kAlwaysCopy,
                                  {.is_explicit = false}));
  ASSERT_THAT(out[0]->GetReadyFuture().Await(), IsOk());
  events = sink->events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].direction, guard::Direction::kDeviceToDevice);
  EXPECT_EQ(events[0].operation, "ReshardArrays");
  EXPECT_FALSE(events[0].is_explicit);
  EXPECT_EQ(events[0].bytes, plan->cross_location_bytes);
  EXPECT_EQ(plan->cross_location_bytes, bytes * (n_ - 1));
  EXPECT_EQ(client().transfer_stats().device_to_device.bytes - before.device_to_device.bytes,
            plan->cross_location_bytes);
  // Internal legs (host staging between platforms) count as the movement they
  // serve: device to device, never host to device or device to host.
  EXPECT_EQ(client().transfer_stats().host_to_device, before.host_to_device);
  EXPECT_EQ(client().transfer_stats().device_to_host, before.device_to_host);

  // Device to host.
  sink->Clear();
  before = client().transfer_stats();
  ASSERT_THAT(ReadBack(out[0]), IsOk());
  events = sink->events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].direction, guard::Direction::kDeviceToHost);
  EXPECT_EQ(events[0].operation, "CopyToHostBuffer");
  EXPECT_EQ(events[0].bytes, bytes);
  EXPECT_EQ(client().transfer_stats().device_to_host.bytes - before.device_to_host.bytes, bytes);

  client().transfer_guard().RemoveSink(id);
  client().transfer_guard().SetPolicy(guard::Policy());
}

INSTANTIATE_TEST_SUITE_P(Topologies, ContractTest,
                         ::testing::Values(Topology{"Cpu", 4, VulkanMode::kOff, 4},
                                           Topology{"Vulkan", 0, VulkanMode::kRequired, 2},
                                           Topology{"Mixed", 2, VulkanMode::kRequired, 4}),
                         [](const ::testing::TestParamInfo<Topology>& info) {
                           return info.param.name;
                         });

// ---------------------------------------------------------------------------------------------
// Poisoned arrays: a platform whose copies fail on demand.

class FailingPlatform : public Platform {
 public:
  explicit FailingPlatform(std::unique_ptr<Platform> base) : base_(std::move(base)) {}
  std::atomic<bool> fail_host_to_buffer{false};
  std::atomic<bool> fail_buffer_to_buffer{false};

  std::string_view name() const override { return base_->name(); }
  int device_count() const override { return base_->device_count(); }
  const PlatformDeviceInfo& device_info(int device) const override {
    return base_->device_info(device);
  }
  absl::StatusOr<PlatformBufferRef> Allocate(int device, int memory, int64_t bytes) override {
    return base_->Allocate(device, memory, bytes);
  }
  int64_t BytesInUse(int device, int memory) const override {
    return base_->BytesInUse(device, memory);
  }
  absl::StatusOr<PlatformBufferRef> WrapHostMemory(int device, int memory, void* data,
                                                   int64_t bytes,
                                                   std::function<void()> on_release) override {
    return base_->WrapHostMemory(device, memory, data, bytes, std::move(on_release));
  }
  Future<> CopyHostToBuffers(int device, std::vector<HostToBufferCopy> copies,
                             absl::Span<const Future<>> after) override {
    if (fail_host_to_buffer) return MakeReadyFuture(absl::DataLossError("injected h2d failure"));
    std::vector<Future<>> deps(after.begin(), after.end());
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (gate_.valid()) deps.push_back(gate_);
    }
    return base_->CopyHostToBuffers(device, std::move(copies), deps);
  }
  // While set, host-to-buffer copies wait for `gate` as well.
  void SetGate(Future<> gate) {
    std::lock_guard<std::mutex> lock(mu_);
    gate_ = std::move(gate);
  }
  Future<> CopyBuffersToHost(int device, std::vector<BufferToHostCopy> copies,
                             absl::Span<const Future<>> after) override {
    return base_->CopyBuffersToHost(device, std::move(copies), after);
  }
  Future<> CopyBuffersToBuffers(int device, std::vector<BufferToBufferCopy> copies,
                                absl::Span<const Future<>> after) override {
    if (fail_buffer_to_buffer) return MakeReadyFuture(absl::DataLossError("injected d2d failure"));
    return base_->CopyBuffersToBuffers(device, std::move(copies), after);
  }
  Future<> EnqueueHostCallback(int device, std::function<absl::Status()> fn,
                               absl::Span<const Future<>> after) override {
    return base_->EnqueueHostCallback(device, std::move(fn), after);
  }

 private:
  std::unique_ptr<Platform> base_;
  std::mutex mu_;
  Future<> gate_;
};

class PoisonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<Platform>> cpu = CreateCpuPlatform({.num_devices = 4});
    ASSERT_THAT(cpu, IsOk());
    auto failing = std::make_unique<FailingPlatform>(*std::move(cpu));
    platform_ = failing.get();
    std::vector<std::unique_ptr<Platform>> platforms;
    platforms.push_back(std::move(failing));
    absl::StatusOr<std::shared_ptr<runtime::RuntimeClient>> c =
        runtime::RuntimeClient::Create(std::move(platforms), guard::Policy());
    ASSERT_THAT(c, IsOk());
    client_ = *std::move(c);
  }
  DeviceListRef All() { return testing::DevicesAt(*client_, {0, 1, 2, 3}); }
  DeviceListRef Reversed() { return testing::DevicesAt(*client_, {3, 2, 1, 0}); }

  FailingPlatform* platform_ = nullptr;
  std::shared_ptr<runtime::RuntimeClient> client_;
};

TEST_F(PoisonTest, PoisonedInputPropagatesItsError) {
  const Shape shape({8, 6});
  const std::vector<uint8_t> data = Pattern(8 * 6 * 4, 1);
  const auto poisoned = StatusIs(absl::StatusCode::kDataLoss, HasSubstr("injected h2d failure"));
  platform_->fail_host_to_buffer = true;
  int on_done_calls = 0;
  ASSERT_OK_AND_ASSIGN(
      ArrayRef bad, client_->MakeArrayFromHostBuffer(
                        data.data(), kS32, shape, std::nullopt, RowSharding(All()),
                        HostBufferSemantics::kImmutableOnlyDuringCall, [&] { ++on_done_calls; }));
  platform_->fail_host_to_buffer = false;
  EXPECT_EQ(on_done_calls, 1);  // even when the transfer failed
  EXPECT_THAT(bad->GetReadyFuture().Await(), poisoned);
  EXPECT_THAT(ReadBack(bad), poisoned);
  EXPECT_THAT(bad->DebugString(), HasSubstr("injected"));
  ASSERT_OK_AND_ASSIGN(ArrayRef good, MakeArray(*client_, data, kS32, shape, RowSharding(All())));
  EXPECT_THAT(client_->GetReadyFuture({good, bad}).Await(), poisoned);
  EXPECT_THAT(client_->GetReadyFuture({good}).Await(), IsOk());

  // Reshard and copy: the calls succeed, their outputs carry the error.
  std::vector<ArrayRef> in = {bad};
  std::vector<ArraySpec> specs = {{kS32, shape, ReplicatedSharding(All(), shape)}};
  ASSERT_OK_AND_ASSIGN(
      std::vector<ArrayRef> resharded,
      client_->ReshardArrays(absl::MakeSpan(in), specs, ArrayCopySemantics::kAlwaysCopy));
  EXPECT_THAT(resharded[0]->GetReadyFuture().Await(), poisoned);
  EXPECT_THAT(ReadBack(resharded[0]), poisoned);
  ASSERT_OK_AND_ASSIGN(std::vector<ArrayRef> copied,
                       client_->CopyArrays(absl::MakeSpan(in), Reversed(), std::nullopt,
                                           ArrayCopySemantics::kAlwaysCopy));
  EXPECT_THAT(ReadBack(copied[0]), poisoned);
  // A batch with one poisoned array: only its output is poisoned.
  std::vector<ArrayRef> batch = {good, bad};
  std::vector<ArraySpec> batch_specs = {specs[0], specs[0]};
  ASSERT_OK_AND_ASSIGN(
      std::vector<ArrayRef> batch_out,
      client_->ReshardArrays(absl::MakeSpan(batch), batch_specs, ArrayCopySemantics::kReuseInput));
  EXPECT_THAT(ReadBack(batch_out[0]), IsOk());
  EXPECT_TRUE(*ReadBack(batch_out[0]) == data);
  EXPECT_THAT(ReadBack(batch_out[1]), poisoned);

  // Disassembly, assembly and remapping carry the error along.
  ASSERT_OK_AND_ASSIGN(std::vector<ArrayRef> parts,
                       bad->DisassembleIntoSingleDeviceArrays(ArrayCopySemantics::kAlwaysCopy));
  for (const ArrayRef& p : parts) EXPECT_THAT(p->GetReadyFuture().Await(), poisoned);
  ASSERT_OK_AND_ASSIGN(
      ArrayRef assembled,
      client_->AssembleArrayFromSingleDeviceArrays(
          kS32, shape, RowSharding(All()), absl::MakeSpan(parts), ArrayCopySemantics::kReuseInput));
  EXPECT_THAT(assembled->GetReadyFuture().Await(), poisoned);
  RemapPlan plan;
  plan.input_specs = {{kS32, shape, RowSharding(All())}};
  plan.output_specs = {
      {kS32, Shape({2, 6}), SingleDeviceSharding::Create(client_->devices()[0], MemoryKind())}};
  plan.mappings = {{0, 0, {{0, 1, 1}}, {{0, 1, 1}}}};
  std::vector<ArrayRef> remap_in = {assembled};
  ASSERT_OK_AND_ASSIGN(
      std::vector<ArrayRef> remapped,
      client_->RemapArrays(plan, absl::MakeSpan(remap_in), ArrayCopySemantics::kDonateInput));
  EXPECT_THAT(remapped[0]->GetReadyFuture().Await(), poisoned);
  // Deleting a poisoned array is fine.
  EXPECT_THAT(bad->Delete().Await(), IsOk());
}

TEST_F(PoisonTest, FailedDeviceCopyPoisonsTheOutputOnly) {
  const Shape shape({8, 6});
  const std::vector<uint8_t> data = Pattern(8 * 6 * 4, 2);
  ASSERT_OK_AND_ASSIGN(ArrayRef a, MakeArray(*client_, data, kS32, shape, RowSharding(All())));
  ASSERT_THAT(a->GetReadyFuture().Await(), IsOk());
  const TransferStats before = client_->transfer_stats();
  platform_->fail_buffer_to_buffer = true;
  std::vector<ArrayRef> in = {a};
  std::vector<ArraySpec> specs = {{kS32, shape, ReplicatedSharding(All(), shape)}};
  ASSERT_OK_AND_ASSIGN(
      std::vector<ArrayRef> out,
      client_->ReshardArrays(absl::MakeSpan(in), specs, ArrayCopySemantics::kAlwaysCopy));
  EXPECT_THAT(out[0]->GetReadyFuture().Await(),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("injected d2d failure")));
  platform_->fail_buffer_to_buffer = false;
  // Failed copies are not counted as moved.
  EXPECT_EQ(client_->transfer_stats().device_to_device, before.device_to_device);
  absl::StatusOr<std::vector<uint8_t>> back = ReadBack(a);
  ASSERT_THAT(back, IsOk());
  EXPECT_TRUE(*back == data);
  // The same reshard now works.
  ASSERT_OK_AND_ASSIGN(
      out, client_->ReshardArrays(absl::MakeSpan(in), specs, ArrayCopySemantics::kAlwaysCopy));
  back = ReadBack(out[0]);
  ASSERT_THAT(back, IsOk());
  EXPECT_TRUE(*back == data);
}

TEST_F(PoisonTest, PendingTransfersOrderOnDoneReadinessAndDelete) {
  const Shape shape({8, 6});
  const std::vector<uint8_t> data = Pattern(8 * 6 * 4, 3);
  Promise<> gate;
  platform_->SetGate(gate.future());
  auto calls = std::make_shared<std::atomic<int>>(0);
  ASSERT_OK_AND_ASSIGN(ArrayRef a, client_->MakeArrayFromHostBuffer(
                                       data.data(), kS32, shape, std::nullopt, RowSharding(All()),
                                       HostBufferSemantics::kImmutableUntilTransferCompletes,
                                       [calls] { ++*calls; }));
  platform_->SetGate(Future<>());
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(calls->load(), 0) << "on_done ran before the transfer completed";
  EXPECT_FALSE(a->GetReadyFuture().IsReady());
  EXPECT_THAT(a->DebugString(), HasSubstr("pending"));
  // Work enqueued on a pending array waits for it.
  std::vector<ArrayRef> in = {a};
  std::vector<ArraySpec> specs = {{kS32, shape, ReplicatedSharding(Reversed(), shape)}};
  ASSERT_OK_AND_ASSIGN(
      std::vector<ArrayRef> out,
      client_->ReshardArrays(absl::MakeSpan(in), specs, ArrayCopySemantics::kDonateInput));
  EXPECT_TRUE(a->IsDeleted());
  std::vector<uint8_t> host(data.size());
  Future<> read =
      out[0]->CopyToHostBuffer(host.data(), std::nullopt, ArrayCopySemantics::kAlwaysCopy);
  // Delete's future waits for the array's pending writes.
  platform_->SetGate(gate.future());
  ASSERT_OK_AND_ASSIGN(ArrayRef c,
                       client_->MakeArrayFromHostBuffer(
                           data.data(), kS32, shape, std::nullopt, RowSharding(All()),
                           HostBufferSemantics::kImmutableUntilTransferCompletes, nullptr));
  platform_->SetGate(Future<>());
  Future<> deleted = c->Delete();
  EXPECT_TRUE(c->IsDeleted());
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_FALSE(deleted.IsReady());
  EXPECT_FALSE(read.IsReady());
  gate.Set(absl::OkStatus());
  EXPECT_THAT(deleted.Await(), IsOk());
  EXPECT_THAT(read.Await(), IsOk());
  EXPECT_TRUE(host == data);
  EXPECT_TRUE(Eventually([&] { return calls->load() == 1; }));
}

TEST_F(PoisonTest, ZeroCopyKeepsTheHostBufferUntilTheLastUser) {
  // The CPU platform can use a compact, 64-byte aligned host buffer in place.
  struct alignas(64) Block {
    uint8_t bytes[8 * 8 * 4];
  };
  auto block = std::make_unique<Block>();
  const std::vector<uint8_t> data = Pattern(sizeof(Block::bytes), 4);
  std::memcpy(block->bytes, data.data(), data.size());
  auto calls = std::make_shared<std::atomic<int>>(0);
  const Shape shape({8, 8});
  ShardingRef single = SingleDeviceSharding::Create(client_->devices()[2], MemoryKind());
  const TransferStats before = client_->transfer_stats();
  ASSERT_OK_AND_ASSIGN(
      ArrayRef a, client_->MakeArrayFromHostBuffer(block->bytes, kS32, shape, std::nullopt, single,
                                                   HostBufferSemantics::kImmutableZeroCopy,
                                                   [calls] { ++*calls; }));
  EXPECT_THAT(a->GetReadyFuture().Await(), IsOk());
  EXPECT_EQ(client_->transfer_stats().host_to_device,
            before.host_to_device);  // nothing copied
  // An aliasing reshard shares the buffer: the host buffer is needed until both
  // are gone.
  std::vector<ArrayRef> in = {a};
  std::vector<ArraySpec> specs = {{kS32, shape, single}};
  ASSERT_OK_AND_ASSIGN(
      std::vector<ArrayRef> alias,
      client_->ReshardArrays(absl::MakeSpan(in), specs, ArrayCopySemantics::kReuseInput));
  absl::StatusOr<std::vector<uint8_t>> back = ReadBack(alias[0]);
  ASSERT_THAT(back, IsOk());
  EXPECT_TRUE(*back == data);
  a->Delete();
  in.clear();
  a.reset();
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(calls->load(), 0);
  back = ReadBack(alias[0]);
  ASSERT_THAT(back, IsOk());
  EXPECT_TRUE(*back == data);
  alias.clear();
  EXPECT_TRUE(Eventually([&] { return calls->load() == 1; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  EXPECT_EQ(calls->load(), 1);
}

}  // namespace
}  // namespace tessera
