// Manual computations (internal.h: a builtin.unrealized_conversion_cast standing for a body that
// runs on each device's shards): their checks against their bodies, the sharding model through
// which the partitioner reshards their operands and leaves them whole, and the inlining of the
// bodies into the partitioned @main.

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "compiler/internal.h"
#include "compiler/sharding_models.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Shard/Interfaces/ShardingInterface.h"
#include "mlir/Dialect/Shard/Interfaces/ShardingInterfaceImpl.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Pass/PassManager.h"

namespace tessera::compiler {
namespace {

using mlir::shard::Sharding;
using mlir::shard::ShardingOption;

bool IsManual(mlir::Operation* op) { return op->hasAttr(kManualBodyAttrName); }

mlir::FlatSymbolRefAttr Grid(mlir::MLIRContext* context) {
  return mlir::FlatSymbolRefAttr::get(context, kGridName);
}

// Operands, then results: the fixed shardings (none for a value of rank 0).
mlir::FailureOr<std::vector<Sharding>> FixedShardings(mlir::Operation* op) {
  auto split = op->getAttrOfType<mlir::ArrayAttr>(kManualSplitAttrName);
  if (!split || split.size() != op->getNumOperands() + op->getNumResults()) return mlir::failure();
  std::vector<mlir::Value> values(op->getOperands().begin(), op->getOperands().end());
  values.insert(values.end(), op->getResults().begin(), op->getResults().end());
  std::vector<Sharding> shardings;
  for (size_t i = 0; i < values.size(); ++i) {
    auto dims = mlir::dyn_cast<mlir::ArrayAttr>(split[i]);
    if (!dims) return mlir::failure();
    if (!IsShardable(values[i])) {
      shardings.push_back(Sharding());
      continue;
    }
    mlir::shard::ShardingArray axes;
    for (mlir::Attribute dim : dims) {
      auto grid_axes = mlir::dyn_cast<mlir::DenseI16ArrayAttr>(dim);
      if (!grid_axes) return mlir::failure();
      axes.emplace_back(grid_axes.asArrayRef().begin(), grid_axes.asArrayRef().end());
    }
    shardings.push_back(ShardingOfAxes(op->getContext(), Grid(op->getContext()), axes));
  }
  return shardings;
}

// A manual computation's cast: its operands and results keep the shardings it was given; the
// partitioner reshards the operands to them and makes the same cast of the local values.
struct ManualComputationModel
    : public mlir::shard::ShardingInterface::ExternalModel<ManualComputationModel,
                                                           mlir::UnrealizedConversionCastOp> {
  llvm::SmallVector<mlir::utils::IteratorType> getLoopIteratorTypes(mlir::Operation*) const {
    return {};
  }
  llvm::SmallVector<mlir::AffineMap> getIndexingMaps(mlir::Operation*) const { return {}; }

  mlir::FailureOr<ShardingOption> getShardingOption(mlir::Operation* op, llvm::ArrayRef<Sharding>,
                                                    llvm::ArrayRef<Sharding>) const {
    if (!IsManual(op)) return ShardingOption::makeEmpty();
    return ShardingOption({}, Grid(op->getContext()));
  }

  mlir::FailureOr<std::vector<Sharding>> getShardingAnnotations(mlir::Operation* op,
                                                                const ShardingOption&) const {
    return FixedShardings(op);
  }

  mlir::LogicalResult addShardingAnnotations(mlir::Operation* op, mlir::OpBuilder& builder,
                                             const ShardingOption&) const {
    if (!IsManual(op)) return mlir::success();
    mlir::FailureOr<std::vector<Sharding>> shardings = FixedShardings(op);
    if (mlir::failed(shardings)) return op->emitError("a manual computation without its shardings");
    AnnotateOperandsAndResults(op, builder, *shardings);
    return mlir::success();
  }

  // The same cast on the local operands, to the local result types. The operands must arrive with
  // the computation's own shardings (its annotations make the partitioner reshard them so).
  mlir::LogicalResult partition(mlir::Operation* op, llvm::ArrayRef<mlir::Value> partitioned,
                                llvm::ArrayRef<Sharding> operands, llvm::ArrayRef<Sharding> results,
                                mlir::IRMapping& map, mlir::SymbolTableCollection& symbols,
                                mlir::OpBuilder& builder) const {
    if (!IsManual(op)) {
      mlir::shard::partitionFullyReplicatedOperation(*op, partitioned, operands, results, map,
                                                     symbols, builder);
      return mlir::success();
    }
    mlir::FailureOr<std::vector<Sharding>> fixed = FixedShardings(op);
    if (mlir::failed(fixed) || operands.size() != op->getNumOperands() ||
        results.size() != op->getNumResults()) {
      return op->emitError("a manual computation without its shardings");
    }
    const unsigned num_operands = op->getNumOperands();
    for (unsigned i = 0; i < num_operands; ++i) {
      if ((*fixed)[i] && !(*fixed)[i].equalSplitAxes(operands[i])) {
        return op->emitError("operand ") << i << " of a manual computation arrives resharded";
      }
    }
    mlir::shard::GridOp grid = mlir::shard::getGrid(op, Grid(op->getContext()), symbols);
    if (!grid) return op->emitError("a manual computation without the program's grid");
    llvm::SmallVector<mlir::Type> local;
    for (mlir::OpResult result : op->getResults()) {
      const Sharding& sharding = (*fixed)[num_operands + result.getResultNumber()];
      local.push_back(sharding ? mlir::shard::shardType(result.getType(), grid, sharding)
                               : result.getType());
    }
    mlir::Operation* cast =
        mlir::UnrealizedConversionCastOp::create(builder, op->getLoc(), local, partitioned);
    cast->setAttrs(op->getAttrDictionary());
    map.map(op->getResults(), cast->getResults());
    return mlir::success();
  }
};

// The local shape of `global` under `spec` over `mesh` (ResolveShardings checked the division).
llvm::SmallVector<int64_t> LocalShape(mlir::RankedTensorType global, const sharding::Mesh& mesh,
                                      const sharding::PartitionSpec& spec) {
  llvm::SmallVector<int64_t> shape(global.getShape().begin(), global.getShape().end());
  for (int d = 0; d < spec.size() && d < global.getRank(); ++d) {
    for (const std::string& axis : spec.dims()[d]) {
      shape[d] /= mesh.axes()[*mesh.FindAxis(axis)].size;
    }
  }
  return shape;
}

// Whether each of `values`' types is `global`'s local type under its spec.
absl::Status CheckLocalTypes(mlir::TypeRange globals, mlir::TypeRange locals,
                             const std::vector<sharding::PartitionSpec>& specs,
                             const sharding::Mesh& mesh, const std::string& what) {
  if (globals.size() != locals.size() || globals.size() != specs.size()) {
    return absl::InvalidArgumentError(absl::StrCat(what, "s: the computation has ", globals.size(),
                                                   ", its body ", locals.size()));
  }
  for (size_t i = 0; i < globals.size(); ++i) {
    auto global = mlir::dyn_cast<mlir::RankedTensorType>(globals[i]);
    auto local = mlir::dyn_cast<mlir::RankedTensorType>(locals[i]);
    if (!global || !local || global.getElementType() != local.getElementType() ||
        llvm::ArrayRef<int64_t>(LocalShape(global, mesh, specs[i])) != local.getShape()) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " ", i, " has type ", PrintType(globals[i]), ", whose shard under ",
                       specs[i].ToString(), " is not the body's ", PrintType(locals[i])));
    }
  }
  return absl::OkStatus();
}

}  // namespace

