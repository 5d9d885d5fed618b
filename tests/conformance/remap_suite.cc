// Client::RemapArrays: extracting, interleaving and deinterleaving shards; bad plans.
// Part of the API-contract suite (tests/conformance/client_conformance.h), instantiated for every
// registered client factory.

// GCC 12 reports false -Wmaybe-uninitialized inside absl::InlinedVector moves (Shape, Index).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <cstdint>
#include <limits>
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
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

class RemapTest : public ClientConformanceTest {};

// RemapArrays

TEST_P(RemapTest, RemapExtractOneShard) {
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

TEST_P(RemapTest, RemapAcceptsTheDefaultMemoryKindByName) {
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

TEST_P(RemapTest, RemapInterleaveAndDeinterleave) {
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

TEST_P(RemapTest, RemapRejectsBadInput) {
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
  // One input shard into two outputs (IFRT rejects it: a shard is moved, not copied).
  RemapPlan fork = extract({kS32, shape, rows}, d0);
  fork.output_specs.push_back(fork.output_specs[0]);
  fork.mappings.push_back({0, 1, {{0, 1, 1}}, {{0, 1, 1}}});
  EXPECT_THAT(fork.Validate(), StatusIs(absl::StatusCode::kInvalidArgument,
                                        HasSubstr("shard 0 of input 0 is used more than once")));
  EXPECT_THAT(client().RemapArrays(fork, absl::MakeSpan(in), sem),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("used more than once")));
  // The same input shard twice into one output, by two mappings or by two intervals of one.
  RemapPlan twice = extract({kS32, shape, rows}, d0);
  twice.mappings.push_back(twice.mappings[0]);
  EXPECT_THAT(twice.Validate(), StatusIs(absl::StatusCode::kInvalidArgument,
                                         HasSubstr("shard 0 of input 0 is used more than once")));
  RemapPlan intervals = extract({kS32, shape, rows}, d0);
  intervals.mappings[0].from.push_back({0, 1, 1});
  intervals.mappings[0].to.push_back({0, 1, 1});
  EXPECT_THAT(intervals.Validate(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("shard 0 of input 0 is used more than once")));
  // A huge step is one shard, not an overflow.
  RemapPlan step = extract({kS32, shape, rows}, d0);
  step.mappings[0].from = {{0, 1, std::numeric_limits<int>::max()}};
  step.mappings[0].to = {{0, 1, std::numeric_limits<int>::max()}};
  EXPECT_EQ(step.mappings[0].from[0].size(), 1);
  EXPECT_OK(step.Validate());
  EXPECT_FALSE(a->IsDeleted());
  ExpectContents(a, data);
}

TESSERA_INSTANTIATE_CLIENT_SUITE(RemapTest);

}  // namespace
}  // namespace tessera::conformance
