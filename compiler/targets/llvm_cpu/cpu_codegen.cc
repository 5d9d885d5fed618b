// Step e: CPU code generation. A kernel module over tensors (as cut.cc makes it) becomes an LLVM
// dialect module whose entry takes its buffers in KernelArtifact's order: inputs, outputs (written
// in place), then the device position. Three pipelines, side by side:
//   BuildMatmulTilingPipeline      tile + vectorize matmuls (transform dialect), on tensors
//   BuildBufferizationPipeline     tensors -> memrefs, results -> out-params, no leaked buffers
//   BuildLlvmLoweringPipeline      memrefs, loops, vectors -> the LLVM dialect
// Before bufferization, FuseElementwiseOps makes chains of elementwise ops one loop nest.
// In a build with OpenBLAS (TESSERA_CPU_BLAS), f32 / f64 matmuls are not tiled: after
// bufferization each becomes a call to tessera_blas_sgemm / tessera_blas_dgemm (C interface:
// `_mlir_ciface_*` taking three 2-D strided memref descriptors and which of A and B are stored
// transposed, C += A @ B), or, for a matmul into a fill of +0.0, to
// tessera_blas_{s,d}gemm_overwrite (C = A @ B; the fill is dropped), which the CPU kernel loader
// resolves to its streaming kernel or OpenBLAS, one thread per call (the devices already run in
// parallel). Their transposed and reshaped operands are read where they lie, not copied
// (ReadMatmulOperandsInPlace). A kernel's temporary buffers come from the loader's per-thread
// scratch cache (MLIR's generic allocation functions), not from malloc; the kernel
// returns at once when one cannot be allocated (ReturnWhenAnAllocationFails).

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "compiler/internal.h"
#include "compiler/targets/llvm_cpu/blocked_transposes.h"
#include "compiler/targets/llvm_cpu/matmul_operands_in_place.h"
#include "compiler/targets/llvm_cpu/scatters_as_loops.h"
#include "compiler/targets/llvm_cpu/tanh_approximation.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/SetVector.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Transform/Transforms/Passes.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/Passes.h"

namespace tessera::compiler {
namespace {

// The transform script BuildMatmulTilingPipeline runs: each linalg.matmul is tiled 8x32 over its
// output, then by 1 along the contraction, and each tile becomes masked vector code (an 8x32
// accumulator updated by outer products: one broadcast row of A times a 32-wide row of B).
constexpr char kMatmulTilingScript[] = R"mlir(
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %mm = transform.structured.match ops{["linalg.matmul"]} in %root
        : (!transform.any_op) -> !transform.any_op
    %tile, %i, %j = transform.structured.tile_using_for %mm tile_sizes [8, 32, 0]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)
    %step, %k = transform.structured.tile_using_for %tile tile_sizes [0, 0, 1]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.structured.vectorize %step vector_sizes [8, 32, 1] : !transform.any_op
    %func = transform.structured.match ops{["func.func"]} in %root
        : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %func {
      transform.apply_patterns.vector.lower_masked_transfers
      transform.apply_patterns.vector.lower_contraction lowering_strategy = "outerproduct"
      transform.apply_patterns.vector.lower_outerproduct
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.yield
  }
})mlir";

void BuildMatmulTilingPipeline(mlir::OpPassManager& pm) {
  // Run the transform script embedded in the module (tiling + vectorization of matmuls).
  pm.addPass(mlir::transform::createInterpreterPass());
  // Fold the tiling's affine.min / extract_slice chains.
  pm.addPass(mlir::createCanonicalizerPass());
  // Hoist the loop-invariant masks out of the contraction loop, so that ...
  pm.addPass(mlir::createLoopInvariantCodeMotionPass());
  // ... the accumulator's read / write pair leaves the loop: it stays in vector registers.
  pm.addPass(mlir::createLoopInvariantSubsetHoistingPass());
  // Clean up what hoisting leaves.
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addPass(mlir::createCSEPass());
}

#ifdef TESSERA_CPU_BLAS
constexpr bool kHaveBlas = true;
#else
constexpr bool kHaveBlas = false;
#endif

