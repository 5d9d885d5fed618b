#ifndef TESSERA_COMPILER_SHARDING_MODELS_H_
#define TESSERA_COMPILER_SHARDING_MODELS_H_

// compiler/sharding_models.h: what the sharding models Tessera attaches to MLIR ops
// (reshape_sharding.cc, slice_sharding.cc, control_flow_sharding.cc) share: which values carry a
// sharding, which shardings they understand, and how they build one. Internal to compiler/.

#include <vector>

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Shard/Interfaces/ShardingInterface.h"
#include "mlir/Dialect/Shard/Interfaces/ShardingInterfaceImpl.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Value.h"

namespace tessera::compiler {

// A ranked tensor of rank 1 or more: the values the partitioner annotates (a rank-0 tensor is the
// same on every device).
inline bool IsShardable(mlir::Value value) {
  auto type = mlir::dyn_cast<mlir::RankedTensorType>(value.getType());
  return type && type.getRank() > 0;
}

// A sharding by split axes alone (no halos, no explicit shard offsets): the only kind the models
// take.
inline bool IsPlainSharding(const mlir::shard::Sharding& sharding) {
  return sharding.getStaticHaloSizes().empty() && sharding.getStaticShardedDimsOffsets().empty() &&
         sharding.getDynamicHaloSizes().empty() && sharding.getDynamicShardedDimsOffsets().empty();
}

// The sharding over `grid` that splits dimension d on `split[d]` (trailing unsplit dimensions
// dropped, as MLIR's own shardings are).
inline mlir::shard::Sharding ShardingOfAxes(mlir::MLIRContext* context,
                                            mlir::FlatSymbolRefAttr grid,
                                            const mlir::shard::ShardingArray& split) {
  std::vector<mlir::shard::GridAxesAttr> axes;
  for (const llvm::SmallVector<mlir::shard::GridAxis>& dim : split) {
    axes.push_back(mlir::DenseI16ArrayAttr::get(context, dim));
  }
  while (axes.size() > 1 && axes.back().empty()) axes.pop_back();
  if (axes.empty()) axes.push_back(mlir::DenseI16ArrayAttr::get(context, {}));
  return mlir::shard::Sharding::get(grid, axes);
}

// Annotates `op` with `shardings` (one per operand, then one per result; a null one leaves its
// value alone): each result as its producer makes it, each operand as `op` takes it.
inline void AnnotateOperandsAndResults(mlir::Operation* op, mlir::OpBuilder& builder,
                                       const std::vector<mlir::shard::Sharding>& shardings) {
  const unsigned operands = op->getNumOperands();
  for (mlir::OpResult result : op->getResults()) {
    const mlir::shard::Sharding& sharding = shardings[operands + result.getResultNumber()];
    if (sharding) mlir::shard::maybeInsertTargetShardingAnnotation(sharding, result, builder);
  }
  for (mlir::OpOperand& operand : op->getOpOperands()) {
    const mlir::shard::Sharding& sharding = shardings[operand.getOperandNumber()];
    if (sharding) mlir::shard::maybeInsertSourceShardingAnnotation(sharding, operand, builder);
  }
}

}  // namespace tessera::compiler

#endif  // TESSERA_COMPILER_SHARDING_MODELS_H_
