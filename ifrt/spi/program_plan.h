#ifndef TESSERA_IFRT_SPI_PROGRAM_PLAN_H_
#define TESSERA_IFRT_SPI_PROGRAM_PLAN_H_

// ProgramPlan: what a program compiler (compiler/, MLIR) hands the runtime, as plain data: the
// SPMD program one device runs, cut at each collective into kernels. The runtime runs the steps in
// order on every device of the executable: a kernel step launches that device's kernel on its
// stream (ifrt/spi/platform.h, LaunchKernel); a collective step is communication the runtime does
// itself through its dispatcher, guarded and counted like every other device-to-device movement.
// This is the seam between compiler and runtime (IFRT IR's model: compiled atom programs plus the
// transfers between them); the runtime never links MLIR.
//
// Values are numbered; each is one per-device tensor of a static local shape (the shard shape every
// device holds: shardings must divide their dimensions evenly). Plain value types.

#include <any>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ifrt/dtype.h"
#include "ifrt/shape.h"

namespace tessera {

// A compiled kernel for one platform: a format tag, and what that format needs in `code` and
// `entry` (text formats) or in `payload` (a value of the format's own type, defined beside its
// producer and its consumer). The formats:
//   "mlir-llvm"  `code`: MLIR text in the LLVM dialect (CPU; the kernel loader JITs it), entry
//                point `entry` called through MLIR's packed interface.
//   "spirv"      `payload`: a SpirvPayload (ifrt/spi/spirv_artifact.h), the compute dispatches
//                the Vulkan platform runs.
// `scratch_bytes`: the temporary buffers a launch allocates and its parts share. A kernel that
// computes with the device's grid position may have instead `position_variants`, one artifact of
// the same format per position: entry i for the device whose coordinates, row-major over
// `variant_grid`, are i.
// Arguments, in order: each input value's buffer, then each output value's buffer (row-major,
// contiguous, of the value's local shape), then, when `takes_device_position`, one int64 per grid
// axis: this device's coordinate on the program's grid.
struct KernelArtifact {
  std::string format;
  std::string code;
  std::string entry;
  std::any payload;  // empty for the text formats
  std::vector<int64_t> scratch_bytes;
  std::vector<KernelArtifact> position_variants;
  std::vector<int64_t> variant_grid;
};

struct ProgramValue {
  DType dtype{DType::kInvalid};
  Shape local_shape{{}};
};

struct KernelStep {
  std::string name;
  // The ops it runs, in program order, for Explain(): "linalg.matmul, arith.addf" (constants and
  // tensor.empty left out).
  std::string ops;
  std::vector<int> inputs;   // value ids
  std::vector<int> outputs;  // value ids, each defined here
  bool takes_device_position = false;
  // One artifact per platform name ("cpu", "vulkan") the executable's devices run.
  std::map<std::string, KernelArtifact> artifacts;
};

enum class CollectiveKind {
  kAllReduce,
  kAllGather,
  kAllToAll,
  kAllSlice,
  kReduceScatter,
  kCollectivePermute,
};
// The collective's name as programs, Explain and the guard's events say it: "all_reduce", ...,
// "collective_permute".
inline const char* CollectiveName(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return "all_reduce";
    case CollectiveKind::kAllGather:
      return "all_gather";
    case CollectiveKind::kAllToAll:
      return "all_to_all";
    case CollectiveKind::kAllSlice:
      return "all_slice";
    case CollectiveKind::kReduceScatter:
      return "reduce_scatter";
    case CollectiveKind::kCollectivePermute:
      return "collective_permute";
  }
  return "collective";
}
// How an all_reduce / reduce_scatter combines its members' elements, one kind per combiner a
// program's reduction can have (the element order of the combination is not fixed; every kind but
// a float kSum / kProduct gives the same result in any order):
//   kSum, kProduct            + and * (integers wrap);
//   kMin, kMax                integers: signed (an unsigned dtype: unsigned); floats: IEEE 754-2019
//                             minimum / maximum (arith.minimumf / maximumf): NaN when any element
//                             is NaN, -0 < +0;
//   kMinUnsigned, kMaxUnsigned integers as unsigned (arith.minui / maxui on signless integers);
//   kMinNum, kMaxNum          floats: IEEE 754-2019 minimumNumber / maximumNumber (arith.minnumf /
//                             maxnumf): NaN elements ignored (NaN only when all are), -0 < +0;
//   kAnd, kOr, kXor           integers: bitwise.
// A float dtype with an integer-only kind, or the reverse, is INVALID_ARGUMENT where it is run.
enum class ReductionKind {
  kSum,
  kProduct,
  kMin,
  kMax,
  kMinUnsigned,
  kMaxUnsigned,
  kMinNum,
  kMaxNum,
  kAnd,
  kOr,
  kXor,
};

