#ifndef TESSERA_IFRT_SPI_PROGRAM_COMPILER_H_
#define TESSERA_IFRT_SPI_PROGRAM_COMPILER_H_

// ProgramCompiler: turns a global MLIR program and its shardings into a ProgramPlan
// (ifrt/spi/program_plan.h): partitioned for SPMD over a grid of devices, cut at its collectives,
// each kernel compiled for the platforms asked for. Implemented in compiler/ (MLIR); the runtime
// holds one per client (given by the client factory) and never links MLIR itself.
//
// Thread-safe: Compile may be called from several threads at once.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ifrt/spi/program_plan.h"

namespace tessera {

// What the devices of one platform can run, for the code generators that specialize on it (Vulkan:
// the SPIR-V target environment, how buffers bind). The runtime fills it from the devices'
// attributes (ifrt/attribute_map.h: "max_compute_work_group_invocations",
// "max_compute_work_group_size", "subgroup_size", "shader_float64", "shader_int64",
// "max_storage_buffer_range", "min_storage_buffer_offset_alignment",
// "max_shader_loop_iterations", "device_type"), as the most every device of
// the platform in the executable allows; a field no device reports keeps its default, what every
// Vulkan 1.1 device meets.
struct KernelTarget {
  int64_t max_workgroup_invocations = 128;
  std::vector<int64_t> max_workgroup_size = {128, 128, 64};
  int64_t subgroup_size = 0;  // 0: unknown
  bool float64 = true;        // kernels may use f64 (shaderFloat64)
  bool int64 = true;          // kernels may use i64 (shaderInt64)
  // Kernels may declare the SignedZeroInfNanPreserve execution mode for f32 / f64
  // (shaderSignedZeroInfNanPreserveFloat32 / 64): without it a driver may assume no NaN, infinity
  // or -0 and fold them away. Off unless every device reports it.
  bool preserve_signed_zero_inf_nan32 = false;
  bool preserve_signed_zero_inf_nan64 = false;
  // The most bytes one buffer binding may span, and the alignment of a binding's offset.
  int64_t max_storage_buffer_range = int64_t{1} << 27;
  int64_t min_storage_buffer_offset_alignment = 256;
  // The most loop iterations one invocation of a kernel may run in all, where the driver stops a
  // shader's loops after that many (attribute "max_shader_loop_iterations": Mesa's llvmpipe,
  // lavapipe, 65535); 0: no such limit.
  int64_t max_loop_iterations = 0;
  // Every device is a CPU implementation of the API (attribute "device_type" "cpu": lavapipe),
  // which runs a work-group's invocations on the SIMD lanes of one thread: the code generators
  // then give each invocation more work (larger register blocks), as no register file bounds it.
  bool cpu_device = false;

  friend bool operator==(const KernelTarget&, const KernelTarget&) = default;
};

// The language of a request's text: linalg MLIR with `tessera.sharding` attributes (MlirProgram)
// or StableHLO in generic form with Shardy shardings (StableHloProgram).
enum class ProgramFormat { kLinalg, kStableHlo };

struct ProgramCompileRequest {
  std::string mlir_text;
  ProgramFormat format = ProgramFormat::kLinalg;
  // One per argument / result of the entry function, or empty: then the compiler reads each
  // argument's and result's `tessera.sharding` attribute ("mesh{x=4} P(x,None)"); an argument or
  // result without one is replicated over the grid.
  std::vector<ProgramSharding> parameter_shardings;
  std::vector<ProgramSharding> result_shardings;
  // Devices of the executable; the grid's size must equal it.
  int64_t num_devices = 0;
  // The platforms among those devices ("cpu", "vulkan"): each kernel is compiled for each.
  std::vector<std::string> platforms;
  // Per platform name: what its devices can run; a platform without an entry gets the defaults.
  std::map<std::string, KernelTarget> targets;
};

class ProgramCompiler {
 public:
  virtual ~ProgramCompiler() = default;
  // INVALID_ARGUMENT: parse or verifier errors (with line:column), shardings that do not fit the
  // program (count, rank, mesh size != num_devices, uneven division); UNIMPLEMENTED: an op, dtype
  // or sharding this compiler cannot partition or lower (naming the op, its location and the
  // sharding), or a platform it has no code generator for, or a kernel needing a capability its
  // target lacks (naming it: Float64, Int64); RESOURCE_EXHAUSTED: a kernel whose buffer exceeds
  // its target's max_storage_buffer_range and that cannot be split (naming the op, the size and
  // the limit).
  virtual absl::StatusOr<ProgramPlan> Compile(const ProgramCompileRequest& request) = 0;
};

}  // namespace tessera

#endif  // TESSERA_IFRT_SPI_PROGRAM_COMPILER_H_
