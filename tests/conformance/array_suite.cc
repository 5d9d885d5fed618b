// Arrays: assembly and disassembly under every ArrayCopySemantics, zero-sized arrays, ready
// futures and deletion.
// Part of the API-contract suite (tests/conformance/client_conformance.h), instantiated for every
// registered client factory.

// GCC 12 reports false -Wmaybe-uninitialized inside absl::InlinedVector moves (Shape, Index).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <atomic>
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
using ::tessera::testing::ReadBack;
using ::tessera::testing::ReplicatedSharding;
using ::tessera::testing::RowSharding;
using ::tessera::testing::SliceDomain;
using ::tessera::testing::StatusIs;
using ::testing::_;
using ::testing::HasSubstr;

class ArrayTest : public ClientConformanceTest {};

// Assemble / disassemble

TEST_P(ArrayTest, AssembleAndDisassembleEveryShardingAndSemantics) {
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
        static_cast<void>(a->Delete());
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
        for (const ArrayRef& p : parts) static_cast<void>(p->Delete());
        ExpectContents(b, data);  // shares or owns the buffers; either way still readable
      }
    }
  }
}

TEST_P(ArrayTest, AssembleRejectsBadInput) {
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

// Zero-sized arrays

TEST_P(ArrayTest, ZeroSizedArraysEverywhere) {
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

// Ready futures and deletion

TEST_P(ArrayTest, ReadyFutures) {
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
  static_cast<void>(arrays[1]->Delete());
  EXPECT_THAT(client().GetReadyFuture(arrays).Await(),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("deleted")));
  // OnReady from another thread's point of view.
  std::atomic<bool> called{false};
  arrays[2]->GetReadyFuture().OnReady([&](const absl::Status& s) { called = s.ok(); });
  EXPECT_TRUE(Eventually([&] { return called.load(); }));
}

TEST_P(ArrayTest, DeleteAndEveryUseOfADeletedArray) {
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
  static_cast<void>(parts[0]->Delete());
  EXPECT_THAT(client().AssembleArrayFromSingleDeviceArrays(kS32, shape, s, absl::MakeSpan(parts),
                                                           ArrayCopySemantics::kReuseInput),
              deleted_error);
  static_cast<void>(b->Delete());
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

TEST_P(ArrayTest, DeleteWhileAReshardIsInFlight) {
  const Shape shape({32, 16});
  const std::vector<uint8_t> data = Pattern(32 * 16 * 4, 8);
  for (int i = 0; i < 5; ++i) {
    ASSERT_OK_AND_ASSIGN(ArrayRef a, MakeArray(client(), data, kS32, shape, RowSharding(All())));
    std::vector<ArrayRef> in = {a};
    std::vector<ArraySpec> specs = {{kS32, shape, RowSharding(Reversed())}};
    ASSERT_OK_AND_ASSIGN(
        std::vector<ArrayRef> out,
        client().ReshardArrays(absl::MakeSpan(in), specs, ArrayCopySemantics::kAlwaysCopy));
    static_cast<void>(a->Delete());
    in.clear();
    a.reset();
    ExpectContents(out[0], data);
  }
}

TESSERA_INSTANTIATE_CLIENT_SUITE(ArrayTest);

}  // namespace
}  // namespace tessera::conformance