void RegisterManualComputationShardings(mlir::MLIRContext& context) {
  mlir::UnrealizedConversionCastOp::attachInterface<ManualComputationModel>(context);
}

absl::Status CheckManualComputations(mlir::ModuleOp module, mlir::func::FuncOp main,
                                     const ProgramShardings& shardings) {
  absl::Status status;
  main.walk([&](mlir::Operation* op) {
    const bool cast = mlir::isa<mlir::UnrealizedConversionCastOp>(op);
    const bool manual_cast = cast && IsManual(op) && op->getParentOp() == main;
    if ((cast && !manual_cast) || op->getName().getDialectNamespace() == "shard") {
      status = absl::InvalidArgumentError(absl::StrCat(
          "'", op->getName().getStringRef().str(), "' at ", FormatLocation(op->getLoc()),
          ": in @main only as a manual computation's cast (with ", std::string(kManualBodyAttrName),
          ") of @main's own body; shard ops only in its body"));
      return mlir::WalkResult::interrupt();
    }
    return mlir::WalkResult::advance();
  });
  TESSERA_RETURN_IF_ERROR(status);
  if (shardings.manuals.empty()) return absl::OkStatus();
  mlir::ModuleOp bodies;
  for (auto nested : module.getBody()->getOps<mlir::ModuleOp>()) {
    if (nested.getSymName() == llvm::StringRef(kManualBodiesModuleName)) bodies = nested;
  }
  std::vector<int64_t> grid_shape;
  for (const sharding::Mesh::Axis& axis : shardings.mesh.axes()) grid_shape.push_back(axis.size);
  if (bodies) {
    mlir::WalkResult nested =
        bodies.walk([](mlir::UnrealizedConversionCastOp) { return mlir::WalkResult::interrupt(); });
    if (nested.wasInterrupted()) {
      return absl::InvalidArgumentError(
          "a manual computation inside another's body (module @tessera.manual_bodies)");
    }
    auto grid = bodies.lookupSymbol<mlir::shard::GridOp>(kGridName);
    if (!grid || grid.getShape() != llvm::ArrayRef<int64_t>(grid_shape)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "module @", std::string(kManualBodiesModuleName), " needs shard.grid @",
          std::string(kGridName), " of the mesh's shape, ", shardings.mesh.ToString()));
    }
  }
  for (const ProgramShardings::Manual& manual : shardings.manuals) {
    const std::string where =
        absl::StrCat("the manual computation at ", FormatLocation(manual.op->getLoc()));
    auto name = manual.op->getAttrOfType<mlir::StringAttr>(kManualBodyAttrName);
    auto body = bodies && name ? bodies.lookupSymbol<mlir::func::FuncOp>(name.getValue())
                               : mlir::func::FuncOp();
    if (!body || body.isExternal()) {
      return absl::InvalidArgumentError(absl::StrCat(where,
                                                     ": its body is not a func.func of module @",
                                                     std::string(kManualBodiesModuleName)));
    }
    mlir::FunctionType type = body.getFunctionType();
    TESSERA_RETURN_IF_ERROR(CheckLocalTypes(manual.op->getOperandTypes(), type.getInputs(),
                                            manual.in, shardings.mesh,
                                            absl::StrCat(where, ": operand")));
    TESSERA_RETURN_IF_ERROR(CheckLocalTypes(manual.op->getResultTypes(), type.getResults(),
                                            manual.out, shardings.mesh,
                                            absl::StrCat(where, ": result")));
  }
  return absl::OkStatus();
}

