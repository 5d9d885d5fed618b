// Step e for Vulkan: SPIR-V code generation. A kernel module over tensors (as cut.cc makes it)
// becomes a "spirv" artifact: a list of compute dispatches, one SPIR-V module each, and the scratch
// buffers they share (ifrt/spi/program_plan.h, SpirvDispatch). The pipelines, side by side:
//   BuildVulkanTensorPipeline     elementwise ops -> linalg, fused
//   (bufferization)               tensors -> memrefs, results -> out-params, copies -> linalg.copy
//   EmitTiledMatmuls              each matmul -> a register-blocked gpu.launch (work-group size
//                                 within the device's limits)
//   EmitTwoPassReductions         reductions of many rows -> one gpu.launch, an invocation per
//                                 row (vec4 loads); long ones -> two gpu.launch
//                                 (vulkan_reduction.cc)
//   ExpandFloatMinMax             max / min of floats -> exact compares and selects
//   EmitVectorElementwise         elementwise ops on 32-bit elements -> vec4 launches
//   (parallel loops)              linalg -> scf.parallel; each nest collapsed to one dimension and
//                                 tiled by kThreadsPerGroup (a 2-D grid where it is long)
//   BuildGpuOutliningPipeline     scf.parallel -> gpu.launch -> outlined gpu.func kernels
//   GuardZeroTripLoops            scf.for with results that may run no iteration -> in an scf.if
//                                 (the SCF conversion would leave their results undefined)
//   BuildSpirvPipeline            gpu.func -> spirv.module (target env and entry point ABI set;
//                                 SignedZeroInfNanPreserve where the device allows it)
// What is left of the host function (allocations and launches) becomes the dispatch list.
//
// Pitfalls this order avoids: index computations and constants are sunk into the launches before
// outlining (else each becomes a kernel argument, i.e. a binding); the module is canonicalized
// after outlining (else a leftover cf.br fails to legalize); loops are tiled before mapping (else
// one invocation per work-group); SCF is converted in the same conversion as the GPU ops.

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <numeric>
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

// Linalg on buffers (and tiled matmul launches) -> parallel loops -> kernels -> SPIR-V -> the
// dispatches of `func`.
absl::StatusOr<KernelArtifact> LowerLoopsToDispatches(mlir::ModuleOp kernel,
                                                      mlir::func::FuncOp func,
                                                      const std::string& name,
                                                      const KernelTarget& target,
                                                      const SplitDispatches& splits) {
  // Float max / min exact (SPIR-V's FMax / FMin leave NaN and the sign of max(-0, +0) open); after
  // EmitTwoPassReductions, which matches their combiners.
  ExpandFloatMinMax(kernel, /*maximum_minimum_too=*/true);
  // After the expansion (its compares and selects are lane ops too).
  EmitVectorElementwise(func, target);
  TESSERA_RETURN_IF_ERROR(
      RunPipelineText(kernel, "func.func(convert-linalg-to-parallel-loops),canonicalize",
                      absl::StrCat("lowering ", name, " to parallel loops")));
  TESSERA_RETURN_IF_ERROR(TileParallelLoops(func, name));
  TESSERA_RETURN_IF_ERROR(CheckLoopIterations(func, name, target));
  TESSERA_RETURN_IF_ERROR(RunPipelineText(kernel, GpuOutliningPipeline(),
                                          absl::StrCat("outlining the kernels of ", name)));
  TESSERA_RETURN_IF_ERROR(SetSpirvAttributes(kernel, name, target));
  GuardZeroTripLoops(kernel);  // before the SCF conversion, which leaves their results undefined
  TESSERA_RETURN_IF_ERROR(
      RunPipelineText(kernel, SpirvPipeline(), absl::StrCat("lowering ", name, " to SPIR-V")));
  PreserveSignedZeroInfNan(kernel, target);
  TESSERA_RETURN_IF_ERROR(RunPipelineText(kernel, "spirv.module(spirv-update-vce)",
                                          absl::StrCat("versioning ", name, " for SPIR-V")));
  KernelArtifact artifact;
  artifact.format = "spirv";
  artifact.entry = name;
  MutableSpirvPayload(artifact);  // also for a kernel with nothing to run (no dispatches)
  TESSERA_RETURN_IF_ERROR(CollectDispatches(kernel, func, splits, artifact));
  return artifact;
}

