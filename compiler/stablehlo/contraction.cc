// The StableHLO ops that contract or reduce: dot_general and reduce.
//
// dot_general becomes linalg.matmul (batch_matmul with one batch dimension) whenever its operands
// can be put in that form by transposes and collapses of runs of dimensions: lhs [batch, M...,
// K...], rhs [batch, K..., N...] (x[b, s, d] @ w[d, e] is a matmul of b * s rows). This is the form
// both code generators have fast paths for (BLAS or the streaming kernel on the CPU, the tiled
// kernel on Vulkan). Other contractions (several batch, free or contracting dimensions) become one
// linalg.generic with reduction loops.
//
// reduce becomes linalg.reduce into its init broadcast to the result's shape, its body converted
// op by op on scalars.

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "compiler/stablehlo/attribute_text.h"
#include "compiler/stablehlo/import_state.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/AffineMap.h"

namespace tessera::compiler::stablehlo {
namespace {

using mlir::Value;

// Dimensions of a rank-`rank` operand other than `a` and `b`, in order.
std::vector<int64_t> FreeDims(int64_t rank, const std::vector<int64_t>& a,
                              const std::vector<int64_t>& b) {
  std::vector<int64_t> free;
  for (int64_t d = 0; d < rank; ++d) {
    if (std::find(a.begin(), a.end(), d) == a.end() &&
        std::find(b.begin(), b.end(), d) == b.end()) {
      free.push_back(d);
    }
  }
  return free;
}

bool DistinctInRange(const std::vector<int64_t>& dims, int64_t rank) {
  std::vector<bool> seen(rank, false);
  for (int64_t d : dims) {
    if (d < 0 || d >= rank || seen[d]) return false;
    seen[d] = true;
  }
  return true;
}

// A zero of the result's type to accumulate into.
Value ZeroInit(ImportState& state, mlir::Location loc, mlir::RankedTensorType result) {
  mlir::RankedTensorType type = ImportState::NewType(result);
  return state.Fill(
      loc, type, mlir::cast<mlir::TypedAttr>(state.builder().getZeroAttr(type.getElementType())));
}

absl::Status ConvertDotGeneral(ImportState& state, mlir::Operation* op) {
  TESSERA_RETURN_IF_ERROR(ImportState::CheckArity(op, 2, 1));
  TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType lhs, state.OperandType(op, 0));
  TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType rhs, state.OperandType(op, 1));
  TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType result, state.ResultType(op, 0));
  TESSERA_ASSIGN_OR_RETURN(std::string text,
                           ImportState::OpaqueAttrText(op, "dot_dimension_numbers"));
  absl::StatusOr<DotDimensions> parsed = ParseDotDimensions(text);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(ImportState::Where(op), ": ", parsed.status().message()));
  }
  const DotDimensions& dims = *parsed;
  const std::vector<int64_t> lhs_free =
      FreeDims(lhs.getRank(), dims.lhs_batch, dims.lhs_contracting);
  const std::vector<int64_t> rhs_free =
      FreeDims(rhs.getRank(), dims.rhs_batch, dims.rhs_contracting);
  // The result is [batch..., lhs free..., rhs free...].
  bool valid = DistinctInRange(dims.lhs_batch, lhs.getRank()) &&
               DistinctInRange(dims.rhs_batch, rhs.getRank()) &&
               DistinctInRange(dims.lhs_contracting, lhs.getRank()) &&
               DistinctInRange(dims.rhs_contracting, rhs.getRank()) &&
               dims.lhs_batch.size() == dims.rhs_batch.size() &&
               dims.lhs_contracting.size() == dims.rhs_contracting.size() &&
               static_cast<size_t>(lhs.getRank()) ==
                   dims.lhs_batch.size() + dims.lhs_contracting.size() + lhs_free.size() &&
               static_cast<size_t>(rhs.getRank()) ==
                   dims.rhs_batch.size() + dims.rhs_contracting.size() + rhs_free.size();
  llvm::SmallVector<int64_t> expected;
  for (size_t k = 0; valid && k < dims.lhs_batch.size(); ++k) {
    valid = lhs.getDimSize(dims.lhs_batch[k]) == rhs.getDimSize(dims.rhs_batch[k]);
    expected.push_back(lhs.getDimSize(dims.lhs_batch[k]));
  }
  for (size_t k = 0; valid && k < dims.lhs_contracting.size(); ++k) {
    valid = lhs.getDimSize(dims.lhs_contracting[k]) == rhs.getDimSize(dims.rhs_contracting[k]);
  }
  for (int64_t d : lhs_free) expected.push_back(lhs.getDimSize(d));
  for (int64_t d : rhs_free) expected.push_back(rhs.getDimSize(d));
  if (!valid || result.getShape() != llvm::ArrayRef<int64_t>(expected)) {
    return absl::InvalidArgumentError(absl::StrCat(
        ImportState::Where(op), ": dot_dimension_numbers ", text, " do not contract ",
        absl::StrJoin(lhs.getShape(), "x"), " with ", absl::StrJoin(rhs.getShape(), "x"), " into ",
        absl::StrJoin(result.getShape(), "x")));
  }
  if (!mlir::isa<mlir::FloatType>(result.getElementType()) &&
      !mlir::isa<mlir::IntegerType>(result.getElementType())) {
    return absl::UnimplementedError(absl::StrCat(ImportState::Where(op), ": element type"));
  }
  TESSERA_ASSIGN_OR_RETURN(Value a, state.Operand(op, 0));
  TESSERA_ASSIGN_OR_RETURN(Value b, state.Operand(op, 1));
  mlir::Location loc = op->getLoc();
  mlir::OpBuilder& builder = state.builder();
  mlir::RankedTensorType new_result = ImportState::NewType(result);
  const bool same_types = lhs.getElementType() == result.getElementType() &&
                          rhs.getElementType() == result.getElementType();

  // lhs [batch, M..., K...] x rhs [batch, K..., N...] after transposes, each run of dimensions
  // collapsed into one: a (batch) matmul, expanded back ([b, s, d] @ [d, e] is a matmul of
  // b * s rows; the reshapes shard through their first dimension, reshape_sharding.cc).
  if (dims.lhs_batch.size() <= 1 && !dims.lhs_contracting.empty() && !lhs_free.empty() &&
      !rhs_free.empty() && same_types) {
    const int64_t nb = static_cast<int64_t>(dims.lhs_batch.size());
    std::vector<int64_t> lhs_order = dims.lhs_batch;
    lhs_order.insert(lhs_order.end(), lhs_free.begin(), lhs_free.end());
    lhs_order.insert(lhs_order.end(), dims.lhs_contracting.begin(), dims.lhs_contracting.end());
    std::vector<int64_t> rhs_order = dims.rhs_batch;
    rhs_order.insert(rhs_order.end(), dims.rhs_contracting.begin(), dims.rhs_contracting.end());
    rhs_order.insert(rhs_order.end(), rhs_free.begin(), rhs_free.end());
    // Runs of consecutive dimensions: [batch?], [first, first + count) per run.
    auto runs = [nb](std::initializer_list<int64_t> counts) {
      llvm::SmallVector<mlir::ReassociationIndices> groups;
      int64_t next = 0;
      if (nb == 1) groups.push_back({next++});
      for (int64_t count : counts) {
        mlir::ReassociationIndices group;
        for (int64_t i = 0; i < count; ++i) group.push_back(next++);
        groups.push_back(group);
      }
      return groups;
    };
    const int64_t m = static_cast<int64_t>(lhs_free.size());
    const int64_t n = static_cast<int64_t>(rhs_free.size());
    const int64_t k = static_cast<int64_t>(dims.lhs_contracting.size());
    Value a2 = CollapseRuns(state, loc, PermuteDims(state, loc, a, lhs_order), runs({m, k}));
    Value b2 = CollapseRuns(state, loc, PermuteDims(state, loc, b, rhs_order), runs({k, n}));
    auto a2_type = mlir::cast<mlir::RankedTensorType>(a2.getType());
    auto b2_type = mlir::cast<mlir::RankedTensorType>(b2.getType());
    llvm::SmallVector<int64_t> product_shape(a2_type.getShape().drop_back());
    product_shape.push_back(b2_type.getShape().back());
    auto product_type = mlir::RankedTensorType::get(product_shape, new_result.getElementType());
    Value init =
        state.Fill(loc, product_type,
                   mlir::cast<mlir::TypedAttr>(builder.getZeroAttr(new_result.getElementType())));
    Value product =
        nb == 0
            ? mlir::linalg::MatmulOp::create(builder, loc, mlir::TypeRange{product_type},
                                             mlir::ValueRange{a2, b2}, mlir::ValueRange{init})
                  ->getResult(0)
            : mlir::linalg::BatchMatmulOp::create(builder, loc, mlir::TypeRange{product_type},
                                                  mlir::ValueRange{a2, b2}, mlir::ValueRange{init})
                  ->getResult(0);
    llvm::SmallVector<mlir::ReassociationIndices> out_groups = runs({m, n});
    if (!llvm::all_of(out_groups,
                      [](const mlir::ReassociationIndices& g) { return g.size() == 1; })) {
      product = mlir::tensor::ExpandShapeOp::create(builder, loc, new_result, product, out_groups)
                    .getResult();
    }
    state.Map(op->getResult(0), product);
    return absl::OkStatus();
  }

  // The general contraction: loops [batch..., lhs free..., rhs free..., contracting...].
  const unsigned batch = dims.lhs_batch.size();
  const unsigned loops = result.getRank() + dims.lhs_contracting.size();
  llvm::SmallVector<mlir::AffineExpr> lhs_exprs(lhs.getRank()), rhs_exprs(rhs.getRank()), out_exprs;
  for (unsigned k = 0; k < batch; ++k) {
    lhs_exprs[dims.lhs_batch[k]] = builder.getAffineDimExpr(k);
    rhs_exprs[dims.rhs_batch[k]] = builder.getAffineDimExpr(k);
  }
  for (size_t k = 0; k < lhs_free.size(); ++k) {
    lhs_exprs[lhs_free[k]] = builder.getAffineDimExpr(batch + k);
  }
  for (size_t k = 0; k < rhs_free.size(); ++k) {
    rhs_exprs[rhs_free[k]] = builder.getAffineDimExpr(batch + lhs_free.size() + k);
  }
  for (size_t k = 0; k < dims.lhs_contracting.size(); ++k) {
    lhs_exprs[dims.lhs_contracting[k]] = builder.getAffineDimExpr(result.getRank() + k);
    rhs_exprs[dims.rhs_contracting[k]] = builder.getAffineDimExpr(result.getRank() + k);
  }
  for (unsigned d = 0; d < result.getRank(); ++d) out_exprs.push_back(builder.getAffineDimExpr(d));
  mlir::MLIRContext* context = builder.getContext();
  llvm::SmallVector<mlir::AffineMap> maps = {mlir::AffineMap::get(loops, 0, lhs_exprs, context),
                                             mlir::AffineMap::get(loops, 0, rhs_exprs, context),
                                             mlir::AffineMap::get(loops, 0, out_exprs, context)};
  llvm::SmallVector<mlir::utils::IteratorType> iterators(result.getRank(),
                                                         mlir::utils::IteratorType::parallel);
  iterators.append(dims.lhs_contracting.size(), mlir::utils::IteratorType::reduction);
  mlir::Type element = new_result.getElementType();
  const mlir::Type lhs_old = lhs.getElementType(), rhs_old = rhs.getElementType(),
                   out_old = result.getElementType();
  const bool is_float = mlir::isa<mlir::FloatType>(element);
  // Each operand converted to the result's type (as XLA accumulates), then multiply-add.
  auto cast = [&](mlir::OpBuilder& nb, mlir::Location l, Value x, mlir::Type from) -> Value {
    if (from == out_old) return x;
    if (is_float && mlir::isa<mlir::FloatType>(from)) {  // in the types computed in
      const unsigned from_width = x.getType().getIntOrFloatBitWidth();
      const unsigned to_width = element.getIntOrFloatBitWidth();
      if (from_width < to_width) return mlir::arith::ExtFOp::create(nb, l, element, x);
      if (from_width > to_width) return mlir::arith::TruncFOp::create(nb, l, element, x);
      return x;
    }
    if (is_float) {  // i1 (pred) is unsigned: true is 1.0
      return from.isUnsignedInteger() || from.isInteger(1)
                 ? Value(mlir::arith::UIToFPOp::create(nb, l, element, x))
                 : Value(mlir::arith::SIToFPOp::create(nb, l, element, x));
    }
    if (from.getIntOrFloatBitWidth() == element.getIntOrFloatBitWidth()) return x;
    if (from.getIntOrFloatBitWidth() > element.getIntOrFloatBitWidth()) {
      return mlir::arith::TruncIOp::create(nb, l, element, x);
    }
    return from.isUnsignedInteger() || from.isInteger(1)
               ? Value(mlir::arith::ExtUIOp::create(nb, l, element, x))
               : Value(mlir::arith::ExtSIOp::create(nb, l, element, x));
  };
  if (mlir::isa<mlir::FloatType>(lhs_old) != is_float ||
      mlir::isa<mlir::FloatType>(rhs_old) != is_float) {
    if (!is_float) {
      return absl::UnimplementedError(
          absl::StrCat(ImportState::Where(op), ": a dot_general of floats into integers"));
    }
  }
  Value init = ZeroInit(state, loc, result);
  auto generic = mlir::linalg::GenericOp::create(
      builder, loc, mlir::TypeRange{new_result}, mlir::ValueRange{a, b}, mlir::ValueRange{init},
      maps, iterators, [&](mlir::OpBuilder& nb, mlir::Location l, mlir::ValueRange args) {
        Value x = cast(nb, l, args[0], lhs_old);
        Value y = cast(nb, l, args[1], rhs_old);
        Value sum = is_float ? Value(mlir::arith::AddFOp::create(
                                   nb, l, args[2], mlir::arith::MulFOp::create(nb, l, x, y)))
                             : Value(mlir::arith::AddIOp::create(
                                   nb, l, args[2], mlir::arith::MulIOp::create(nb, l, x, y)));
        mlir::linalg::YieldOp::create(nb, l, sum);
      });
  state.Map(op->getResult(0), generic.getResult(0));
  return absl::OkStatus();
}

