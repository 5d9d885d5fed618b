// The runtime's collectives (ifrt/runtime/program/collectives.h): groups on a device grid and the
// host-memory arithmetic of each kind, against the definitions in ifrt/spi/program_plan.h.
#include "ifrt/runtime/program/collectives.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace tessera::runtime {
namespace {

using ::tessera::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(CollectiveGroupTest, GroupsOnATwoByThreeGrid) {
  const std::vector<int64_t> grid = {2, 3};
  // Over axis 1: the devices of one row, in column order.
  CollectiveGroup row = GroupOf(grid, {1}, 4);
  EXPECT_THAT(row.members, ElementsAre(3, 4, 5));
  EXPECT_EQ(row.position, 1);
  // Over axis 0: the devices of one column.
  CollectiveGroup column = GroupOf(grid, {0}, 5);
  EXPECT_THAT(column.members, ElementsAre(2, 5));
  EXPECT_EQ(column.position, 1);
  // Over both axes: everyone, row-major.
  CollectiveGroup all = GroupOf(grid, {0, 1}, 3);
  EXPECT_THAT(all.members, ElementsAre(0, 1, 2, 3, 4, 5));
  EXPECT_EQ(all.position, 3);
  // Over no axis: the device alone.
  CollectiveGroup alone = GroupOf(grid, {}, 2);
  EXPECT_THAT(alone.members, ElementsAre(2));
  EXPECT_THAT(GridPosition(grid, 5), ElementsAre(1, 2));
}

// Member j's input: 2x4 f32 holding 100*j + index.
std::vector<std::vector<float>> Inputs(int members, int elements) {
  std::vector<std::vector<float>> inputs(members, std::vector<float>(elements));
  for (int j = 0; j < members; ++j) {
    for (int e = 0; e < elements; ++e) inputs[j][e] = 100.0f * j + e;
  }
  return inputs;
}

std::vector<const void*> Pointers(const std::vector<std::vector<float>>& inputs) {
  std::vector<const void*> p;
  for (const auto& in : inputs) p.push_back(in.data());
  return p;
}

TEST(ComputeCollectiveTest, AllReduceSumsMaxesAndMins) {
  auto inputs = Inputs(3, 8);
  for (auto [kind, expect0] :
       {std::pair{ReductionKind::kSum, 300.0f}, std::pair{ReductionKind::kMax, 200.0f},
        std::pair{ReductionKind::kMin, 0.0f}}) {
    CollectiveStep step{.kind = CollectiveKind::kAllReduce, .reduction = kind};
    std::vector<float> out(8);
    ASSERT_OK(ComputeCollective(step, DType(DType::kF32), {2, 4}, {2, 4}, Pointers(inputs), 0,
                                out.data()));
    EXPECT_EQ(out[0], expect0);
  }
  CollectiveStep sum{.kind = CollectiveKind::kAllReduce};
  std::vector<float> out(8);
  ASSERT_OK(
      ComputeCollective(sum, DType(DType::kF32), {2, 4}, {2, 4}, Pointers(inputs), 0, out.data()));
  EXPECT_THAT(out, ElementsAre(300, 303, 306, 309, 312, 315, 318, 321));
}

TEST(ComputeCollectiveTest, AllGatherConcatenatesAlongTheAxis) {
  auto inputs = Inputs(2, 8);  // each 2x4
  CollectiveStep step{.kind = CollectiveKind::kAllGather, .gather_axis = 1};
  std::vector<float> out(16);  // 2x8
  ASSERT_OK(
      ComputeCollective(step, DType(DType::kF32), {2, 4}, {2, 8}, Pointers(inputs), 1, out.data()));
  EXPECT_THAT(out, ElementsAre(0, 1, 2, 3, 100, 101, 102, 103, 4, 5, 6, 7, 104, 105, 106, 107));
  step.gather_axis = 0;  // 4x4
  ASSERT_OK(
      ComputeCollective(step, DType(DType::kF32), {2, 4}, {4, 4}, Pointers(inputs), 0, out.data()));
  EXPECT_THAT(out, ElementsAre(0, 1, 2, 3, 4, 5, 6, 7, 100, 101, 102, 103, 104, 105, 106, 107));
}

TEST(ComputeCollectiveTest, AllSliceTakesThisMembersPiece) {
  auto inputs = Inputs(2, 8);
  CollectiveStep step{.kind = CollectiveKind::kAllSlice, .split_axis = 1};
  std::vector<float> out(4);  // 2x2
  ASSERT_OK(
      ComputeCollective(step, DType(DType::kF32), {2, 4}, {2, 2}, Pointers(inputs), 1, out.data()));
  // Member 1 slices its own input (100..107): columns 2..3.
  EXPECT_THAT(out, ElementsAre(102, 103, 106, 107));
}

TEST(ComputeCollectiveTest, AllToAllExchangesPieces) {
  auto inputs = Inputs(2, 8);  // each 2x4; split columns, concatenate rows
  CollectiveStep step{.kind = CollectiveKind::kAllToAll, .split_axis = 1, .concat_axis = 0};
  std::vector<float> out(8);  // 4x2
  ASSERT_OK(
      ComputeCollective(step, DType(DType::kF32), {2, 4}, {4, 2}, Pointers(inputs), 0, out.data()));
  // Member 0 receives piece 0 (columns 0..1) of every member, stacked by member.
  EXPECT_THAT(out, ElementsAre(0, 1, 4, 5, 100, 101, 104, 105));
}

TEST(ComputeCollectiveTest, ReduceScatterSumsThenSlices) {
  auto inputs = Inputs(2, 8);
  CollectiveStep step{.kind = CollectiveKind::kReduceScatter, .split_axis = 0};
  std::vector<float> out(4);  // 1x4
  ASSERT_OK(
      ComputeCollective(step, DType(DType::kF32), {2, 4}, {1, 4}, Pointers(inputs), 1, out.data()));
  EXPECT_THAT(out, ElementsAre(108, 110, 112, 114));  // row 1 of the sum
}

TEST(ComputeCollectiveTest, IntegerSumsAndUnsupportedDtypes) {
  std::vector<int64_t> a = {1, 2}, b = {10, 20};
  std::vector<const void*> in = {a.data(), b.data()};
  std::vector<int64_t> out(2);
  CollectiveStep step{.kind = CollectiveKind::kAllReduce};
  ASSERT_OK(ComputeCollective(step, DType(DType::kS64), {2}, {2}, in, 0, out.data()));
  EXPECT_THAT(out, ElementsAre(11, 22));
  EXPECT_THAT(ComputeCollective(step, DType(DType::kBF16), {2}, {2}, in, 0, out.data()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not bf16")));
}

// The integer kinds of a program's combiners: andi, ori, xori, and maxui / minui on signless
// (here signed) integers compare unsigned; maxsi / minsi signed. Each member holds one column.
TEST(ComputeCollectiveTest, IntegerBitwiseAndUnsignedReductions) {
  const std::vector<std::vector<int32_t>> members = {
      {1, -1, std::numeric_limits<int32_t>::min()}, {2, 5, 0}, {-4, 7, -1}, {8, 3, 1}};
  std::vector<const void*> in;
  for (const auto& m : members) in.push_back(m.data());
  auto reduce = [&](ReductionKind kind) {
    std::vector<int32_t> out(3);
    CollectiveStep step{.kind = CollectiveKind::kAllReduce, .reduction = kind};
    EXPECT_OK(ComputeCollective(step, DType(DType::kS32), {3}, {3}, in, 0, out.data()));
    return out;
  };
  EXPECT_THAT(reduce(ReductionKind::kAnd), ElementsAre(1 & 2 & -4 & 8, -1 & 5 & 7 & 3, 0));
  EXPECT_THAT(reduce(ReductionKind::kOr), ElementsAre(1 | 2 | -4 | 8, -1, -1));
  EXPECT_THAT(reduce(ReductionKind::kXor),
              ElementsAre(1 ^ 2 ^ -4 ^ 8, -1 ^ 5 ^ 7 ^ 3, std::numeric_limits<int32_t>::max() ^ 1));
  EXPECT_THAT(reduce(ReductionKind::kMaxUnsigned), ElementsAre(-4, -1, -1));
  EXPECT_THAT(reduce(ReductionKind::kMinUnsigned), ElementsAre(1, 3, 0));
  EXPECT_THAT(reduce(ReductionKind::kMax), ElementsAre(8, 7, 1));
  EXPECT_THAT(reduce(ReductionKind::kMin),
              ElementsAre(-4, -1, std::numeric_limits<int32_t>::min()));
  // 64-bit: the same kinds, two members.
  const std::vector<int64_t> a = {-1, 6}, b = {1, 3};
  std::vector<int64_t> out(2);
  CollectiveStep step{.kind = CollectiveKind::kAllReduce, .reduction = ReductionKind::kMaxUnsigned};
  ASSERT_OK(
      ComputeCollective(step, DType(DType::kS64), {2}, {2}, {a.data(), b.data()}, 0, out.data()));
  EXPECT_THAT(out, ElementsAre(-1, 6));
  step.reduction = ReductionKind::kXor;
  ASSERT_OK(
      ComputeCollective(step, DType(DType::kS64), {2}, {2}, {a.data(), b.data()}, 0, out.data()));
  EXPECT_THAT(out, ElementsAre(-2, 5));
}

// Float max / min: maximum / minimum propagate a NaN from any member (also a later one) and order
// -0 < +0; maxnum / minnum ignore NaN (NaN only when every member has it). Columns: a NaN from
// member 1, from member 0, -0 then +0, +0 then -0, NaN everywhere, -0 everywhere.
TEST(ComputeCollectiveTest, FloatMaxMinPropagateOrIgnoreNaNAndOrderSignedZeros) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> m0 = {1.0f, nan, -0.0f, 0.0f, nan, -0.0f};
  const std::vector<float> m1 = {nan, 2.0f, 0.0f, -0.0f, nan, -0.0f};
  auto reduce = [&](ReductionKind kind) {
    std::vector<float> out(6);
    EXPECT_OK(ReduceElements(kind, DType(DType::kF32), {m0.data(), m1.data()}, 0, 6, out.data()));
    std::vector<uint32_t> bits;
    for (float f : out) bits.push_back(std::isnan(f) ? 0x7fc00000u : std::bit_cast<uint32_t>(f));
    return bits;
  };
  const uint32_t kNaN = 0x7fc00000u, kPlusZero = 0, kMinusZero = 0x80000000u;
  const uint32_t one = std::bit_cast<uint32_t>(1.0f), two = std::bit_cast<uint32_t>(2.0f);
  EXPECT_THAT(reduce(ReductionKind::kMax),
              ElementsAre(kNaN, kNaN, kPlusZero, kPlusZero, kNaN, kMinusZero));
  EXPECT_THAT(reduce(ReductionKind::kMin),
              ElementsAre(kNaN, kNaN, kMinusZero, kMinusZero, kNaN, kMinusZero));
  EXPECT_THAT(reduce(ReductionKind::kMaxNum),
              ElementsAre(one, two, kPlusZero, kPlusZero, kNaN, kMinusZero));
  EXPECT_THAT(reduce(ReductionKind::kMinNum),
              ElementsAre(one, two, kMinusZero, kMinusZero, kNaN, kMinusZero));
  // f64 alike.
  const double dnan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> d0 = {0.0, 3.0}, d1 = {-0.0, dnan};
  std::vector<double> out(2);
  ASSERT_OK(ReduceElements(ReductionKind::kMin, DType(DType::kF64), {d0.data(), d1.data()}, 0, 2,
                           out.data()));
  EXPECT_EQ(std::bit_cast<uint64_t>(out[0]), std::bit_cast<uint64_t>(-0.0));
  EXPECT_TRUE(std::isnan(out[1]));
}

TEST(ComputeCollectiveTest, KindsThatDoNotApplyToTheDtypeAreInvalidArgument) {
  const std::vector<float> f = {1.0f};
  const std::vector<int32_t> i = {1};
  float fout;
  int32_t iout;
  EXPECT_THAT(ReduceElements(ReductionKind::kAnd, DType(DType::kF32), {f.data()}, 0, 1, &fout),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("and reduction does not apply to f32")));
  EXPECT_THAT(ReduceElements(ReductionKind::kMaxNum, DType(DType::kS32), {i.data()}, 0, 1, &iout),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("maxnum reduction does not apply to s32")));
}

