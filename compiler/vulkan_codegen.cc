// Step e for Vulkan: SPIR-V code generation. A kernel module over tensors (as cut.cc makes it)
// becomes a "spirv" artifact: a list of compute dispatches, one SPIR-V module each, and the scratch
// buffers they share (ifrt/spi/program_plan.h, SpirvDispatch). The pipelines, side by side:
//   BuildVulkanTensorPipeline     elementwise ops -> linalg, fused
//   (bufferization)               tensors -> memrefs, results -> out-params, copies -> linalg.copy
//   EmitTiledMatmuls              each matmul -> a gpu.launch tiled through workgroup memory (tile
//                                 from the device's limits and subgroup size)
//   EmitTwoPassReductions         long reductions -> two gpu.launch (vulkan_reduction.cc)
//   ExpandFloatMinMax             max / min of floats -> exact compares and selects
//   (parallel loops)              linalg -> scf.parallel; each nest collapsed to one dimension and
//                                 tiled by kThreadsPerGroup (a 2-D grid where it is long)
//   BuildGpuOutliningPipeline     scf.parallel -> gpu.launch -> outlined gpu.func kernels
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
#include "compiler/internal.h"
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

namespace tessera::compiler {
namespace {

// Invocations per work-group: below every Vulkan device's maxComputeWorkGroupInvocations (at
// least 128 by the specification).
constexpr int64_t kThreadsPerGroup = 64;
// Work-groups along one grid axis: maxComputeWorkGroupCount is at least 65535 on every device.
constexpr int64_t kMaxGroupsPerAxis = 65535;
// A collapsed loop longer than kThreadsPerGroup * kMaxGroupsPerAxis runs over a 2-D grid whose
// rows hold this many iterations.
constexpr int64_t kRowIterations = 65536;

// Element indices of a split kernel's chunk stay below 2^30 (SPIR-V indices are 32-bit).
constexpr int64_t kMaxChunkElements = int64_t{1} << 30;

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

// Whether `matmul` gets the tiled kernel: default indexing maps, on static identity-layout
// memrefs of one element type, no empty dimension.
bool IsTileableMatmul(mlir::linalg::MatmulOp matmul) {
  if (matmul.hasUserDefinedMaps() || !matmul.hasPureBufferSemantics()) return false;
  mlir::Type element;
  for (mlir::Value operand : matmul->getOperands()) {
    auto type = mlir::dyn_cast<mlir::MemRefType>(operand.getType());
    if (!type || !type.hasStaticShape() || !type.getLayout().isIdentity() ||
        type.getNumElements() == 0) {
      return false;
    }
    if (element && type.getElementType() != element) return false;
    element = type.getElementType();
  }
  return mlir::isa<mlir::FloatType, mlir::IntegerType>(element);
}

// The tiled matmul's layout: tile x tile output tiles per work-group of tile x rows invocations,
// each computing tile / rows outputs of its column.
struct MatmulLayout {
  int64_t tile = 16;
  int64_t rows = 8;
};

// 32x32 tiles on 32x8 invocations (4 outputs each, fewer barriers per output) where the device
// allows 256 invocations per work-group and its subgroups are 32 wide or more (a row of the
// work-group, 32 invocations reading 32 consecutive elements of B, is one subgroup); else 16x16
// tiles on 16x8 invocations, 128, which every device allows. On lavapipe (subgroups of 8) the
// 16x16 layout measured faster: 174 ms against 188 ms for a 512^3 f32 matmul (both layouts pass
// the Vulkan program tests there).
MatmulLayout ChooseMatmulLayout(const KernelTarget& target) {
  const bool room = target.max_workgroup_invocations >= 256 &&
                    target.max_workgroup_size.size() == 3 && target.max_workgroup_size[0] >= 32 &&
                    target.max_workgroup_size[1] >= 8;
  const int64_t sg = target.subgroup_size;  // 0: unknown
  if (room && sg >= 32) return {32, 8};
  return {16, 8};
}

// Builds C += A @ B as one gpu.launch (EmitTiledMatmul).
class TiledMatmulEmitter {
 public:
  TiledMatmulEmitter(mlir::linalg::MatmulOp matmul, MatmulLayout layout)
      : b_(matmul), loc_(matmul.getLoc()), layout_(layout), per_(layout.tile / layout.rows) {
    a_ = matmul->getOperand(0);
    b_mat_ = matmul->getOperand(1);
    c_ = matmul->getOperand(2);
    auto a_type = mlir::cast<mlir::MemRefType>(a_.getType());
    m_ = a_type.getDimSize(0);
    k_ = a_type.getDimSize(1);
    n_ = mlir::cast<mlir::MemRefType>(c_.getType()).getDimSize(1);
    element_ = a_type.getElementType();
    is_float_ = mlir::isa<mlir::FloatType>(element_);
  }

  void Emit() {
    const int64_t t = layout_.tile;
    auto launch =
        mlir::gpu::LaunchOp::create(b_, loc_, Index((n_ + t - 1) / t), Index((m_ + t - 1) / t),
                                    Index(1), Index(t), Index(layout_.rows), Index(1));
    b_.setInsertionPointToStart(&launch.getBody().front());
    // Allocations in workgroup memory (MLIR 22's GPU-to-SPIR-V conversion crashes on gpu.func
    // workgroup attributions; memref.alloc in workgroup memory becomes a Workgroup variable).
    auto tile_type = mlir::MemRefType::get({t, t}, element_, mlir::MemRefLayoutAttrInterface{},
                                           b_.getI64IntegerAttr(3));
    a_tile_ = mlir::memref::AllocOp::create(b_, loc_, tile_type);
    b_tile_ = mlir::memref::AllocOp::create(b_, loc_, tile_type);
    tx_ = launch.getThreadIds().x;
    mlir::Value ty = launch.getThreadIds().y;
    col_ = Add(Mul(launch.getBlockIds().x, Index(t)), tx_);
    for (int64_t r = 0; r < per_; ++r) {
      tile_rows_.push_back(Add(ty, Index(r * layout_.rows)));
      rows_.push_back(Add(Mul(launch.getBlockIds().y, Index(t)), tile_rows_.back()));
    }
    mlir::Value zero = mlir::arith::ConstantOp::create(b_, loc_, b_.getZeroAttr(element_));
    auto steps = mlir::scf::ForOp::create(b_, loc_, Index(0), Index((k_ + t - 1) / t), Index(1),
                                          std::vector<mlir::Value>(per_, zero));
    b_.setInsertionPointToStart(steps.getBody());
    EmitStep(steps.getInductionVar(), steps.getRegionIterArgs(), zero);
    b_.setInsertionPointAfter(steps);
    for (int64_t r = 0; r < per_; ++r) StoreOutput(rows_[r], steps.getResult(r));
    mlir::gpu::TerminatorOp::create(b_, loc_);
  }

