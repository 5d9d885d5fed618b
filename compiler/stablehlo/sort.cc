// stablehlo.sort (jnp.sort, argsort, lax.sort of several operands, top_k's lowering) as a bitonic
// sorting network over the sorted dimension, built of ops the rest of the compiler partitions and
// lowers for every device (reshapes, slices, concatenations, elementwise linalg.generic):
//
//   P = the dimension's length rounded up to a power of two (the operands padded);
//   each element carries its index along the dimension (an i32 operand added);
//   for k = 2, 4, ..., P; for j = k/2, ..., 1 (one linalg.generic each):
//     the dimension viewed as [P / 2j, 2, j]: lo = [:, 0, :], hi = [:, 1, :] (i and i + j);
//     at lo's position q the pair sorts ascending when q & (k/2) is 0, else descending;
//     swap = before(hi, lo) xor descending; lo, hi = swap ? (hi, lo) : (lo, hi)
//   the first `length` of each operand along the dimension are the results.
//
// before(a, b) is the comparator (the op's body, its scalar ops inlined) made a strict total
// order: a before b when comparator(a, b), or neither is before the other and a's index is
// smaller; a padding element (index >= length) after every element, paddings by index. So the
// network computes the one stable sort: the results are those of a stable sort whatever
// `is_stable` says (StableHLO allows it), and equal to XLA's for the comparators JAX emits.
//
// The network does log2(P) (log2(P) + 1) / 2 passes over the operands; P is at most kMaxSortLength.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "compiler/stablehlo/import_state.h"
#include "llvm/ADT/DenseMap.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"

namespace tessera::compiler::stablehlo {
namespace {

using mlir::Value;

// The longest sorted dimension (after rounding up to a power of two): 136 passes.
constexpr int64_t kMaxSortLength = int64_t{1} << 16;

// The new scalar constant of a rank-0 stablehlo.constant in a comparator: signless, bf16 and f16
// widened to f32 (as the importer holds them).
absl::StatusOr<Value> ScalarConstant(mlir::OpBuilder& b, mlir::Location loc, mlir::Operation* op) {
  auto value = mlir::dyn_cast_or_null<mlir::DenseElementsAttr>(ImportState::GetAttr(op, "value"));
  if (!value || !value.isSplat() || value.getType().getRank() != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(ImportState::Where(op), ": expected a rank-0 dense `value`"));
  }
  mlir::Type element = value.getElementType();
  mlir::Type target = SignlessType(element);
  if (auto f = mlir::dyn_cast<mlir::FloatAttr>(value.getSplatValue<mlir::Attribute>())) {
    llvm::APFloat wide = f.getValue();
    if (target != element) {
      bool loses_info = false;
      wide.convert(llvm::APFloat::IEEEsingle(), llvm::APFloat::rmNearestTiesToEven, &loses_info);
    }
    return Value(mlir::arith::ConstantOp::create(b, loc, b.getFloatAttr(target, wide)));
  }
  auto i = mlir::cast<mlir::IntegerAttr>(value.getSplatValue<mlir::Attribute>());
  return Value(mlir::arith::ConstantOp::create(b, loc, b.getIntegerAttr(target, i.getValue())));
}

// Whether `v` is a rank-0 stablehlo.constant (one the comparator may use from outside its block:
// the importer's inlining of JAX's private functions hoists them).
bool IsScalarConstant(Value v) {
  mlir::Operation* def = v.getDefiningOp();
  auto type = mlir::dyn_cast<mlir::RankedTensorType>(v.getType());
  return def != nullptr && def->getName().getStringRef() == "stablehlo.constant" && type &&
         type.getRank() == 0;
}

// Checks the comparator: one block of 2N rank-0 arguments (operand i's element type at 2i and
// 2i + 1), rank-0 constants and scalar ops of the block's own values (and of rank-0 constants
// from outside), ending in
// stablehlo.return of one i1.
absl::Status CheckComparator(mlir::Operation* op, llvm::ArrayRef<mlir::Type> elements) {
  const std::string where = ImportState::Where(op);
  if (op->getNumRegions() != 1 || !op->getRegion(0).hasOneBlock()) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": expected a comparator of one block"));
  }
  mlir::Block& body = op->getRegion(0).front();
  if (body.getNumArguments() != 2 * elements.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": the comparator takes two arguments per operand"));
  }
  for (unsigned i = 0; i < body.getNumArguments(); ++i) {
    if (body.getArgument(i).getType() != mlir::RankedTensorType::get({}, elements[i / 2])) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": comparator argument ", i,
                                                     " is not a scalar of its operand's type"));
    }
  }
  if (body.empty() || body.back().getName().getStringRef() != "stablehlo.return" ||
      body.back().getNumOperands() != 1 ||
      body.back().getOperand(0).getType() !=
          mlir::RankedTensorType::get({}, mlir::IntegerType::get(op->getContext(), 1))) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": the comparator must end in stablehlo.return of one i1"));
  }
  for (mlir::Operation& inner : body) {
    if (&inner == &body.back()) break;
    const llvm::StringRef name = inner.getName().getStringRef();
    if ((name != "stablehlo.constant" && !IsScalarOp(name)) || inner.getNumResults() != 1) {
      return absl::UnimplementedError(
          absl::StrCat(ImportState::Where(&inner), ": not supported in a sort's comparator"));
    }
    TESSERA_RETURN_IF_ERROR(CheckScalarBodyOp(&inner, body, "a comparator", IsScalarConstant));
  }
  return absl::OkStatus();
}