// Whether `matmul` (on tensors or memrefs) can be a BLAS call: f32 or f64 throughout, the default
// indexing maps or A's and / or B's transposed (BlasTransposesOf; no broadcast operands), a BLAS
// in the build.
bool IsBlasMatmul(mlir::linalg::MatmulOp matmul) {
  if (!kHaveBlas || !BlasTransposesOf(matmul)) return false;
  mlir::Type element = mlir::getElementTypeOrSelf(matmul->getOperand(0).getType());
  if (!element.isF32() && !element.isF64()) return false;
  for (mlir::Value operand : matmul->getOperands()) {
    if (mlir::getElementTypeOrSelf(operand.getType()) != element) return false;
  }
  return true;
}

// Elementwise ops fused into one loop nest: each linalg.broadcast becomes a linalg.generic, then
// MLIR's elementwise fusion folds every single-use elementwise producer (and fills of a scalar)
// into its consumer. `relu(x @ w + b)` then makes one pass over the matmul's output (bias add and
// max together, the bias read in place) instead of three passes and a materialized broadcast.
// Element by element the same operations in the same order: results are unchanged.
absl::Status FuseElementwiseOps(mlir::ModuleOp kernel, const std::string& name) {
  mlir::IRRewriter rewriter(kernel.getContext());
  std::vector<mlir::linalg::BroadcastOp> broadcasts;
  kernel.walk([&](mlir::linalg::BroadcastOp op) { broadcasts.push_back(op); });
  for (mlir::linalg::BroadcastOp op : broadcasts) {
    rewriter.setInsertionPoint(op);
    if (mlir::failed(mlir::linalg::generalizeNamedOp(rewriter, op))) {
      return absl::InternalError(absl::StrCat("generalizing a broadcast of ", name));
    }
  }
  mlir::RewritePatternSet patterns(kernel.getContext());
  mlir::linalg::populateElementwiseOpsFusionPatterns(patterns, [](mlir::OpOperand* fused) {
    return fused->get().hasOneUse() && FusedBodyFits(fused);
  });
  if (mlir::failed(mlir::applyPatternsGreedily(kernel, std::move(patterns)))) {
    return absl::InternalError(absl::StrCat("fusing the elementwise ops of ", name));
  }
  return absl::OkStatus();
}

// Marks a BLAS matmul that overwrites its init (C = A @ B): DropZeroFillsOfBlasMatmuls replaced
// its zero fill by an uninitialized tensor.
constexpr char kOverwriteAttr[] = "tessera.overwrite";

// A BLAS matmul (on tensors) into a fill of +0.0 is C = A @ B: its init becomes a tensor.empty and
// the matmul is marked, so that the kernel neither zeroes C in a pass of its own nor reads it in
// the matmul (the gemm starts from +0.0 in registers: the same bits as the fill).
void DropZeroFillsOfBlasMatmuls(mlir::ModuleOp kernel) {
  llvm::SetVector<mlir::Operation*> fills;  // each once, though several matmuls may share one
  kernel.walk([&](mlir::linalg::MatmulOp matmul) {
    if (!IsBlasMatmul(matmul) || !matmul.hasPureTensorSemantics()) return;
    mlir::OpOperand& init = matmul.getDpsInitsMutable()[0];
    auto fill = init.get().getDefiningOp<mlir::linalg::FillOp>();
    auto type = mlir::dyn_cast<mlir::RankedTensorType>(init.get().getType());
    // A matmul with an empty operand is its init (folded so), which must stay the fill.
    for (mlir::Value operand : matmul->getOperands()) {
      auto shaped = mlir::cast<mlir::ShapedType>(operand.getType());
      if (!shaped.hasStaticShape() || shaped.getNumElements() == 0) return;
    }
    auto value = fill
                     ? mlir::dyn_cast_or_null<mlir::FloatAttr>(ConstantValueOf(fill.getInputs()[0]))
                     : mlir::FloatAttr();
    if (!type || !value || !value.getValue().isPosZero()) {
      return;
    }
    mlir::OpBuilder builder(matmul);
    init.set(mlir::tensor::EmptyOp::create(builder, matmul.getLoc(), type.getShape(),
                                           type.getElementType(), type.getEncoding()));
    matmul->setAttr(kOverwriteAttr, builder.getUnitAttr());
    fills.insert(fill);
  });
  // The fills nothing else reads (bufferization would keep them: they write a buffer).
  for (mlir::Operation* fill : fills) {
    if (!fill->use_empty()) continue;
    mlir::Operation* init = mlir::cast<mlir::linalg::FillOp>(fill).getOutputs()[0].getDefiningOp();
    fill->erase();
    if (init != nullptr && mlir::isa<mlir::tensor::EmptyOp>(init) && init->use_empty()) {
      init->erase();
    }
  }
}