TEST(ComputeCollectiveTest, AxesThatDoNotSplitAreErrors) {
  auto inputs = Inputs(3, 8);
  CollectiveStep step{.kind = CollectiveKind::kAllSlice, .split_axis = 1};
  std::vector<float> out(8);
  EXPECT_THAT(
      ComputeCollective(step, DType(DType::kF32), {2, 4}, {2, 1}, Pointers(inputs), 0, out.data()),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("does not split into 3")));
  step.split_axis = 5;
  EXPECT_THAT(
      ComputeCollective(step, DType(DType::kF32), {2, 4}, {2, 1}, Pointers(inputs), 0, out.data()),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("out of rank")));
}

TEST(ComputeCollectiveTest, TwoPhaseAllReduceRangesCoverEveryElementOnce) {
  EXPECT_EQ(AllReduceRange(10, 4, 0), std::make_pair(int64_t{0}, int64_t{3}));
  EXPECT_EQ(AllReduceRange(10, 4, 1), std::make_pair(int64_t{3}, int64_t{6}));
  EXPECT_EQ(AllReduceRange(10, 4, 2), std::make_pair(int64_t{6}, int64_t{8}));
  EXPECT_EQ(AllReduceRange(10, 4, 3), std::make_pair(int64_t{8}, int64_t{10}));
  EXPECT_EQ(AllReduceRange(2, 4, 3), std::make_pair(int64_t{2}, int64_t{2}));  // fewer than members
  // The ranges reduced one by one equal the whole reduction.
  auto inputs = Inputs(3, 8);
  std::vector<float> out(8, -1.0f);
  for (int m = 0; m < 3; ++m) {
    auto [begin, end] = AllReduceRange(8, 3, m);
    ASSERT_OK(ReduceElements(ReductionKind::kSum, DType(DType::kF32), Pointers(inputs), begin, end,
                             out.data()));
  }
  EXPECT_THAT(out, ElementsAre(300, 303, 306, 309, 312, 315, 318, 321));
}