// The comparator (checked) of `op` on `a` and `b` (one scalar per operand, in arith's types).
absl::StatusOr<Value> InlineComparator(mlir::OpBuilder& b, mlir::Location loc, mlir::Operation* op,
                                       mlir::ValueRange lhs, mlir::ValueRange rhs) {
  mlir::Block& body = op->getRegion(0).front();
  llvm::DenseMap<Value, Value> scalars;
  for (unsigned i = 0; i < lhs.size(); ++i) {
    scalars[body.getArgument(2 * i)] = lhs[i];
    scalars[body.getArgument(2 * i + 1)] = rhs[i];
  }
  auto element = [](Value v) { return mlir::cast<mlir::ShapedType>(v.getType()).getElementType(); };
  for (mlir::Operation& inner : body) {
    if (&inner == &body.back()) break;
    if (inner.getName().getStringRef() == "stablehlo.constant") {
      TESSERA_ASSIGN_OR_RETURN(scalars[inner.getResult(0)], ScalarConstant(b, loc, &inner));
      continue;
    }
    llvm::SmallVector<Value> operands;
    llvm::SmallVector<mlir::Type> types;
    for (Value v : inner.getOperands()) {
      if (!scalars.count(v) && IsScalarConstant(v)) {
        TESSERA_ASSIGN_OR_RETURN(scalars[v], ScalarConstant(b, loc, v.getDefiningOp()));
      }
      operands.push_back(scalars.lookup(v));
      types.push_back(element(v));
      if (!operands.back()) {
        return absl::InvalidArgumentError(absl::StrCat(
            ImportState::Where(&inner), ": an operand the comparator does not define"));
      }
    }
    TESSERA_ASSIGN_OR_RETURN(
        scalars[inner.getResult(0)],
        BuildScalarOp(b, loc, &inner, operands, types, element(inner.getResult(0))));
  }
  return scalars.lookup(body.back().getOperand(0));
}

// `value` with dimension `dim` (of size `parts * middle * inner`) viewed as [parts, middle,
// inner], or back (`collapse`).
Value ExpandDim(mlir::OpBuilder& b, mlir::Location loc, Value value, int64_t dim,
                llvm::ArrayRef<int64_t> sizes) {
  auto type = mlir::cast<mlir::RankedTensorType>(value.getType());
  llvm::SmallVector<int64_t> shape;
  llvm::SmallVector<mlir::ReassociationIndices> groups;
  for (int64_t d = 0; d < type.getRank(); ++d) {
    mlir::ReassociationIndices group;
    if (d == dim) {
      for (int64_t size : sizes) {
        group.push_back(static_cast<int64_t>(shape.size()));
        shape.push_back(size);
      }
    } else {
      group.push_back(static_cast<int64_t>(shape.size()));
      shape.push_back(type.getDimSize(d));
    }
    groups.push_back(group);
  }
  auto expanded = mlir::RankedTensorType::get(shape, type.getElementType());
  return mlir::tensor::ExpandShapeOp::create(b, loc, expanded, value, groups).getResult();
}