// Every f32 / f64 matmul on memrefs -> a call to tessera_blas_{s,d}gemm(A, B, C, transposes)
// (C += A @ B), or for one marked kOverwriteAttr to tessera_blas_{s,d}gemm_overwrite (C = A @ B),
// its operands cast to memref<?x?xT, strided<[?, 1], offset: ?>> as they are stored (a transposed
// A is (k, m), a transposed B (n, k)), `transposes` an i64: 1 when A is stored transposed, plus 2
// when B is. An operand whose inner stride is not 1 keeps its matmul (lowered to loops; a marked
// one gets its zero fill back).
void CallBlasForMatmuls(mlir::ModuleOp kernel) {
  std::vector<mlir::linalg::MatmulOp> matmuls;
  kernel.walk([&](mlir::linalg::MatmulOp matmul) {
    if (IsBlasMatmul(matmul) && matmul.hasPureBufferSemantics()) matmuls.push_back(matmul);
  });
  mlir::MLIRContext* context = kernel.getContext();
  for (mlir::linalg::MatmulOp matmul : matmuls) {
    mlir::Type element = mlir::getElementTypeOrSelf(matmul->getOperand(0).getType());
    constexpr int64_t kDynamic = mlir::ShapedType::kDynamic;
    auto generic =
        mlir::MemRefType::get({kDynamic, kDynamic}, element,
                              mlir::StridedLayoutAttr::get(context, kDynamic, {kDynamic, 1}));
    bool castable = true;
    for (mlir::Value operand : matmul->getOperands()) {
      castable &= mlir::memref::CastOp::areCastCompatible(operand.getType(), generic);
    }
    const bool overwrite = matmul->hasAttr(kOverwriteAttr);
    mlir::OpBuilder builder(context);
    if (!castable) {
      if (overwrite) {
        builder.setInsertionPoint(matmul);
        mlir::Value zero =
            mlir::arith::ConstantOp::create(builder, matmul.getLoc(), builder.getZeroAttr(element));
        mlir::linalg::FillOp::create(builder, matmul.getLoc(), zero, matmul.getOutputs()[0]);
        matmul->removeAttr(kOverwriteAttr);
      }
      continue;
    }
    const std::string callee =
        absl::StrCat(element.isF32() ? "tessera_blas_sgemm" : "tessera_blas_dgemm",
                     overwrite ? "_overwrite" : "");
    auto function = kernel.lookupSymbol<mlir::func::FuncOp>(callee);
    if (!function) {
      builder.setInsertionPointToEnd(kernel.getBody());
      function = mlir::func::FuncOp::create(
          builder, kernel.getLoc(), callee,
          builder.getFunctionType({generic, generic, generic, builder.getI64Type()}, {}));
      function.setPrivate();
      function->setAttr("llvm.emit_c_interface", builder.getUnitAttr());
    }
    builder.setInsertionPoint(matmul);
    std::vector<mlir::Value> operands;
    for (mlir::Value operand : matmul->getOperands()) {
      operands.push_back(
          mlir::memref::CastOp::create(builder, matmul.getLoc(), generic, operand).getResult());
    }
    const BlasTransposes transposes = *BlasTransposesOf(matmul);
    operands.push_back(mlir::arith::ConstantOp::create(
        builder, matmul.getLoc(),
        builder.getI64IntegerAttr((transposes.a ? 1 : 0) + (transposes.b ? 2 : 0))));
    mlir::func::CallOp::create(builder, matmul.getLoc(), function, operands);
    matmul->erase();
  }
}

