// Steps c: annotate @main with its shardings (shard dialect) and partition it for SPMD.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "compiler/internal.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Shard/Transforms/Passes.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
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

// The partitioning pipeline, on @main.
void BuildPartitionPipeline(mlir::OpPassManager& pm) {
  mlir::OpPassManager& func = pm.nest<mlir::func::FuncOp>();
  // Elementwise arith / math on tensors -> linalg.generic: the partitioner only knows ops that
  // implement the sharding interface (linalg does, tensor-level arith does not).
  func.addPass(mlir::createConvertElementwiseToLinalgPass());
  // Give every tensor op a sharding, from the annotations on arguments and results.
  func.addPass(mlir::shard::createShardingPropagation());
  // Merge the duplicate shard.sharding ops propagation leaves.
  func.addPass(mlir::createCSEPass());
  // Rewrite to the per-device program: local shapes, collectives where shardings change.
  func.addPass(mlir::shard::createPartition());
  // Fold what partitioning leaves (identity scf.if, redundant casts and resharding chains).
  func.addPass(mlir::createCanonicalizerPass());
  // Merge duplicate constants and grid queries the canonicalizer exposes.
  func.addPass(mlir::createCSEPass());
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
  mlir::PassManager pm(module.getContext());
  BuildPartitionPipeline(pm);
  return RunPipeline(pm, module, absl::StatusCode::kUnimplemented, "partitioning");
}

}  // namespace tessera::compiler
