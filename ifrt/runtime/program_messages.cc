#include "ifrt/runtime/program_messages.h"

#include <set>

#include "ifrt/runtime/collectives.h"

namespace tessera::runtime {
namespace {

int ProcessOf(const CompiledProgram& program, int slot) {
  return program.slot_devices[slot]->ProcessIndex();
}
bool IsMine(const CompiledProgram& program, int slot) {
  return program.slot_devices[slot]->IsAddressable();
}

// The processes other than `slot`'s own that hold a member of its group, ascending.
std::set<int> OtherProcesses(const CompiledProgram& program, size_t index, int slot) {
  std::set<int> out;
  for (int m : program.members[index][slot].group.members) {
    if (ProcessOf(program, m) != ProcessOf(program, slot)) out.insert(ProcessOf(program, m));
  }
  return out;
}

bool HasLocalMember(const CompiledProgram& program, size_t index, int slot) {
  for (int m : program.members[index][slot].group.members) {
    if (IsMine(program, m)) return true;
  }
  return false;
}

void WholeInputMessages(const CompiledProgram& program, size_t index, int64_t elements,
                        std::vector<StepMessage>& out) {
  const int slots = static_cast<int>(program.slot_devices.size());
  for (int r = 0; r < slots && elements > 0; ++r) {
    StepMessage m{.tag = r, .phase = StepMessage::Phase::kWholeInput, .slot = r, .end = elements};
    if (IsMine(program, r)) {
      for (int peer : OtherProcesses(program, index, r)) {
        m.send = true;
        m.peer = peer;
        out.push_back(m);
      }
    } else if (HasLocalMember(program, index, r)) {
      m.peer = ProcessOf(program, r);
      out.push_back(m);
    }
  }
}

void AllReduceMessages(const CompiledProgram& program, size_t index, int64_t elements,
                       std::vector<StepMessage>& out) {
  const int slots = static_cast<int>(program.slot_devices.size());
  // Phase 1: member m's input range of member j, to j's process.
  for (int m = 0; m < slots; ++m) {
    const CollectiveGroup& group = program.members[index][m].group;
    const int size = static_cast<int>(group.members.size());
    for (int p = 0; p < size; ++p) {
      const int j = group.members[p];
      if (ProcessOf(program, m) == ProcessOf(program, j)) continue;
      if (!IsMine(program, m) && !IsMine(program, j)) continue;
      const auto [begin, end] = AllReduceRange(elements, size, p);
      if (begin == end) continue;
      out.push_back(StepMessage{.send = IsMine(program, m),
                                .peer = ProcessOf(program, IsMine(program, m) ? j : m),
                                .tag = int64_t{m} * slots + j,
                                .phase = StepMessage::Phase::kReduceRange,
                                .slot = m,
                                .reducer = j,
                                .begin = begin,
                                .end = end});
    }
  }
  // Phase 2: member m's reduced range, to each other process of its group.
  for (int m = 0; m < slots; ++m) {
    const CollectiveGroup& group = program.members[index][m].group;
    const auto [begin, end] =
        AllReduceRange(elements, static_cast<int>(group.members.size()), group.position);
    if (begin == end) continue;
    StepMessage message{.tag = int64_t{slots} * slots + m,
                        .phase = StepMessage::Phase::kReducedRange,
                        .slot = m,
                        .begin = begin,
                        .end = end};
    if (IsMine(program, m)) {
      for (int peer : OtherProcesses(program, index, m)) {
        message.send = true;
        message.peer = peer;
        out.push_back(message);
      }
    } else if (HasLocalMember(program, index, m)) {
      message.peer = ProcessOf(program, m);
      out.push_back(message);
    }
  }
}

}  // namespace

ProgramTags AssignTags(const ProgramPlan& plan, size_t slots) {
  ProgramTags tags;
  const int64_t n = static_cast<int64_t>(slots);
  for (const ProgramStep& step : plan.steps) {
    tags.offsets.push_back(tags.total);
    if (step.kind != ProgramStep::Kind::kCollective) continue;
    tags.total += step.collective.kind == CollectiveKind::kAllReduce ? n * n + n : n;
  }
  return tags;
}

std::vector<StepMessage> StepMessages(const CompiledProgram& program, size_t index) {
  const CollectiveStep& step = program.plan.steps[index].collective;
  const int64_t elements = program.plan.values[step.input].local_shape.num_elements();
  std::vector<StepMessage> out;
  if (step.kind == CollectiveKind::kAllReduce) {
    AllReduceMessages(program, index, elements, out);
  } else {
    WholeInputMessages(program, index, elements, out);
  }
  return out;
}

}  // namespace tessera::runtime