absl::Status InlineManualComputations(mlir::ModuleOp module, mlir::func::FuncOp main) {
  mlir::ModuleOp bodies;
  for (auto nested : module.getBody()->getOps<mlir::ModuleOp>()) {
    if (nested.getSymName() == llvm::StringRef(kManualBodiesModuleName)) bodies = nested;
  }
  if (!bodies) return absl::OkStatus();
  // The bodies' elementwise arith on tensors as linalg, as @main's was before partitioning.
  mlir::PassManager pm(module.getContext(), mlir::ModuleOp::getOperationName());
  pm.nest<mlir::func::FuncOp>().addPass(mlir::createConvertElementwiseToLinalgPass());
  TESSERA_RETURN_IF_ERROR(
      RunPipeline(pm, bodies, absl::StatusCode::kInternal, "preparing the manual computations"));
  std::vector<mlir::Operation*> casts;
  main.walk([&](mlir::UnrealizedConversionCastOp op) {
    if (IsManual(op)) casts.push_back(op);
  });
  for (mlir::Operation* cast : casts) {
    auto name = cast->getAttrOfType<mlir::StringAttr>(kManualBodyAttrName);
    auto body = bodies.lookupSymbol<mlir::func::FuncOp>(name.getValue());
    mlir::Block& block = body.getBody().front();
    if (!llvm::equal(block.getArgumentTypes(), cast->getOperandTypes()) ||
        !llvm::equal(body.getFunctionType().getResults(), cast->getResultTypes())) {
      return absl::InternalError(
          absl::StrCat("the manual computation at ", FormatLocation(cast->getLoc()),
                       " was partitioned into other shapes than its body's"));
    }
    mlir::IRMapping mapping;
    mapping.map(block.getArguments(), cast->getOperands());
    mlir::OpBuilder builder(cast);
    for (mlir::Operation& op : block.without_terminator()) builder.clone(op, mapping);
    for (auto [result, returned] :
         llvm::zip_equal(cast->getResults(), block.getTerminator()->getOperands())) {
      result.replaceAllUsesWith(mapping.lookupOrDefault(returned));
    }
    cast->erase();
  }
  bodies.erase();
  return absl::OkStatus();
}

}  // namespace tessera::compiler