// Communication between the devices of each group: the devices whose grid coordinates agree on
// every axis not in `grid_axes`; within a group, devices are ordered by their coordinates on
// `grid_axes` (row-major). all_reduce: output = the reduction of the group's inputs. all_gather:
// output = the group's inputs concatenated along `gather_axis`. all_slice: output = this device's
// slice of its input along `split_axis` (no communication). all_to_all: input split along
// `split_axis`, piece i sent to member i, received pieces concatenated along `concat_axis`.
// reduce_scatter: the reduction, then this device's slice along `split_axis`.
// collective_permute (ppermute by a shift; `grid_axes` is the one axis shifted along): member p's
// output is member p - `shift_offset`'s input, the position taken modulo the group's size when
// `shift_rotates`, else zeros where there is no such member.
struct CollectiveStep {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  ReductionKind reduction = ReductionKind::kSum;
  std::vector<int> grid_axes;
  int64_t gather_axis = 0;
  int64_t split_axis = 0;
  int64_t concat_axis = 0;
  int64_t shift_offset = 0;
  bool shift_rotates = false;
  int input = 0;   // value id
  int output = 0;  // value id, defined here
};

struct ProgramStep {
  enum class Kind { kKernel, kCollective };
  Kind kind = Kind::kKernel;
  KernelStep kernel;          // when kKernel
  CollectiveStep collective;  // when kCollective
};

// One parameter's or result's sharding over the program's grid, in the notation of sharding/
// (docs/sharding.md): `mesh` like "mesh{x=4}" (axis names and sizes of the grid) and `spec` a
// PartitionSpec like "P(x,None)". `device_order` (parameters only): empty when the mesh's slot i is
// the executable's device i, as for the kernels; else the caller's argument has slot i on device
// device_order[i] (a permutation), and the runtime moves it to the kernels' order first.
struct ProgramSharding {
  std::string mesh;
  std::string spec;
  std::vector<int64_t> device_order;
};

struct ProgramPlan {
  std::string name;                  // the program's entry function, "main"
  std::vector<int64_t> grid_shape;   // devices of the executable = product, row-major
  std::vector<ProgramValue> values;  // indexed by value id
  std::vector<int> parameters;       // value ids of the entry's arguments, in order
  std::vector<int> results;          // value ids returned, in order (may repeat or be a parameter)
  // The entry's signature as the caller sees it: dtypes and global shapes.
  std::vector<ProgramValue> global_parameters;
  std::vector<ProgramValue> global_results;
  std::vector<ProgramSharding> parameter_shardings;
  std::vector<ProgramSharding> result_shardings;
  // How many arguments and results carried a `tessera.sharding` attribute (0 when the request gave
  // the shardings).
  int sharding_attributes = 0;
  std::vector<ProgramStep> steps;
  // The partitioned program as text, for LoadedExecutable::Explain().
  std::string partitioned_text;
};

}  // namespace tessera

#endif  // TESSERA_IFRT_SPI_PROGRAM_PLAN_H_