// Tiles and vectorizes the kernel's matmuls; a kernel without one, or whose matmuls all become
// BLAS calls, is left as it is.
absl::Status TileMatmuls(mlir::ModuleOp kernel, const std::string& name) {
  // Matmuls with a zero-size dimension (nothing to compute, or only the init to keep) stay
  // loops: the masked vector code assumes non-empty operands.
  bool has_matmul = false, has_empty_matmul = false;
  kernel.walk([&](mlir::linalg::MatmulOp matmul) {
    if (IsBlasMatmul(matmul)) return;
    has_matmul = true;
    for (mlir::Value operand : matmul->getOperands()) {
      auto type = mlir::cast<mlir::ShapedType>(operand.getType());
      has_empty_matmul |= type.getNumElements() == 0;
    }
  });
  if (!has_matmul || has_empty_matmul) return absl::OkStatus();
  mlir::MLIRContext* context = kernel.getContext();
  mlir::ParserConfig config(context);
  mlir::OwningOpRef<mlir::ModuleOp> script =
      mlir::parseSourceString<mlir::ModuleOp>(kMatmulTilingScript, config);
  if (!script) return absl::InternalError("the matmul tiling script does not parse");
  mlir::ModuleOp script_module = script.release();
  kernel.getBody()->push_back(script_module);
  kernel->setAttr("transform.with_named_sequence", mlir::UnitAttr::get(context));
  mlir::PassManager pm(context);
  BuildMatmulTilingPipeline(pm);
  absl::Status status = RunPipeline(pm, kernel, absl::StatusCode::kInternal,
                                    absl::StrCat("tiling the matmuls of ", name));
  script_module.erase();
  kernel->removeAttr("transform.with_named_sequence");
  return status;
}

}  // namespace

// Each fusion copies both bodies into a new op: bounded, a chain of n elementwise ops costs
// O(n * kMaxFusedBodyOps) instead of O(n^2) (8,000 ops took 70 s).
bool FusedBodyFits(mlir::OpOperand* fused) {
  auto consumer = mlir::dyn_cast<mlir::linalg::LinalgOp>(fused->getOwner());
  auto producer = fused->get().getDefiningOp<mlir::linalg::LinalgOp>();
  if (!consumer || !producer || !consumer.getBlock() || !producer.getBlock()) return true;
  // The ops of a body, counted up to the bound and one past it.
  auto count = [](mlir::Block* block) {
    int n = 0;
    for (auto it = block->begin(); it != block->end() && n <= kMaxFusedBodyOps; ++it) ++n;
    return n;
  };
  return count(consumer.getBlock()) + count(producer.getBlock()) <= kMaxFusedBodyOps;
}

void AddBufferizationToOutParams(mlir::OpPassManager& pm) {
  mlir::bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  // A loop (scf.while: a program's while) may carry a new buffer into its next iteration; the
  // deallocation pipeline frees the one it replaces.
  bufferize.allowReturnAllocsFromLoops = true;
  bufferize.functionBoundaryTypeConversion =
      mlir::bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(mlir::bufferization::createOneShotBufferizePass(bufferize));
  // A result a loop nest writes (a blocked transpose's scf.for) is the loop's result until the
  // canonicalizer folds it to the buffer the loop writes: only then can the pass below write it
  // straight into the caller's output instead of copying it there.
  pm.addPass(mlir::createCanonicalizerPass());
  mlir::bufferization::BufferResultsToOutParamsPassOptions out_params;
  out_params.hoistStaticAllocs = true;
  out_params.modifyPublicFunctions = true;
  pm.addPass(mlir::bufferization::createBufferResultsToOutParamsPass(out_params));
}

