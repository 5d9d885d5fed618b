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

namespace {

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
                      mlir::func::CallOp, mlir::UnrealizedConversionCastOp>(op);
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

}  // namespace

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

}  // namespace tessera::compiler::spirv
