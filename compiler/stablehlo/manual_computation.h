#ifndef TESSERA_COMPILER_STABLEHLO_MANUAL_COMPUTATION_H_
#define TESSERA_COMPILER_STABLEHLO_MANUAL_COMPUTATION_H_

// compiler/stablehlo/manual_computation.h: an sdy.manual_computation of @main's body (JAX's
// shard_map) as the compiler's manual computation (compiler/internal.h). Internal to
// compiler/stablehlo/.

#include "absl/status/status.h"
#include "compiler/stablehlo/import_state.h"
#include "compiler/stablehlo/sdy_shardings.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Operation.h"

namespace tessera::compiler::stablehlo {

// Converts `op` (an sdy.manual_computation whose operands `state` has converted): its body,
// converted op by op with its collectives over the mesh's grid, becomes a function of the nested
// module @tessera.manual_bodies of `module` (made by the first one, with the mesh's shard.grid),
// and `op` a cast naming it, with its operands' and results' shardings. UNIMPLEMENTED: manual
// over some of the mesh's axes only (the others left to the partitioner), shard_maps over two
// meshes, one nested in another, ops of the body the importer does not convert; INVALID_ARGUMENT:
// shardings, types or arity that do not match the op.
absl::Status ConvertManualComputation(ImportState& state, mlir::Operation* op, const Meshes& meshes,
                                      mlir::ModuleOp module);

}  // namespace tessera::compiler::stablehlo

#endif  // TESSERA_COMPILER_STABLEHLO_MANUAL_COMPUTATION_H_