// stablehlo.reduce of N operands together (N = 1: a sum, a max; N = 2: argmax / argmin, values
// and their indices) with their N scalar inits, into one linalg.reduce whose body is the
// StableHLO body's scalar ops.
absl::Status ConvertReduce(ImportState& state, mlir::Operation* op) {
  const unsigned n = op->getNumResults();
  if (n == 0 || op->getNumOperands() != 2 * n) {
    return absl::InvalidArgumentError(absl::StrCat(
        ImportState::Where(op), ": a reduce takes as many inits as inputs, one result each"));
  }
  TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> dims, ImportState::I64ArrayAttr(op, "dimensions"));
  TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType first, state.OperandType(op, 0));
  std::vector<int64_t> kept = FreeDims(first.getRank(), dims, {});
  llvm::SmallVector<int64_t> expected;
  for (int64_t d : kept) expected.push_back(first.getDimSize(d));
  llvm::SmallVector<mlir::Type> elements;  // the old element type of operand i
  bool valid = DistinctInRange(dims, first.getRank());
  for (unsigned i = 0; valid && i < n; ++i) {
    TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType in, state.OperandType(op, i));
    TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType init_type, state.OperandType(op, n + i));
    TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType out, state.ResultType(op, i));
    valid = in.getShape() == first.getShape() && init_type.getRank() == 0 &&
            init_type.getElementType() == in.getElementType() &&
            out.getElementType() == in.getElementType() &&
            out.getShape() == llvm::ArrayRef<int64_t>(expected);
    elements.push_back(in.getElementType());
  }
  if (!valid) {
    return absl::InvalidArgumentError(absl::StrCat(
        ImportState::Where(op), ": dimensions [", absl::StrJoin(dims, ", "), "] do not reduce ",
        absl::StrJoin(first.getShape(), "x"), " (and the inputs beside it) with scalar inits into ",
        absl::StrJoin(expected, "x"), " of the same element types"));
  }
  if (op->getNumRegions() != 1 || !op->getRegion(0).hasOneBlock() ||
      op->getRegion(0).front().getNumArguments() != 2 * n) {
    return absl::InvalidArgumentError(absl::StrCat(
        ImportState::Where(op), ": expected a body of one block with ", 2 * n, " arguments"));
  }
  mlir::Block& body = op->getRegion(0).front();
  for (unsigned i = 0; i < 2 * n; ++i) {
    if (body.getArgument(i).getType() != mlir::RankedTensorType::get({}, elements[i % n])) {
      return absl::InvalidArgumentError(absl::StrCat(ImportState::Where(op),
                                                     ": the reduce body's argument ", i,
                                                     " is not a scalar of its input's type"));
    }
  }
  // The body: scalar ops on rank-0 tensors, ending in stablehlo.return of N values.
  for (mlir::Operation& inner : body) {
    const std::string name = inner.getName().getStringRef().str();
    if (name == "stablehlo.return") {
      if (inner.getNumOperands() != n || &inner != &body.back()) {
        return absl::InvalidArgumentError(absl::StrCat(
            ImportState::Where(&inner), ": a reduce body returns ", n, " values, at its end"));
      }
      continue;
    }
    if (!IsScalarOp(name) || inner.getNumResults() != 1) {
      return absl::UnimplementedError(
          absl::StrCat(ImportState::Where(&inner), ": not supported in the body of a reduce"));
    }
    // Its operands and result: rank-0 tensors of supported element types.
    for (unsigned i = 0; i <= inner.getNumOperands(); ++i) {
      TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType type, i < inner.getNumOperands()
                                                                ? state.OperandType(&inner, i)
                                                                : state.ResultType(&inner, 0));
      if (type.getRank() != 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            ImportState::Where(&inner), ": a reduce body computes on rank-0 tensors only"));
      }
    }
    for (mlir::Value v : inner.getOperands()) {
      if (v.getParentBlock() != &body) {
        return absl::UnimplementedError(absl::StrCat(
            ImportState::Where(&inner), ": a reduce body that uses a value from outside"));
      }
    }
  }
  if (body.empty() || body.back().getName().getStringRef() != "stablehlo.return") {
    return absl::InvalidArgumentError(
        absl::StrCat(ImportState::Where(op), ": the reduce body does not end in stablehlo.return"));
  }
  mlir::Location loc = op->getLoc();
  llvm::SmallVector<Value> inputs, inits;
  for (unsigned i = 0; i < n; ++i) {
    TESSERA_ASSIGN_OR_RETURN(Value input, state.Operand(op, i));
    TESSERA_ASSIGN_OR_RETURN(Value init_value, state.Operand(op, n + i));
    TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType out, state.ResultType(op, i));
    inputs.push_back(input);
    if (mlir::TypedAttr splat = state.SplatOf(init_value)) {
      inits.push_back(state.Fill(loc, ImportState::NewType(out), splat));
    } else {
      inits.push_back(BuildElementwise(
          state, loc, out, {init_value}, {},
          [](mlir::OpBuilder&, mlir::Location, mlir::ValueRange args) { return args[0]; }));
    }
  }
  // StableHLO takes the dimensions in any order, linalg.reduce in increasing order.
  std::sort(dims.begin(), dims.end());
  absl::Status status;
  auto reduce = mlir::linalg::ReduceOp::create(
      state.builder(), loc, inputs, inits, dims,
      [&](mlir::OpBuilder& b, mlir::Location l, mlir::ValueRange args) {
        // StableHLO's body takes (accumulators..., elements...); linalg.reduce's gives
        // (elements..., accumulators...).
        llvm::DenseMap<mlir::Value, mlir::Value> scalars;
        for (unsigned i = 0; i < n; ++i) {
          scalars[body.getArgument(i)] = args[n + i];
          scalars[body.getArgument(n + i)] = args[i];
        }
        for (mlir::Operation& inner : body) {
          if (&inner == &body.back()) break;
          llvm::SmallVector<mlir::Value> operands;
          llvm::SmallVector<mlir::Type> types;
          for (mlir::Value v : inner.getOperands()) {
            operands.push_back(scalars.lookup(v));
            types.push_back(mlir::cast<mlir::ShapedType>(v.getType()).getElementType());
          }
          auto result_type = mlir::cast<mlir::ShapedType>(inner.getResult(0).getType());
          absl::StatusOr<mlir::Value> v =
              status.ok() && llvm::all_of(operands, [](mlir::Value x) { return bool(x); })
                  ? BuildScalarOp(b, l, &inner, operands, types, result_type.getElementType())
                  : absl::StatusOr<mlir::Value>(absl::InvalidArgumentError(absl::StrCat(
                        ImportState::Where(&inner), ": an operand the body does not define")));
          if (!v.ok()) {
            if (status.ok()) status = v.status();
            continue;
          }
          scalars[inner.getResult(0)] = *v;
        }
        llvm::SmallVector<mlir::Value> yielded;
        for (unsigned i = 0; i < n; ++i) {
          mlir::Value value = scalars.lookup(body.back().getOperand(i));
          if (!value || value.getType() != SignlessType(elements[i])) {
            if (status.ok()) {
              status = absl::InvalidArgumentError(
                  absl::StrCat(ImportState::Where(op), ": the reduce body returns value ", i,
                               " of another type than its input"));
            }
            value = args[n + i];
          }
          yielded.push_back(value);
        }
        mlir::linalg::YieldOp::create(b, l, yielded);
      });
  if (!status.ok()) {
    reduce->erase();
    return status;
  }
  for (unsigned i = 0; i < n; ++i) state.Map(op->getResult(i), reduce->getResult(i));
  return absl::OkStatus();
}

}  // namespace

void AddContractionConversions(ConversionTable& table) {
  table["stablehlo.dot_general"] = ConvertDotGeneral;
  table["stablehlo.dot"] = [](ImportState& state, mlir::Operation* op) -> absl::Status {
    return absl::UnimplementedError(
        absl::StrCat(ImportState::Where(op), ": stablehlo.dot (use dot_general)"));
  };
  table["stablehlo.reduce"] = ConvertReduce;
}

}  // namespace tessera::compiler::stablehlo
