// Host buffers in and out: MakeArrayFromHostBuffer and CopyToHostBuffer over every sharding,
// dtype, stride layout and HostBufferSemantics, and their argument errors.
// Part of the API-contract suite (tests/conformance/client_conformance.h), instantiated for every
// registered client factory.

// GCC 12 reports false -Wmaybe-uninitialized inside absl::InlinedVector moves (Shape, Index).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <thread>
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
using ::tessera::testing::StatusIs;
using ::testing::_;
using ::testing::HasSubstr;

class HostTransferTest : public ClientConformanceTest {};

// Host buffers

TEST_P(HostTransferTest, MakeAndReadBackEveryShardingAndDType) {
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

TEST_P(HostTransferTest, MakeFromColumnMajorReadsBackRowMajor) {
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

TEST_P(HostTransferTest, NonCompactStridesWithGaps) {
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

TEST_P(HostTransferTest, HostBufferSemanticsCallOnDoneExactlyOnce) {
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

TEST_P(HostTransferTest, ReplicatedReadsBackFromEveryShard) {
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

// The replicas of an upload on CPU devices share one buffer (their platform's host buffers serve
// every CPU device): the CPU devices' memories hold the array once, other devices once each; every
// replica reads back the data, each part of it lives on while any holds it, and the memory is
// freed with the last.
TEST_P(HostTransferTest, ReplicasOnCpuDevicesShareOneBuffer) {
  const Shape shape({64, 33});
  const int64_t bytes = 64 * 33 * 4;
  const std::vector<uint8_t> data = Pattern(bytes, 11);
  const std::vector<int> cpu = OfKind("cpu");
  auto in_use = [&] {
    std::vector<int64_t> per_device;
    for (Device* d : client().devices()) {
      absl::StatusOr<Memory*> m = d->DefaultMemory();
      per_device.push_back(m.ok() ? (*m)->BytesInUse() : 0);
    }
    return per_device;
  };
  const std::vector<int64_t> before = in_use();
  absl::StatusOr<ArrayRef> made =
      MakeArray(client(), data, kS32, shape, ReplicatedSharding(All(), shape));
  ASSERT_THAT(made, IsOk());
  ArrayRef a = *std::move(made);
  ASSERT_THAT(a->GetReadyFuture().Await(), IsOk());
  const std::vector<int64_t> with = in_use();
  int64_t cpu_bytes = 0;
  for (int i = 0; i < n_; ++i) {
    const int64_t added = with[i] - before[i];
    if (client().devices()[i]->Kind() == "cpu") {
      cpu_bytes += added;
    } else {
      EXPECT_GE(added, bytes) << "device " << i << " holds its own replica";
    }
  }
  if (!cpu.empty()) {
    EXPECT_GE(cpu_bytes, bytes);
    EXPECT_LT(cpu_bytes, 2 * bytes) << "the CPU devices' replicas share one buffer";
  }
  ASSERT_OK_AND_ASSIGN(std::vector<ArrayRef> parts,
                       a->DisassembleIntoSingleDeviceArrays(ArrayCopySemantics::kReuseInput));
  ASSERT_THAT(a->Delete().Await(), IsOk());
  a = nullptr;
  // Each replica alone, the others deleted before it.
  for (int i = 0; i < n_; ++i) {
    absl::StatusOr<std::vector<uint8_t>> out = ReadBack(parts[i]);
    ASSERT_THAT(out, IsOk());
    EXPECT_TRUE(*out == data) << "replica " << i;
    ASSERT_THAT(parts[i]->Delete().Await(), IsOk());
  }
  parts.clear();
  EXPECT_EQ(in_use(), before);
}

// Bad input to MakeArrayFromHostBuffer / CopyToHostBuffer

TEST_P(HostTransferTest, MakeAndCopyToHostRejectBadInput) {
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

TESSERA_INSTANTIATE_CLIENT_SUITE(HostTransferTest);

}  // namespace
}  // namespace tessera::conformance
