// The runtime's collectives (ifrt/runtime/collectives.h): groups on a device grid and the
// host-memory arithmetic of each kind, against the definitions in ifrt/spi/program_plan.h.
#include "ifrt/runtime/collectives.h"

#include <algorithm>
#include <bit>
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
            case ReductionKind::kMin:
              want = std::min(want, x);
              break;
            case ReductionKind::kMax:
              want = std::max(want, x);
              break;
          }
        }
      }
      ASSERT_EQ(std::bit_cast<uint32_t>(out[i]), std::bit_cast<uint32_t>(want)) << "element " << i;
    }
  }
}

TEST(ComputeCollectiveTest, BytesReadFromPeers) {
  EXPECT_EQ(BytesFromEachPeer({.kind = CollectiveKind::kAllReduce}, 64, 4), 32);  // two phases
  EXPECT_EQ(BytesFromEachPeer({.kind = CollectiveKind::kAllGather}, 64, 4), 64);
  EXPECT_EQ(BytesFromEachPeer({.kind = CollectiveKind::kAllToAll}, 64, 4), 16);
  EXPECT_EQ(BytesFromEachPeer({.kind = CollectiveKind::kReduceScatter}, 64, 4), 16);
  EXPECT_EQ(BytesFromEachPeer({.kind = CollectiveKind::kAllSlice}, 64, 4), 0);
}

}  // namespace
}  // namespace tessera::runtime
