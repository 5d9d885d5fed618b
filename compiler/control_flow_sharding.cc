// How scf.while, scf.if and a top-level tensor.extract shard: they run whole on every device.
// MLIR 22 gives them no sharding, and its propagation refuses an op without one. Every tensor
// operand and result is replicated (ReplicatePositionalOps in partition.cc also replicates the
// tensors their regions use), and the partitioner clones them unchanged: the ops inside their
// regions are never partitioned, so they compute on whole tensors. A rank-0 tensor (a loop
// counter, a condition, a branch index) is the same on every device anyway.

#include <vector>

#include "compiler/internal.h"
#include "compiler/sharding_models.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Shard/Interfaces/ShardingInterface.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinAttributes.h"

namespace tessera::compiler {
namespace {

using mlir::shard::Sharding;
using mlir::shard::ShardingOption;

template <typename Op>
struct WholeOpShardingModel
    : public mlir::shard::ShardingInterface::ExternalModel<WholeOpShardingModel<Op>, Op> {
  // No loops the partitioner may split.
  llvm::SmallVector<mlir::utils::IteratorType> getLoopIteratorTypes(mlir::Operation*) const {
    return {};
  }
  llvm::SmallVector<mlir::AffineMap> getIndexingMaps(mlir::Operation*) const { return {}; }

  mlir::FailureOr<ShardingOption> getShardingOption(mlir::Operation*,
                                                    llvm::ArrayRef<Sharding> operands,
                                                    llvm::ArrayRef<Sharding> results) const {
    for (llvm::ArrayRef<Sharding> known : {operands, results}) {
      for (const Sharding& sharding : known) {
        if (sharding) return ShardingOption({}, sharding.getGridAttr());
      }
    }
    return ShardingOption::makeEmpty();
  }

  // Operands, then results: replicated tensors; nothing for the others.
  mlir::FailureOr<std::vector<Sharding>> getShardingAnnotations(
      mlir::Operation* op, const ShardingOption& option) const {
    if (option.empty || !option.grid) return mlir::failure();
    const Sharding whole =
        Sharding::get(option.grid, {mlir::DenseI16ArrayAttr::get(op->getContext(), {})});
    std::vector<Sharding> shardings;
    for (mlir::Value operand : op->getOperands()) {
      shardings.push_back(IsShardable(operand) ? whole : Sharding());
    }
    for (mlir::Value result : op->getResults()) {
      shardings.push_back(IsShardable(result) ? whole : Sharding());
    }
    return shardings;
  }

  mlir::LogicalResult addShardingAnnotations(mlir::Operation* op, mlir::OpBuilder& builder,
                                             const ShardingOption& option) const {
    mlir::FailureOr<std::vector<Sharding>> shardings = getShardingAnnotations(op, option);
    if (mlir::failed(shardings)) return mlir::failure();
    AnnotateOperandsAndResults(op, builder, *shardings);
    return mlir::success();
  }
  // partition: the interface's default, partitionFullyReplicatedOperation (a clone).
};

}  // namespace

void RegisterControlFlowShardings(mlir::DialectRegistry& registry) {
  registry.addExtension(+[](mlir::MLIRContext* context, mlir::scf::SCFDialect*) {
    mlir::scf::WhileOp::attachInterface<WholeOpShardingModel<mlir::scf::WhileOp>>(*context);
    mlir::scf::IfOp::attachInterface<WholeOpShardingModel<mlir::scf::IfOp>>(*context);
  });
  registry.addExtension(+[](mlir::MLIRContext* context, mlir::tensor::TensorDialect*) {
    mlir::tensor::ExtractOp::attachInterface<WholeOpShardingModel<mlir::tensor::ExtractOp>>(
        *context);
  });
}

}  // namespace tessera::compiler