Value CollapseDims(mlir::OpBuilder& b, mlir::Location loc, Value value, int64_t dim,
                   int64_t count) {
  auto type = mlir::cast<mlir::RankedTensorType>(value.getType());
  llvm::SmallVector<int64_t> shape;
  llvm::SmallVector<mlir::ReassociationIndices> groups;
  for (int64_t d = 0; d < type.getRank(); ++d) {
    if (d > dim && d < dim + count) {
      groups.back().push_back(d);
      shape.back() *= type.getDimSize(d);
      continue;
    }
    groups.push_back({d});
    shape.push_back(type.getDimSize(d));
  }
  auto collapsed = mlir::RankedTensorType::get(shape, type.getElementType());
  return mlir::tensor::CollapseShapeOp::create(b, loc, collapsed, value, groups).getResult();
}

// The part of `value` from `offset` along `dim`, `size` long.
Value SliceDim(mlir::OpBuilder& b, mlir::Location loc, Value value, int64_t dim, int64_t offset,
               int64_t size) {
  auto type = mlir::cast<mlir::RankedTensorType>(value.getType());
  llvm::SmallVector<int64_t> offsets(type.getRank(), 0), sizes(type.getShape()),
      strides(type.getRank(), 1);
  offsets[dim] = offset;
  sizes[dim] = size;
  auto sliced = mlir::RankedTensorType::get(sizes, type.getElementType());
  return mlir::tensor::ExtractSliceOp::create(
             b, loc, sliced, value, mlir::ValueRange{}, mlir::ValueRange{}, mlir::ValueRange{},
             b.getDenseI64ArrayAttr(offsets), b.getDenseI64ArrayAttr(sizes),
             b.getDenseI64ArrayAttr(strides))
      .getResult();
}

struct Network {
  mlir::Operation* op;
  int64_t dim;     // the sorted dimension
  int64_t length;  // its length before padding
  unsigned n;      // the op's operands (the index is value n)
};

