#ifndef TESSERA_IFRT_RUNTIME_PROGRAM_COLLECTIVES_H_
#define TESSERA_IFRT_RUNTIME_PROGRAM_COLLECTIVES_H_

// The communication steps of a ProgramPlan (ifrt/spi/program_plan.h) as the runtime runs them:
// group membership on the program's grid, the bytes each member reads from its peers, and the
// host-memory arithmetic of each kind (all_reduce, all_gather, all_slice, all_to_all,
// reduce_scatter, collective_permute) over buffers that the host can address.
//
// Pure functions over plain data; thread-safe.

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "ifrt/dtype.h"
#include "ifrt/shape.h"
#include "ifrt/spi/program_plan.h"

namespace tessera::runtime {

// The group of `device` (its linear index on `grid_shape`) for a collective over `grid_axes`: the
// linear indices of its members in member order, and the device's own position among them.
struct CollectiveGroup {
  std::vector<int> members;
  int position = 0;
};
CollectiveGroup GroupOf(absl::Span<const int64_t> grid_shape, absl::Span<const int> grid_axes,
                        int device);

// The coordinates of linear index `device` on `grid_shape` (row-major).
std::vector<int64_t> GridPosition(absl::Span<const int64_t> grid_shape, int device);

// The position of the member whose input member `position` of a group of `group_size` receives in
// a collective_permute `step` (ifrt/spi/program_plan.h), or -1 when none does (its output is
// zeros).
int PermuteSource(const CollectiveStep& step, int group_size, int position);

// The element range [begin, end) that member `position` of a group of `group_size` reduces in a
// two-phase all-reduce of `elements` elements: an even split, the first ranges one longer.
std::pair<int64_t, int64_t> AllReduceRange(int64_t elements, int group_size, int position);

// output[begin, end) = the reduction of inputs[j][begin, end) over j (element indices of `dtype`).
// INVALID_ARGUMENT for a dtype the reductions do not support, or a kind that does not apply to it
// (ReductionKind, ifrt/spi/program_plan.h: a bitwise kind of floats, a maxnum of integers).
absl::Status ReduceElements(ReductionKind reduction, DType dtype,
                            absl::Span<const void* const> inputs, int64_t begin, int64_t end,
                            void* output);

// Bytes one member reads from each peer for `step` on an input of `input_bytes`. An all-reduce runs
// in two phases (each member reduces its range of every peer's input, then copies every peer's
// reduced range), so it reads 2 * input_bytes / group_size from each peer, not input_bytes. A
// collective_permute reads input_bytes from its one source (PermuteSource), nothing from the
// other peers.
int64_t BytesFromEachPeer(const CollectiveStep& step, int64_t input_bytes, int group_size);

// Computes this member's output of `step`: `inputs[j]` is member j's input (dense row-major, of
// `input_dims`), `output` this member's output (of `output_dims`); a collective_permute reads only
// its source's input (the others may be null). INVALID_ARGUMENT for a dtype a
// reduction does not support, a reduction kind that does not apply to it, or dims that do not fit
// the step.
absl::Status ComputeCollective(const CollectiveStep& step, DType dtype,
                               absl::Span<const int64_t> input_dims,
                               absl::Span<const int64_t> output_dims,
                               absl::Span<const void* const> inputs, int position, void* output);

}  // namespace tessera::runtime

#endif  // TESSERA_IFRT_RUNTIME_PROGRAM_COLLECTIVES_H_
