// stablehlo.while (fori_loop, while_loop, scan) -> scf.while on tensors, stablehlo.case
// (cond, switch) -> a chain of scf.if; their regions converted op by op like @main's body
// (ConvertOp). The condition and the branch index are rank-0 tensors, read with tensor.extract.
// The partitioner runs these ops whole on every device (control_flow_sharding.cc and
// ReplicatePositionalOps in partition.cc): their operands, results and the tensors their regions
// use are replicated. The CPU code generator compiles them; the Vulkan one refuses them.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "compiler/internal.h"
#include "compiler/stablehlo/import_state.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace tessera::compiler::stablehlo {
namespace {

using mlir::Value;

// Converts the ops of `block` (of a while or case region) into the builder's current block,
// `args` standing for its arguments; returns what its stablehlo.return returns.
absl::StatusOr<llvm::SmallVector<Value>> ConvertRegionBlock(ImportState& state, mlir::Block& block,
                                                            mlir::ValueRange args) {
  if (block.getNumArguments() != args.size()) {
    return absl::InvalidArgumentError(absl::StrCat("a region takes ", block.getNumArguments(),
                                                   " arguments where ", args.size(), " come"));
  }
  for (unsigned i = 0; i < args.size(); ++i) state.Map(block.getArgument(i), args[i]);
  if (block.empty() || block.back().getName().getStringRef() != "stablehlo.return") {
    return absl::InvalidArgumentError("a region that does not end in stablehlo.return");
  }
  // Every op but the return (the block's ops are unregistered: MLIR cannot tell a terminator).
  for (mlir::Operation& op : block) {
    if (&op == &block.back()) break;
    TESSERA_RETURN_IF_ERROR(ConvertOp(state, &op));
  }
  llvm::SmallVector<Value> returned;
  for (unsigned i = 0; i < block.back().getNumOperands(); ++i) {
    TESSERA_ASSIGN_OR_RETURN(Value v, state.Operand(&block.back(), i));
    returned.push_back(v);
  }
  return returned;
}

// The region's single block, or INVALID_ARGUMENT naming `op`.
absl::StatusOr<mlir::Block*> SingleBlock(mlir::Operation* op, unsigned region) {
  if (region >= op->getNumRegions() || !op->getRegion(region).hasOneBlock()) {
    return absl::InvalidArgumentError(
        absl::StrCat(ImportState::Where(op), ": region ", region, " must have one block"));
  }
  return &op->getRegion(region).front();
}

// The scalar of a rank-0 tensor `value` of `type` (old type), or INVALID_ARGUMENT.
absl::StatusOr<Value> Scalar(ImportState& state, mlir::Operation* op, Value value,
                             mlir::RankedTensorType type, const char* what) {
  if (type.getRank() != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(ImportState::Where(op), ": ", what, " must be a rank-0 tensor"));
  }
  return mlir::tensor::ExtractOp::create(state.builder(), op->getLoc(), value, mlir::ValueRange{})
      .getResult();
}

absl::Status CheckTypes(mlir::Operation* op, mlir::TypeRange got, mlir::TypeRange want,
                        const char* what) {
  if (got.size() != want.size()) {
    return absl::InvalidArgumentError(absl::StrCat(ImportState::Where(op), ": ", what, " ",
                                                   got.size(), " values where ", want.size(),
                                                   " are expected"));
  }
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] != want[i]) {
      return absl::InvalidArgumentError(
          absl::StrCat(ImportState::Where(op), ": ", what, " value ", i, " of another type"));
    }
  }
  return absl::OkStatus();
}

absl::Status ConvertWhile(ImportState& state, mlir::Operation* op) {
  const unsigned n = op->getNumOperands();
  if (op->getNumResults() != n || op->getNumRegions() != 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        ImportState::Where(op), ": a while has as many results as operands, and two regions"));
  }
  llvm::SmallVector<Value> inits;
  llvm::SmallVector<mlir::Type> types;
  for (unsigned i = 0; i < n; ++i) {
    TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType type, state.OperandType(op, i));
    TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType result, state.ResultType(op, i));
    if (type != result) {
      return absl::InvalidArgumentError(absl::StrCat(ImportState::Where(op), ": while result ", i,
                                                     " has another type than its operand"));
    }
    TESSERA_ASSIGN_OR_RETURN(Value init, state.Operand(op, i));
    inits.push_back(init);
    types.push_back(ImportState::NewType(type));
  }
  TESSERA_ASSIGN_OR_RETURN(mlir::Block * cond, SingleBlock(op, 0));
  TESSERA_ASSIGN_OR_RETURN(mlir::Block * body, SingleBlock(op, 1));
  mlir::OpBuilder& b = state.builder();
  mlir::Location loc = op->getLoc();
  auto loop = mlir::scf::WhileOp::create(b, loc, types, inits);
  absl::Status status = [&]() -> absl::Status {
    mlir::OpBuilder::InsertionGuard guard(b);
    const llvm::SmallVector<mlir::Location> locs(n, loc);
    // before: the condition, then scf.condition passing the carried values on.
    mlir::Block* before = b.createBlock(&loop.getBefore(), {}, types, locs);
    TESSERA_ASSIGN_OR_RETURN(llvm::SmallVector<Value> go,
                             ConvertRegionBlock(state, *cond, before->getArguments()));
    mlir::Operation* ret = &cond->back();
    const std::string one_i1 =
        absl::StrCat(ImportState::Where(ret), ": a while condition returns one i1");
    if (go.size() != 1) return absl::InvalidArgumentError(one_i1);
    TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType go_type, state.OperandType(ret, 0));
    if (!go_type.getElementType().isInteger(1)) return absl::InvalidArgumentError(one_i1);
    TESSERA_ASSIGN_OR_RETURN(Value scalar, Scalar(state, ret, go[0], go_type, "the condition"));
    mlir::scf::ConditionOp::create(b, loc, scalar, before->getArguments());
    // after: the body, then scf.yield of the next values.
    mlir::Block* after = b.createBlock(&loop.getAfter(), {}, types, locs);
    TESSERA_ASSIGN_OR_RETURN(llvm::SmallVector<Value> next,
                             ConvertRegionBlock(state, *body, after->getArguments()));
    TESSERA_RETURN_IF_ERROR(
        CheckTypes(op, mlir::ValueRange(next).getTypes(), types, "the body returns"));
    mlir::scf::YieldOp::create(b, loc, next);
    return absl::OkStatus();
  }();
  if (!status.ok()) {
    loop->erase();
    return status;
  }
  for (unsigned i = 0; i < n; ++i) state.Map(op->getResult(i), loop.getResult(i));
  return absl::OkStatus();
}

