#include "ifrt/runtime/program/program_messages.h"

#include <set>

#include "ifrt/runtime/program/collectives.h"

namespace tessera::runtime {
namespace {

int ProcessOf(const CompiledProgram& program, int slot) {
  return program.slot_devices[slot]->ProcessIndex();
}

// The messages of one step as process `me` sees them.
class StepView {
 public:
  StepView(const CompiledProgram& program, size_t index, int me)
      : program_(program), index_(index), me_(me) {}

  void WholeInputMessages(int64_t elements, std::vector<StepMessage>& out) const;
  void PieceMessages(int64_t elements, std::vector<StepMessage>& out) const;
  void AllReduceMessages(int64_t elements, std::vector<StepMessage>& out) const;
  // collective_permute: each member's source sends its whole input to the member's process.
  void PermuteMessages(int64_t elements, std::vector<StepMessage>& out) const;

 private:
  bool IsMine(int slot) const { return ProcessOf(program_, slot) == me_; }
  const CollectiveGroup& GroupOf(int slot) const { return program_.members[index_][slot].group; }
  // The processes other than `slot`'s own that hold a member of its group, ascending.
  std::set<int> OtherProcesses(int slot) const;
  bool HasLocalMember(int slot) const;

  const CompiledProgram& program_;
  size_t index_;
  int me_;
};

std::set<int> StepView::OtherProcesses(int slot) const {
  std::set<int> out;
  for (int m : GroupOf(slot).members) {
    if (ProcessOf(program_, m) != ProcessOf(program_, slot)) out.insert(ProcessOf(program_, m));
  }
  return out;
}

bool StepView::HasLocalMember(int slot) const {
  for (int m : GroupOf(slot).members) {
    if (IsMine(m)) return true;
  }
  return false;
}

void StepView::WholeInputMessages(int64_t elements, std::vector<StepMessage>& out) const {
  const int slots = static_cast<int>(program_.slot_devices.size());
  for (int r = 0; r < slots && elements > 0; ++r) {
    StepMessage m{.tag = r, .phase = StepMessage::Phase::kWholeInput, .slot = r, .end = elements};
    if (IsMine(r)) {
      for (int peer : OtherProcesses(r)) {
        m.send = true;
        m.peer = peer;
        out.push_back(m);
      }
    } else if (HasLocalMember(r)) {
      m.peer = ProcessOf(program_, r);
      out.push_back(m);
    }
  }
}

void StepView::PieceMessages(int64_t elements, std::vector<StepMessage>& out) const {
  const int slots = static_cast<int>(program_.slot_devices.size());
  for (int m = 0; m < slots; ++m) {
    const CollectiveGroup& group = GroupOf(m);
    const int size = static_cast<int>(group.members.size());
    if (elements / size == 0) continue;
    for (int p = 0; p < size; ++p) {
      const int j = group.members[p];
      if (ProcessOf(program_, m) == ProcessOf(program_, j)) continue;
      if (!IsMine(m) && !IsMine(j)) continue;
      out.push_back(StepMessage{.send = IsMine(m),
                                .peer = ProcessOf(program_, IsMine(m) ? j : m),
                                .tag = int64_t{m} * slots + j,
                                .phase = StepMessage::Phase::kWholeInput,
                                .slot = m,
                                .reducer = j,
                                .end = elements / size,
                                .piece = p,
                                .pieces = size});
    }
  }
}

void StepView::AllReduceMessages(int64_t elements, std::vector<StepMessage>& out) const {
  const int slots = static_cast<int>(program_.slot_devices.size());
  // Phase 1: member m's input range of member j, to j's process.
  for (int m = 0; m < slots; ++m) {
    const CollectiveGroup& group = GroupOf(m);
    const int size = static_cast<int>(group.members.size());
    for (int p = 0; p < size; ++p) {
      const int j = group.members[p];
      if (ProcessOf(program_, m) == ProcessOf(program_, j)) continue;
      if (!IsMine(m) && !IsMine(j)) continue;
      const auto [begin, end] = AllReduceRange(elements, size, p);
      if (begin == end) continue;
      out.push_back(StepMessage{.send = IsMine(m),
                                .peer = ProcessOf(program_, IsMine(m) ? j : m),
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
    const CollectiveGroup& group = GroupOf(m);
    const auto [begin, end] =
        AllReduceRange(elements, static_cast<int>(group.members.size()), group.position);
    if (begin == end) continue;
    StepMessage message{.tag = int64_t{slots} * slots + m,
                        .phase = StepMessage::Phase::kReducedRange,
                        .slot = m,
                        .begin = begin,
                        .end = end};
    if (IsMine(m)) {
      for (int peer : OtherProcesses(m)) {
        message.send = true;
        message.peer = peer;
        out.push_back(message);
      }
    } else if (HasLocalMember(m)) {
      message.peer = ProcessOf(program_, m);
      out.push_back(message);
    }
  }
}

void StepView::PermuteMessages(int64_t elements, std::vector<StepMessage>& out) const {
  const CollectiveStep& step = program_.plan.steps[index_].collective;
  const int slots = static_cast<int>(program_.slot_devices.size());
  for (int m = 0; m < slots && elements > 0; ++m) {
    const CollectiveGroup& group = GroupOf(m);
    const int source = PermuteSource(step, static_cast<int>(group.members.size()), group.position);
    if (source < 0) continue;
    const int j = group.members[source];
    if (ProcessOf(program_, m) == ProcessOf(program_, j)) continue;
    if (!IsMine(m) && !IsMine(j)) continue;
    // Each member has one source, and each source one target: the tag of the source's slot.
    out.push_back(StepMessage{.send = IsMine(j),
                              .peer = ProcessOf(program_, IsMine(j) ? m : j),
                              .tag = j,
                              .phase = StepMessage::Phase::kWholeInput,
                              .slot = j,
                              .end = elements});
  }
}

}  // namespace

ProgramTags AssignTags(const ProgramPlan& plan, size_t slots) {
  ProgramTags tags;
  const int64_t n = static_cast<int64_t>(slots);
  for (const ProgramStep& step : plan.steps) {
    tags.offsets.push_back(tags.total);
    if (step.kind != ProgramStep::Kind::kCollective) continue;
    switch (step.collective.kind) {
      case CollectiveKind::kAllReduce:
        tags.total += n * n + n;
        break;
      case CollectiveKind::kAllToAll:
      case CollectiveKind::kReduceScatter:
        tags.total += n * n;
        break;
      default:
        tags.total += n;
    }
  }
  return tags;
}

std::vector<StepMessage> StepMessages(const CompiledProgram& program, size_t index, int process) {
  const CollectiveStep& step = program.plan.steps[index].collective;
  const int64_t elements = program.plan.values[step.input].local_shape.num_elements();
  std::vector<StepMessage> out;
  const StepView view(program, index, process);
  if (step.kind == CollectiveKind::kAllReduce) {
    view.AllReduceMessages(elements, out);
  } else if (step.kind == CollectiveKind::kAllToAll ||
             step.kind == CollectiveKind::kReduceScatter) {
    view.PieceMessages(elements, out);
  } else if (step.kind == CollectiveKind::kAllGather) {  // all_slice reads its own input only
    view.WholeInputMessages(elements, out);
  } else if (step.kind == CollectiveKind::kCollectivePermute) {
    view.PermuteMessages(elements, out);
  }
  return out;
}

int64_t BytesBetweenProcesses(const CompiledProgram& program) {
  std::set<int> processes;
  for (RuntimeDevice* d : program.slot_devices) processes.insert(d->ProcessIndex());
  int64_t bytes = 0;
  for (size_t i = 0; i < program.plan.steps.size(); ++i) {
    const ProgramStep& step = program.plan.steps[i];
    if (step.kind != ProgramStep::Kind::kCollective) continue;
    const int64_t element_bytes = *program.plan.values[step.collective.input].dtype.byte_size();
    for (int p : processes) {
      for (const StepMessage& m : StepMessages(program, i, p)) {
        if (m.send) bytes += (m.end - m.begin) * element_bytes;
      }
    }
  }
  return bytes;
}

}  // namespace tessera::runtime