// Ranges over several 16 KiB blocks, odd bounds (the runs of 16 and the tails), every reduction:
// bit-identical to reducing element by element in member order (f32 sums are not associative).
TEST(ComputeCollectiveTest, ReduceElementsOverManyBlocksIsBitIdenticalToInMemberOrder) {
  constexpr int64_t kElements = 3 * 4096 + 37;
  std::vector<std::vector<float>> inputs(5, std::vector<float>(kElements));
  for (size_t m = 0; m < inputs.size(); ++m) {
    for (int64_t i = 0; i < kElements; ++i) {
      inputs[m][i] = static_cast<float>((i * 7919 + m * 104729) % 2003) / 97.0f - 10.0f;
    }
  }
  inputs[2][5000] = std::numeric_limits<float>::quiet_NaN();
  std::vector<const void*> pointers;
  for (const auto& in : inputs) pointers.push_back(in.data());
  for (ReductionKind kind :
       {ReductionKind::kSum, ReductionKind::kProduct, ReductionKind::kMin, ReductionKind::kMax}) {
    SCOPED_TRACE(static_cast<int>(kind));
    const int64_t begin = 3, end = kElements - 2;
    std::vector<float> out(kElements, -1.0f);
    ASSERT_OK(ReduceElements(kind, DType(DType::kF32), pointers, begin, end, out.data()));
    for (int64_t i = 0; i < kElements; ++i) {
      float want = -1.0f;
      if (i >= begin && i < end) {
        want = inputs[0][i];
        for (size_t m = 1; m < inputs.size(); ++m) {
          const float x = inputs[m][i];
          switch (kind) {
            case ReductionKind::kSum:
              want = want + x;
              break;
            case ReductionKind::kProduct:
              want = want * x;
              break;
            case ReductionKind::kMin:  // NaN propagates (no signed zeros here)
              want = std::isnan(want) || std::isnan(x) ? std::numeric_limits<float>::quiet_NaN()
                                                       : std::min(want, x);
              break;
            case ReductionKind::kMax:
              want = std::isnan(want) || std::isnan(x) ? std::numeric_limits<float>::quiet_NaN()
                                                       : std::max(want, x);
              break;
            default:
              break;
          }
        }
      }
      if (std::isnan(want)) {
        ASSERT_TRUE(std::isnan(out[i])) << "element " << i;
        continue;
      }
      ASSERT_EQ(std::bit_cast<uint32_t>(out[i]), std::bit_cast<uint32_t>(want)) << "element " << i;
    }
  }
}

