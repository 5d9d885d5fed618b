#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "compiler/targets/spirv/spirv_codegen.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVDialect.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"
#include "mlir/Dialect/SPIRV/IR/TargetAndABI.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/SPIRV/Serialization.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/Passes.h"
#include "mlir/Transforms/RegionUtils.h"

namespace tessera::compiler::spirv {

// The target a kernel is compiled for: SPIR-V 1.3 (Vulkan 1.1 and later), 64-bit integers and
// floats where the device has them (spirv-update-vce keeps only the capabilities a kernel uses),
// and the device's work-group limits and subgroup size.
std::string TargetEnvText(const KernelTarget& target) {
  std::string capabilities = "Shader";
  std::string extensions = "SPV_KHR_storage_buffer_storage_class";
  if (target.preserve_signed_zero_inf_nan32) {
    absl::StrAppend(&capabilities, ", SignedZeroInfNanPreserve");
    absl::StrAppend(&extensions, ", SPV_KHR_float_controls");
  }
  if (target.int64) absl::StrAppend(&capabilities, ", Int64");
  if (target.float64) absl::StrAppend(&capabilities, ", Float64");
  std::string limits = absl::StrCat(
      "max_compute_workgroup_invocations = ", target.max_workgroup_invocations,
      ", max_compute_workgroup_size = [", absl::StrJoin(target.max_workgroup_size, ", "), "]");
  if (target.subgroup_size > 0)
    absl::StrAppend(&limits, ", subgroup_size = ", target.subgroup_size);
  return absl::StrCat("#spirv.target_env<#spirv.vce<v1.3, [", capabilities, "], [", extensions,
                      "]>, #spirv.resource_limits<", limits, ">>");
}

absl::Status RunPipelineText(mlir::ModuleOp module, const std::string& pipeline,
                             const std::string& what) {
  // The textual pipelines name passes: registered once per process.
  static const bool registered = [] {
    mlir::registerAllPasses();
    return true;
  }();
  (void)registered;
  mlir::PassManager pm(module.getContext());
  std::string errors;
  llvm::raw_string_ostream os(errors);
  if (mlir::failed(mlir::parsePassPipeline(pipeline, pm, os))) {
    return absl::InternalError(absl::StrCat("bad pass pipeline for ", what, ": ", errors));
  }
  return RunPipeline(pm, module, absl::StatusCode::kInternal, what);
}

// Elementwise arith / math ops on tensors -> linalg.generic; chains of elementwise generics fused
// into one (one kernel, no intermediate buffer) by FuseElementwiseGenerics in between. Named ops
// were generalized before (matmuls excepted: they get their own kernel, EmitTiledMatmuls).
std::string VulkanTensorPipeline() { return "func.func(convert-elementwise-to-linalg)"; }

std::string VulkanFusionCleanupPipeline() { return "canonicalize,cse"; }

// What linalg-fuse-elementwise-ops does (elementwise fusion of single-use producers, constant
// folding of linalg ops, the linalg canonicalizations; top down), the fused bodies bounded
// (FusedBodyFits: the pass's fusion is quadratic in the length of a chain).
absl::Status FuseElementwiseGenerics(mlir::ModuleOp kernel, const std::string& name) {
  mlir::MLIRContext* context = kernel.getContext();
  mlir::linalg::ControlFusionFn control = [](mlir::OpOperand* fused) {
    mlir::Operation* producer = fused->get().getDefiningOp();
    return producer != nullptr && producer->hasOneUse() && FusedBodyFits(fused);
  };
  mlir::RewritePatternSet patterns(context);
  mlir::linalg::populateElementwiseOpsFusionPatterns(patterns, control);
  mlir::linalg::populateConstantFoldLinalgOperations(patterns, control);
  mlir::linalg::GenericOp::getCanonicalizationPatterns(patterns, context);
  context->getLoadedDialect<mlir::linalg::LinalgDialect>()->getCanonicalizationPatterns(patterns);
  if (mlir::failed(mlir::applyPatternsGreedily(
          kernel, std::move(patterns), mlir::GreedyRewriteConfig().setUseTopDownTraversal(true)))) {
    return absl::InternalError(absl::StrCat("fusing the elementwise ops of ", name, " for vulkan"));
  }
  return absl::OkStatus();
}

void BuildBufferizationPipeline(mlir::OpPassManager& pm) {
  // As on CPU (no deallocation: temporaries are scratch buffers the launch allocates).
  AddBufferizationToOutParams(pm);
  pm.addPass(mlir::createCanonicalizerPass());
}

// scf.parallel -> gpu.launch (outer loops: work-groups, inner: invocations), then outlined.
std::string GpuOutliningPipeline() {
  return "func.func(gpu-map-parallel-loops,convert-parallel-loops-to-gpu),canonicalize,"
         // Constants and index arithmetic into the launch bodies: else kernel arguments.
         "gpu-launch-sink-index-computations,gpu-kernel-outlining,"
         // Folds the branches outlining leaves (a cf.br does not legalize to SPIR-V).
         "canonicalize,cse,lower-affine,canonicalize";
}

// gpu.func -> spirv.func in spirv.module (storage buffers for memrefs, SCF and arith in the same
// conversion), then the interface variables and the minimal version / capabilities.
std::string SpirvPipeline() {
  return "fold-memref-alias-ops,map-memref-spirv-storage-class{client-api=vulkan},"
         "gpu.module(convert-math-to-spirv),convert-gpu-to-spirv,spirv.module(spirv-lower-abi-"
         "attrs)";
}

void GuardZeroTripLoops(mlir::ModuleOp kernel) {
  std::vector<mlir::scf::ForOp> loops;
  kernel.walk([&](mlir::scf::ForOp loop) {
    if (loop.getNumResults() == 0) return;
    std::optional<llvm::APInt> trips = loop.getStaticTripCount();
    if (!trips || trips->isZero()) loops.push_back(loop);
  });
  for (mlir::scf::ForOp loop : loops) {
    mlir::OpBuilder b(loop);
    const mlir::Location loc = loop.getLoc();
    const auto predicate =
        loop.getUnsignedCmp() ? mlir::arith::CmpIPredicate::ult : mlir::arith::CmpIPredicate::slt;
    mlir::Value runs =
        mlir::arith::CmpIOp::create(b, loc, predicate, loop.getLowerBound(), loop.getUpperBound());
    auto guard = mlir::scf::IfOp::create(b, loc, loop.getResultTypes(), runs,
                                         /*withElseRegion=*/true);
    loop.getResults().replaceAllUsesWith(guard.getResults());
    loop->moveBefore(guard.thenBlock(), guard.thenBlock()->end());
    b.setInsertionPointToEnd(guard.thenBlock());
    mlir::scf::YieldOp::create(b, loc, loop.getResults());
    b.setInsertionPointToEnd(guard.elseBlock());
    mlir::scf::YieldOp::create(b, loc, loop.getInitArgs());
  }
}

// Each entry point of `kernel`'s SPIR-V modules declares SignedZeroInfNanPreserve for 32-bit (and
// 64-bit) floats where `target` allows it: without it the driver may assume no NaN, infinity or
// signed zero (lavapipe folds a product whose accumulator starts at a constant -0.0 to +0.0,
// dropping a NaN).
void PreserveSignedZeroInfNan(mlir::ModuleOp kernel, const KernelTarget& target) {
  if (!target.preserve_signed_zero_inf_nan32) return;
  kernel.walk([&](mlir::spirv::EntryPointOp entry) {
    auto module = entry->getParentOfType<mlir::spirv::ModuleOp>();
    auto fn = module.lookupSymbol<mlir::spirv::FuncOp>(entry.getFn());
    if (!fn) return;
    mlir::OpBuilder b(entry);
    b.setInsertionPointAfter(entry);
    mlir::spirv::ExecutionModeOp::create(
        b, entry.getLoc(), fn, mlir::spirv::ExecutionMode::SignedZeroInfNanPreserve, {32});
    if (target.float64 && target.preserve_signed_zero_inf_nan64) {
      mlir::spirv::ExecutionModeOp::create(
          b, entry.getLoc(), fn, mlir::spirv::ExecutionMode::SignedZeroInfNanPreserve, {64});
    }
  });
}

// memref.copy (bufferization's copies into out-params) -> linalg.copy, which becomes a kernel.
void CopiesToLinalg(mlir::func::FuncOp func) {
  std::vector<mlir::memref::CopyOp> copies;
  func.walk([&](mlir::memref::CopyOp copy) { copies.push_back(copy); });
  mlir::OpBuilder builder(func.getContext());
  for (mlir::memref::CopyOp copy : copies) {
    builder.setInsertionPoint(copy);
    mlir::linalg::CopyOp::create(builder, copy.getLoc(), copy.getSource(), copy.getTarget());
    copy->erase();
  }
}

// Named linalg ops (fill, broadcast, transpose, reduce, batch_matmul, ...) -> linalg.generic;
// linalg.matmul stays named for EmitTiledMatmuls.
absl::Status GeneralizeNamedOps(mlir::func::FuncOp func, const std::string& name) {
  TESSERA_RETURN_IF_ERROR(TensorOpsAsLinalg(func, name));
  std::vector<mlir::linalg::LinalgOp> named;
  func.walk([&](mlir::linalg::LinalgOp op) {
    if (!mlir::isa<mlir::linalg::GenericOp, mlir::linalg::MatmulOp>(op)) named.push_back(op);
  });
  mlir::IRRewriter rewriter(func.getContext());
  for (mlir::linalg::LinalgOp op : named) {
    rewriter.setInsertionPoint(op);
    if (mlir::failed(mlir::linalg::generalizeNamedOp(rewriter, op))) {
      return absl::InternalError(absl::StrCat(name, ": cannot generalize ", PrintOp(op)));
    }
  }
  return absl::OkStatus();
}

// UNIMPLEMENTED when the kernel holds f64 / i64 data and `target` lacks the Float64 / Int64
// capability (the device's shaderFloat64 / shaderInt64): said at compile time, not at load.
absl::Status CheckCapabilities(mlir::func::FuncOp func, const std::string& name,
                               const KernelTarget& target) {
  absl::Status status;
  auto check = [&](mlir::Type type, mlir::Location loc) {
    auto shaped = mlir::dyn_cast<mlir::ShapedType>(type);
    if (!shaped || !status.ok()) return;
    mlir::Type element = shaped.getElementType();
    const char* missing = element.isF64() && !target.float64       ? "Float64 (shaderFloat64)"
                          : element.isInteger(64) && !target.int64 ? "Int64 (shaderInt64)"
                                                                   : nullptr;
    if (missing == nullptr) return;
    std::string printed;
    llvm::raw_string_ostream os(printed);
    type.print(os);
    status = absl::UnimplementedError(
        absl::StrCat("vulkan code generation: kernel ", name, " computes on ", printed, " at ",
                     FormatLocation(loc), ", which needs the SPIR-V capability ", missing,
                     " that the target Vulkan device lacks"));
  };
  for (mlir::BlockArgument arg : func.getArguments()) check(arg.getType(), func.getLoc());
  func.walk([&](mlir::Operation* op) {
    for (mlir::Value result : op->getResults()) check(result.getType(), op->getLoc());
  });
  return status;
}

}  // namespace tessera::compiler::spirv
