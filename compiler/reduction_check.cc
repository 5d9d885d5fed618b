// Step c, between sharding propagation and partitioning: reductions over a sharded dimension
// that MLIR 22's partitioner cannot combine. It partitions such a linalg op by giving every device
// but one an init of the combiner's neutral element (arith::getNeutralElement) and all-reducing
// the partial results; it assumes, unchecked in a release build, one init and one combining op
// that has a neutral element. Anything else (subf, divf, subi, remsi, a combiner of several ops,
// several outputs: argmax's value and index) aborts the process inside MLIR
// (std::bad_optional_access) or reads past a vector. GatherUncombinableReductions gathers the
// reduced dimensions of those ops' operands first, so that each device reduces whole rows, as a
// program that replicated them would (XLA does the same for a reduction it cannot combine). A
// reduction over an unsharded dimension stays on each device as it is.

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "compiler/internal.h"
#include "compiler/sharding_models.h"
#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Shard/Interfaces/ShardingInterface.h"
#include "mlir/Dialect/Shard/Interfaces/ShardingInterfaceImpl.h"

namespace tessera::compiler {
namespace {

// The sharding propagation gave each operand (a shard.shard defines it) and each result (a
// shard.shard uses it); an empty Sharding where there is none.
std::vector<mlir::shard::Sharding> OperandShardings(mlir::Operation* op) {
  std::vector<mlir::shard::Sharding> shardings;
  for (mlir::Value operand : op->getOperands()) {
    auto shard = operand.getDefiningOp<mlir::shard::ShardOp>();
    shardings.push_back(shard ? mlir::shard::Sharding(shard.getSharding())
                              : mlir::shard::Sharding());
  }
  return shardings;
}

std::vector<mlir::shard::Sharding> ResultShardings(mlir::Operation* op) {
  std::vector<mlir::shard::Sharding> shardings;
  for (mlir::Value result : op->getResults()) {
    mlir::shard::Sharding sharding;
    for (mlir::Operation* user : result.getUsers()) {
      if (auto shard = mlir::dyn_cast<mlir::shard::ShardOp>(user)) {
        sharding = mlir::shard::Sharding(shard.getSharding());
        break;
      }
    }
    shardings.push_back(sharding);
  }
  return shardings;
}

// Whether the partitioner will split one of `op`'s reduction loops over devices.
bool ReducesAShardedDimension(mlir::linalg::LinalgOp op) {
  auto sharded = mlir::dyn_cast<mlir::shard::ShardingInterface>(op.getOperation());
  if (!sharded || op.getNumReductionLoops() == 0) return false;
  llvm::SmallVector<mlir::AffineMap> maps = sharded.getIndexingMaps();
  for (mlir::AffineMap map : maps) {
    if (!map.isProjectedPermutation()) return false;  // the partitioner refuses it itself
  }
  llvm::SmallVector<mlir::utils::IteratorType> iterators = sharded.getLoopIteratorTypes();
  std::vector<mlir::shard::Sharding> operands = OperandShardings(op);
  std::vector<mlir::shard::Sharding> results = ResultShardings(op);
  mlir::shard::ShardingArray axes =
      mlir::shard::getGridAxisAssignmentForLoopIterators(operands, results, iterators, maps);
  return mlir::shard::isAtLeastOneReductionIteratorSharded(iterators, axes);
}

// OK when the partitioner can combine `op`'s partial results; else what it cannot combine.
absl::Status CheckCombiner(mlir::linalg::LinalgOp op) {
  const std::string what =
      absl::StrCat("'", op->getName().getStringRef().str(), "' at ", FormatLocation(op->getLoc()),
                   " reduces a sharded dimension");
  if (op.getNumDpsInits() != 1) {
    return absl::UnimplementedError(
        absl::StrCat(what, " into ", op.getNumDpsInits(), " outputs; across devices only one"));
  }
  llvm::SmallVector<mlir::Operation*> combiners;
  mlir::Value reduced = mlir::matchReduction(op.getRegionOutputArgs(), 0, combiners);
  if (!reduced || combiners.size() != 1) {
    return absl::UnimplementedError(
        absl::StrCat(what, " with a region that is not one combining op"));
  }
  if (!mlir::arith::getNeutralElement(combiners[0]).has_value()) {
    return absl::UnimplementedError(absl::StrCat(
        what, " with '", combiners[0]->getName().getStringRef().str(),
        "', which has no identity element: the devices' partial results cannot be combined (those "
        "of a sum, product, minimum or maximum can)"));
  }
  return absl::OkStatus();
}

// Each operand of `op` taken with the axes of its reduced dimensions removed from the sharding
// propagation gave it: a shard.shard annotating it for `op` alone, which the partitioner makes an
// all-gather of those dimensions. False when an operand's sharding is not one of split axes alone.
bool GatherReducedDimensions(mlir::linalg::LinalgOp op) {
  llvm::SmallVector<mlir::utils::IteratorType> iterators = op.getIteratorTypesArray();
  llvm::SmallVector<mlir::AffineMap> maps = op.getIndexingMapsArray();
  const std::vector<mlir::shard::Sharding> shardings = OperandShardings(op);
  mlir::OpBuilder builder(op);
  for (mlir::OpOperand& operand : op->getOpOperands()) {
    const mlir::shard::Sharding& sharding = shardings[operand.getOperandNumber()];
    auto type = mlir::dyn_cast<mlir::RankedTensorType>(operand.get().getType());
    if (!sharding || !type) continue;
    if (!IsPlainSharding(sharding)) return false;
    mlir::shard::ShardingArray axes(type.getRank());
    llvm::ArrayRef<mlir::shard::GridAxesAttr> split = sharding.getSplitAxes();
    const mlir::AffineMap map = maps[operand.getOperandNumber()];
    bool changed = false;
    for (int64_t d = 0; d < type.getRank() && d < static_cast<int64_t>(split.size()); ++d) {
      const auto loop = mlir::cast<mlir::AffineDimExpr>(map.getResult(d)).getPosition();
      if (iterators[loop] == mlir::utils::IteratorType::reduction) {
        changed |= !split[d].empty();
        continue;
      }
      axes[d].assign(split[d].asArrayRef().begin(), split[d].asArrayRef().end());
    }
    if (!changed) continue;
    mlir::Value gathered = mlir::shard::ShardingOp::create(
        builder, op->getLoc(), ShardingOfAxes(op->getContext(), sharding.getGridAttr(), axes));
    operand.set(mlir::shard::ShardOp::create(builder, op->getLoc(), operand.get(), gathered,
                                             /*annotate_for_users=*/true)
                    .getResult());
  }
  return true;
}

}  // namespace

absl::Status GatherUncombinableReductions(mlir::func::FuncOp main) {
  std::vector<mlir::linalg::LinalgOp> uncombinable;
  main.walk([&](mlir::linalg::LinalgOp op) {
    if (ReducesAShardedDimension(op) && !CheckCombiner(op).ok()) uncombinable.push_back(op);
  });
  for (mlir::linalg::LinalgOp op : uncombinable) {
    // Gathered, none of its reduction loops may be split any more.
    if (!GatherReducedDimensions(op) || ReducesAShardedDimension(op)) {
      return absl::UnimplementedError(absl::StrCat(
          CheckCombiner(op).message(),
          "; replicate the reduced dimension (P() or a spec that leaves it unsharded) to reduce "
          "on each device"));
    }
  }
  return absl::OkStatus();
}

}  // namespace tessera::compiler