TEST(ComputeCollectiveTest, CollectivePermuteShiftsWithAndWithoutWrapping) {
  auto inputs = Inputs(4, 2);
  CollectiveStep ring{.kind = CollectiveKind::kCollectivePermute};
  ring.shift_offset = 1;
  ring.shift_rotates = true;
  CollectiveStep back{.kind = CollectiveKind::kCollectivePermute};
  back.shift_offset = -2;  // position p receives p + 2's input; 2 and 3 receive nothing
  EXPECT_EQ(PermuteSource(ring, 4, 0), 3);
  EXPECT_EQ(PermuteSource(ring, 4, 2), 1);
  EXPECT_EQ(PermuteSource(back, 4, 1), 3);
  EXPECT_EQ(PermuteSource(back, 4, 2), -1);
  ring.shift_offset = -5;  // the same ring as +3 around 4
  EXPECT_EQ(PermuteSource(ring, 4, 0), 1);
  ring.shift_offset = 1;
  for (int position = 0; position < 4; ++position) {
    SCOPED_TRACE(position);
    // Only the source's input is given: a permute reads nothing else.
    const int source = PermuteSource(ring, 4, position);
    std::vector<const void*> only(4, nullptr);
    only[source] = inputs[source].data();
    std::vector<float> out(2, -1.0f);
    ASSERT_OK(ComputeCollective(ring, DType(DType::kF32), {2}, {2}, only, position, out.data()));
    EXPECT_THAT(out, ElementsAre(100.0f * source, 100.0f * source + 1));
  }
  std::vector<float> out(2, -1.0f);
  ASSERT_OK(ComputeCollective(back, DType(DType::kF32), {2}, {2}, Pointers(inputs), 1, out.data()));
  EXPECT_THAT(out, ElementsAre(300, 301));
  ASSERT_OK(ComputeCollective(back, DType(DType::kF32), {2}, {2}, Pointers(inputs), 3, out.data()));
  EXPECT_THAT(out, ElementsAre(0, 0));  // no source: zeros, as StableHLO's collective_permute
  EXPECT_EQ(
      ComputeCollective(back, DType(DType::kF32), {2}, {4}, Pointers(inputs), 1, out.data()).code(),
      absl::StatusCode::kInvalidArgument);
}

TEST(ComputeCollectiveTest, BytesReadFromPeers) {
  EXPECT_EQ(BytesFromEachPeer({.kind = CollectiveKind::kAllReduce}, 64, 4), 32);  // two phases
  EXPECT_EQ(BytesFromEachPeer({.kind = CollectiveKind::kAllGather}, 64, 4), 64);
  EXPECT_EQ(BytesFromEachPeer({.kind = CollectiveKind::kAllToAll}, 64, 4), 16);
  EXPECT_EQ(BytesFromEachPeer({.kind = CollectiveKind::kReduceScatter}, 64, 4), 16);
  EXPECT_EQ(BytesFromEachPeer({.kind = CollectiveKind::kAllSlice}, 64, 4), 0);
  EXPECT_EQ(BytesFromEachPeer({.kind = CollectiveKind::kCollectivePermute}, 64, 4), 64);  // one
}

}  // namespace
}  // namespace tessera::runtime
