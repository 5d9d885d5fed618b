// How tensor.extract_slice, pad and concat shard (MLIR 22 gives them no sharding,
// and its propagation refuses an op without one). Each leaves some dimensions whole: they pass
// through unchanged, element i of the operand being element i of the result (a slice of all of
// it, no padding, not the dimension joined). Those dimensions shard freely, the same on every
// tensor operand and the result, and the per-device op is the same op on the local shapes; the
// dimensions it cuts, pads or joins stay whole on every device (the partitioner gathers them
// before the op). An op with dynamic offsets, sizes or padding, or a slice that drops dimensions,
// runs whole.
//
// The op's loops, for the sharding interface, are the result's dimensions, all parallel.

#include <cstdint>
#include <vector>

#include "compiler/internal.h"
#include "compiler/sharding_models.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Shard/Interfaces/ShardingInterface.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/IRMapping.h"

namespace tessera::compiler {
namespace {

using mlir::shard::GridAxis;
using mlir::shard::Sharding;
using mlir::shard::ShardingArray;
using mlir::shard::ShardingOption;

bool AllStatic(llvm::ArrayRef<int64_t> values) {
  return llvm::none_of(values, mlir::ShapedType::isDynamic);
}

// A slice `part` of `whole` (static, the same rank): dimension d passes through when the slice
// is all of it.
std::vector<bool> SlicePassThrough(mlir::OffsetSizeAndStrideOpInterface op,
                                   mlir::RankedTensorType whole, mlir::RankedTensorType part) {
  std::vector<bool> through(part.getRank(), false);
  llvm::ArrayRef<int64_t> offsets = op.getStaticOffsets();
  llvm::ArrayRef<int64_t> sizes = op.getStaticSizes();
  llvm::ArrayRef<int64_t> strides = op.getStaticStrides();
  if (whole.getRank() != part.getRank() || !whole.hasStaticShape() || !part.hasStaticShape() ||
      !AllStatic(offsets) || !AllStatic(sizes) || !AllStatic(strides) ||
      static_cast<int64_t>(sizes.size()) != part.getRank()) {
    return through;
  }
  for (int64_t d = 0; d < part.getRank(); ++d) {
    through[d] = offsets[d] == 0 && strides[d] == 1 && sizes[d] == whole.getDimSize(d) &&
                 part.getDimSize(d) == whole.getDimSize(d);
  }
  return through;
}

// Per result dimension: whether it passes through `op`.
std::vector<bool> PassThrough(mlir::Operation* op) {
  auto result = mlir::cast<mlir::RankedTensorType>(op->getResult(0).getType());
  if (auto slice = mlir::dyn_cast<mlir::tensor::ExtractSliceOp>(op)) {
    return SlicePassThrough(slice, slice.getSourceType(), slice.getResultType());
  }
  std::vector<bool> through(result.getRank(), false);
  if (auto pad = mlir::dyn_cast<mlir::tensor::PadOp>(op)) {
    llvm::ArrayRef<int64_t> low = pad.getStaticLow();
    llvm::ArrayRef<int64_t> high = pad.getStaticHigh();
    if (static_cast<int64_t>(low.size()) != result.getRank() ||
        static_cast<int64_t>(high.size()) != result.getRank() || !pad.getLow().empty() ||
        !pad.getHigh().empty()) {
      return through;
    }
    for (int64_t d = 0; d < result.getRank(); ++d) through[d] = low[d] == 0 && high[d] == 0;
    return through;
  }
  if (auto concat = mlir::dyn_cast<mlir::tensor::ConcatOp>(op)) {
    for (int64_t d = 0; d < result.getRank(); ++d) {
      through[d] = d != static_cast<int64_t>(concat.getDim());
    }
  }
  return through;
}

// The split axes of `sharding` on the dimensions that pass through (none elsewhere).
ShardingArray ThroughAxes(const Sharding& sharding, const std::vector<bool>& through) {
  ShardingArray loops(through.size());
  llvm::ArrayRef<mlir::shard::GridAxesAttr> split = sharding.getSplitAxes();
  for (size_t d = 0; d < through.size() && d < split.size(); ++d) {
    if (through[d]) loops[d].assign(split[d].asArrayRef().begin(), split[d].asArrayRef().end());
  }
  return loops;
}

template <typename SliceOp>
struct SliceShardingModel
    : public mlir::shard::ShardingInterface::ExternalModel<SliceShardingModel<SliceOp>, SliceOp> {
  llvm::SmallVector<mlir::utils::IteratorType> getLoopIteratorTypes(mlir::Operation* op) const {
    auto result = mlir::cast<mlir::RankedTensorType>(op->getResult(0).getType());
    return llvm::SmallVector<mlir::utils::IteratorType>(result.getRank(),
                                                        mlir::utils::IteratorType::parallel);
  }

  // Not read: the methods that would read them are replaced below.
  llvm::SmallVector<mlir::AffineMap> getIndexingMaps(mlir::Operation*) const { return {}; }

  mlir::FailureOr<ShardingOption> getShardingOption(mlir::Operation* op,
                                                    llvm::ArrayRef<Sharding> operands,
                                                    llvm::ArrayRef<Sharding> results) const {
    const std::vector<bool> through = PassThrough(op);
    std::vector<Sharding> known(operands.begin(), operands.end());
    known.insert(known.end(), results.begin(), results.end());
    for (const Sharding& sharding : known) {
      if (sharding && IsPlainSharding(sharding)) {
        return ShardingOption(ThroughAxes(sharding, through), sharding.getGridAttr());
      }
    }
    for (const Sharding& sharding : known) {
      if (sharding) return ShardingOption(ShardingArray(through.size()), sharding.getGridAttr());
    }
    return ShardingOption::makeEmpty();
  }

  // Every tensor operand and the result: the loops' axes (each passing dimension has one size).
  mlir::FailureOr<std::vector<Sharding>> getShardingAnnotations(
      mlir::Operation* op, const ShardingOption& option) const {
    const std::vector<bool> through = PassThrough(op);
    if (option.empty || !option.grid || option.shardingArray.size() > through.size()) {
      return mlir::failure();
    }
    ShardingArray loops = option.shardingArray;
    loops.resize(through.size());
    for (size_t d = 0; d < through.size(); ++d) {
      if (!through[d] && !loops[d].empty()) return mlir::failure();
    }
    const Sharding sharding = ShardingOfAxes(op->getContext(), option.grid, loops);
    std::vector<Sharding> shardings;
    for (mlir::Value operand : op->getOperands()) {
      shardings.push_back(IsShardable(operand) ? sharding : Sharding());
    }
    shardings.push_back(sharding);
    return shardings;
  }

  mlir::LogicalResult addShardingAnnotations(mlir::Operation* op, mlir::OpBuilder& builder,
                                             const ShardingOption& option) const {
    mlir::FailureOr<std::vector<Sharding>> shardings = getShardingAnnotations(op, option);
    if (mlir::failed(shardings) || shardings->size() != op->getNumOperands() + 1) {
      return mlir::failure();
    }
    AnnotateOperandsAndResults(op, builder, *shardings);
    return mlir::success();
  }

  // The same op on the local shapes; every tensor operand must have the result's sharding, split
  // only on dimensions that pass through (anything else is refused, not guessed).
  mlir::LogicalResult partition(mlir::Operation* op, llvm::ArrayRef<mlir::Value> partitioned,
                                llvm::ArrayRef<Sharding> operands, llvm::ArrayRef<Sharding> results,
                                mlir::IRMapping& map, mlir::SymbolTableCollection& symbols,
                                mlir::OpBuilder& builder) const {
    if (results.size() != 1 || !results[0] || !IsPlainSharding(results[0]) ||
        partitioned.size() != op->getNumOperands() || operands.size() != op->getNumOperands()) {
      return op->emitError("a slice, pad or concat without its shardings");
    }
    const std::vector<bool> through = PassThrough(op);
    const ShardingArray loops = ThroughAxes(results[0], through);
    const Sharding expected = ShardingOfAxes(op->getContext(), results[0].getGridAttr(), loops);
    if (!expected.equalSplitAxes(results[0])) {
      return op->emitError("a slice, pad or concat split on a dimension it cuts, pads or joins");
    }
    for (size_t i = 0; i < operands.size(); ++i) {
      if (!IsShardable(op->getOperand(i))) continue;
      if (!operands[i] || !IsPlainSharding(operands[i]) || !expected.equalSplitAxes(operands[i])) {
        return op->emitError("a slice, pad or concat whose operands are not split as its result");
      }
    }
    mlir::shard::GridOp grid = mlir::shard::getGrid(op, results[0].getGridAttr(), symbols);
    auto local = mlir::cast<mlir::RankedTensorType>(
        mlir::shard::shardType(op->getResult(0).getType(), grid, results[0]));
    for (size_t i = 0; i < partitioned.size(); ++i) map.map(op->getOperand(i), partitioned[i]);
    mlir::Operation* created = builder.clone(*op, map);
    created->getResult(0).setType(local);
    // A slice's sizes are the local ones on the dimensions that pass through.
    if (auto slice = mlir::dyn_cast<mlir::tensor::ExtractSliceOp>(created)) {
      slice.setStaticSizes(local.getShape());
    }
    map.map(op->getResult(0), created->getResult(0));
    return mlir::success();
  }
};

}  // namespace

void RegisterSliceShardings(mlir::DialectRegistry& registry) {
  registry.addExtension(+[](mlir::MLIRContext* context, mlir::tensor::TensorDialect*) {
    mlir::tensor::ExtractSliceOp::attachInterface<SliceShardingModel<mlir::tensor::ExtractSliceOp>>(
        *context);
    mlir::tensor::PadOp::attachInterface<SliceShardingModel<mlir::tensor::PadOp>>(*context);
    mlir::tensor::ConcatOp::attachInterface<SliceShardingModel<mlir::tensor::ConcatOp>>(*context);
  });
}

}  // namespace tessera::compiler
