// BLAS matmuls that read rearranged operands where they lie (matmul_operands_in_place.cc).
#ifndef TESSERA_COMPILER_TARGETS_LLVM_CPU_MATMUL_OPERANDS_IN_PLACE_H_
#define TESSERA_COMPILER_TARGETS_LLVM_CPU_MATMUL_OPERANDS_IN_PLACE_H_

#include <optional>

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"

namespace tessera::compiler {

// Which operands of a BLAS matmul C[m,n] (+)= A @ B are stored transposed: A as (k, m) instead of
// (m, k), B as (n, k) instead of (k, n). BLAS reads either layout at the same speed.
struct BlasTransposes {
  bool a = false;
  bool b = false;
};

// The transposes `matmul`'s indexing maps describe: the default maps, or A's and / or B's
// transposed, C's the default. nullopt for any other maps (broadcasts, a transposed C).
std::optional<BlasTransposes> BlasTransposesOf(mlir::linalg::MatmulOp matmul);

// Each f32 / f64 linalg.matmul of `func` on static tensors with the default maps whose A or B is
// only another tensor's elements rearranged (a transpose, a reshape copy, or a chain of them), with
// that tensor's row-major memory the operand's own or its transpose, reads that tensor instead
// (reshaped to two dimensions: a view after bufferization), its map transposed where the memory
// is. The rearranging ops nothing else reads are erased: the kernel no longer copies the operand.
// The same matmul, without the copies (BLAS packs either layout). For kernels whose matmuls become
// BLAS calls; before tiling, fusion and bufferization.
void ReadMatmulOperandsInPlace(mlir::func::FuncOp func);

}  // namespace tessera::compiler

#endif  // TESSERA_COMPILER_TARGETS_LLVM_CPU_MATMUL_OPERANDS_IN_PLACE_H_