namespace {

// A simplified kernel without position arguments -> its dispatches.
absl::StatusOr<KernelArtifact> LowerSimplifiedKernel(mlir::ModuleOp kernel, mlir::func::FuncOp func,
                                                     const std::string& name,
                                                     const KernelTarget& target) {
  TESSERA_RETURN_IF_ERROR(CheckCapabilities(func, name, target));
  MarkInputsReadOnly(func);
  TESSERA_RETURN_IF_ERROR(GeneralizeNamedOps(func, name));
  TESSERA_RETURN_IF_ERROR(RunPipelineText(kernel, VulkanTensorPipeline(),
                                          absl::StrCat("fusing ", name, " for vulkan")));
  TESSERA_RETURN_IF_ERROR(FuseElementwiseGenerics(kernel, name));
  TESSERA_RETURN_IF_ERROR(RunPipelineText(kernel, VulkanFusionCleanupPipeline(),
                                          absl::StrCat("fusing ", name, " for vulkan")));
  TESSERA_RETURN_IF_ERROR(ParallelDimensionsFirst(func, name));
  mlir::PassManager bufferize(kernel.getContext());
  BuildBufferizationPipeline(bufferize);
  TESSERA_RETURN_IF_ERROR(RunPipeline(bufferize, kernel, absl::StatusCode::kInternal,
                                      absl::StrCat("bufferizing ", name, " for vulkan")));
  CopiesToLinalg(func);
  SplitDispatches splits;
  TESSERA_RETURN_IF_ERROR(SplitLargeElementwiseOps(func, name, target, splits));
  EmitTiledMatmuls(func, target);
  EmitTwoPassReductions(func, target);
  return LowerLoopsToDispatches(kernel, func, name, target, splits);
}

bool PositionUsed(mlir::func::FuncOp func) {
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    if (func.getArgumentTypes()[i].isInteger(64) && !func.getArgument(i).use_empty()) return true;
  }
  return false;
}

// A kernel that computes with the device's grid position: one variant per position, each with
// the position's coordinates as constants (the partitioner's `scf.if` on the position then folds
// away), in row-major order over `grid_shape`.
absl::StatusOr<KernelArtifact> LowerPositionVariants(mlir::ModuleOp kernel, const std::string& name,
                                                     const std::vector<int64_t>& grid_shape,
                                                     const KernelTarget& target) {
  int64_t positions = 1;
  for (int64_t d : grid_shape) positions *= d;
  KernelArtifact artifact;
  artifact.format = "spirv";
  artifact.entry = name;
  artifact.variant_grid = grid_shape;
  for (int64_t p = 0; p < positions; ++p) {
    mlir::OwningOpRef<mlir::ModuleOp> copy = kernel.clone();
    auto func = copy->lookupSymbol<mlir::func::FuncOp>(name);
    std::vector<int64_t> coordinates(grid_shape.size());
    for (int64_t rest = p, axis = static_cast<int64_t>(grid_shape.size()) - 1; axis >= 0; --axis) {
      coordinates[axis] = rest % grid_shape[axis];
      rest /= grid_shape[axis];
    }
    mlir::OpBuilder builder(func.getContext());
    builder.setInsertionPointToStart(&func.getBody().front());
    size_t axis = 0;
    for (unsigned i = 0; i < func.getNumArguments(); ++i) {
      if (!func.getArgumentTypes()[i].isInteger(64) || axis >= coordinates.size()) continue;
      mlir::Value constant = mlir::arith::ConstantOp::create(
          builder, func.getLoc(), builder.getI64IntegerAttr(coordinates[axis++]));
      func.getArgument(i).replaceAllUsesWith(constant);
    }
    TESSERA_RETURN_IF_ERROR(
        RunPipelineText(*copy, "canonicalize,cse", absl::StrCat("specializing ", name)));
    TESSERA_RETURN_IF_ERROR(DropPositionArguments(func, name));
    TESSERA_ASSIGN_OR_RETURN(KernelArtifact variant,
                             LowerSimplifiedKernel(*copy, func, name, target));
    artifact.position_variants.push_back(std::move(variant));
  }
  return artifact;
}

}  // namespace

}  // namespace tessera::compiler::spirv

namespace tessera::compiler {

absl::StatusOr<KernelArtifact> LowerKernelForVulkan(mlir::ModuleOp kernel, const std::string& name,
                                                    bool takes_device_position,
                                                    const std::vector<int64_t>& grid_shape,
                                                    const KernelTarget& target) {
  auto func = kernel.lookupSymbol<mlir::func::FuncOp>(name);
  if (!func) return absl::InternalError(absl::StrCat("kernel module has no @", name));
  // Control flow around kernels (scf.while, scf.if on tensors) would need the host to loop over
  // dispatches: compiled for CPU devices only.
  mlir::Operation* control_flow = nullptr;
  func.walk([&](mlir::Operation* op) {
    // The partitioner's own scf.if (on the device position) is resolved per position variant.
    const bool program_branch =
        mlir::isa<mlir::scf::IfOp>(op) && op->hasAttr(kProgramBranchAttrName);
    if ((mlir::isa<mlir::scf::WhileOp>(op) || program_branch) && !control_flow) control_flow = op;
  });
  if (control_flow) {
    return absl::UnimplementedError(
        absl::StrCat("vulkan code generation: kernel ", name, " holds '",
                     control_flow->getName().getStringRef().str(), "' at ",
                     FormatLocation(control_flow->getLoc()),
                     ": loops and branches around kernels (while, case) run on CPU devices only"));
  }
  TESSERA_RETURN_IF_ERROR(
      spirv::RunPipelineText(kernel, "canonicalize,cse", absl::StrCat("simplifying ", name)));
  if (takes_device_position && spirv::PositionUsed(func)) {
    return spirv::LowerPositionVariants(kernel, name, grid_shape, target);
  }
  if (takes_device_position) TESSERA_RETURN_IF_ERROR(spirv::DropPositionArguments(func, name));
  return spirv::LowerSimplifiedKernel(kernel, func, name, target);
}

}  // namespace tessera::compiler
