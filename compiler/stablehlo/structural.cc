// The StableHLO ops that move elements without computing on them: constant, iota,
// broadcast_in_dim, reshape, transpose (of a matmul's product: the product of the transposed
// operands); and the sharding hints that
// leave values unchanged (sdy.sharding_constraint, custom_call @Sharding). Each becomes a linalg
// op on tensors (linalg.fill, linalg.broadcast, linalg.transpose, linalg.reduce over size-1
// dimensions, or a linalg.generic reading its input through a permutation), whose maps are
// projected permutations, the only ones MLIR 22's partitioner takes; a reshape that splits or
// merges dimensions becomes tensor.collapse_shape / expand_shape, sharded by
// compiler/reshape_sharding.cc.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "compiler/stablehlo/import_state.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/AffineMap.h"

namespace tessera::compiler::stablehlo {
namespace {

using mlir::Value;

std::string Dims(llvm::ArrayRef<int64_t> dims) { return absl::StrJoin(dims, "x"); }

// A copy of `input` read through `map` (from the result's loops to the input's indices).
Value Gather(ImportState& state, mlir::Location loc, mlir::RankedTensorType result, Value input,
             mlir::AffineMap map) {
  return BuildElementwise(
      state, loc, result, {input}, {map},
      [](mlir::OpBuilder&, mlir::Location, mlir::ValueRange args) { return args[0]; });
}

absl::Status ConvertConstant(ImportState& state, mlir::Operation* op) {
  TESSERA_RETURN_IF_ERROR(ImportState::CheckArity(op, 0, 1));
  TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType type, state.ResultType(op, 0));
  auto value = mlir::dyn_cast_or_null<mlir::DenseElementsAttr>(ImportState::GetAttr(op, "value"));
  if (!value || value.getType() != type) {
    return absl::InvalidArgumentError(
        absl::StrCat(ImportState::Where(op), ": expected a dense `value` of the result's type"));
  }
  mlir::RankedTensorType new_type = ImportState::NewType(type);
  if (IsNarrowFloat(type.getElementType())) {  // held in f32: each value widened exactly
    value = mlir::cast<mlir::DenseFPElementsAttr>(value).mapValues(
        new_type.getElementType(), [](const llvm::APFloat& v) {
          llvm::APFloat wide = v;
          bool loses_info = false;
          wide.convert(llvm::APFloat::IEEEsingle(), llvm::APFloat::rmNearestTiesToEven,
                       &loses_info);
          return wide.bitcastToAPInt();
        });
  } else if (new_type.getElementType() != type.getElementType()) {  // unsigned -> signless
    value = mlir::cast<mlir::DenseIntOrFPElementsAttr>(value).bitcast(new_type.getElementType());
  }
  if (value.getType() != new_type) value = value.reshape(new_type);  // a tensor encoding dropped
  if (value.isSplat()) {
    mlir::TypedAttr scalar = mlir::cast<mlir::TypedAttr>(value.getSplatValue<mlir::Attribute>());
    state.Map(op->getResult(0), state.Fill(op->getLoc(), new_type, scalar));
    return absl::OkStatus();
  }
  // A constant of distinct elements, read element by element inside a linalg op: MLIR 22's
  // partitioner cannot split an arith.constant that is not a splat, and this op (it reads its
  // position) runs whole on every device (ReplicatePositionalOps, partition.cc).
  Value result =
      BuildElementwise(state, op->getLoc(), type, {}, {},
                       [&](mlir::OpBuilder& nb, mlir::Location loc, mlir::ValueRange) -> Value {
                         Value table = mlir::arith::ConstantOp::create(nb, loc, new_type, value);
                         llvm::SmallVector<Value> position;
                         for (int64_t d = 0; d < type.getRank(); ++d) {
                           position.push_back(mlir::linalg::IndexOp::create(nb, loc, d));
                         }
                         return mlir::tensor::ExtractOp::create(nb, loc, table, position);
                       });
  state.Map(op->getResult(0), result);
  return absl::OkStatus();
}

absl::Status ConvertIota(ImportState& state, mlir::Operation* op) {
  TESSERA_RETURN_IF_ERROR(ImportState::CheckArity(op, 0, 1));
  TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType type, state.ResultType(op, 0));
  auto dim = mlir::dyn_cast_or_null<mlir::IntegerAttr>(ImportState::GetAttr(op, "iota_dimension"));
  if (!dim || dim.getValue().getSignificantBits() > 64 || dim.getInt() < 0 ||
      dim.getInt() >= type.getRank()) {
    return absl::InvalidArgumentError(absl::StrCat(
        ImportState::Where(op), ": iota_dimension must name a dimension of the result"));
  }
  const int64_t d = dim.getInt();
  mlir::Type element = SignlessType(type.getElementType());
  const bool is_unsigned = type.getElementType().isUnsignedInteger();
  Value result = BuildElementwise(
      state, op->getLoc(), type, {}, {},
      [&](mlir::OpBuilder& b, mlir::Location loc, mlir::ValueRange) -> Value {
        Value index = mlir::linalg::IndexOp::create(b, loc, d);
        if (mlir::isa<mlir::FloatType>(element)) {
          Value i64 = mlir::arith::IndexCastOp::create(b, loc, b.getI64Type(), index);
          return mlir::arith::SIToFPOp::create(b, loc, element, i64);
        }
        if (is_unsigned) return mlir::arith::IndexCastUIOp::create(b, loc, element, index);
        return mlir::arith::IndexCastOp::create(b, loc, element, index);
      });
  state.Map(op->getResult(0), result);
  return absl::OkStatus();
}

