#ifndef TESSERA_IFRT_SPI_PROGRAM_COMPILER_H_
#define TESSERA_IFRT_SPI_PROGRAM_COMPILER_H_

// ProgramCompiler: turns a global MLIR program and its shardings into a ProgramPlan
// (ifrt/spi/program_plan.h): partitioned for SPMD over a grid of devices, cut at its collectives,
// each kernel compiled for the platforms asked for. Implemented in compiler/ (MLIR); the runtime
// holds one per client (given by the client factory) and never links MLIR itself.
//
// Thread-safe: Compile may be called from several threads at once.

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ifrt/spi/program_plan.h"

namespace tessera {

struct ProgramCompileRequest {
  std::string mlir_text;
  // One per argument / result of the entry function, or empty: then the compiler reads each
  // argument's and result's `tessera.sharding` attribute ("mesh{x=4} P(x,None)"); an argument or
  // result without one is replicated over the grid.
  std::vector<ProgramSharding> parameter_shardings;
  std::vector<ProgramSharding> result_shardings;
  // Devices of the executable; the grid's size must equal it.
  int64_t num_devices = 0;
  // The platforms among those devices ("cpu", "vulkan"): each kernel is compiled for each.
  std::vector<std::string> platforms;
};

class ProgramCompiler {
 public:
  virtual ~ProgramCompiler() = default;
  // INVALID_ARGUMENT: parse or verifier errors (with line:column), shardings that do not fit the
  // program (count, rank, mesh size != num_devices, uneven division); UNIMPLEMENTED: an op, dtype
  // or sharding this compiler cannot partition or lower (naming the op, its location and the
  // sharding), or a platform it has no code generator for.
  virtual absl::StatusOr<ProgramPlan> Compile(const ProgramCompileRequest& request) = 0;
};

}  // namespace tessera

#endif  // TESSERA_IFRT_SPI_PROGRAM_COMPILER_H_
