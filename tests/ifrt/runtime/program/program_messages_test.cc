// The messages between processes of a program's collective steps
// (ifrt/runtime/program/program_messages.h): every message one process sends is the message another
// process receives (same peers, tag and size), each exactly once, within the step's tags; processes
// without a member of a group take no part in it; the bytes per run of an all-reduce (two phases)
// and an all-gather (whole inputs).
#include "ifrt/runtime/program/program_messages.h"

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <tuple>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ifrt/runtime/program/collectives.h"

namespace tessera::runtime {
namespace {

// A program of one collective step over `grid`, slot s on process process_of[s].
struct FakeProgram {
  std::vector<std::unique_ptr<RuntimeDevice>> devices;
  CompiledProgram program;
};

std::unique_ptr<FakeProgram> MakeProgram(std::vector<int64_t> grid, std::vector<int> process_of,
                                         CollectiveStep step, int64_t elements) {
  auto fake = std::make_unique<FakeProgram>();
  CompiledProgram& p = fake->program;
  p.plan.grid_shape = grid;
  p.plan.values = {ProgramValue{DType(DType::kF32), Shape({elements})},
                   ProgramValue{DType(DType::kF32), Shape({elements})}};
  step.input = 0;
  step.output = 1;
  p.plan.steps = {ProgramStep{ProgramStep::Kind::kCollective, {}, step}};
  p.members.resize(1);
  for (size_t s = 0; s < process_of.size(); ++s) {
    fake->devices.push_back(
        std::make_unique<RuntimeDevice>(nullptr, DeviceId{static_cast<int32_t>(s)},
                                        PlatformDeviceInfo{.kind = "cpu"}, process_of[s]));
    p.slot_devices.push_back(fake->devices.back().get());
    p.members[0].push_back(CollectiveMember{GroupOf(grid, step.grid_axes, static_cast<int>(s))});
  }
  return fake;
}

// (from process, to process, tag) -> bytes, over every process's sends or receives.
using Messages = std::map<std::tuple<int, int, int64_t>, int64_t>;

void ExpectMatched(const CompiledProgram& program, int processes) {
  Messages sends, receives;
  const int64_t window = AssignTags(program.plan, program.slot_devices.size()).total;
  for (int p = 0; p < processes; ++p) {
    for (const StepMessage& m : StepMessages(program, 0, p)) {
      EXPECT_NE(m.peer, p);
      EXPECT_GE(m.tag, 0);
      EXPECT_LT(m.tag, window);
      EXPECT_LT(m.begin, m.end);
      Messages& side = m.send ? sends : receives;
      const auto key = m.send ? std::tuple(p, m.peer, m.tag) : std::tuple(m.peer, p, m.tag);
      EXPECT_TRUE(side.emplace(key, (m.end - m.begin) * 4).second)
          << "two messages of one (from, to, tag): " << std::get<0>(key) << " " << std::get<1>(key)
          << " " << std::get<2>(key);
    }
  }
  EXPECT_EQ(sends, receives);
  // Messages exactly where a group spans processes (and, for all_to_all and reduce_scatter, where
  // the input has a piece per member).
  const CollectiveStep& step = program.plan.steps[0].collective;
  const int64_t elements = program.plan.values[0].local_shape.num_elements();
  const bool pieces =
      step.kind == CollectiveKind::kAllToAll || step.kind == CollectiveKind::kReduceScatter;
  bool spans = false;
  for (size_t s = 0; s < program.slot_devices.size(); ++s) {
    const std::vector<int>& group = program.members[0][s].group.members;
    if (pieces && elements < static_cast<int64_t>(group.size())) continue;
    for (int m : group) {
      spans = spans ||
              program.slot_devices[m]->ProcessIndex() != program.slot_devices[s]->ProcessIndex();
    }
  }
  EXPECT_EQ(sends.empty(), !spans);
}

CollectiveStep Step(CollectiveKind kind, std::vector<int> axes) {
  CollectiveStep step;
  step.kind = kind;
  step.grid_axes = std::move(axes);
  return step;
}

TEST(ProgramMessagesTest, EverySendIsReceivedOnceForEveryKindAndLayout) {
  const std::vector<std::vector<int>> layouts = {
      {0, 0, 1, 1}, {0, 1, 0, 1}, {0, 1, 1, 2}, {0, 1, 2, 3}};
  for (CollectiveKind kind : {CollectiveKind::kAllReduce, CollectiveKind::kAllGather,
                              CollectiveKind::kAllToAll, CollectiveKind::kReduceScatter}) {
    for (const std::vector<int>& axes : std::vector<std::vector<int>>{{0}, {1}, {0, 1}}) {
      for (const std::vector<int>& layout : layouts) {
        for (int64_t elements : {1, 3, 8}) {
          SCOPED_TRACE(::testing::Message() << "kind " << static_cast<int>(kind) << " axes "
                                            << axes.size() << " elements " << elements);
          auto fake = MakeProgram({2, 2}, layout, Step(kind, axes), elements);
          const int processes = *std::max_element(layout.begin(), layout.end()) + 1;
          ExpectMatched(fake->program, processes);
        }
      }
    }
  }
}

TEST(ProgramMessagesTest, AllSliceSendsNothing) {
  CollectiveStep step = Step(CollectiveKind::kAllSlice, {0});
  auto fake = MakeProgram({4}, {0, 0, 1, 1}, step, 8);
  EXPECT_TRUE(StepMessages(fake->program, 0, 0).empty());
  EXPECT_TRUE(StepMessages(fake->program, 0, 1).empty());
  EXPECT_EQ(BytesBetweenProcesses(fake->program), 0);
}

TEST(ProgramMessagesTest, AProcessOutsideEveryGroupTakesNoPart) {
  // Groups over grid axis 1 of a 2x2 grid: {0,1} on processes 0 and 1, {2,3} on process 2.
  auto fake = MakeProgram({2, 2}, {0, 1, 2, 2}, Step(CollectiveKind::kAllReduce, {1}), 8);
  EXPECT_TRUE(StepMessages(fake->program, 0, 2).empty());
  EXPECT_TRUE(StepMessages(fake->program, 0, 3).empty());
  EXPECT_FALSE(StepMessages(fake->program, 0, 0).empty());
}

TEST(ProgramMessagesTest, APermuteSendsEachSourcesInputToItsTargetOnly) {
  // f32[8] (32 bytes) over 4 slots. A ring (+1, wrapping) with slots {0,1} on process 0 and {2,3}
  // on process 1: only 1 -> 2 and 3 -> 0 cross, one message each.
  CollectiveStep ring = Step(CollectiveKind::kCollectivePermute, {0});
  ring.shift_offset = 1;
  ring.shift_rotates = true;
  auto halves = MakeProgram({4}, {0, 0, 1, 1}, ring, 8);
  ExpectMatched(halves->program, 2);
  EXPECT_EQ(BytesBetweenProcesses(halves->program), 2 * 32);
  const std::vector<StepMessage> sent = StepMessages(halves->program, 0, 0);
  ASSERT_EQ(sent.size(), 2u);  // process 0 sends slot 1's input, receives slot 3's
  EXPECT_TRUE(sent[0].send != sent[1].send);
  for (const StepMessage& m : sent) EXPECT_EQ(m.slot, m.send ? 1 : 3);
  // Alternating processes: every pair crosses.
  auto alternating = MakeProgram({4}, {0, 1, 0, 1}, ring, 8);
  ExpectMatched(alternating->program, 2);
  EXPECT_EQ(BytesBetweenProcesses(alternating->program), 4 * 32);
  // Without wrapping, backwards by one: 3 -> 2, 2 -> 1, 1 -> 0; only 2 -> 1 crosses.
  CollectiveStep back = Step(CollectiveKind::kCollectivePermute, {0});
  back.shift_offset = -1;
  auto stages = MakeProgram({4}, {0, 0, 1, 1}, back, 8);
  ExpectMatched(stages->program, 2);
  EXPECT_EQ(BytesBetweenProcesses(stages->program), 32);
}

TEST(ProgramMessagesTest, BytesBetweenProcesses) {
  // 4 slots, 2 per process, f32[8] (32 bytes). All-reduce: phase 1 sends each member's 8-byte
  // range of each of 2 remote members (4 x 2 x 8), phase 2 each member's reduced range once to
  // the other process (4 x 8).
  auto reduce = MakeProgram({4}, {0, 0, 1, 1}, Step(CollectiveKind::kAllReduce, {0}), 8);
  EXPECT_EQ(BytesBetweenProcesses(reduce->program), 4 * 2 * 8 + 4 * 8);
  // All-gather: each member's whole input once to the other process.
  auto gather = MakeProgram({4}, {0, 0, 1, 1}, Step(CollectiveKind::kAllGather, {0}), 8);
  EXPECT_EQ(BytesBetweenProcesses(gather->program), 4 * 32);
  // All-to-all: each member's 8-byte piece of each of the 2 members on the other process.
  auto to_all = MakeProgram({4}, {0, 0, 1, 1}, Step(CollectiveKind::kAllToAll, {0}), 8);
  EXPECT_EQ(BytesBetweenProcesses(to_all->program), 4 * 2 * 8);
  // One process: nothing.
  auto local = MakeProgram({4}, {0, 0, 0, 0}, Step(CollectiveKind::kAllReduce, {0}), 8);
  EXPECT_EQ(BytesBetweenProcesses(local->program), 0);
}

}  // namespace
}  // namespace tessera::runtime