// Dimensions of `shape` of size 1, ascending.
std::vector<int64_t> UnitDims(llvm::ArrayRef<int64_t> shape) {
  std::vector<int64_t> units;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) units.push_back(static_cast<int64_t>(d));
  }
  return units;
}

// `shape` without the dimensions `drop` (ascending).
llvm::SmallVector<int64_t> Without(llvm::ArrayRef<int64_t> shape, llvm::ArrayRef<int64_t> drop) {
  llvm::SmallVector<int64_t> kept;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (!llvm::is_contained(drop, static_cast<int64_t>(d))) kept.push_back(shape[d]);
  }
  return kept;
}

// `value` without its size-1 dimensions `drop` (ascending): the value they were inserted into when
// the importer inserted them, else a linalg.reduce over them that yields the one element (the
// partitioner takes it whatever the other dimensions' shardings; affine maps with constants it
// does not).
Value Squeeze(ImportState& state, mlir::Location loc, Value value, llvm::ArrayRef<int64_t> drop) {
  if (drop.empty()) return value;
  if (const ImportState::UnitOrigin* origin = state.UnitOriginOf(value);
      origin != nullptr && llvm::ArrayRef<int64_t>(origin->inserted) == drop) {
    return origin->source;
  }
  auto type = mlir::cast<mlir::RankedTensorType>(value.getType());
  auto squeezed =
      mlir::RankedTensorType::get(Without(type.getShape(), drop), type.getElementType());
  Value init = state.Empty(loc, squeezed);
  auto reduce = mlir::linalg::ReduceOp::create(
      state.builder(), loc, mlir::ValueRange{value}, mlir::ValueRange{init}, drop,
      [](mlir::OpBuilder& b, mlir::Location l, mlir::ValueRange args) {
        mlir::linalg::YieldOp::create(b, l, args[0]);
      });
  return reduce->getResult(0);
}

// `value` with size-1 dimensions inserted at `inserted` (ascending) to make `type`: a
// linalg.broadcast, remembered as a unit origin.
Value InsertUnits(ImportState& state, mlir::Location loc, Value value, mlir::RankedTensorType type,
                  llvm::ArrayRef<int64_t> inserted) {
  if (inserted.empty()) return value;
  Value init = state.Empty(loc, type);
  Value result =
      mlir::linalg::BroadcastOp::create(state.builder(), loc, value, init, inserted)->getResult(0);
  state.SetUnitOrigin(result, {value, std::vector<int64_t>(inserted.begin(), inserted.end())});
  return result;
}

