// sdy.manual_computation (shard_map) -> the compiler's manual computation: a cast in @main and its
// body in the nested module @tessera.manual_bodies (compiler/internal.h).

#include "compiler/stablehlo/manual_computation.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "compiler/internal.h"
#include "compiler/stablehlo/attribute_text.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

namespace tessera::compiler::stablehlo {
namespace {

// The Shardy shardings of attribute `name` (a sharding_per_value), one per value of `count`.
absl::StatusOr<std::vector<SdySharding>> ReadShardings(mlir::Operation* op, std::string_view name,
                                                       size_t count) {
  TESSERA_ASSIGN_OR_RETURN(std::string text, ImportState::OpaqueAttrText(op, name));
  absl::StatusOr<std::vector<SdySharding>> shardings = ParseSdyShardingPerValue(text);
  if (!shardings.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(ImportState::Where(op), ": ", std::string(name),
                                                   ": ", shardings.status().message()));
  }
  if (shardings->size() != count) {
    return absl::InvalidArgumentError(absl::StrCat(ImportState::Where(op), ": ", std::string(name),
                                                   " has ", shardings->size(), " shardings for ",
                                                   count, " values"));
  }
  return *std::move(shardings);
}

// The one mesh every sharding of the computation names.
absl::StatusOr<const SdyMesh*> ComputationMesh(mlir::Operation* op,
                                               const std::vector<SdySharding>& shardings,
                                               const Meshes& meshes) {
  if (shardings.empty()) {
    return absl::UnimplementedError(
        absl::StrCat(ImportState::Where(op), ": a shard_map without operands or results"));
  }
  const std::string where = ImportState::Where(op);
  TESSERA_ASSIGN_OR_RETURN(const SdyMesh* mesh, MeshOf(shardings[0], meshes, where));
  for (const SdySharding& sharding : shardings) {
    TESSERA_ASSIGN_OR_RETURN(const SdyMesh* other, MeshOf(sharding, meshes, where));
    const bool same =
        other == mesh ||
        (other->device_ids == mesh->device_ids && other->axes.size() == mesh->axes.size() &&
         absl::c_equal(other->axes, mesh->axes, [](const SdyMesh::Axis& a, const SdyMesh::Axis& b) {
           return a.name == b.name && a.size == b.size;
         }));
    if (!same) {
      return absl::UnimplementedError(
          absl::StrCat(where, ": its shardings name two meshes; one is supported"));
    }
  }
  return mesh;
}

// The nested module of `module` that holds the bodies, made with the grid of `shape` by the first
// computation. UNIMPLEMENTED when one over another grid made it.
absl::StatusOr<mlir::ModuleOp> BodiesModule(mlir::ModuleOp module, mlir::Operation* op,
                                            const std::vector<int64_t>& shape) {
  for (auto nested : module.getBody()->getOps<mlir::ModuleOp>()) {
    if (nested.getSymName() != llvm::StringRef(kManualBodiesModuleName)) continue;
    auto grid = nested.lookupSymbol<mlir::shard::GridOp>(kGridName);
    if (grid && grid.getShape() == llvm::ArrayRef<int64_t>(shape)) return nested;
    return absl::UnimplementedError(absl::StrCat(
        ImportState::Where(op), ": shard_maps over two meshes in one program (one is supported)"));
  }
  mlir::OpBuilder builder(module.getContext());
  builder.setInsertionPointToEnd(module.getBody());
  auto nested =
      mlir::ModuleOp::create(builder, module.getLoc(), llvm::StringRef(kManualBodiesModuleName));
  builder.setInsertionPointToEnd(nested.getBody());
  mlir::shard::GridOp::create(builder, module.getLoc(), kGridName, shape);
  return nested;
}

// The texts of `shardings` for `values`' types ("" replicated).
absl::StatusOr<std::vector<std::string>> ShardingTexts(mlir::Operation* op,
                                                       const std::vector<SdySharding>& shardings,
                                                       mlir::TypeRange types, const Meshes& meshes,
                                                       std::string_view what) {
  std::vector<std::string> texts;
  for (size_t i = 0; i < shardings.size(); ++i) {
    auto type = mlir::dyn_cast<mlir::RankedTensorType>(types[i]);
    const std::string name = absl::StrCat(ImportState::Where(op), ": ", std::string(what), " ", i);
    if (!type) return absl::InvalidArgumentError(absl::StrCat(name, " is not a ranked tensor"));
    TESSERA_ASSIGN_OR_RETURN(std::string text,
                             ShardingText(shardings[i], meshes, type.getRank(), name));
    texts.push_back(std::move(text));
  }
  return texts;
}

absl::Status ConvertBodyOps(ImportState& state, mlir::Block& block);

// An sdy.manual_computation inside a shard_map's body: one over the axes the outer one left to
// the partitioner (JAX's axis_index in a shard_map manual over some axes only makes one), which
// the outer one, run manual over every axis, runs on every device alike. Its body's ops join the
// outer body when it takes and makes values whole along its axes (shardings naming no axis);
// UNIMPLEMENTED otherwise.
absl::Status InlineNestedManualComputation(ImportState& state, mlir::Operation* op) {
  const std::string where = ImportState::Where(op);
  TESSERA_ASSIGN_OR_RETURN(std::vector<SdySharding> in,
                           ReadShardings(op, "in_shardings", op->getNumOperands()));
  TESSERA_ASSIGN_OR_RETURN(std::vector<SdySharding> out,
                           ReadShardings(op, "out_shardings", op->getNumResults()));
  for (const std::vector<SdySharding>* shardings : {&in, &out}) {
    for (const SdySharding& sharding : *shardings) {
      const bool splits = absl::c_any_of(
          sharding.dims, [](const std::vector<std::string>& axes) { return !axes.empty(); });
      if (splits || !sharding.unreduced.empty()) {
        return absl::UnimplementedError(
            absl::StrCat(where,
                         ": a shard_map inside another whose operands or results are split or "
                         "unreduced over its axes"));
      }
    }
  }
  if (op->getNumRegions() != 1 || !op->getRegion(0).hasOneBlock()) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": expected a body of one block"));
  }
  mlir::Block& body = op->getRegion(0).front();
  if (body.getNumArguments() != op->getNumOperands() || body.empty() ||
      body.back().getNumOperands() != op->getNumResults()) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, ": its body must take one argument per operand and return one value per result"));
  }
  for (unsigned i = 0; i < op->getNumOperands(); ++i) {
    TESSERA_ASSIGN_OR_RETURN(mlir::Value operand, state.Operand(op, i));
    state.Map(body.getArgument(i), operand);
  }
  TESSERA_RETURN_IF_ERROR(ConvertBodyOps(state, body));
  for (unsigned i = 0; i < op->getNumResults(); ++i) {
    TESSERA_ASSIGN_OR_RETURN(mlir::Value value, state.Operand(&body.back(), i));
    state.Map(op->getResult(i), value);
  }
  return absl::OkStatus();
}