// One compare-exchange pass (k, j) over `values` (the operands, then the index; each of the
// padded length along the dimension): the dimension viewed as [P / 2j, 2, j], its two sides
// sliced out (lo, hi), one linalg.generic over the pairs, and the sides joined again. (A generic
// reading each element's partner through an affine map of 1 - side would save the slices, but
// the partitioner takes projected permutations only.)
absl::StatusOr<std::vector<Value>> Pass(ImportState& state, const Network& net,
                                        const std::vector<Value>& values, int64_t padded, int64_t k,
                                        int64_t j) {
  mlir::OpBuilder& b = state.builder();
  const mlir::Location loc = net.op->getLoc();
  const int64_t view[] = {padded / (2 * j), 2, j};
  std::vector<Value> lo, hi;
  for (Value v : values) {
    Value expanded = ExpandDim(b, loc, v, net.dim, view);
    lo.push_back(CollapseDims(b, loc, SliceDim(b, loc, expanded, net.dim + 1, 0, 1), net.dim, 3));
    hi.push_back(CollapseDims(b, loc, SliceDim(b, loc, expanded, net.dim + 1, 1, 1), net.dim, 3));
  }
  auto half = mlir::cast<mlir::RankedTensorType>(lo[0].getType());
  const unsigned rank = half.getRank();
  llvm::SmallVector<Value> inputs(lo.begin(), lo.end());
  inputs.append(hi.begin(), hi.end());
  llvm::SmallVector<Value> inits;
  llvm::SmallVector<mlir::Type> result_types;
  for (int side = 0; side < 2; ++side) {
    for (Value v : lo) {
      result_types.push_back(v.getType());
      inits.push_back(state.Empty(loc, mlir::cast<mlir::RankedTensorType>(v.getType())));
    }
  }
  llvm::SmallVector<mlir::AffineMap> maps(2 * inputs.size(), b.getMultiDimIdentityMap(rank));
  llvm::SmallVector<mlir::utils::IteratorType> iterators(rank, mlir::utils::IteratorType::parallel);
  absl::Status status;
  const unsigned m = net.n + 1;
  auto generic = mlir::linalg::GenericOp::create(
      b, loc, result_types, inputs, inits, maps, iterators,
      [&](mlir::OpBuilder& nb, mlir::Location l, mlir::ValueRange args) {
        mlir::ValueRange a = args.slice(0, m), h = args.slice(m, m);
        using P = mlir::arith::CmpIPredicate;
        auto i32 = [&](int64_t v) -> Value {
          return mlir::arith::ConstantOp::create(nb, l,
                                                 nb.getI32IntegerAttr(static_cast<int32_t>(v)));
        };
        auto boolean = [&](bool v) -> Value {
          return mlir::arith::ConstantOp::create(nb, l, nb.getBoolAttr(v));
        };
        // before(x, y) as described at the top: x, y one scalar per operand, then the index.
        auto before = [&](mlir::ValueRange x, mlir::ValueRange y) -> Value {
          absl::StatusOr<Value> xy = InlineComparator(nb, l, net.op, x.drop_back(), y.drop_back());
          absl::StatusOr<Value> yx = InlineComparator(nb, l, net.op, y.drop_back(), x.drop_back());
          if (!xy.ok() || !yx.ok()) {
            if (status.ok()) status = xy.ok() ? yx.status() : xy.status();
            return boolean(false);
          }
          Value ix = x.back(), iy = y.back();
          Value index_first = mlir::arith::CmpIOp::create(nb, l, P::slt, ix, iy);
          Value x_valid = mlir::arith::CmpIOp::create(nb, l, P::slt, ix, i32(net.length));
          Value y_valid = mlir::arith::CmpIOp::create(nb, l, P::slt, iy, i32(net.length));
          Value not_yx = mlir::arith::XOrIOp::create(nb, l, *yx, boolean(true));
          Value tie_first = mlir::arith::AndIOp::create(nb, l, not_yx, index_first);
          Value both_first = mlir::arith::OrIOp::create(nb, l, *xy, tie_first);
          Value y_padding = mlir::arith::XOrIOp::create(nb, l, y_valid, boolean(true));
          Value padding_first = mlir::arith::AndIOp::create(
              nb, l, mlir::arith::OrIOp::create(nb, l, x_valid, index_first), y_padding);
          Value both_valid = mlir::arith::AndIOp::create(nb, l, x_valid, y_valid);
          return mlir::arith::SelectOp::create(nb, l, both_valid, both_first, padding_first);
        };
        // The pair at lo's position q sorts descending where bit k / 2 of q is set.
        Value q = mlir::linalg::IndexOp::create(nb, l, net.dim);
        Value bit = mlir::arith::AndIOp::create(nb, l, q,
                                                mlir::arith::ConstantIndexOp::create(nb, l, k / 2));
        Value descending = mlir::arith::CmpIOp::create(
            nb, l, P::ne, bit, mlir::arith::ConstantIndexOp::create(nb, l, 0));
        Value swap = mlir::arith::XOrIOp::create(nb, l, before(h, a), descending);
        llvm::SmallVector<Value> out;
        for (unsigned i = 0; i < m; ++i) {
          out.push_back(mlir::arith::SelectOp::create(nb, l, swap, h[i], a[i]));
        }
        for (unsigned i = 0; i < m; ++i) {
          out.push_back(mlir::arith::SelectOp::create(nb, l, swap, a[i], h[i]));
        }
        mlir::linalg::YieldOp::create(nb, l, out);
      });
  TESSERA_RETURN_IF_ERROR(status);
  std::vector<Value> next;
  const int64_t unit_view[] = {padded / (2 * j), 1, j};
  for (unsigned i = 0; i < m; ++i) {
    Value parts[] = {ExpandDim(b, loc, generic.getResult(i), net.dim, unit_view),
                     ExpandDim(b, loc, generic.getResult(m + i), net.dim, unit_view)};
    Value joined = mlir::tensor::ConcatOp::create(b, loc, net.dim + 1, parts).getResult();
    next.push_back(CollapseDims(b, loc, joined, net.dim, 3));
  }
  return next;
}