void MarkInputsReadOnly(mlir::func::FuncOp func) {
  mlir::OpBuilder builder(func.getContext());
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    if (mlir::isa<mlir::TensorType>(func.getArgumentTypes()[i])) {
      func.setArgAttr(i, mlir::bufferization::BufferizationDialect::kWritableAttrName,
                      builder.getBoolAttr(false));
    }
  }
}

namespace {

void BuildBufferizationPipeline(mlir::OpPassManager& pm) {
  AddBufferizationToOutParams(pm);
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
  // memref descriptors, loads, stores -> LLVM; alloc / dealloc -> calls of MLIR's generic
  // allocation functions, which the kernel loader binds to a per-thread cache of freed blocks
  // (backends/cpu/kernel_scratch.h): the next run reuses mapped pages instead of faulting in new
  // ones.
  mlir::FinalizeMemRefToLLVMConversionPassOptions memref_options;
  memref_options.useAlignedAlloc = true;
  memref_options.useGenericFunctions = true;
  pm.addPass(mlir::createFinalizeMemRefToLLVMConversionPass(memref_options));
  // vector ops -> LLVM vector types and intrinsics (first: it leaves arith and ub ops behind).
  pm.addPass(mlir::createConvertVectorToLLVMPass());
  // math ops LLVM has intrinsics for -> llvm.intr.*.
  pm.addPass(mlir::createConvertMathToLLVMPass());
  // the remaining math ops (erf, tan, ...) -> calls into libm, resolved by the JIT.
  pm.addPass(mlir::createConvertMathToLibmPass());
  // Scalar and vector arithmetic -> LLVM.
  pm.addPass(mlir::createArithToLLVMConversionPass());
  // index arithmetic -> i64.
  pm.addPass(mlir::createConvertIndexToLLVMPass());
  // func.func / call / return -> llvm.func (memref arguments expanded into descriptor fields).
  pm.addPass(mlir::createConvertFuncToLLVMPass());
  // cf branches -> llvm branches.
  pm.addPass(mlir::createConvertControlFlowToLLVMPass());
  // ub.poison (the padding of masked vector reads, made by the conversions above) -> LLVM.
  pm.addPass(mlir::createUBToLLVMConversionPass());
  // Drop the casts between the type systems the conversions above left.
  pm.addPass(mlir::createReconcileUnrealizedCastsPass());
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

// The kernel's temporaries come from MLIR's generic allocation functions, which the CPU kernel
// loader binds to its scratch cache; they return null when the memory is not there. After each
// call the kernel returns at once on null (the loader then fails the run with RESOURCE_EXHAUSTED
// and frees what the run had allocated) instead of writing through it. INTERNAL: a function that
// allocates and returns a value (kernels return nothing: their outputs are out-params).
absl::Status ReturnWhenAnAllocationFails(mlir::ModuleOp kernel, const std::string& name) {
  absl::Status status;
  kernel.walk([&](mlir::LLVM::LLVMFuncOp func) {
    std::vector<mlir::LLVM::CallOp> allocations;
    func.walk([&](mlir::LLVM::CallOp call) {
      std::optional<llvm::StringRef> callee = call.getCallee();
      if (callee && (*callee == "_mlir_memref_to_llvm_aligned_alloc" ||
                     *callee == "_mlir_memref_to_llvm_alloc")) {
        allocations.push_back(call);
      }
    });
    if (allocations.empty()) return;
    if (!mlir::isa<mlir::LLVM::LLVMVoidType>(func.getFunctionType().getReturnType())) {
      status = absl::InternalError(absl::StrCat("function @", func.getName().str(), " of ", name,
                                                " allocates and returns a value"));
      return;
    }
    mlir::OpBuilder builder(kernel.getContext());
    mlir::Block* fail = builder.createBlock(&func.getBody(), func.getBody().end());
    mlir::LLVM::ReturnOp::create(builder, func.getLoc(), mlir::ValueRange{});
    for (mlir::LLVM::CallOp call : allocations) {
      mlir::Block* before = call->getBlock();
      mlir::Block* after = before->splitBlock(call->getNextNode());
      builder.setInsertionPointToEnd(before);
      mlir::Value null =
          mlir::LLVM::ZeroOp::create(builder, call.getLoc(), call.getResult().getType());
      mlir::Value failed = mlir::LLVM::ICmpOp::create(
          builder, call.getLoc(), mlir::LLVM::ICmpPredicate::eq, call.getResult(), null);
      mlir::LLVM::CondBrOp::create(builder, call.getLoc(), failed, fail, after);
    }
  });
  return status;
}

// A memref.copy between buffers of which one is strided (a loop's or a branch's yielded view,
// after bufferization) would lower to a call of MLIR's runtime `memrefCopy`, which a kernel cannot
// call: it becomes a linalg.copy, lowered to loops with the rest. Copies between contiguous
// buffers stay memref.copy (an llvm.memcpy).
void StridedCopiesToLoops(mlir::ModuleOp kernel) {
  std::vector<mlir::memref::CopyOp> copies;
  kernel.walk([&](mlir::memref::CopyOp copy) {
    auto source = mlir::cast<mlir::MemRefType>(copy.getSource().getType());
    auto target = mlir::cast<mlir::MemRefType>(copy.getTarget().getType());
    if (!source.getLayout().isIdentity() || !target.getLayout().isIdentity()) {
      copies.push_back(copy);
    }
  });
  mlir::OpBuilder builder(kernel.getContext());
  for (mlir::memref::CopyOp copy : copies) {
    builder.setInsertionPoint(copy);
    mlir::linalg::CopyOp::create(builder, copy.getLoc(), copy.getSource(), copy.getTarget());
    copy->erase();
  }
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
  // Reshapes, slices, pads and concatenations as loop nests (fused below with their elementwise
  // neighbours) rather than the views and copies bufferization would make of them.
  TESSERA_RETURN_IF_ERROR(TensorOpsAsLinalg(func, name));
  // Scatters write each update where it lands, not match it against every element.
  TESSERA_RETURN_IF_ERROR(ScattersAsLoops(func));
  // Batched and permuted contractions (attention) as a matmul per batch element.
  ContractionsAsMatmuls(func);
  // Transposed and reshaped operands of BLAS matmuls read where they lie, not copied.
  if (kHaveBlas) ReadMatmulOperandsInPlace(func);
  TESSERA_RETURN_IF_ERROR(TileMatmuls(kernel, name));
  TESSERA_RETURN_IF_ERROR(FuseElementwiseOps(kernel, name));
  TESSERA_RETURN_IF_ERROR(VectorizeInnerReductions(kernel, name));
  TESSERA_RETURN_IF_ERROR(BlockTransposes(kernel, name));
  DropZeroFillsOfBlasMatmuls(kernel);

  mlir::PassManager bufferize(kernel.getContext());
  BuildBufferizationPipeline(bufferize);
  TESSERA_RETURN_IF_ERROR(RunPipeline(bufferize, kernel, absl::StatusCode::kInternal,
                                      absl::StrCat("bufferizing ", name)));
  TESSERA_RETURN_IF_ERROR(MovePositionLast(func, num_position));
  CallBlasForMatmuls(kernel);
  StridedCopiesToLoops(kernel);
  // maxnumf / minnumf with -0 < +0 (LLVM's maxnum leaves max(-0, +0) open).
  ExpandFloatMinMax(kernel, /*maximum_minimum_too=*/false);
  TESSERA_RETURN_IF_ERROR(ApproximateTanh(kernel, name));

  mlir::PassManager lower(kernel.getContext());
  BuildLlvmLoweringPipeline(lower);
  TESSERA_RETURN_IF_ERROR(RunPipeline(lower, kernel, absl::StatusCode::kInternal,
                                      absl::StrCat("lowering ", name, " to LLVM")));
  TESSERA_RETURN_IF_ERROR(ReturnWhenAnAllocationFails(kernel, name));
  KernelArtifact artifact;
  artifact.format = "mlir-llvm";
  artifact.entry = name;
  artifact.code = PrintOp(kernel);
  return artifact;
}

}  // namespace tessera::compiler
