#ifndef TESSERA_COMPILER_STABLEHLO_STABLEHLO_IMPORT_H_
#define TESSERA_COMPILER_STABLEHLO_STABLEHLO_IMPORT_H_

// compiler/stablehlo/stablehlo_import.h: StableHLO, as JAX lowers it, into the program form the
// rest of the compiler takes (compiler/internal.h): one func.func @main in linalg / tensor /
// arith / math over ranked static tensors, its arguments and results carrying `tessera.sharding`.
//
// Input: an MLIR module in generic op form (`lowered.compiler_ir("stablehlo").operation
// .get_asm(print_generic_op_form=True)`), parsed with the StableHLO, CHLO and Shardy dialects
// unregistered. Its shardings: Shardy's (`sdy.mesh` + `sdy.sharding` on @main's arguments and
// results) become "mesh{dp=2,tp=4} P(dp,None)". Private functions reached by func.call are
// inlined. Internal to compiler/ (not installed).

#include <string_view>

#include "absl/status/statusor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

namespace tessera::compiler::stablehlo {

// INVALID_ARGUMENT: text nested too deep (compiler/nesting.h), text MLIR cannot parse
// ("line:column: ..."), no func.func @main with a body, calls that inline to more than 2^18 ops, an
// op whose operands, types or attributes do not fit it (named, with its location: the Python source
// line JAX recorded; a byte count past int64 too), a sharding that names an unknown mesh (an
// unknown axis: ResolveShardings). UNIMPLEMENTED: an op outside the supported set, a dynamic
// dimension, an element type other than f16, bf16, f32, f64, i1, 8-64 bit integers, GSPMD
// shardings, a mesh whose devices are not in iota order; each named with the op's location.
absl::StatusOr<mlir::OwningOpRef<mlir::ModuleOp>> ImportStableHlo(mlir::MLIRContext& context,
                                                                  std::string_view text);

}  // namespace tessera::compiler::stablehlo

#endif  // TESSERA_COMPILER_STABLEHLO_STABLEHLO_IMPORT_H_
