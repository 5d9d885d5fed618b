// Step e: CPU code generation. A kernel module over tensors (as cut.cc makes it) becomes an LLVM
// dialect module whose entry takes its buffers in KernelArtifact's order: inputs, outputs (written
// in place), then the device position. Three pipelines, side by side:
//   BuildMatmulTilingPipeline      tile + vectorize matmuls (transform dialect), on tensors
//   BuildBufferizationPipeline     tensors -> memrefs, results -> out-params, no leaked buffers
//   BuildLlvmLoweringPipeline      memrefs, loops, vectors -> the LLVM dialect

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "compiler/internal.h"
#include "ifrt/status_macros.h"
#include "llvm/ADT/BitVector.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/Transform/Transforms/Passes.h"
#include "mlir/IR/Builders.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Transforms/Passes.h"

namespace tessera::compiler {
namespace {

void BuildBufferizationPipeline(mlir::OpPassManager& pm) {
  // Tensors -> memrefs across the whole module, function signatures included, with plain
  // row-major memrefs at the boundary (the runtime's buffers are contiguous).
  mlir::bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      mlir::bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(mlir::bufferization::createOneShotBufferizePass(bufferize));
  // Returned memrefs -> trailing out-params the caller allocates; a static allocation that is
  // returned becomes the out-param itself (written in place, nothing escapes).
  mlir::bufferization::BufferResultsToOutParamsPassOptions out_params;
  out_params.hoistStaticAllocs = true;
  out_params.modifyPublicFunctions = true;
  pm.addPass(mlir::bufferization::createBufferResultsToOutParamsPass(out_params));
  // Free every temporary buffer bufferization allocated (ownership-based deallocation).
  mlir::bufferization::buildBufferDeallocationPipeline(pm);
  // Fold the copies and casts the two passes above leave.
  pm.addPass(mlir::createCanonicalizerPass());
}

void BuildLlvmLoweringPipeline(mlir::OpPassManager& pm) {
  mlir::OpPassManager& func = pm.nest<mlir::func::FuncOp>();
  // linalg ops on memrefs -> scf.for loop nests (what tiling and vectorization left over).
  func.addPass(mlir::createConvertLinalgToLoopsPass());
  // vector.transfer ops with masks or permutations -> scf loops of simple transfers.
  func.addPass(mlir::createConvertVectorToSCFPass());
  // Structured control flow -> blocks and branches.
  pm.addPass(mlir::createSCFToControlFlowPass());
  // subviews and reinterpret casts -> explicit offset / size / stride arithmetic.
  pm.addPass(mlir::memref::createExpandStridedMetadataPass());
  // affine.apply / min / max from tiling and the expansion above -> arith.
  pm.addPass(mlir::createLowerAffinePass());
  // memref descriptors, loads, stores, alloc / dealloc -> LLVM (malloc / free).
  pm.addPass(mlir::createFinalizeMemRefToLLVMConversionPass());
  // math ops LLVM has intrinsics for -> llvm.intr.*.
  pm.addPass(mlir::createConvertMathToLLVMPass());
  // the remaining math ops (erf, tan, ...) -> calls into libm, resolved by the JIT.
  pm.addPass(mlir::createConvertMathToLibmPass());
  // Scalar and vector arithmetic -> LLVM.
  pm.addPass(mlir::createArithToLLVMConversionPass());
  // index arithmetic -> i64.
  pm.addPass(mlir::createConvertIndexToLLVMPass());
  // vector ops -> LLVM vector types and intrinsics.
  pm.addPass(mlir::createConvertVectorToLLVMPass());
  // func.func / call / return -> llvm.func (memref arguments expanded into descriptor fields).
  pm.addPass(mlir::createConvertFuncToLLVMPass());
  // cf branches -> llvm branches.
  pm.addPass(mlir::createConvertControlFlowToLLVMPass());
  // Drop the casts between the type systems the conversions above left.
  pm.addPass(mlir::createReconcileUnrealizedCastsPass());
}

// Inputs are the runtime's buffers, shared with other steps and the caller: never written.
void MarkInputsReadOnly(mlir::func::FuncOp func) {
  mlir::OpBuilder builder(func.getContext());
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    if (mlir::isa<mlir::TensorType>(func.getArgumentTypes()[i])) {
      func.setArgAttr(i, mlir::bufferization::BufferizationDialect::kWritableAttrName,
                      builder.getBoolAttr(false));
    }
  }
}

// After out-params were appended: (inputs, position, outputs) -> (inputs, outputs, position).
absl::Status MovePositionLast(mlir::func::FuncOp func, unsigned num_position) {
  if (num_position == 0) return absl::OkStatus();
  unsigned num_args = func.getNumArguments();
  unsigned first = 0;
  while (first < num_args && !func.getArgumentTypes()[first].isInteger(64)) ++first;
  if (first + num_position > num_args) return absl::InternalError("position arguments not found");
  llvm::BitVector erase(num_args + num_position);
  for (unsigned i = 0; i < num_position; ++i) {
    mlir::BlockArgument old_arg = func.getArgument(first + i);
    if (mlir::failed(
            func.insertArgument(func.getNumArguments(), old_arg.getType(), {}, old_arg.getLoc()))) {
      return absl::InternalError("cannot append a position argument");
    }
    old_arg.replaceAllUsesWith(func.getArgument(func.getNumArguments() - 1));
    erase.set(first + i);
  }
  if (mlir::failed(func.eraseArguments(erase))) {
    return absl::InternalError("cannot erase the position arguments");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<KernelArtifact> LowerKernelForCpu(mlir::ModuleOp kernel, const std::string& name,
                                                 bool takes_device_position) {
  auto func = kernel.lookupSymbol<mlir::func::FuncOp>(name);
  if (!func) return absl::InternalError(absl::StrCat("kernel module has no @", name));
  unsigned num_position = 0;
  for (mlir::Type type : func.getArgumentTypes()) num_position += type.isInteger(64) ? 1 : 0;
  if (!takes_device_position) num_position = 0;
  MarkInputsReadOnly(func);

  mlir::PassManager bufferize(kernel.getContext());
  BuildBufferizationPipeline(bufferize);
  TESSERA_RETURN_IF_ERROR(RunPipeline(bufferize, kernel, absl::StatusCode::kInternal,
                                      absl::StrCat("bufferizing ", name)));
  TESSERA_RETURN_IF_ERROR(MovePositionLast(func, num_position));

  mlir::PassManager lower(kernel.getContext());
  BuildLlvmLoweringPipeline(lower);
  TESSERA_RETURN_IF_ERROR(RunPipeline(lower, kernel, absl::StatusCode::kInternal,
                                      absl::StrCat("lowering ", name, " to LLVM")));
  KernelArtifact artifact;
  artifact.format = "mlir-llvm";
  artifact.entry = name;
  artifact.code = PrintOp(kernel);
  return artifact;
}

}  // namespace tessera::compiler
