// Reductions over the innermost, contiguous dimension (a row sum, softmax's max and sum, a
// layernorm's mean) as vector code on the CPU. Lowered as they are, such a reduction is one scalar
// chain per output element: every add waits for the one before (LLVM does not reassociate float
// adds), about 3 GB/s where memory gives several times that. VectorizeInnerReductions rewrites
// each one, on tensors, into
//   for each output element (the parallel dimensions tiled by 1):
//     acc: vector<V> = the combiner's neutral element
//     for k in 0, V, 2V, ... < K:  acc = combine(acc, x[..., k : k + V])    (V lanes: V chains)
//     out = combine(out, acc[0], ..., acc[V - 1])                          (scalar, in order)
// The inner loop is elementwise on vector<V>, kept in registers across the loop by the cleanup
// that follows (loop-invariant subset hoisting). V is the largest of 64, 32, 16, 8 dividing K with
// K / V >= 2 (no masks, no remainder loop); a reduction with K below 16 or not a multiple of 8, or
// of elements narrower than a byte (i1), is left as it is.
//
// The result is the same sum in another order (StableHLO leaves a reduction's order open; a
// sharded reduction already adds in another order than an unsharded one). Min / max stay exact:
// ExpandFloatMinMax, run later, rewrites the vector maxnumf / minnumf like the scalar ones.

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "compiler/internal.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/TilingInterface.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

