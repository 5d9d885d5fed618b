// How tensor.expand_shape and tensor.collapse_shape shard (MLIR 22 gives them no sharding, and its
// propagation refuses an op without one). Both regroup dimensions: each dimension of the coarse
// side (expand's source, collapse's result) is a group of consecutive dimensions of the fine side
// (expand's result, collapse's source), row-major. A group shards only through its first (outer)
// dimension: splitting the coarse dimension into k contiguous blocks is splitting the group's
// first dimension into k blocks exactly when k divides that first dimension's size. So
//   fine side   dimension g[0] split on axes A, every other dimension of the group unsplit
//   coarse side dimension g split on the same axes A
// are one sharding of the op, and the per-device op is the same regrouping of the local shapes.
// Any other sharding of an operand (an inner dimension of a group split, a first dimension the
// axes do not divide) is resharded to this form by the partitioner before the op (it gathers
// what does not fit), never computed wrongly.
//
// The op's loops, for the sharding interface, are the fine side's dimensions, all parallel.

#include <cstdint>
#include <optional>
#include <type_traits>
#include <vector>

#include "compiler/internal.h"
#include "compiler/sharding_models.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Shard/Interfaces/ShardingInterface.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"

namespace tessera::compiler {
namespace {

using mlir::shard::GridAxis;
using mlir::shard::Sharding;
using mlir::shard::ShardingArray;
using mlir::shard::ShardingOption;

// The number of devices `axes` split over; 0 when an axis is not in the grid.
int64_t DeviceCount(llvm::ArrayRef<GridAxis> axes, llvm::ArrayRef<int64_t> grid) {
  int64_t count = 1;
  for (GridAxis axis : axes) {
    if (axis < 0 || static_cast<size_t>(axis) >= grid.size() || grid[axis] < 1) return 0;
    count *= grid[axis];
  }
  return count;
}

// Whether splitting the group's first dimension on `axes` is a block split of it.
bool Divides(llvm::ArrayRef<GridAxis> axes, int64_t size, llvm::ArrayRef<int64_t> grid) {
  const int64_t count = DeviceCount(axes, grid);
  return count > 0 && !mlir::ShapedType::isDynamic(size) && size % count == 0;
}

// The fine side's split axes for each of its dimensions (empty: unsplit), from `sharding` of the
// fine side; nullopt when the sharding is not of the form above (halos, offsets, an inner
// dimension of a group split, axes that do not divide a group's first dimension).
std::optional<ShardingArray> FromFine(const Sharding& sharding, mlir::RankedTensorType fine,
                                      llvm::ArrayRef<mlir::ReassociationIndices> groups,
                                      llvm::ArrayRef<int64_t> grid) {
  if (!IsPlainSharding(sharding)) return std::nullopt;
  llvm::ArrayRef<mlir::shard::GridAxesAttr> split = sharding.getSplitAxes();
  if (static_cast<int64_t>(split.size()) > fine.getRank()) return std::nullopt;
  ShardingArray loops(fine.getRank());
  for (const mlir::ReassociationIndices& group : groups) {
    for (size_t i = 0; i < group.size(); ++i) {
      const int64_t dim = group[i];
      if (static_cast<size_t>(dim) >= split.size() || split[dim].empty()) continue;
      llvm::ArrayRef<GridAxis> axes = split[dim].asArrayRef();
      if (i != 0 || !Divides(axes, fine.getDimSize(dim), grid)) return std::nullopt;
      loops[dim].assign(axes.begin(), axes.end());
    }
  }
  return loops;
}

// The same from `sharding` of the coarse side.
std::optional<ShardingArray> FromCoarse(const Sharding& sharding, mlir::RankedTensorType fine,
                                        llvm::ArrayRef<mlir::ReassociationIndices> groups,
                                        llvm::ArrayRef<int64_t> grid) {
  if (!IsPlainSharding(sharding)) return std::nullopt;
  llvm::ArrayRef<mlir::shard::GridAxesAttr> split = sharding.getSplitAxes();
  if (split.size() > groups.size()) return std::nullopt;
  ShardingArray loops(fine.getRank());
  for (size_t g = 0; g < split.size(); ++g) {
    if (split[g].empty()) continue;
    if (groups[g].empty()) return std::nullopt;
    llvm::ArrayRef<GridAxis> axes = split[g].asArrayRef();
    const int64_t first = groups[g].front();
    if (!Divides(axes, fine.getDimSize(first), grid)) return std::nullopt;
    loops[first].assign(axes.begin(), axes.end());
  }
  return loops;
}

// The coarse side's split axes for the loops' (fine side's) split axes.
ShardingArray CoarseOf(const ShardingArray& loops,
                       llvm::ArrayRef<mlir::ReassociationIndices> groups) {
  ShardingArray coarse(groups.size());
  for (size_t g = 0; g < groups.size(); ++g) {
    if (!groups[g].empty()) coarse[g] = loops[groups[g].front()];
  }
  return coarse;
}

llvm::ArrayRef<int64_t> GridShape(mlir::Operation* op, mlir::FlatSymbolRefAttr grid) {
  auto grid_op = mlir::SymbolTable::lookupNearestSymbolFrom<mlir::shard::GridOp>(op, grid);
  if (!grid_op) return {};
  return grid_op.getShape();
}

template <typename ReshapeOp>
struct ReshapeShardingModel
    : public mlir::shard::ShardingInterface::ExternalModel<ReshapeShardingModel<ReshapeOp>,
                                                           ReshapeOp> {
  static constexpr bool kExpand = std::is_same_v<ReshapeOp, mlir::tensor::ExpandShapeOp>;

  static mlir::RankedTensorType Fine(ReshapeOp op) {
    if constexpr (kExpand) {
      return op.getResultType();
    } else {
      return op.getSrcType();
    }
  }

  llvm::SmallVector<mlir::utils::IteratorType> getLoopIteratorTypes(mlir::Operation* op) const {
    return llvm::SmallVector<mlir::utils::IteratorType>(Fine(mlir::cast<ReshapeOp>(op)).getRank(),
                                                        mlir::utils::IteratorType::parallel);
  }

  // The loops are not an affine image of the coarse side's dimensions: the interface's default
  // methods, which read these maps, are all replaced below.
  llvm::SmallVector<mlir::AffineMap> getIndexingMaps(mlir::Operation*) const { return {}; }

  mlir::FailureOr<ShardingOption> getShardingOption(mlir::Operation* op,
                                                    llvm::ArrayRef<Sharding> operands,
                                                    llvm::ArrayRef<Sharding> results) const {
    auto reshape = mlir::cast<ReshapeOp>(op);
    const llvm::SmallVector<mlir::ReassociationIndices> groups = reshape.getReassociationIndices();
    const mlir::RankedTensorType fine = Fine(reshape);
    // The operand's sharding first (the program's data flows forward), then the result's.
    for (auto [sharding, is_fine] :
         {std::pair{operands.empty() ? Sharding() : operands[0], !kExpand},
          std::pair{results.empty() ? Sharding() : results[0], kExpand}}) {
      if (!sharding) continue;
      llvm::ArrayRef<int64_t> grid = GridShape(op, sharding.getGridAttr());
      std::optional<ShardingArray> loops = is_fine ? FromFine(sharding, fine, groups, grid)
                                                   : FromCoarse(sharding, fine, groups, grid);
      if (loops) return ShardingOption(std::move(*loops), sharding.getGridAttr());
    }
    // A sharding that cannot carry through: the op runs on the unsplit tensor.
    for (const Sharding& sharding :
         {operands.empty() ? Sharding() : operands[0], results.empty() ? Sharding() : results[0]}) {
      if (sharding) return ShardingOption(ShardingArray(fine.getRank()), sharding.getGridAttr());
    }
    return ShardingOption::makeEmpty();
  }

  // Operand, then result.
  mlir::FailureOr<std::vector<Sharding>> getShardingAnnotations(
      mlir::Operation* op, const ShardingOption& option) const {
    auto reshape = mlir::cast<ReshapeOp>(op);
    if (option.empty || !option.grid ||
        static_cast<int64_t>(option.shardingArray.size()) > Fine(reshape).getRank()) {
      return mlir::failure();
    }
    ShardingArray loops = option.shardingArray;
    loops.resize(Fine(reshape).getRank());
    mlir::MLIRContext* context = op->getContext();
    Sharding fine = ShardingOfAxes(context, option.grid, loops);
    Sharding coarse =
        ShardingOfAxes(context, option.grid, CoarseOf(loops, reshape.getReassociationIndices()));
    if constexpr (kExpand) {
      return std::vector<Sharding>{coarse, fine};
    } else {
      return std::vector<Sharding>{fine, coarse};
    }
  }

  mlir::LogicalResult addShardingAnnotations(mlir::Operation* op, mlir::OpBuilder& builder,
                                             const ShardingOption& option) const {
    mlir::FailureOr<std::vector<Sharding>> shardings = getShardingAnnotations(op, option);
    if (mlir::failed(shardings)) return mlir::failure();
    mlir::shard::maybeInsertTargetShardingAnnotation((*shardings)[1], op->getResult(0), builder);
    mlir::shard::maybeInsertSourceShardingAnnotation((*shardings)[0], op->getOpOperand(0), builder);
    return mlir::success();
  }

  // The same regrouping of the local shapes. The shardings must be the pair getShardingAnnotations
  // makes (the partitioner resharded the operand to it); any other pair is refused, not guessed.
  mlir::LogicalResult partition(mlir::Operation* op, llvm::ArrayRef<mlir::Value> partitioned,
                                llvm::ArrayRef<Sharding> operands, llvm::ArrayRef<Sharding> results,
                                mlir::IRMapping& map, mlir::SymbolTableCollection& symbols,
                                mlir::OpBuilder& builder) const {
    auto reshape = mlir::cast<ReshapeOp>(op);
    if (partitioned.size() != 1 || operands.size() != 1 || results.size() != 1 || !operands[0] ||
        !results[0]) {
      return op->emitError("a reshape without its operand's and result's shardings");
    }
    const llvm::SmallVector<mlir::ReassociationIndices> groups = reshape.getReassociationIndices();
    llvm::ArrayRef<int64_t> grid_shape = GridShape(op, operands[0].getGridAttr());
    std::optional<ShardingArray> loops =
        kExpand ? FromCoarse(operands[0], Fine(reshape), groups, grid_shape)
                : FromFine(operands[0], Fine(reshape), groups, grid_shape);
    if (!loops) return op->emitError("a reshape whose operand is sharded across its groups");
    const Sharding expected = ShardingOfAxes(op->getContext(), operands[0].getGridAttr(),
                                             kExpand ? *loops : CoarseOf(*loops, groups));
    if (!expected.equalSplitAxes(results[0]) || !IsPlainSharding(results[0])) {
      return op->emitError("a reshape whose result sharding does not follow its operand's");
    }
    mlir::shard::GridOp grid = mlir::shard::getGrid(op, results[0].getGridAttr(), symbols);
    auto local = mlir::cast<mlir::RankedTensorType>(
        mlir::shard::shardType(reshape.getResultType(), grid, results[0]));
    auto created = ReshapeOp::create(builder, op->getLoc(), local, partitioned[0], groups);
    map.map(op->getResult(0), created.getResult());
    return mlir::success();
  }
};

}  // namespace

void RegisterReshapeShardings(mlir::DialectRegistry& registry) {
  registry.addExtension(+[](mlir::MLIRContext* context, mlir::tensor::TensorDialect*) {
    mlir::tensor::ExpandShapeOp::attachInterface<ReshapeShardingModel<mlir::tensor::ExpandShapeOp>>(
        *context);
    mlir::tensor::CollapseShapeOp::attachInterface<
        ReshapeShardingModel<mlir::tensor::CollapseShapeOp>>(*context);
  });
}

}  // namespace tessera::compiler