// Converts the ops of a shard_map's body `block`, up to its terminator (sdy.return or
// func.return: unregistered, no terminator trait).
absl::Status ConvertBodyOps(ImportState& state, mlir::Block& block) {
  for (mlir::Operation& inner : block) {
    if (&inner == &block.back()) break;
    if (inner.getName().getStringRef() == "sdy.manual_computation") {
      TESSERA_RETURN_IF_ERROR(InlineNestedManualComputation(state, &inner));
      continue;
    }
    TESSERA_RETURN_IF_ERROR(ConvertOp(state, &inner));
  }
  return absl::OkStatus();
}

// The body, converted into a new function of `bodies` over the new types of its block's
// arguments; returns the function.
absl::StatusOr<mlir::func::FuncOp> ConvertBody(const ManualParts& parts, mlir::ModuleOp bodies) {
  const std::string where = ImportState::Where(parts.op);
  mlir::Block& old_body = *parts.body;
  const llvm::StringRef end =
      old_body.empty() ? llvm::StringRef() : old_body.back().getName().getStringRef();
  if (old_body.getNumArguments() != parts.operands.size() ||
      (end != "sdy.return" && end != "func.return") ||
      old_body.back().getNumOperands() != parts.results.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where,
                     ": its body must take one argument per operand and end in sdy.return (or "
                     "func.return) of one value per result"));
  }
  llvm::SmallVector<mlir::Type> inputs;
  for (mlir::BlockArgument arg : old_body.getArguments()) {
    auto type = mlir::dyn_cast<mlir::RankedTensorType>(arg.getType());
    if (!type || !type.hasStaticShape()) {
      return absl::UnimplementedError(absl::StrCat(where, ": body argument ", arg.getArgNumber(),
                                                   " is not a tensor of static shape"));
    }
    inputs.push_back(ImportState::NewType(type));
  }
  mlir::OpBuilder builder(parts.op->getContext());
  builder.setInsertionPointToEnd(bodies.getBody());
  const std::string name =
      absl::StrCat("manual_", std::distance(bodies.getOps<mlir::func::FuncOp>().begin(),
                                            bodies.getOps<mlir::func::FuncOp>().end()));
  auto func = mlir::func::FuncOp::create(builder, parts.op->getLoc(), name,
                                         builder.getFunctionType(inputs, {}));
  mlir::Block* body = func.addEntryBlock();
  builder.setInsertionPointToEnd(body);
  ImportState state(builder);
  state.SetManualGrid(parts.grid);
  for (unsigned i = 0; i < old_body.getNumArguments(); ++i) {
    state.Map(old_body.getArgument(i), body->getArgument(i));
  }
  TESSERA_RETURN_IF_ERROR(ConvertBodyOps(state, old_body));
  mlir::Operation* ret = &old_body.back();
  llvm::SmallVector<mlir::Value> returned;
  for (unsigned i = 0; i < ret->getNumOperands(); ++i) {
    TESSERA_ASSIGN_OR_RETURN(mlir::Value value, state.Operand(ret, i));
    returned.push_back(value);
  }
  mlir::func::ReturnOp::create(builder, ret->getLoc(), returned);
  func.setFunctionType(builder.getFunctionType(inputs, mlir::ValueRange(returned).getTypes()));
  return func;
}