 private:
  mlir::Value Index(int64_t v) { return mlir::arith::ConstantIndexOp::create(b_, loc_, v); }
  mlir::Value Add(mlir::Value x, mlir::Value y) {
    return mlir::arith::AddIOp::create(b_, loc_, x, y);
  }
  mlir::Value Mul(mlir::Value x, mlir::Value y) {
    return mlir::arith::MulIOp::create(b_, loc_, x, y);
  }
  mlir::Value Less(mlir::Value x, int64_t bound) {
    return mlir::arith::CmpIOp::create(b_, loc_, mlir::arith::CmpIPredicate::ult, x, Index(bound));
  }
  mlir::Value Fma(mlir::Value acc, mlir::Value x, mlir::Value y) {
    if (is_float_) {
      return mlir::arith::AddFOp::create(b_, loc_, acc,
                                         mlir::arith::MulFOp::create(b_, loc_, x, y));
    }
    return mlir::arith::AddIOp::create(b_, loc_, acc, mlir::arith::MulIOp::create(b_, loc_, x, y));
  }
  // mem[i][j] when both are in range, else 0 (clamped index, select: every invocation reaches
  // every barrier).
  mlir::Value LoadOrZero(mlir::Value mem, mlir::Value i, mlir::Value j, int64_t rows, int64_t cols,
                         mlir::Value zero) {
    mlir::Value inside = mlir::arith::AndIOp::create(b_, loc_, Less(i, rows), Less(j, cols));
    mlir::Value ic = mlir::arith::MinUIOp::create(b_, loc_, i, Index(rows - 1));
    mlir::Value jc = mlir::arith::MinUIOp::create(b_, loc_, j, Index(cols - 1));
    mlir::Value v = mlir::memref::LoadOp::create(b_, loc_, mem, mlir::ValueRange{ic, jc});
    return mlir::arith::SelectOp::create(b_, loc_, inside, v, zero);
  }

  // One step of the contraction: the tiles of A and B at k0 = step * tile loaded cooperatively,
  // then each invocation's outputs accumulated over them.
  void EmitStep(mlir::Value step, mlir::ValueRange accumulators, mlir::Value zero) {
    mlir::Value k0 = Mul(step, Index(layout_.tile));
    mlir::Value ka = Add(k0, tx_);
    for (int64_t r = 0; r < per_; ++r) {
      mlir::memref::StoreOp::create(b_, loc_, LoadOrZero(a_, rows_[r], ka, m_, k_, zero), a_tile_,
                                    mlir::ValueRange{tile_rows_[r], tx_});
      mlir::memref::StoreOp::create(b_, loc_,
                                    LoadOrZero(b_mat_, Add(k0, tile_rows_[r]), col_, k_, n_, zero),
                                    b_tile_, mlir::ValueRange{tile_rows_[r], tx_});
    }
    mlir::gpu::BarrierOp::create(b_, loc_);
    auto inner =
        mlir::scf::ForOp::create(b_, loc_, Index(0), Index(layout_.tile), Index(1), accumulators);
    b_.setInsertionPointToStart(inner.getBody());
    mlir::Value kk = inner.getInductionVar();
    mlir::Value bv = mlir::memref::LoadOp::create(b_, loc_, b_tile_, mlir::ValueRange{kk, tx_});
    std::vector<mlir::Value> sums;
    for (int64_t r = 0; r < per_; ++r) {
      mlir::Value av =
          mlir::memref::LoadOp::create(b_, loc_, a_tile_, mlir::ValueRange{tile_rows_[r], kk});
      sums.push_back(Fma(inner.getRegionIterArgs()[r], av, bv));
    }
    mlir::scf::YieldOp::create(b_, loc_, sums);
    b_.setInsertionPointAfter(inner);
    mlir::gpu::BarrierOp::create(b_, loc_);
    mlir::scf::YieldOp::create(b_, loc_, inner.getResults());
  }

  // c[row][col] += sum where both are in range.
  void StoreOutput(mlir::Value row, mlir::Value sum) {
    mlir::Value inside = mlir::arith::AndIOp::create(b_, loc_, Less(row, m_), Less(col_, n_));
    auto guard = mlir::scf::IfOp::create(b_, loc_, inside, /*withElseRegion=*/false);
    b_.setInsertionPointToStart(guard.thenBlock());
    mlir::Value old = mlir::memref::LoadOp::create(b_, loc_, c_, mlir::ValueRange{row, col_});
    mlir::Value total = is_float_ ? mlir::arith::AddFOp::create(b_, loc_, old, sum).getResult()
                                  : mlir::arith::AddIOp::create(b_, loc_, old, sum).getResult();
    mlir::memref::StoreOp::create(b_, loc_, total, c_, mlir::ValueRange{row, col_});
    b_.setInsertionPointAfter(guard);
  }

