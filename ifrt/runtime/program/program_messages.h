#ifndef TESSERA_IFRT_RUNTIME_PROGRAM_PROGRAM_MESSAGES_H_
#define TESSERA_IFRT_RUNTIME_PROGRAM_PROGRAM_MESSAGES_H_

// The messages between processes of a program's collective steps (an executable whose devices
// span several processes: runtime_executable.h). Every process derives the same messages from
// the same CompiledProgram, so that a message one process sends is the message its peer receives
// (same tag), and nothing else needs agreeing beyond the Execute's one agreement:
//
// - all_gather: the whole input of a member goes once to each other process holding a member of
//   its group (tag: the member's slot); the receiving process computes its members' outputs from
//   local inputs and the received ones.
// - all_to_all, reduce_scatter: member j reads only piece j (of G along the split axis) of each
//   peer's input: member m sends that piece to j's process (tag: the pair m, j), a strided box
//   received into the same box of host staging as large as m's input.
// - all_slice: none (each member slices its own input).
// - collective_permute: a member's source sends its whole input to the member's process (tag: the
//   source's slot; each source has one target).
// - all_reduce (two phases, as within a process): member m sends the range member j reduces of its
//   input to j's process (phase 1, tag: the pair m, j); once reduced, member m sends its reduced
//   range to each other process of its group (phase 2, tag: m).
//
// Messages of zero bytes are left out (an empty message means a failed source).
// Pure functions of the program; thread-safe.

#include <cstdint>
#include <vector>

#include "ifrt/runtime/program/runtime_executable.h"

namespace tessera::runtime {

struct StepMessage {
  enum class Phase { kWholeInput, kReduceRange, kReducedRange };
  bool send = false;  // else a receive
  int peer = 0;       // the other process
  int64_t tag = 0;    // from the step's first tag (ProgramTags)
  Phase phase = Phase::kWholeInput;
  int slot = 0;                // the member whose buffer the bytes come from
  int reducer = 0;             // kReduceRange, or a piece: the member that receives it
  int64_t begin = 0, end = 0;  // the elements of the slot's buffer (dense, row-major)
  // kWholeInput of all_to_all and reduce_scatter: only piece `piece` of `pieces` equal pieces along
  // the step's split axis (a strided box of the input; end - begin: its element count).
  int piece = -1;
  int pieces = 1;
};

// The tags of a program's collective steps, from the Execute's tag base: step i's first is
// `offsets[i]` (kernel steps reserve none); `total` in all.
struct ProgramTags {
  std::vector<int64_t> offsets;
  int64_t total = 0;
};
ProgramTags AssignTags(const ProgramPlan& plan, size_t slots);

// The messages process `process` sends or receives in collective step `index`, in one fixed order
// (every process computes its own from the same program: a send of one is a receive of another).
std::vector<StepMessage> StepMessages(const CompiledProgram& program, size_t index, int process);

// The bytes all processes send one another in one run of `program`.
int64_t BytesBetweenProcesses(const CompiledProgram& program);

}  // namespace tessera::runtime

#endif  // TESSERA_IFRT_RUNTIME_PROGRAM_PROGRAM_MESSAGES_H_