absl::Status ConvertBroadcastInDim(ImportState& state, mlir::Operation* op) {
  TESSERA_RETURN_IF_ERROR(ImportState::CheckArity(op, 1, 1));
  TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType in, state.OperandType(op, 0));
  TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType out, state.ResultType(op, 0));
  TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> dims,
                           ImportState::I64ArrayAttr(op, "broadcast_dimensions"));
  if (static_cast<int64_t>(dims.size()) != in.getRank() ||
      in.getElementType() != out.getElementType()) {
    return absl::InvalidArgumentError(
        absl::StrCat(ImportState::Where(op),
                     ": broadcast_dimensions must list one result dimension per "
                     "operand dimension, and the element types must agree"));
  }
  std::vector<bool> used(out.getRank(), false);
  for (int64_t k = 0; k < in.getRank(); ++k) {
    const int64_t d = dims[k];
    if (d < 0 || d >= out.getRank() || used[d] ||
        (in.getDimSize(k) != 1 && in.getDimSize(k) != out.getDimSize(d))) {
      return absl::InvalidArgumentError(absl::StrCat(
          ImportState::Where(op), ": broadcast_dimensions [", absl::StrJoin(dims, ", "),
          "] do not map operand ", Dims(in.getShape()), " into result ", Dims(out.getShape())));
    }
    used[d] = true;
  }
  TESSERA_ASSIGN_OR_RETURN(Value input, state.Operand(op, 0));
  mlir::Location loc = op->getLoc();
  mlir::RankedTensorType new_out = ImportState::NewType(out);
  if (mlir::TypedAttr splat = state.SplatOf(input)) {
    state.Map(op->getResult(0), state.Fill(loc, new_out, splat));
    return absl::OkStatus();
  }
  // The operand's size-1 dimensions that stretch are squeezed away first; the rest maps
  // dimension to dimension.
  std::vector<int64_t> stretched, kept_dims;
  for (int64_t k = 0; k < in.getRank(); ++k) {
    if (in.getDimSize(k) != out.getDimSize(dims[k])) {
      stretched.push_back(k);
    } else {
      kept_dims.push_back(dims[k]);
    }
  }
  Value source = Squeeze(state, loc, input, stretched);
  const bool increasing = std::is_sorted(kept_dims.begin(), kept_dims.end());
  if (kept_dims.size() == static_cast<size_t>(out.getRank()) && increasing) {
    state.Map(op->getResult(0), source);
    return absl::OkStatus();
  }
  mlir::OpBuilder& b = state.builder();
  if (increasing) {
    llvm::SmallVector<int64_t> added;
    bool all_units = true;
    for (int64_t d = 0; d < out.getRank(); ++d) {
      if (llvm::is_contained(kept_dims, d)) continue;
      added.push_back(d);
      all_units &= out.getDimSize(d) == 1;
    }
    Value result = all_units ? InsertUnits(state, loc, source, new_out, added)
                             : mlir::linalg::BroadcastOp::create(b, loc, source,
                                                                 state.Empty(loc, new_out), added)
                                   ->getResult(0);
    state.Map(op->getResult(0), result);
    return absl::OkStatus();
  }
  llvm::SmallVector<mlir::AffineExpr> exprs;
  for (int64_t d : kept_dims) exprs.push_back(b.getAffineDimExpr(d));
  auto map = mlir::AffineMap::get(out.getRank(), 0, exprs, b.getContext());
  state.Map(op->getResult(0), Gather(state, loc, out, source, map));
  return absl::OkStatus();
}

