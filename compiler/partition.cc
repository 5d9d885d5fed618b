// Steps c: annotate @main with its shardings (shard dialect), propagate them, refuse the sharded
// reductions the partitioner cannot combine (CheckShardedReductions, reduction_check.cc) and
// partition it for SPMD; then collectives of constant fills become local fills
// (FoldCollectivesOfConstantFills).

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "compiler/internal.h"
#include "ifrt/status_macros.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Shard/Transforms/Passes.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

namespace tessera::compiler {
namespace {

constexpr char kGridName[] = "grid";

// `shard.sharding @grid split_axes = [...]` for `spec`: mesh axis i is grid axis i.
mlir::Value MakeSharding(mlir::OpBuilder& builder, mlir::Location loc, const sharding::Mesh& mesh,
                         const sharding::PartitionSpec& spec) {
  std::vector<mlir::shard::GridAxesAttr> split_axes;
  for (const sharding::PartitionSpec::Dim& dim : spec.dims()) {
    std::vector<mlir::shard::GridAxis> axes;
    for (const std::string& name : dim) {
      axes.push_back(static_cast<mlir::shard::GridAxis>(*mesh.FindAxis(name)));
    }
    split_axes.push_back(mlir::DenseI16ArrayAttr::get(builder.getContext(), axes));
  }
  while (!split_axes.empty() && split_axes.back().empty()) split_axes.pop_back();
  // The op's syntax needs at least one (possibly empty) entry.
  if (split_axes.empty())
    split_axes.push_back(mlir::DenseI16ArrayAttr::get(builder.getContext(), {}));
  auto grid = mlir::FlatSymbolRefAttr::get(builder.getContext(), kGridName);
  return mlir::shard::ShardingOp::create(builder, loc, grid, split_axes).getResult();
}

// Propagation on @main: every tensor op gets a sharding.
void BuildPropagationPipeline(mlir::OpPassManager& pm) {
  mlir::OpPassManager& func = pm.nest<mlir::func::FuncOp>();
  // Elementwise arith / math on tensors -> linalg.generic: the partitioner only knows ops that
  // implement the sharding interface (linalg does, tensor-level arith does not).
  func.addPass(mlir::createConvertElementwiseToLinalgPass());
  // Give every tensor op a sharding, from the annotations on arguments and results.
  func.addPass(mlir::shard::createShardingPropagation());
  // Merge the duplicate shard.sharding ops propagation leaves.
  func.addPass(mlir::createCSEPass());
}

// The rewrite to the per-device program, on @main (after CheckShardedReductions).
void BuildPartitionPipeline(mlir::OpPassManager& pm) {
  mlir::OpPassManager& func = pm.nest<mlir::func::FuncOp>();
  // Local shapes, collectives where shardings change.
  func.addPass(mlir::shard::createPartition());
}

// The clean-up after FoldCollectivesOfConstantFills, on @main.
void BuildCleanupPipeline(mlir::OpPassManager& pm) {
  mlir::OpPassManager& func = pm.nest<mlir::func::FuncOp>();
  // Fold what partitioning leaves (identity scf.if, redundant casts and resharding chains).
  func.addPass(mlir::createCanonicalizerPass());
  // Merge duplicate constants, fills and grid queries the canonicalizer exposes ...
  func.addPass(mlir::createCSEPass());
  // ... and fold the scf.if whose branches now yield the same fill.
  func.addPass(mlir::createCanonicalizerPass());
}

// A collective that only moves elements (all_gather, all_slice, all_to_all) of a fill with a
// constant holds that constant everywhere on every device: it becomes a local fill of its result
// shape, and the communication disappears. (The partitioner makes these when one zero fill
// initializes matmuls of different shardings, as in `relu(x @ w1 + b1) @ w2` with one %acc.)
void FoldCollectivesOfConstantFills(mlir::ModuleOp module) {
  std::vector<mlir::Operation*> collectives;
  module.walk([&](mlir::Operation* op) {
    if (mlir::isa<mlir::shard::AllGatherOp, mlir::shard::AllSliceOp, mlir::shard::AllToAllOp>(op)) {
      collectives.push_back(op);
    }
  });
  for (mlir::Operation* op : collectives) {
    auto fill = op->getOperand(0).getDefiningOp<mlir::linalg::FillOp>();
    auto type = mlir::dyn_cast<mlir::RankedTensorType>(op->getResult(0).getType());
    if (!fill || !fill.hasPureTensorSemantics() || !type || !type.hasStaticShape() ||
        !mlir::matchPattern(fill.getInputs()[0], mlir::m_Constant())) {
      continue;
    }
    mlir::OpBuilder builder(op);
    auto empty = mlir::tensor::EmptyOp::create(builder, op->getLoc(), type.getShape(),
                                               type.getElementType(), type.getEncoding());
    auto local =
        mlir::linalg::FillOp::create(builder, op->getLoc(), fill.getInputs()[0], empty.getResult());
    op->getResult(0).replaceAllUsesWith(local.getResult(0));
    op->erase();
  }
}

}  // namespace

void AnnotateShardings(mlir::ModuleOp module, mlir::func::FuncOp main,
                       const ProgramShardings& shardings) {
  mlir::OpBuilder builder(module.getContext());
  builder.setInsertionPointToStart(module.getBody());
  std::vector<int64_t> shape;
  for (const sharding::Mesh::Axis& axis : shardings.mesh.axes()) shape.push_back(axis.size);
  mlir::shard::GridOp::create(builder, module.getLoc(), kGridName, shape);

  mlir::Block& entry = main.getBody().front();
  builder.setInsertionPointToStart(&entry);
  for (mlir::BlockArgument arg : entry.getArguments()) {
    mlir::Location loc = arg.getLoc();
    mlir::Value sharding =
        MakeSharding(builder, loc, shardings.mesh, shardings.parameters[arg.getArgNumber()]);
    auto shard = mlir::shard::ShardOp::create(builder, loc, arg, sharding, false);
    arg.replaceAllUsesExcept(shard.getResult(), shard);
  }
  mlir::Operation* ret = entry.getTerminator();
  builder.setInsertionPoint(ret);
  for (mlir::OpOperand& operand : ret->getOpOperands()) {
    mlir::Value sharding = MakeSharding(builder, ret->getLoc(), shardings.mesh,
                                        shardings.results[operand.getOperandNumber()]);
    auto shard = mlir::shard::ShardOp::create(builder, ret->getLoc(), operand.get(), sharding,
                                              /*annotate_for_users=*/true);
    operand.set(shard.getResult());
  }
}

absl::Status PartitionProgram(mlir::ModuleOp module) {
  mlir::PassManager propagation(module.getContext());
  BuildPropagationPipeline(propagation);
  TESSERA_RETURN_IF_ERROR(
      RunPipeline(propagation, module, absl::StatusCode::kUnimplemented, "partitioning"));
  auto main = module.lookupSymbol<mlir::func::FuncOp>("main");
  if (main) TESSERA_RETURN_IF_ERROR(CheckShardedReductions(main));
  mlir::PassManager partition(module.getContext());
  BuildPartitionPipeline(partition);
  TESSERA_RETURN_IF_ERROR(
      RunPipeline(partition, module, absl::StatusCode::kUnimplemented, "partitioning"));
  FoldCollectivesOfConstantFills(module);
  mlir::PassManager cleanup(module.getContext());
  BuildCleanupPipeline(cleanup);
  return RunPipeline(cleanup, module, absl::StatusCode::kInternal, "cleaning up the partitioning");
}

}  // namespace tessera::compiler