// A shard_map manual over some axes only (the others, `automatic`, left to the partitioner inside
// its body) runs as one manual over every axis whose body sees its operands whole along the
// automatic axes: `sharding` loses those axes, so that the operands are gathered along them on
// the way in, every device of an automatic axis computes the same block, and a result is
// replicated along them (the consumers' shardings then slice it, with no communication). The body
// is the same function of the same blocks, its collectives over the manual axes unchanged.
// UNIMPLEMENTED: unreduced automatic axes (partial sums the body would not see).
absl::Status KeepManualAxes(SdySharding& sharding, const std::vector<std::string>& automatic,
                            const std::string& where) {
  auto is_automatic = [&](const std::string& axis) {
    return absl::c_linear_search(automatic, axis);
  };
  for (const std::string& axis : sharding.unreduced) {
    if (is_automatic(axis)) {
      return absl::UnimplementedError(absl::StrCat(
          where,
          ": a shard_map manual over some of the mesh's axes only, with a value unreduced "
          "over the automatic axis ",
          axis));
    }
  }
  for (std::vector<std::string>& axes : sharding.dims) std::erase_if(axes, is_automatic);
  std::erase_if(sharding.replicated, is_automatic);
  return absl::OkStatus();
}

mlir::ArrayAttr StringArray(mlir::Builder& builder, const std::vector<std::string>& texts) {
  std::vector<mlir::Attribute> attrs;
  for (const std::string& text : texts) attrs.push_back(builder.getStringAttr(text));
  return builder.getArrayAttr(attrs);
}

}  // namespace