// The consecutive groups of dimensions of `in` and of `out` (no dimension of size 1 in either,
// the same element count) whose sizes have equal products, in order: [6, 4] -> [4, 6] is one
// group of 24 on each side, [8, 4, 6] -> [8, 4, 2, 3] is {0}{1}{2} against {0}{1}{2, 3}.
struct Regrouping {
  llvm::SmallVector<mlir::ReassociationIndices> in;
  llvm::SmallVector<mlir::ReassociationIndices> out;
  llvm::SmallVector<int64_t> products;
};
Regrouping CommonGroups(llvm::ArrayRef<int64_t> in, llvm::ArrayRef<int64_t> out) {
  Regrouping groups;
  size_t i = 0;
  size_t j = 0;
  while (i < in.size() && j < out.size()) {
    mlir::ReassociationIndices in_group{static_cast<int64_t>(i)};
    mlir::ReassociationIndices out_group{static_cast<int64_t>(j)};
    int64_t p = in[i];
    int64_t q = out[j];
    // Both products stay below the element count (sizes > 1, equal totals).
    while (p != q) {
      if (p < q && i + 1 < in.size()) {
        p *= in[++i];
        in_group.push_back(static_cast<int64_t>(i));
      } else if (q < p && j + 1 < out.size()) {
        q *= out[++j];
        out_group.push_back(static_cast<int64_t>(j));
      } else {
        break;
      }
    }
    groups.in.push_back(in_group);
    groups.out.push_back(out_group);
    groups.products.push_back(p);
    ++i;
    ++j;
  }
  return groups;
}

bool AllSingletons(llvm::ArrayRef<mlir::ReassociationIndices> groups) {
  return llvm::all_of(groups, [](const mlir::ReassociationIndices& g) { return g.size() == 1; });
}

// `value` (no dimension of size 1) reshaped to `out` (none either, same element count): a
// tensor.collapse_shape of each group of its dimensions, then a tensor.expand_shape into the
// group of `out`'s (reshape_sharding.cc shards them through each group's first dimension).
Value Regroup(ImportState& state, mlir::Location loc, Value value, llvm::ArrayRef<int64_t> out) {
  auto type = mlir::cast<mlir::RankedTensorType>(value.getType());
  const Regrouping groups = CommonGroups(type.getShape(), out);
  if (!AllSingletons(groups.in)) {
    auto collapsed = mlir::RankedTensorType::get(groups.products, type.getElementType());
    value = mlir::tensor::CollapseShapeOp::create(state.builder(), loc, collapsed, value, groups.in)
                .getResult();
  }
  if (!AllSingletons(groups.out)) {
    auto expanded = mlir::RankedTensorType::get(out, type.getElementType());
    value = mlir::tensor::ExpandShapeOp::create(state.builder(), loc, expanded, value, groups.out)
                .getResult();
  }
  return value;
}

absl::Status ConvertReshape(ImportState& state, mlir::Operation* op) {
  TESSERA_RETURN_IF_ERROR(ImportState::CheckArity(op, 1, 1));
  TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType in, state.OperandType(op, 0));
  TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType out, state.ResultType(op, 0));
  if (in.getNumElements() != out.getNumElements() || in.getElementType() != out.getElementType()) {
    return absl::InvalidArgumentError(absl::StrCat(ImportState::Where(op), ": cannot reshape ",
                                                   Dims(in.getShape()), " into ",
                                                   Dims(out.getShape())));
  }
  TESSERA_ASSIGN_OR_RETURN(Value input, state.Operand(op, 0));
  mlir::Location loc = op->getLoc();
  mlir::RankedTensorType new_out = ImportState::NewType(out);
  if (mlir::TypedAttr splat = state.SplatOf(input)) {
    state.Map(op->getResult(0), state.Fill(loc, new_out, splat));
    return absl::OkStatus();
  }
  if (in.getShape() == out.getShape()) {
    state.Map(op->getResult(0), input);
    return absl::OkStatus();
  }
  if (in.getNumElements() == 0) {  // nothing to move
    state.Map(op->getResult(0), state.Empty(loc, new_out));
    return absl::OkStatus();
  }
  // Size-1 dimensions out, the rest regrouped, size-1 dimensions in.
  const std::vector<int64_t> in_units = UnitDims(in.getShape());
  const std::vector<int64_t> out_units = UnitDims(out.getShape());
  llvm::SmallVector<int64_t> in_core = Without(in.getShape(), in_units);
  llvm::SmallVector<int64_t> out_core = Without(out.getShape(), out_units);
  Value core = Squeeze(state, loc, input, in_units);
  if (in_core != out_core) core = Regroup(state, loc, core, out_core);
  state.Map(op->getResult(0), InsertUnits(state, loc, core, new_out, out_units));
  return absl::OkStatus();
}