  mlir::OpBuilder b_;
  mlir::Location loc_;
  MatmulLayout layout_;
  int64_t per_;
  mlir::Value a_, b_mat_, c_, a_tile_, b_tile_, tx_, col_;
  std::vector<mlir::Value> tile_rows_, rows_;  // per output of an invocation
  int64_t m_ = 0, k_ = 0, n_ = 0;
  mlir::Type element_;
  bool is_float_ = false;
};

// C += A @ B as one gpu.launch (layout: ChooseMatmulLayout): the K dimension walked in
// tile-wide steps through two tiles of A and B in workgroup memory (memory space 3, which
// map-memref-spirv-storage-class maps to Workgroup for Vulkan), loaded cooperatively between
// barriers. Out-of-range elements load as 0.
void EmitTiledMatmul(mlir::linalg::MatmulOp matmul, MatmulLayout layout) {
  TiledMatmulEmitter(matmul, layout).Emit();
  matmul->erase();
}

void EmitTiledMatmuls(mlir::func::FuncOp func, const KernelTarget& target) {
  // The ops and attributes built here need their dialects loaded.
  func.getContext()
      ->loadDialect<mlir::gpu::GPUDialect, mlir::scf::SCFDialect, mlir::memref::MemRefDialect,
                    mlir::arith::ArithDialect, mlir::spirv::SPIRVDialect>();
  std::vector<mlir::linalg::MatmulOp> matmuls;
  func.walk([&](mlir::linalg::MatmulOp matmul) {
    if (IsTileableMatmul(matmul)) matmuls.push_back(matmul);
  });
  for (mlir::linalg::MatmulOp matmul : matmuls) {
    EmitTiledMatmul(matmul, ChooseMatmulLayout(target));
  }
}

// Every linalg.generic (named ops were generalized) with its parallel dimensions first: they then
// all become the scf.parallel loop the kernel's invocations share, the reductions scf.for loops
// inside it.
absl::Status ParallelDimensionsFirst(mlir::func::FuncOp func, const std::string& name) {
  std::vector<mlir::linalg::GenericOp> generics;
  func.walk([&](mlir::linalg::GenericOp op) { generics.push_back(op); });
  mlir::IRRewriter rewriter(func.getContext());
  for (mlir::linalg::GenericOp op : generics) {
    std::vector<unsigned> parallel, reduction;
    llvm::SmallVector<mlir::utils::IteratorType> iterators = op.getIteratorTypesArray();
    for (unsigned d = 0; d < iterators.size(); ++d) {
      (iterators[d] == mlir::utils::IteratorType::parallel ? parallel : reduction).push_back(d);
    }
    std::vector<unsigned> order = parallel;
    order.insert(order.end(), reduction.begin(), reduction.end());
    if (std::is_sorted(order.begin(), order.end())) continue;
    rewriter.setInsertionPoint(op);
    if (mlir::failed(mlir::linalg::interchangeGenericOp(rewriter, op, order))) {
      return absl::InternalError(absl::StrCat(name, ": cannot interchange ", PrintOp(op)));
    }
  }
  return absl::OkStatus();
}

// Host work outside every parallel loop (an scf.for nest of a reduction to a scalar, the loads and
// stores of a loop nest whose trip counts were all 1) runs as one invocation: each run of such
// ops is moved into a one-iteration scf.parallel. Constants are hoisted first (they are sunk into
// the kernels later). UNIMPLEMENTED when a value made by such a run is used after it.
absl::Status WrapSerialLoops(mlir::func::FuncOp func, const std::string& name) {
  mlir::Block& body = func.getBody().front();
  std::vector<mlir::Operation*> constants;
  for (mlir::Operation& op : body) {
    if (mlir::isa<mlir::arith::ConstantOp>(op)) constants.push_back(&op);
  }
  for (mlir::Operation* op : llvm::reverse(constants)) op->moveBefore(&body.front());
  auto serial = [](mlir::Operation& op) {
    return !mlir::isa<mlir::scf::ParallelOp, mlir::func::ReturnOp, mlir::memref::DeallocOp,
                      mlir::memref::AllocOp, mlir::arith::ConstantOp, mlir::gpu::LaunchOp,
                      mlir::func::CallOp>(op);
  };
  std::vector<std::vector<mlir::Operation*>> runs;
  bool in_run = false;
  for (mlir::Operation& op : body) {
    if (!serial(op)) {
      in_run = false;
      continue;
    }
    if (!in_run) runs.emplace_back();
    runs.back().push_back(&op);
    in_run = true;
  }
  mlir::OpBuilder builder(func.getContext());
  for (const std::vector<mlir::Operation*>& run : runs) {
    builder.setInsertionPoint(run.front());
    mlir::Location loc = run.front()->getLoc();
    mlir::Value zero = mlir::arith::ConstantIndexOp::create(builder, loc, 0);
    mlir::Value one = mlir::arith::ConstantIndexOp::create(builder, loc, 1);
    auto parallel = mlir::scf::ParallelOp::create(builder, loc, mlir::ValueRange{zero},
                                                  mlir::ValueRange{one}, mlir::ValueRange{one});
    for (mlir::Operation* op : run) op->moveBefore(parallel.getBody()->getTerminator());
    for (mlir::Operation* op : run) {
      for (mlir::Value result : op->getResults()) {
        for (mlir::Operation* user : result.getUsers()) {
          if (!parallel->isAncestor(user)) {
            return absl::UnimplementedError(absl::StrCat("vulkan code generation: ", name,
                                                         ": host value of ", PrintOp(op),
                                                         " used outside its kernel"));
          }
        }
      }
    }
  }
  return absl::OkStatus();
}

// The trip count of a normalized (lower bound 0, step 1) loop dimension with constant bounds.
std::optional<int64_t> TripCount(mlir::scf::ParallelOp loop, unsigned dim) {
  std::optional<int64_t> lb = mlir::getConstantIntValue(loop.getLowerBound()[dim]);
  std::optional<int64_t> ub = mlir::getConstantIntValue(loop.getUpperBound()[dim]);
  std::optional<int64_t> step = mlir::getConstantIntValue(loop.getStep()[dim]);
  if (!lb || !ub || !step || *step <= 0) return std::nullopt;
  return std::max<int64_t>(0, (*ub - *lb + *step - 1) / *step);
}

std::vector<mlir::scf::ParallelOp> TopLevelParallelLoops(mlir::func::FuncOp func) {
  std::vector<mlir::scf::ParallelOp> loops;
  for (mlir::Operation& op : func.getBody().front()) {
    if (auto loop = mlir::dyn_cast<mlir::scf::ParallelOp>(op)) loops.push_back(loop);
  }
  return loops;
}

// A 1-D loop over [0, n) -> a 2-D loop over [0, ceil(n / kRowIterations)) x [0, kRowIterations)
// whose body runs for row * kRowIterations + column < n.
void SplitLongLoop(mlir::scf::ParallelOp loop, int64_t n) {
  mlir::OpBuilder builder(loop);
  mlir::Location loc = loop.getLoc();
  auto index = [&](int64_t v) { return mlir::arith::ConstantIndexOp::create(builder, loc, v); };
  mlir::Value zero = index(0), one = index(1);
  mlir::Value rows = index((n + kRowIterations - 1) / kRowIterations);
  mlir::Value row_size = index(kRowIterations), total = index(n);
  auto split =
      mlir::scf::ParallelOp::create(builder, loc, mlir::ValueRange{zero, zero},
                                    mlir::ValueRange{rows, row_size}, mlir::ValueRange{one, one});
  builder.setInsertionPointToStart(split.getBody());
  mlir::Value base =
      mlir::arith::MulIOp::create(builder, loc, split.getInductionVars()[0], row_size);
  mlir::Value linear = mlir::arith::AddIOp::create(builder, loc, base, split.getInductionVars()[1]);
  mlir::Value inside =
      mlir::arith::CmpIOp::create(builder, loc, mlir::arith::CmpIPredicate::ult, linear, total);
  auto guard = mlir::scf::IfOp::create(builder, loc, inside, /*withElseRegion=*/false);
  mlir::Block* old_body = loop.getBody();
  old_body->getTerminator()->erase();  // scf.reduce without operands
  mlir::Block* then_block = guard.thenBlock();
  then_block->getOperations().splice(then_block->begin(), old_body->getOperations());
  loop.getInductionVars()[0].replaceAllUsesWith(linear);
  loop->erase();
}

// Every top-level scf.parallel: normalized and collapsed to one dimension, split over a 2-D grid
// when longer than one grid axis holds, then tiled: the outer loop becomes the work-groups, the
// inner one (kThreadsPerGroup iterations, guarded by an scf.if where it overruns) the invocations.
absl::Status TileParallelLoops(mlir::func::FuncOp func, const std::string& name) {
  mlir::IRRewriter rewriter(func.getContext());
  for (mlir::scf::ParallelOp loop : TopLevelParallelLoops(func)) {
    if (loop.getNumLoops() < 2) continue;
    std::vector<unsigned> all(loop.getNumLoops());
    std::iota(all.begin(), all.end(), 0u);
    rewriter.setInsertionPoint(loop);
    mlir::collapseParallelLoops(rewriter, loop, {all});
  }
  // Folds the collapsed bounds (products of the old ones) to constants.
  TESSERA_RETURN_IF_ERROR(RunPipelineText(mlir::cast<mlir::ModuleOp>(func->getParentOp()),
                                          "canonicalize",
                                          absl::StrCat("collapsing the loops of ", name)));
  // After canonicalization, which would fold the one-iteration loops away again.
  TESSERA_RETURN_IF_ERROR(WrapSerialLoops(func, name));
  for (mlir::scf::ParallelOp loop : TopLevelParallelLoops(func)) {
    std::optional<int64_t> n = TripCount(loop, 0);
    if (!n) return absl::InternalError(absl::StrCat(name, ": a parallel loop of unknown size"));
    if (*n > kThreadsPerGroup * kMaxGroupsPerAxis) SplitLongLoop(loop, *n);
  }
  for (mlir::scf::ParallelOp loop : TopLevelParallelLoops(func)) {
    std::optional<int64_t> n = TripCount(loop, loop.getNumLoops() - 1);
    if (!n || *n == 0) continue;
    int64_t threads = 1;
    while (threads < *n && threads < kThreadsPerGroup) threads *= 2;
    std::vector<int64_t> sizes(loop.getNumLoops(), 1);
    sizes.back() = threads;
    mlir::scf::tileParallelLoop(loop, sizes, /*noMinMaxBounds=*/true);
  }
  return absl::OkStatus();
}

// Loop counts saturate here: far above any driver's limit, and never an overflow however large the
// program's (caller-given) shapes.
constexpr int64_t kIterationCap = int64_t{1} << 50;

int64_t SaturatingProduct(int64_t a, int64_t b) {
  return b != 0 && a > kIterationCap / b ? kIterationCap : a * b;
}

// `loop`'s iterations (saturated at kIterationCap), or 1 where its bounds are not constants.
int64_t TripCountOrOne(mlir::scf::ForOp loop) {
  std::optional<int64_t> lb = mlir::getConstantIntValue(loop.getLowerBound());
  std::optional<int64_t> ub = mlir::getConstantIntValue(loop.getUpperBound());
  std::optional<int64_t> step = mlir::getConstantIntValue(loop.getStep());
  if (!lb || !ub || !step || *step <= 0) return 1;
  if (*ub <= *lb) return 0;
  const uint64_t span = static_cast<uint64_t>(*ub) - static_cast<uint64_t>(*lb);
  return static_cast<int64_t>(
      std::min<uint64_t>(span / static_cast<uint64_t>(*step) + (span % *step != 0), kIterationCap));
}

// Where the device's driver ends a shader's loops after target.max_loop_iterations iterations in
// all (Mesa's llvmpipe, lavapipe: 65535, counted over every loop of one invocation), a kernel one
// of whose invocations would run more is UNIMPLEMENTED at Compile, naming the kernel and both
// counts, instead of stopping short on the device and computing a wrong result. An invocation's
// count: each scf.for of its launch once per iteration of the loops around it (a loop of unknown
// bounds, which the code generators make only over short extents such as tiles and work-group
// slices, as one).
absl::Status CheckLoopIterations(mlir::func::FuncOp func, const std::string& name,
                                 const KernelTarget& target) {
  if (target.max_loop_iterations <= 0) return absl::OkStatus();
  for (mlir::Operation& launch : func.getBody().front()) {
    if (!mlir::isa<mlir::scf::ParallelOp, mlir::gpu::LaunchOp>(launch)) continue;
    int64_t total = 0;
    launch.walk([&](mlir::scf::ForOp loop) {
      int64_t runs = TripCountOrOne(loop);
      for (auto outer = loop->getParentOfType<mlir::scf::ForOp>();
           outer && launch.isProperAncestor(outer);
           outer = outer->getParentOfType<mlir::scf::ForOp>()) {
        runs = SaturatingProduct(runs, std::max<int64_t>(TripCountOrOne(outer), 1));
      }
      total = std::min(total + runs, kIterationCap);
    });
    if (total > target.max_loop_iterations) {
      return absl::UnimplementedError(absl::StrCat(
          name, ": an invocation of this kernel runs ", total,
          " loop iterations, and this device's driver (Mesa's llvmpipe) ends a shader's loops "
          "after ",
          target.max_loop_iterations,
          " in all, which would cut the result short; shard the program further, or run it on "
          "CPU devices or a GPU (a sum, maximum or minimum over one dimension is split over "
          "work-groups and has no such limit)"));
    }
  }
  return absl::OkStatus();
}

// The target environment on the module; on every kernel its work-group size as the entry point
// ABI (from the launch's known block size).
absl::Status SetSpirvAttributes(mlir::ModuleOp module, const std::string& name,
                                const KernelTarget& target) {
  mlir::MLIRContext* context = module.getContext();
  const std::string text = TargetEnvText(target);
  mlir::Attribute env = mlir::parseAttribute(text, context);
  if (!env)
    return absl::InternalError(
        absl::StrCat("the SPIR-V target environment ", text, " does not parse"));
  module->setAttr(mlir::spirv::getTargetEnvAttrName(), env);
  absl::Status status;
  module.walk([&](mlir::gpu::GPUFuncOp kernel) {
    if (!kernel.isKernel()) return;
    std::optional<llvm::ArrayRef<int32_t>> block = kernel.getKnownBlockSize();
    if (!block || block->size() != 3) {
      status = absl::InternalError(absl::StrCat(name, ": a kernel without a known block size"));
      return;
    }
    kernel->setAttr(mlir::spirv::getEntryPointABIAttrName(),
                    mlir::spirv::getEntryPointABIAttr(context, *block));
  });
  return status;
}

// The buffer a kernel operand is: a host function argument (its index) or an allocation (a
// scratch buffer, numbered after the arguments).
absl::StatusOr<int> BindingOf(mlir::Value operand, mlir::func::FuncOp host,
                              const std::vector<mlir::Operation*>& scratch) {
  if (auto arg = mlir::dyn_cast<mlir::BlockArgument>(operand)) {
    if (arg.getOwner() == &host.getBody().front()) return static_cast<int>(arg.getArgNumber());
  }
  mlir::Operation* def = operand.getDefiningOp();
  auto it = std::find(scratch.begin(), scratch.end(), def);
  if (def != nullptr && it != scratch.end()) {
    return static_cast<int>(host.getNumArguments() + (it - scratch.begin()));
  }
  return absl::UnimplementedError(absl::StrCat("vulkan code generation: a kernel operand made by ",
                                               def ? PrintOp(def) : std::string("a block argument"),
                                               " (only whole buffers bind)"));
}

absl::StatusOr<std::string> Serialize(mlir::spirv::ModuleOp module) {
  llvm::SmallVector<uint32_t, 0> words;
  mlir::spirv::SerializationOptions options;
  options.emitSymbolName = false;
  DiagnosticCollector diagnostics(module.getContext());
  if (mlir::failed(mlir::spirv::serialize(module, words, options))) {
    return absl::InternalError(
        absl::StrCat("serializing SPIR-V failed: ", diagnostics.Message("no diagnostic")));
  }
  std::string code(words.size() * sizeof(uint32_t), '\0');
  std::memcpy(code.data(), words.data(), code.size());
  return code;
}

absl::StatusOr<SpirvDispatch> MakeDispatch(mlir::ModuleOp module, mlir::gpu::LaunchFuncOp launch,
                                           mlir::func::FuncOp host,
                                           const std::vector<mlir::Operation*>& scratch) {
  SpirvDispatch dispatch;
  dispatch.entry = launch.getKernelName().str();
  const std::string spv_name = absl::StrCat("__spv__", launch.getKernelModuleName().str());
  mlir::spirv::ModuleOp spv;
  module.walk([&](mlir::spirv::ModuleOp m) {
    if (m.getSymName() && *m.getSymName() == spv_name) spv = m;
  });
  if (!spv) return absl::InternalError(absl::StrCat("no SPIR-V module ", spv_name));
  TESSERA_ASSIGN_OR_RETURN(dispatch.code, Serialize(spv));
  mlir::gpu::KernelDim3 grid = launch.getGridSizeOperandValues();
  mlir::gpu::KernelDim3 block = launch.getBlockSizeOperandValues();
  for (mlir::Value v : {grid.x, grid.y, grid.z, block.x, block.y, block.z}) {
    std::optional<int64_t> c = mlir::getConstantIntValue(v);
    if (!c) return absl::InternalError(absl::StrCat(dispatch.entry, ": a launch of dynamic size"));
    (dispatch.workgroup_count.size() < 3 ? dispatch.workgroup_count : dispatch.workgroup_size)
        .push_back(*c);
  }
  for (mlir::Value operand : launch.getKernelOperands()) {
    TESSERA_ASSIGN_OR_RETURN(int binding, BindingOf(operand, host, scratch));
    dispatch.bindings.push_back(binding);
  }
  return dispatch;
}

// The dispatches of each split op (SplitLargeElementwiseOps), by the name of the function its
// call in the host function calls; their bindings index that call's operands.
using SplitDispatches = std::map<std::string, std::vector<SpirvDispatch>>;

// A split op's call in the host function -> its dispatches, bound to the call's buffers.
absl::Status AppendSplitDispatches(mlir::func::CallOp call, mlir::func::FuncOp host,
                                   const std::vector<mlir::Operation*>& scratch,
                                   const SplitDispatches& splits, KernelArtifact& artifact) {
  auto it = splits.find(call.getCallee().str());
  if (it == splits.end()) {
    return absl::InternalError(absl::StrCat("a call of @", call.getCallee().str(), " in a kernel"));
  }
  for (SpirvDispatch dispatch : it->second) {
    for (int& binding : dispatch.bindings) {
      TESSERA_ASSIGN_OR_RETURN(binding, BindingOf(call.getOperand(binding), host, scratch));
    }
    artifact.dispatches.push_back(std::move(dispatch));
  }
  return absl::OkStatus();
}

// The host function, after outlining, as the artifact's dispatch list and scratch buffers.
absl::Status CollectDispatches(mlir::ModuleOp module, mlir::func::FuncOp host,
                               const SplitDispatches& splits, KernelArtifact& artifact) {
  std::vector<mlir::Operation*> scratch;
  for (mlir::Operation& op : host.getBody().front()) {
    if (mlir::isa<mlir::arith::ConstantOp, mlir::func::ReturnOp, mlir::memref::DeallocOp>(op)) {
      continue;
    }
    if (auto alloc = mlir::dyn_cast<mlir::memref::AllocOp>(op)) {
      mlir::MemRefType type = alloc.getType();
      if (!type.hasStaticShape()) return absl::InternalError("a dynamic scratch allocation");
      scratch.push_back(&op);
      const int64_t element_bytes = (type.getElementTypeBitWidth() + 7) / 8;
      artifact.scratch_bytes.push_back(type.getNumElements() * element_bytes);
      continue;
    }
    if (auto launch = mlir::dyn_cast<mlir::gpu::LaunchFuncOp>(op)) {
      TESSERA_ASSIGN_OR_RETURN(SpirvDispatch dispatch, MakeDispatch(module, launch, host, scratch));
      artifact.dispatches.push_back(std::move(dispatch));
      continue;
    }
    if (auto call = mlir::dyn_cast<mlir::func::CallOp>(op)) {
      TESSERA_RETURN_IF_ERROR(AppendSplitDispatches(call, host, scratch, splits, artifact));
      continue;
    }
    return absl::UnimplementedError(
        absl::StrCat("vulkan code generation: host operation ", op.getName().getStringRef().str(),
                     " at ", FormatLocation(op.getLoc()), " left outside every kernel"));
  }
  return absl::OkStatus();
}

// The trailing i64 arguments (the device's grid position) are often dead once the kernel is
// simplified (the partitioner's `scf.if` on the position whose branches agree, or a position made
// constant by LowerPositionVariants): then removed. UNIMPLEMENTED where a kernel still reads one.
absl::Status DropPositionArguments(mlir::func::FuncOp func, const std::string& name) {
  llvm::BitVector erase(func.getNumArguments());
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    if (!func.getArgumentTypes()[i].isInteger(64)) continue;
    if (!func.getArgument(i).use_empty()) {
      return absl::UnimplementedError(absl::StrCat(
          "vulkan code generation: kernel ", name,
          " computes with the device's grid position (shard.process_multi_index), which Vulkan "
          "kernels do not take yet"));
    }
    erase.set(i);
  }
  if (mlir::failed(func.eraseArguments(erase))) {
    return absl::InternalError(absl::StrCat(name, ": cannot erase the position arguments"));
  }
  return absl::OkStatus();
}

}  // namespace