// stablehlo.case: branch `index` (an i32 scalar; out of range: the last branch). Built as
// if index == 0 {branch 0} else if index == 1 {branch 1} ... else {branch N-1}.
absl::Status ConvertCase(ImportState& state, mlir::Operation* op) {
  const unsigned branches = op->getNumRegions();
  if (op->getNumOperands() != 1 || branches == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(ImportState::Where(op), ": a case takes an index and one or more branches"));
  }
  TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType index_type, state.OperandType(op, 0));
  if (!index_type.getElementType().isSignlessInteger(32)) {
    return absl::InvalidArgumentError(
        absl::StrCat(ImportState::Where(op), ": a case index is an i32"));
  }
  llvm::SmallVector<mlir::Type> types;
  for (unsigned i = 0; i < op->getNumResults(); ++i) {
    TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType type, state.ResultType(op, i));
    types.push_back(ImportState::NewType(type));
  }
  TESSERA_ASSIGN_OR_RETURN(Value index, state.Operand(op, 0));
  if (index_type.getRank() != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(ImportState::Where(op), ": a case index is a rank-0 tensor"));
  }
  mlir::OpBuilder& b = state.builder();
  mlir::Location loc = op->getLoc();
  // Branch `k` and the ones after it, at the builder's insertion point.
  std::function<absl::StatusOr<llvm::SmallVector<Value>>(unsigned)> build =
      [&](unsigned k) -> absl::StatusOr<llvm::SmallVector<Value>> {
    TESSERA_ASSIGN_OR_RETURN(mlir::Block * block, SingleBlock(op, k));
    if (k + 1 == branches) {
      TESSERA_ASSIGN_OR_RETURN(llvm::SmallVector<Value> returned,
                               ConvertRegionBlock(state, *block, {}));
      TESSERA_RETURN_IF_ERROR(
          CheckTypes(op, mlir::ValueRange(returned).getTypes(), types, "a branch returns"));
      return returned;
    }
    // index == k on the rank-0 tensor (a linalg op, which the partitioner takes at @main's top),
    // then its scalar.
    Value is_k_tensor = BuildElementwise(
        state, loc, mlir::RankedTensorType::get({}, b.getI1Type()), {index}, {},
        [&](mlir::OpBuilder& nb, mlir::Location l, mlir::ValueRange args) -> Value {
          Value k_value = mlir::arith::ConstantIntOp::create(nb, l, nb.getI32Type(), k);
          return mlir::arith::CmpIOp::create(nb, l, mlir::arith::CmpIPredicate::eq, args[0],
                                             k_value);
        });
    Value is_k = mlir::tensor::ExtractOp::create(b, loc, is_k_tensor, mlir::ValueRange{});
    auto branch = mlir::scf::IfOp::create(b, loc, types, is_k, /*withElseRegion=*/true);
    branch->setAttr(kProgramBranchAttrName, b.getUnitAttr());
    mlir::OpBuilder::InsertionGuard guard(b);
    for (auto [region, next] :
         {std::pair{&branch.getThenRegion(), false}, std::pair{&branch.getElseRegion(), true}}) {
      b.setInsertionPointToEnd(&region->front());
      absl::StatusOr<llvm::SmallVector<Value>> returned =
          next ? build(k + 1) : ConvertRegionBlock(state, *block, {});
      if (!returned.ok()) return returned.status();
      TESSERA_RETURN_IF_ERROR(
          CheckTypes(op, mlir::ValueRange(*returned).getTypes(), types, "a branch returns"));
      mlir::scf::YieldOp::create(b, loc, *returned);
    }
    return llvm::SmallVector<Value>(branch.getResults());
  };
  TESSERA_ASSIGN_OR_RETURN(llvm::SmallVector<Value> results, build(0));
  for (unsigned i = 0; i < op->getNumResults(); ++i) state.Map(op->getResult(i), results[i]);
  return absl::OkStatus();
}

}  // namespace

void AddControlFlowConversions(ConversionTable& table) {
  table["stablehlo.while"] = ConvertWhile;
  table["stablehlo.case"] = ConvertCase;
}

}  // namespace tessera::compiler::stablehlo