// A transpose of a matmul's product (dot_general of one free dimension each), as a backward pass
// emits its weight gradients (dot_general(dy, x), then transpose), as the product of the
// transposed operands: (A @ B)^T = B^T @ A^T. The transposes then fall on the operands, which the
// CPU's matmuls read where they lie (matmul_operands_in_place.cc), and not on the product, after
// its all-reduce, on every device. Null where `input` is not such a product, only the transpose
// reads it, or its init is not a splat.
Value TransposedProduct(ImportState& state, mlir::Operation* op, Value input,
                        const std::vector<int64_t>& permutation) {
  auto matmul = input.getDefiningOp<mlir::linalg::MatmulOp>();
  if (permutation != std::vector<int64_t>{1, 0} || !op->getOperand(0).hasOneUse() || !matmul ||
      !input.use_empty() || matmul.hasUserDefinedMaps() || !matmul.hasPureTensorSemantics()) {
    return nullptr;
  }
  mlir::TypedAttr scalar = state.SplatOf(matmul.getDpsInits()[0]);
  if (!scalar) return nullptr;
  mlir::Location loc = op->getLoc();
  auto transposed = [&](Value value) -> Value {
    auto type = mlir::cast<mlir::RankedTensorType>(value.getType());
    Value init =
        state.Empty(loc, mlir::RankedTensorType::get({type.getDimSize(1), type.getDimSize(0)},
                                                     type.getElementType()));
    return mlir::linalg::TransposeOp::create(state.builder(), loc, value, init,
                                             llvm::ArrayRef<int64_t>{1, 0})
        ->getResult(0);
  };
  auto product_type = mlir::cast<mlir::RankedTensorType>(input.getType());
  Value init = state.Fill(
      loc,
      mlir::RankedTensorType::get({product_type.getDimSize(1), product_type.getDimSize(0)},
                                  product_type.getElementType()),
      scalar);
  Value b_transposed = transposed(matmul.getDpsInputs()[1]);
  Value a_transposed = transposed(matmul.getDpsInputs()[0]);
  Value product = mlir::linalg::MatmulOp::create(
                      state.builder(), loc, mlir::TypeRange{init.getType()},
                      mlir::ValueRange{b_transposed, a_transposed}, mlir::ValueRange{init})
                      ->getResult(0);
  state.Unmap(op->getOperand(0));  // the product, erased next: only this transpose read it
  matmul->erase();                 // its init, now unread, goes with the partitioner's clean-up
  return product;
}

absl::Status ConvertTranspose(ImportState& state, mlir::Operation* op) {
  TESSERA_RETURN_IF_ERROR(ImportState::CheckArity(op, 1, 1));
  TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType in, state.OperandType(op, 0));
  TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType out, state.ResultType(op, 0));
  TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> permutation,
                           ImportState::I64ArrayAttr(op, "permutation"));
  std::vector<bool> seen(in.getRank(), false);
  bool valid = static_cast<int64_t>(permutation.size()) == in.getRank() &&
               out.getRank() == in.getRank() && in.getElementType() == out.getElementType();
  for (size_t d = 0; valid && d < permutation.size(); ++d) {
    const int64_t p = permutation[d];
    valid = p >= 0 && p < in.getRank() && !seen[p] && out.getDimSize(d) == in.getDimSize(p);
    if (valid) seen[p] = true;
  }
  if (!valid) {
    return absl::InvalidArgumentError(
        absl::StrCat(ImportState::Where(op), ": permutation [", absl::StrJoin(permutation, ", "),
                     "] does not transpose ", Dims(in.getShape()), " into ", Dims(out.getShape())));
  }
  TESSERA_ASSIGN_OR_RETURN(Value input, state.Operand(op, 0));
  mlir::Location loc = op->getLoc();
  if (std::is_sorted(permutation.begin(), permutation.end())) {
    state.Map(op->getResult(0), input);
    return absl::OkStatus();
  }
  if (Value product = TransposedProduct(state, op, input, permutation)) {
    state.Map(op->getResult(0), product);
    return absl::OkStatus();
  }
  Value init = state.Empty(loc, ImportState::NewType(out));
  auto transpose =
      mlir::linalg::TransposeOp::create(state.builder(), loc, input, init, permutation);
  state.Map(op->getResult(0), transpose->getResult(0));
  return absl::OkStatus();
}