namespace tessera::compiler {
namespace {

// The vector width for a reduction of `k` elements: 0 where it stays scalar. At least two steps
// of the loop: with one, the first step's combine with the neutral element folds away and the
// merge alone (scalar) is left.
int64_t VectorWidthFor(int64_t k) {
  for (int64_t width : {64, 32, 16, 8}) {
    if (k % width == 0 && k / width >= 2) return width;
  }
  return 0;
}

// The width to vectorize `op` with, or 0: a linalg op on tensors with static shapes, one result,
// one reduction dimension and that one the innermost loop, not a contraction (matmuls have their
// own code), whose inputs read the innermost loop contiguously (the last index of each is the
// innermost loop's, or the input does not depend on it: a broadcast operand).
int64_t InnerReductionWidth(mlir::linalg::LinalgOp op) {
  if (!op.hasPureTensorSemantics() || op.hasDynamicShape() || op.getNumDpsInits() != 1 ||
      op.getNumReductionLoops() != 1 || mlir::linalg::isaContractionOpInterface(op)) {
    return 0;
  }
  // Elements narrower than a byte (i1: comparisons, any / all) stay scalar: a memref keeps one
  // byte per i1, a vector<8xi1> in memory is one byte of bits, so a vector load of them would
  // read the wrong bits.
  for (mlir::OpOperand& operand : op->getOpOperands()) {
    const mlir::Type element = mlir::getElementTypeOrSelf(operand.get().getType());
    if (!element.isIntOrFloat() || element.getIntOrFloatBitWidth() % 8 != 0) return 0;
  }
  const unsigned innermost = op.getNumLoops() - 1;
  if (!mlir::linalg::isReductionIterator(op.getIteratorTypesArray()[innermost])) return 0;
  for (mlir::OpOperand* input : op.getDpsInputOperands()) {
    mlir::AffineMap map = op.getMatchingIndexingMap(input);
    if (!map.isProjectedPermutation()) return 0;
    if (!map.isFunctionOfDim(innermost)) continue;  // broadcast along the reduction
    if (map.getNumResults() == 0 ||
        !map.getResult(map.getNumResults() - 1).isFunctionOfDim(innermost)) {
      return 0;
    }
  }
  return VectorWidthFor(op.getStaticLoopRanges()[innermost]);
}

// Rewrites one reduction as described at the top; leaves it as it is (still correct, only scalar)
// where a step does not apply.
void VectorizeInnerReduction(mlir::RewriterBase& rewriter, mlir::linalg::LinalgOp op,
                             int64_t width) {
  const unsigned num_loops = op.getNumLoops();
  // Each output element on its own: the parallel dimensions tiled by 1.
  mlir::Operation* reduction = op.getOperation();
  if (num_loops > 1) {
    std::vector<mlir::OpFoldResult> ones(num_loops, rewriter.getIndexAttr(1));
    ones.back() = rewriter.getIndexAttr(0);
    mlir::scf::SCFTilingOptions options;
    options.setTileSizes(ones);
    rewriter.setInsertionPoint(reduction);
    auto tiled =
        mlir::scf::tileUsingSCF(rewriter, mlir::cast<mlir::TilingInterface>(reduction), options);
    if (mlir::failed(tiled)) return;
    rewriter.replaceOp(reduction, tiled->replacements);
    reduction = tiled->tiledOps.back();
  }
  // V lanes of partial results, merged after the loop.
  auto partial_op = mlir::dyn_cast<mlir::PartialReductionOpInterface>(reduction);
  if (!partial_op) return;
  std::vector<mlir::OpFoldResult> sizes(num_loops, rewriter.getIndexAttr(0));
  sizes.back() = rewriter.getIndexAttr(width);
  rewriter.setInsertionPoint(reduction);
  auto partial = mlir::scf::tileReductionUsingScf(rewriter, partial_op, sizes);
  if (mlir::failed(partial)) return;
  rewriter.replaceOp(reduction, partial->replacements);
  // The loop body (elementwise over [1, ..., 1, V]) and the lanes' fill with the neutral element
  // as vector code; the merge stays scalar, in order (and exact for min / max).
  std::vector<mlir::Operation*> lane_ops(partial->tiledOps.begin(), partial->tiledOps.end());
  for (mlir::Value initial : partial->initialValues) {
    if (mlir::Operation* fill = initial.getDefiningOp<mlir::linalg::FillOp>()) {
      lane_ops.push_back(fill);
    }
  }
  for (mlir::Operation* lanes : lane_ops) {
    if (!mlir::isa<mlir::linalg::LinalgOp>(lanes)) continue;
    rewriter.setInsertionPoint(lanes);
    auto vectorized = mlir::linalg::vectorize(rewriter, lanes);
    if (mlir::succeeded(vectorized)) rewriter.replaceOp(lanes, vectorized->replacements);
  }
}

}  // namespace

absl::Status VectorizeInnerReductions(mlir::ModuleOp kernel, const std::string& name) {
  mlir::MLIRContext* context = kernel.getContext();
  // The dialects tiling and vectorization create ops of (a registered dialect is loaded lazily).
  context
      ->loadDialect<mlir::arith::ArithDialect, mlir::scf::SCFDialect, mlir::tensor::TensorDialect,
                    mlir::ub::UBDialect, mlir::vector::VectorDialect>();
  mlir::IRRewriter rewriter(context);
  // linalg.reduce as the linalg.generic it names (tiling and vectorization see one form).
  std::vector<mlir::linalg::ReduceOp> named;
  kernel.walk([&](mlir::linalg::ReduceOp op) { named.push_back(op); });
  for (mlir::linalg::ReduceOp op : named) {
    if (InnerReductionWidth(op) == 0) continue;
    rewriter.setInsertionPoint(op);
    if (mlir::failed(mlir::linalg::generalizeNamedOp(rewriter, op))) {
      return absl::InternalError(absl::StrCat("generalizing a reduction of ", name));
    }
  }
  std::vector<std::pair<mlir::linalg::GenericOp, int64_t>> reductions;
  kernel.walk([&](mlir::linalg::GenericOp op) {
    if (int64_t width = InnerReductionWidth(op); width > 0) reductions.emplace_back(op, width);
  });
  if (reductions.empty()) return absl::OkStatus();
  for (auto& [op, width] : reductions) VectorizeInnerReduction(rewriter, op, width);
  // Keep each accumulator in registers across its loop, as BuildMatmulTilingPipeline does.
  mlir::PassManager pm(context);
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addPass(mlir::createLoopInvariantCodeMotionPass());
  pm.addPass(mlir::createLoopInvariantSubsetHoistingPass());
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addPass(mlir::createCSEPass());
  return RunPipeline(pm, kernel, absl::StatusCode::kInternal,
                     absl::StrCat("vectorizing the reductions of ", name));
}

}  // namespace tessera::compiler
