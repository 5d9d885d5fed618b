#ifndef TESSERA_COMPILER_STABLEHLO_MANUAL_COMPUTATION_H_
#define TESSERA_COMPILER_STABLEHLO_MANUAL_COMPUTATION_H_

// compiler/stablehlo/manual_computation.h: an sdy.manual_computation of @main's body (JAX's
// shard_map) as the compiler's manual computation (compiler/internal.h). Internal to
// compiler/stablehlo/.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "compiler/stablehlo/import_state.h"
#include "compiler/stablehlo/sdy_shardings.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Operation.h"

namespace tessera::compiler::stablehlo {

// The most devices a shard_map's mesh may have (its collectives' device groups are checked one
// by one).
inline constexpr int64_t kMaxManualDevices = 65536;

// A shard_map as the importer finds it, in either lowering: an sdy.manual_computation (Shardy), or
// a func.call between custom_calls @SPMDFullToShardShape and @SPMDShardToFullShape (GSPMD).
struct ManualParts {
  mlir::Operation* op = nullptr;      // named in messages, its location the computation's
  std::vector<mlir::Value> operands;  // the global values it takes (converted already)
  std::vector<mlir::Value> results;   // the global values it makes
  mlir::Block* body = nullptr;        // one argument per operand, then sdy.return / func.return
  std::vector<std::string> in, out;   // `tessera.sharding` texts ("" replicated)
  std::vector<int64_t> grid;          // the mesh's axis sizes
};

// Converts a shard_map: its body, converted op by op with its collectives over the mesh's grid,
// becomes a function of the nested module @tessera.manual_bodies of `module` (made by the first
// one, with the mesh's shard.grid), and the computation a cast naming it, with its operands' and
// results' shardings. A shard_map nested in the body (over the axes the outer one leaves to the
// partitioner) joins it when it takes and makes values whole along its axes. UNIMPLEMENTED:
// shard_maps over two meshes, other nested ones, ops of the body the importer does not convert;
// INVALID_ARGUMENT: arity or types that do not match.
absl::Status ConvertManualParts(ImportState& state, const ManualParts& parts,
                                mlir::ModuleOp module);

// An sdy.manual_computation `op` of @main's body: its parts, then ConvertManualParts. One manual
// over some of the mesh's axes only (the others left to the partitioner) runs manual over every
// axis, its operands gathered along the others and its body run on each device of them alike.
// INVALID_ARGUMENT for shardings that do not parse or fit; UNIMPLEMENTED for a value unreduced
// over an axis it leaves to the partitioner.
absl::Status ConvertManualComputation(ImportState& state, mlir::Operation* op, const Meshes& meshes,
                                      mlir::ModuleOp module);

}  // namespace tessera::compiler::stablehlo

#endif  // TESSERA_COMPILER_STABLEHLO_MANUAL_COMPUTATION_H_