namespace {

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

int64_t BufferBytes(mlir::MemRefType type) {
  return type.getNumElements() * ((type.getElementTypeBitWidth() + 7) / 8);
}

// Whether `op` (on buffers) indexes every buffer by the same linear element index: every iterator
// parallel, every memref operand a static identity-layout buffer of the iteration domain's shape
// read through the identity map, every other operand and captured value a constant, no
// linalg.index. Such an op runs as well on any contiguous chunk of its buffers.
bool IsElementwise(mlir::linalg::GenericOp op) {
  if (op.getNumReductionLoops() != 0 || !op.hasPureBufferSemantics()) return false;
  const llvm::SmallVector<int64_t> domain = op.getStaticLoopRanges();
  bool ok = true, any_buffer = false;
  for (mlir::OpOperand& operand : op->getOpOperands()) {
    auto type = mlir::dyn_cast<mlir::MemRefType>(operand.get().getType());
    if (!type) {
      ok = ok && operand.get().getDefiningOp<mlir::arith::ConstantOp>() != nullptr;
      continue;
    }
    any_buffer = true;
    ok = ok && type.hasStaticShape() && type.getLayout().isIdentity() &&
         type.getShape() == llvm::ArrayRef<int64_t>(domain) &&
         op.getMatchingIndexingMap(&operand).isIdentity();
  }
  op.getRegion().walk([&](mlir::linalg::IndexOp) { ok = false; });
  llvm::SetVector<mlir::Value> above;
  mlir::getUsedValuesDefinedAbove(op.getRegion(), above);
  for (mlir::Value v : above) ok = ok && v.getDefiningOp<mlir::arith::ConstantOp>() != nullptr;
  return ok && any_buffer;
}

// A module with one function `fn` that runs `op` (IsElementwise) over `count` elements: one 1-D
// buffer argument per memref operand of `op`, in order; constants cloned.
mlir::OwningOpRef<mlir::ModuleOp> ChunkModule(mlir::linalg::GenericOp op, int64_t count,
                                              const std::string& fn) {
  mlir::MLIRContext* context = op.getContext();
  mlir::Location loc = op.getLoc();
  mlir::OpBuilder b(context);
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::ModuleOp::create(loc);
  std::vector<mlir::Type> args;
  for (mlir::Value v : op->getOperands()) {
    if (auto type = mlir::dyn_cast<mlir::MemRefType>(v.getType())) {
      args.push_back(mlir::MemRefType::get({count}, type.getElementType()));
    }
  }
  b.setInsertionPointToEnd(module->getBody());
  auto func = mlir::func::FuncOp::create(b, loc, fn, b.getFunctionType(args, {}));
  mlir::Block* entry = func.addEntryBlock();
  b.setInsertionPointToStart(entry);
  mlir::IRMapping map;
  auto clone_constant = [&](mlir::Value v) {
    if (!map.contains(v)) map.map(v, b.clone(*v.getDefiningOp())->getResult(0));
  };
  llvm::SetVector<mlir::Value> above;
  mlir::getUsedValuesDefinedAbove(op.getRegion(), above);
  for (mlir::Value v : above) clone_constant(v);
  llvm::SmallVector<mlir::Value> inputs, outputs;
  llvm::SmallVector<mlir::AffineMap> maps;
  unsigned next = 0;
  for (mlir::OpOperand& operand : op->getOpOperands()) {
    mlir::Value v = operand.get(), mapped;
    if (mlir::isa<mlir::MemRefType>(v.getType())) {
      mapped = entry->getArgument(next++);
      maps.push_back(mlir::AffineMap::getMultiDimIdentityMap(1, context));
    } else {
      clone_constant(v);
      mapped = map.lookup(v);
      maps.push_back(mlir::AffineMap::get(1, 0, context));
    }
    (op.isDpsInput(&operand) ? inputs : outputs).push_back(mapped);
  }
  const llvm::SmallVector<mlir::utils::IteratorType> iterators = {
      mlir::utils::IteratorType::parallel};
  auto chunk = mlir::linalg::GenericOp::create(b, loc, mlir::TypeRange{}, mlir::ValueRange(inputs),
                                               mlir::ValueRange(outputs), maps, iterators);
  op.getRegion().cloneInto(&chunk.getRegion(), map);
  mlir::func::ReturnOp::create(b, loc);
  return module;
}

absl::StatusOr<KernelArtifact> LowerLoopsToDispatches(mlir::ModuleOp kernel,
                                                      mlir::func::FuncOp func,
                                                      const std::string& name,
                                                      const KernelTarget& target,
                                                      const SplitDispatches& splits);

// The dispatch running an elementwise `op` over `count` elements (bindings: its memref operands
// in order), one run per offset in `first_elements`.
absl::StatusOr<SpirvDispatch> ChunkDispatch(mlir::linalg::GenericOp op, int64_t count,
                                            const std::vector<int64_t>& first_elements,
                                            const std::string& fn, const KernelTarget& target) {
  mlir::OwningOpRef<mlir::ModuleOp> module = ChunkModule(op, count, fn);
  auto func = module->lookupSymbol<mlir::func::FuncOp>(fn);
  TESSERA_ASSIGN_OR_RETURN(KernelArtifact artifact,
                           LowerLoopsToDispatches(*module, func, fn, target, {}));
  if (artifact.dispatches.size() != 1 || !artifact.scratch_bytes.empty()) {
    return absl::InternalError(absl::StrCat(fn, ": a chunk is not one dispatch"));
  }
  SpirvDispatch dispatch = std::move(artifact.dispatches[0]);
  for (int64_t first : first_elements) {
    SpirvBufferRanges ranges;
    for (mlir::Value v : op->getOperands()) {
      auto type = mlir::dyn_cast<mlir::MemRefType>(v.getType());
      if (!type) continue;
      const int64_t element_bytes = (type.getElementTypeBitWidth() + 7) / 8;
      ranges.offsets.push_back(first * element_bytes);
      ranges.sizes.push_back(count * element_bytes);
    }
    dispatch.ranges.push_back(std::move(ranges));
  }
  return dispatch;
}

// `op`'s dispatches by ranges: chunks of C elements (each buffer's chunk at most the target's
// range, C a multiple of its offset alignment so that every chunk's offset is aligned), then the
// remainder; `op` replaced by a call of `fn` on its buffers (CollectDispatches binds them).
absl::Status SplitOp(mlir::linalg::GenericOp op, const std::string& fn, int64_t max_element_bytes,
                     const KernelTarget& target, SplitDispatches& splits) {
  const int64_t align = std::max<int64_t>(1, target.min_storage_buffer_offset_alignment);
  const int64_t chunk = std::min(
      kMaxChunkElements, target.max_storage_buffer_range / max_element_bytes / align * align);
  int64_t total = 1;
  for (int64_t d : op.getStaticLoopRanges()) total *= d;
  std::vector<int64_t> full;
  for (int64_t first = 0; first + chunk <= total; first += chunk) full.push_back(first);
  std::vector<SpirvDispatch> dispatches;
  if (!full.empty()) {
    TESSERA_ASSIGN_OR_RETURN(SpirvDispatch whole,
                             ChunkDispatch(op, chunk, full, absl::StrCat(fn, "_chunk"), target));
    dispatches.push_back(std::move(whole));
  }
  if (const int64_t rest = total % chunk; rest > 0) {
    TESSERA_ASSIGN_OR_RETURN(SpirvDispatch last, ChunkDispatch(op, rest, {total - rest},
                                                               absl::StrCat(fn, "_rest"), target));
    dispatches.push_back(std::move(last));
  }
  splits[fn] = std::move(dispatches);
  std::vector<mlir::Value> buffers;
  std::vector<mlir::Type> types;
  for (mlir::Value v : op->getOperands()) {
    if (!mlir::isa<mlir::MemRefType>(v.getType())) continue;
    buffers.push_back(v);
    types.push_back(v.getType());
  }
  auto module = op->getParentOfType<mlir::ModuleOp>();
  mlir::OpBuilder b(module.getContext());
  b.setInsertionPointToEnd(module.getBody());
  auto decl = mlir::func::FuncOp::create(b, op.getLoc(), fn, b.getFunctionType(types, {}));
  decl.setPrivate();
  b.setInsertionPoint(op);
  mlir::func::CallOp::create(b, op.getLoc(), fn, mlir::TypeRange{}, buffers);
  op->erase();
  return absl::OkStatus();
}

// Every top-level linalg op of the (bufferized) host function binding a buffer above the
// target's max_storage_buffer_range: split into ranges (SplitOp) when elementwise, else
// RESOURCE_EXHAUSTED naming the op, the size and the limit.
absl::Status SplitLargeElementwiseOps(mlir::func::FuncOp func, const std::string& name,
                                      const KernelTarget& target, SplitDispatches& splits) {
  std::vector<mlir::linalg::LinalgOp> ops;
  for (mlir::Operation& op : func.getBody().front()) {
    if (auto linalg = mlir::dyn_cast<mlir::linalg::LinalgOp>(op)) ops.push_back(linalg);
  }
  mlir::IRRewriter rewriter(func.getContext());
  for (mlir::linalg::LinalgOp op : ops) {
    int64_t largest = 0, max_element_bytes = 1;
    for (mlir::Value v : op->getOperands()) {
      auto type = mlir::dyn_cast<mlir::MemRefType>(v.getType());
      if (!type || !type.hasStaticShape()) continue;
      largest = std::max(largest, BufferBytes(type));
      max_element_bytes =
          std::max<int64_t>(max_element_bytes, (type.getElementTypeBitWidth() + 7) / 8);
    }
    if (largest <= target.max_storage_buffer_range) continue;
    const std::string what =
        absl::StrCat(op->getName().getStringRef().str(), " at ", FormatLocation(op->getLoc()));
    mlir::linalg::GenericOp generic = mlir::dyn_cast<mlir::linalg::GenericOp>(op.getOperation());
    if (!generic && mlir::isa<mlir::linalg::CopyOp>(op)) {
      rewriter.setInsertionPoint(op);
      mlir::FailureOr<mlir::linalg::GenericOp> g = mlir::linalg::generalizeNamedOp(rewriter, op);
      if (mlir::failed(g))
        return absl::InternalError(absl::StrCat(name, ": cannot generalize ", what));
      generic = *g;
    }
    if (!generic || !IsElementwise(generic) ||
        target.max_storage_buffer_range / max_element_bytes <
            std::max<int64_t>(1, target.min_storage_buffer_offset_alignment)) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "vulkan code generation: kernel ", name, ": ", what, " binds a buffer of ", largest,
          " bytes, above the target device's maxStorageBufferRange (",
          target.max_storage_buffer_range,
          " bytes); only elementwise ops (every buffer indexed "
          "alike) are split into ranges: shard the program further so that each shard fits"));
    }
    TESSERA_RETURN_IF_ERROR(SplitOp(generic, absl::StrCat(name, "_split", splits.size()),
                                    max_element_bytes, target, splits));
  }
  return absl::OkStatus();
}

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
  TESSERA_RETURN_IF_ERROR(
      RunPipelineText(kernel, "func.func(convert-linalg-to-parallel-loops),canonicalize",
                      absl::StrCat("lowering ", name, " to parallel loops")));
  TESSERA_RETURN_IF_ERROR(TileParallelLoops(func, name));
  TESSERA_RETURN_IF_ERROR(CheckLoopIterations(func, name, target));
  TESSERA_RETURN_IF_ERROR(RunPipelineText(kernel, GpuOutliningPipeline(),
                                          absl::StrCat("outlining the kernels of ", name)));
  TESSERA_RETURN_IF_ERROR(SetSpirvAttributes(kernel, name, target));
  TESSERA_RETURN_IF_ERROR(
      RunPipelineText(kernel, SpirvPipeline(), absl::StrCat("lowering ", name, " to SPIR-V")));
  PreserveSignedZeroInfNan(kernel, target);
  TESSERA_RETURN_IF_ERROR(RunPipelineText(kernel, "spirv.module(spirv-update-vce)",
                                          absl::StrCat("versioning ", name, " for SPIR-V")));
  KernelArtifact artifact;
  artifact.format = "spirv";
  artifact.entry = name;
  TESSERA_RETURN_IF_ERROR(CollectDispatches(kernel, func, splits, artifact));
  return artifact;
}

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

absl::StatusOr<KernelArtifact> LowerKernelForVulkan(mlir::ModuleOp kernel, const std::string& name,
                                                    bool takes_device_position,
                                                    const std::vector<int64_t>& grid_shape,
                                                    const KernelTarget& target) {
  auto func = kernel.lookupSymbol<mlir::func::FuncOp>(name);
  if (!func) return absl::InternalError(absl::StrCat("kernel module has no @", name));
  TESSERA_RETURN_IF_ERROR(
      RunPipelineText(kernel, "canonicalize,cse", absl::StrCat("simplifying ", name)));
  if (takes_device_position && PositionUsed(func)) {
    return LowerPositionVariants(kernel, name, grid_shape, target);
  }
  if (takes_device_position) TESSERA_RETURN_IF_ERROR(DropPositionArguments(func, name));
  return LowerSimplifiedKernel(kernel, func, name, target);
}

}  // namespace tessera::compiler