absl::Status ConvertSort(ImportState& state, mlir::Operation* op) {
  const std::string where = ImportState::Where(op);
  const unsigned n = op->getNumOperands();
  if (n == 0 || op->getNumResults() != n) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": expected one result per operand, at least one"));
  }
  std::vector<mlir::RankedTensorType> types;
  std::vector<mlir::Type> elements;
  for (unsigned i = 0; i < n; ++i) {
    TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType type, state.OperandType(op, i));
    TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType result, state.ResultType(op, i));
    types.push_back(type);
    if (result != type || type.getShape() != types.front().getShape()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": operands and results must all have the first operand's shape"));
    }
    elements.push_back(type.getElementType());
  }
  auto dimension = mlir::dyn_cast_or_null<mlir::IntegerAttr>(ImportState::GetAttr(op, "dimension"));
  const int64_t rank = types[0].getRank();
  if (!dimension || dimension.getInt() < -rank || dimension.getInt() >= rank || rank == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": expected a `dimension` of the operands' rank ", rank));
  }
  Network net{op, dimension.getInt() < 0 ? dimension.getInt() + rank : dimension.getInt(), 0, n};
  net.length = types[0].getDimSize(net.dim);
  TESSERA_RETURN_IF_ERROR(CheckComparator(op, elements));
  std::vector<Value> values;
  for (unsigned i = 0; i < n; ++i) {
    TESSERA_ASSIGN_OR_RETURN(Value v, state.Operand(op, i));
    values.push_back(v);
  }
  if (net.length <= 1 || types[0].getNumElements() == 0) {
    for (unsigned i = 0; i < n; ++i) state.Map(op->getResult(i), values[i]);
    return absl::OkStatus();
  }
  int64_t padded = 1;
  while (padded < net.length && padded <= kMaxSortLength) padded *= 2;
  if (padded > kMaxSortLength) {
    return absl::UnimplementedError(absl::StrCat(where, ": a sort along a dimension of ",
                                                 net.length, " (at most ", kMaxSortLength,
                                                 " are supported)"));
  }
  mlir::OpBuilder& b = state.builder();
  const mlir::Location loc = op->getLoc();
  if (padded > net.length) {
    for (unsigned i = 0; i < n; ++i) {
      llvm::SmallVector<int64_t> shape(types[i].getShape());
      shape[net.dim] = padded - net.length;
      auto pad_type = ImportState::NewType(mlir::RankedTensorType::get(shape, elements[i]));
      Value padding = state.Fill(loc, pad_type, b.getZeroAttr(pad_type.getElementType()));
      Value parts[] = {values[i], padding};
      values[i] = mlir::tensor::ConcatOp::create(b, loc, net.dim, parts).getResult();
    }
  }
  llvm::SmallVector<int64_t> shape(types[0].getShape());
  shape[net.dim] = padded;
  values.push_back(
      BuildElementwise(state, loc, mlir::RankedTensorType::get(shape, b.getI32Type()), {}, {},
                       [&](mlir::OpBuilder& nb, mlir::Location l, mlir::ValueRange) -> Value {
                         Value index = mlir::linalg::IndexOp::create(nb, l, net.dim);
                         return mlir::arith::IndexCastOp::create(nb, l, nb.getI32Type(), index);
                       }));
  for (int64_t k = 2; k <= padded; k *= 2) {
    for (int64_t j = k / 2; j >= 1; j /= 2) {
      TESSERA_ASSIGN_OR_RETURN(values, Pass(state, net, values, padded, k, j));
    }
  }
  for (unsigned i = 0; i < n; ++i) {
    Value result =
        padded > net.length ? SliceDim(b, loc, values[i], net.dim, 0, net.length) : values[i];
    state.Map(op->getResult(i), result);
  }
  return absl::OkStatus();
}

}  // namespace

void AddSortConversions(ConversionTable& table) { table["stablehlo.sort"] = ConvertSort; }

}  // namespace tessera::compiler::stablehlo
