// SplitReshardsIntoSteps: every change of sharding between two chained shard.shard ops becomes a
// chain of changes MLIR 22's partitioner makes correctly, one grid axis at a time.
//
// The partitioner reshards a value by recognizing one step: a split axis added at the end of a
// dimension's axes (a local slice), the last one removed (an all-gather), or, where it is the only
// split axis, moved to another dimension (an all-to-all). Anything more it does in part: from
// P(None, y, x) to replicated on a 2x2 grid it gathers y and leaves x split. Here such a change
// goes through intermediate shardings: the axes the target does not share are removed, last
// first, then the target's are added, first first.

#include <cstdint>
#include <vector>

#include "compiler/internal.h"
#include "compiler/sharding_models.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

namespace tessera::compiler {
namespace {

// The split axes of a sharding, a list per tensor dimension, padded to `rank` dimensions.
using SplitAxes = mlir::shard::ShardingArray;

SplitAxes AxesOf(const mlir::shard::Sharding& sharding, int64_t rank) {
  SplitAxes axes(rank);
  llvm::ArrayRef<mlir::shard::GridAxesAttr> split = sharding.getSplitAxes();
  for (size_t d = 0; d < split.size() && d < axes.size(); ++d) {
    axes[d].assign(split[d].asArrayRef().begin(), split[d].asArrayRef().end());
  }
  return axes;
}

// How many axes each dimension of `from` and `to` share at its front.
std::vector<size_t> CommonPrefixes(const SplitAxes& from, const SplitAxes& to) {
  std::vector<size_t> common(from.size(), 0);
  for (size_t d = 0; d < from.size(); ++d) {
    while (common[d] < from[d].size() && common[d] < to[d].size() &&
           from[d][common[d]] == to[d][common[d]]) {
      ++common[d];
    }
  }
  return common;
}

// The shardings between `from` and `to` (both excluded), one axis removed or added per step.
// Empty when the partitioner makes the change in one step: one axis removed or added, or the one
// split axis moved to another dimension (an all-to-all). A move beside other split axes it
// mis-reads (P(x,y) to P(None,(y,x)) becomes a slice by x alone): gathered, then sliced.
std::vector<SplitAxes> IntermediateSteps(const SplitAxes& from, const SplitAxes& to) {
  const std::vector<size_t> common = CommonPrefixes(from, to);
  size_t removed = 0, added = 0;
  for (size_t d = 0; d < from.size(); ++d) {
    removed += from[d].size() - common[d];
    added += to[d].size() - common[d];
  }
  if (removed + added <= 1) return {};
  size_t split = 0;
  for (const auto& dim : from) split += dim.size();
  if (removed == 1 && added == 1 && split == 1) {
    for (size_t d = 0; d < from.size(); ++d) {
      if (from[d].size() == common[d] + 1 && to[d].size() == common[d]) {
        for (size_t e = 0; e < to.size(); ++e) {
          if (e != d && to[e].size() == common[e] + 1 && to[e].back() == from[d].back()) return {};
        }
      }
    }
  }
  std::vector<SplitAxes> steps;
  SplitAxes current = from;
  for (size_t d = from.size(); d-- > 0;) {
    while (current[d].size() > common[d]) {
      current[d].pop_back();
      steps.push_back(current);
    }
  }
  for (size_t d = 0; d < to.size(); ++d) {
    while (current[d].size() < to[d].size()) {
      current[d].push_back(to[d][current[d].size()]);
      steps.push_back(current);
    }
  }
  steps.pop_back();  // `to` itself
  return steps;
}

}  // namespace

void SplitReshardsIntoSteps(mlir::func::FuncOp main) {
  std::vector<mlir::shard::ShardOp> targets;
  main.walk([&](mlir::shard::ShardOp op) {
    if (op.getSrc().getDefiningOp<mlir::shard::ShardOp>()) targets.push_back(op);
  });
  for (mlir::shard::ShardOp target : targets) {
    auto source = target.getSrc().getDefiningOp<mlir::shard::ShardOp>();
    auto type = mlir::dyn_cast<mlir::RankedTensorType>(target.getResult().getType());
    const mlir::shard::Sharding from(source.getSharding());
    const mlir::shard::Sharding to(target.getSharding());
    if (!type || !IsPlainSharding(from) || !IsPlainSharding(to) ||
        from.getGridAttr() != to.getGridAttr()) {
      continue;
    }
    const std::vector<SplitAxes> steps =
        IntermediateSteps(AxesOf(from, type.getRank()), AxesOf(to, type.getRank()));
    mlir::OpBuilder builder(target);
    mlir::Value value = source.getResult();
    for (const SplitAxes& step : steps) {
      mlir::Value sharding = mlir::shard::ShardingOp::create(
          builder, target.getLoc(), ShardingOfAxes(builder.getContext(), from.getGridAttr(), step));
      value = mlir::shard::ShardOp::create(builder, target.getLoc(), value, sharding,
                                           /*annotate_for_users=*/true)
                  .getResult();
    }
    target.getSrcMutable().assign(value);
  }
}

}  // namespace tessera::compiler