absl::Status ConvertManualParts(ImportState& state, const ManualParts& parts,
                                mlir::ModuleOp module) {
  if (parts.in.size() != parts.operands.size() || parts.out.size() != parts.results.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(ImportState::Where(parts.op), ": one sharding per operand and result"));
  }
  int64_t devices = 1;
  for (int64_t size : parts.grid) {
    if (size < 1 || size > kMaxManualDevices || devices * size > kMaxManualDevices) {
      return absl::UnimplementedError(absl::StrCat(ImportState::Where(parts.op),
                                                   ": a shard_map over more than ",
                                                   kMaxManualDevices, " devices"));
    }
    devices *= size;
  }
  TESSERA_ASSIGN_OR_RETURN(mlir::ModuleOp bodies, BodiesModule(module, parts.op, parts.grid));
  TESSERA_ASSIGN_OR_RETURN(mlir::func::FuncOp body, ConvertBody(parts, bodies));
  llvm::SmallVector<mlir::Value> operands;
  for (mlir::Value old : parts.operands) {
    mlir::Value operand = state.Lookup(old);
    if (!operand) {
      return absl::InvalidArgumentError(absl::StrCat(
          ImportState::Where(parts.op), ": an operand is not defined before the shard_map"));
    }
    operands.push_back(operand);
  }
  llvm::SmallVector<mlir::Type> results;
  for (mlir::Value old : parts.results) {
    auto type = mlir::dyn_cast<mlir::RankedTensorType>(old.getType());
    if (!type || !type.hasStaticShape()) {
      return absl::UnimplementedError(
          absl::StrCat(ImportState::Where(parts.op), ": a result is not a tensor of static shape"));
    }
    results.push_back(ImportState::NewType(type));
  }
  mlir::OpBuilder& builder = state.builder();
  auto cast =
      mlir::UnrealizedConversionCastOp::create(builder, parts.op->getLoc(), results, operands);
  cast->setAttr(kManualBodyAttrName, builder.getStringAttr(body.getSymName()));
  cast->setAttr(kManualInAttrName, StringArray(builder, parts.in));
  cast->setAttr(kManualOutAttrName, StringArray(builder, parts.out));
  for (size_t i = 0; i < parts.results.size(); ++i) state.Map(parts.results[i], cast.getResult(i));
  return absl::OkStatus();
}

absl::Status ConvertManualComputation(ImportState& state, mlir::Operation* op, const Meshes& meshes,
                                      mlir::ModuleOp module) {
  const std::string where = ImportState::Where(op);
  TESSERA_ASSIGN_OR_RETURN(std::vector<SdySharding> in,
                           ReadShardings(op, "in_shardings", op->getNumOperands()));
  TESSERA_ASSIGN_OR_RETURN(std::vector<SdySharding> out,
                           ReadShardings(op, "out_shardings", op->getNumResults()));
  TESSERA_ASSIGN_OR_RETURN(std::string manual_text, ImportState::OpaqueAttrText(op, "manual_axes"));
  absl::StatusOr<std::vector<std::string>> manual_axes = ParseSdyManualAxes(manual_text);
  if (!manual_axes.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": manual_axes: ", manual_axes.status().message()));
  }
  std::vector<SdySharding> all = in;
  all.insert(all.end(), out.begin(), out.end());
  TESSERA_ASSIGN_OR_RETURN(const SdyMesh* mesh, ComputationMesh(op, all, meshes));
  ManualParts parts;
  parts.op = op;
  std::vector<std::string> automatic;
  for (const SdyMesh::Axis& axis : mesh->axes) {
    parts.grid.push_back(axis.size);
    if (axis.size > 1 && !absl::c_linear_search(*manual_axes, axis.name)) {
      automatic.push_back(axis.name);
    }
  }
  if (!automatic.empty()) {
    for (std::vector<SdySharding>* shardings : {&in, &out}) {
      for (SdySharding& sharding : *shardings) {
        TESSERA_RETURN_IF_ERROR(KeepManualAxes(sharding, automatic, where));
      }
    }
  }
  TESSERA_ASSIGN_OR_RETURN(parts.in,
                           ShardingTexts(op, in, op->getOperandTypes(), meshes, "operand"));
  TESSERA_ASSIGN_OR_RETURN(parts.out,
                           ShardingTexts(op, out, op->getResultTypes(), meshes, "result"));
  if (op->getNumRegions() != 1 || !op->getRegion(0).hasOneBlock()) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": expected a body of one block"));
  }
  parts.body = &op->getRegion(0).front();
  parts.operands.assign(op->getOperands().begin(), op->getOperands().end());
  parts.results.assign(op->getResults().begin(), op->getResults().end());
  return ConvertManualParts(state, parts, module);
}

}  // namespace tessera::compiler::stablehlo