// A sharding hint the partitioner does not impose: the value itself. A GSPMD custom_call @Sharding,
// and an sdy.sharding_constraint inside a region (a loop's or a branch's, which run whole); one in
// @main's body is imposed (stablehlo_import.cc).
absl::Status ConvertShardingHint(ImportState& state, mlir::Operation* op) {
  TESSERA_RETURN_IF_ERROR(ImportState::CheckArity(op, 1, 1));
  TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType in, state.OperandType(op, 0));
  TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType out, state.ResultType(op, 0));
  if (in != out) {
    return absl::InvalidArgumentError(
        absl::StrCat(ImportState::Where(op), ": the result's type differs from the operand's"));
  }
  TESSERA_ASSIGN_OR_RETURN(Value input, state.Operand(op, 0));
  state.Map(op->getResult(0), input);
  return absl::OkStatus();
}

// stablehlo.optimization_barrier (jax.checkpoint's, around the values a rematerialized part
// reads; lax.optimization_barrier's): its operands themselves, any number of them. Tessera keeps
// no ordering across it: a recomputation the barrier would have kept apart may be merged with
// the first (the same values, kept in memory longer).
absl::Status ConvertOptimizationBarrier(ImportState& state, mlir::Operation* op) {
  if (op->getNumOperands() != op->getNumResults()) {
    return absl::InvalidArgumentError(absl::StrCat(ImportState::Where(op), ": ",
                                                   op->getNumOperands(), " operands but ",
                                                   op->getNumResults(), " results"));
  }
  for (unsigned i = 0; i < op->getNumOperands(); ++i) {
    TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType in, state.OperandType(op, i));
    TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType out, state.ResultType(op, i));
    if (in != out) {
      return absl::InvalidArgumentError(absl::StrCat(ImportState::Where(op), ": result ", i,
                                                     "'s type differs from operand ", i, "'s"));
    }
    TESSERA_ASSIGN_OR_RETURN(Value input, state.Operand(op, i));
    state.Map(op->getResult(i), input);
  }
  return absl::OkStatus();
}

absl::Status ConvertCustomCall(ImportState& state, mlir::Operation* op) {
  auto target =
      mlir::dyn_cast_or_null<mlir::StringAttr>(ImportState::GetAttr(op, "call_target_name"));
  if (target && target.getValue() == "Sharding") return ConvertShardingHint(state, op);
  if (target && (target.getValue() == "SPMDFullToShardShape" ||
                 target.getValue() == "SPMDShardToFullShape")) {
    return absl::UnimplementedError(
        absl::StrCat(ImportState::Where(op), ": custom_call @", target.getValue().str(),
                     " outside a GSPMD shard_map (a call whose operands each come from one "
                     "@SPMDFullToShardShape and whose results each go through @Sharding to one "
                     "@SPMDShardToFullShape)"));
  }
  return absl::UnimplementedError(
      absl::StrCat(ImportState::Where(op), ": custom_call @",
                   target ? target.getValue().str() : std::string("(no call_target_name)"),
                   " is not supported (only @Sharding is)"));
}

}  // namespace

void AddStructuralConversions(ConversionTable& table) {
  table["stablehlo.constant"] = ConvertConstant;
  table["stablehlo.iota"] = ConvertIota;
  table["stablehlo.broadcast_in_dim"] = ConvertBroadcastInDim;
  table["stablehlo.reshape"] = ConvertReshape;
  table["stablehlo.transpose"] = ConvertTranspose;
  table["stablehlo.optimization_barrier"] = ConvertOptimizationBarrier;
  table["sdy.sharding_constraint"] = ConvertShardingHint;
  table["stablehlo.custom_call"] = ConvertCustomCall;
}

}  // namespace tessera::compiler::stablehlo
