#include "compiler/stablehlo/import_state.h"

#include <algorithm>
#include <iterator>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/checked_math.h"
#include "base/status_macros.h"
#include "base/string_view.h"
#include "llvm/Support/raw_ostream.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Location.h"

namespace tessera::compiler::stablehlo {
namespace {

std::string TypeText(mlir::Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  type.print(os);
  return text;
}

bool IsSupportedElement(mlir::Type type) {
  if (IsNarrowFloat(type) || type.isF32() || type.isF64()) return true;
  auto integer = mlir::dyn_cast<mlir::IntegerType>(type);
  if (!integer || integer.isSigned()) return false;
  const unsigned width = integer.getWidth();
  return width == 1 || width == 8 || width == 16 || width == 32 || width == 64;
}

absl::StatusOr<mlir::RankedTensorType> CheckedType(mlir::Operation* op, mlir::Value value,
                                                   const std::string& what) {
  auto tensor = mlir::dyn_cast<mlir::RankedTensorType>(value.getType());
  if (!tensor) {
    return absl::InvalidArgumentError(absl::StrCat(ImportState::Where(op), ": ", what, " has type ",
                                                   TypeText(value.getType()),
                                                   ", not a ranked tensor"));
  }
  for (int64_t d = 0; d < tensor.getRank(); ++d) {
    if (tensor.isDynamicDim(d)) {
      return absl::UnimplementedError(absl::StrCat(
          ImportState::Where(op), ": ", what, " of type ", TypeText(tensor), " has dimension ", d,
          " dynamic; programs need static shapes (lower the function for concrete shapes)"));
    }
  }
  if (!IsSupportedElement(tensor.getElementType())) {
    return absl::UnimplementedError(absl::StrCat(
        ImportState::Where(op), ": ", what, " has element type ", TypeText(tensor.getElementType()),
        " (supported: bf16 and f16, computed in f32 and rounded to their precision; f32, f64, "
        "i1 and 8 to 64 bit integers)"));
  }
  // Converters compare element counts (reshape); MLIR's count wraps past int64.
  llvm::ArrayRef<int64_t> dims = tensor.getShape();
  if (!base::CheckedByteCount(absl::MakeConstSpan(dims.data(), dims.size()),
                              (tensor.getElementTypeBitWidth() + 7) / 8)) {
    return absl::InvalidArgumentError(absl::StrCat(ImportState::Where(op), ": ", what, " of type ",
                                                   TypeText(tensor),
                                                   " has a byte count that overflows int64"));
  }
  return tensor;
}

}  // namespace

std::string DescribeLocation(mlir::Location loc) {
  std::string name;
  std::string position;
  loc->walk([&](mlir::Location inner) {
    if (auto named = mlir::dyn_cast<mlir::NameLoc>(inner); named && name.empty()) {
      name = named.getName().str();
    }
    if (auto file = mlir::dyn_cast<mlir::FileLineColRange>(inner); file && position.empty()) {
      position = file.getFilename().str();
      absl::StrAppend(&position, position.empty() ? "" : ":", file.getStartLine(), ":",
                      file.getStartColumn());
    }
    return mlir::WalkResult::advance();
  });
  if (position.empty() && name.empty()) {
    std::string text;
    llvm::raw_string_ostream os(text);
    loc.print(os);
    return text;
  }
  if (name.empty()) return position;
  if (position.empty()) return absl::StrCat("(", name, ")");
  return absl::StrCat(position, " (", name, ")");
}

mlir::Type SignlessType(mlir::Type type) {
  if (IsNarrowFloat(type)) return mlir::Float32Type::get(type.getContext());
  auto integer = mlir::dyn_cast<mlir::IntegerType>(type);
  if (integer && !integer.isSignless()) {
    return mlir::IntegerType::get(type.getContext(), integer.getWidth());
  }
  return type;
}

std::string ImportState::Where(mlir::Operation* op) {
  return absl::StrCat("'", op->getName().getStringRef().str(), "' at ",
                      DescribeLocation(op->getLoc()));
}

absl::Status ImportState::CheckArity(mlir::Operation* op, unsigned operands, unsigned results) {
  if (op->getNumOperands() == operands && op->getNumResults() == results) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat(Where(op), ": expected ", operands, " operand(s) and ", results,
                   " result(s), got ", op->getNumOperands(), " and ", op->getNumResults()));
}

absl::StatusOr<mlir::Value> ImportState::Operand(mlir::Operation* op, unsigned i) {
  if (i >= op->getNumOperands()) {
    return absl::InvalidArgumentError(absl::StrCat(Where(op), ": has no operand ", i));
  }
  auto it = values_.find(op->getOperand(i));
  if (it == values_.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat(Where(op), ": operand ", i, " is not defined before the op in @main"));
  }
  return it->second;
}

absl::StatusOr<mlir::RankedTensorType> ImportState::OperandType(mlir::Operation* op, unsigned i) {
  if (i >= op->getNumOperands()) {
    return absl::InvalidArgumentError(absl::StrCat(Where(op), ": has no operand ", i));
  }
  return CheckedType(op, op->getOperand(i), absl::StrCat("operand ", i));
}

absl::StatusOr<mlir::RankedTensorType> ImportState::ResultType(mlir::Operation* op, unsigned i) {
  if (i >= op->getNumResults()) {
    return absl::InvalidArgumentError(absl::StrCat(Where(op), ": has no result ", i));
  }
  return CheckedType(op, op->getResult(i), absl::StrCat("result ", i));
}

mlir::RankedTensorType ImportState::NewType(mlir::RankedTensorType old) {
  return mlir::RankedTensorType::get(old.getShape(), SignlessType(old.getElementType()));
}

mlir::Attribute ImportState::GetAttr(mlir::Operation* op, std::string_view name) {
  if (auto properties =
          mlir::dyn_cast_or_null<mlir::DictionaryAttr>(op->getPropertiesAsAttribute())) {
    if (mlir::Attribute attr = properties.get(name)) return attr;
  }
  return op->getDiscardableAttr(name);
}

absl::StatusOr<std::string> ImportState::OpaqueAttrText(mlir::Operation* op,
                                                        std::string_view name) {
  auto opaque = mlir::dyn_cast_or_null<mlir::OpaqueAttr>(GetAttr(op, name));
  if (!opaque) {
    return absl::InvalidArgumentError(absl::StrCat(Where(op), ": expected a `", base::AsAbsl(name),
                                                   "` attribute (#stablehlo...<...>)"));
  }
  return opaque.getAttrData().str();
}

absl::StatusOr<std::vector<int64_t>> ImportState::I64ArrayAttr(mlir::Operation* op,
                                                               std::string_view name) {
  mlir::Attribute attr = GetAttr(op, name);
  auto array = mlir::dyn_cast_or_null<mlir::DenseI64ArrayAttr>(attr);
  if (!array) {
    return absl::InvalidArgumentError(absl::StrCat(Where(op), ": expected an `", base::AsAbsl(name),
                                                   "` attribute of array<i64: ...>"));
  }
  return std::vector<int64_t>(array.asArrayRef().begin(), array.asArrayRef().end());
}

mlir::Value ImportState::Empty(mlir::Location loc, mlir::RankedTensorType type) {
  return mlir::tensor::EmptyOp::create(builder_, loc, type.getShape(), type.getElementType());
}

mlir::Value ImportState::Fill(mlir::Location loc, mlir::RankedTensorType type,
                              mlir::TypedAttr scalar) {
  mlir::Value value = mlir::arith::ConstantOp::create(builder_, loc, scalar);
  mlir::Value filled = mlir::linalg::FillOp::create(builder_, loc, mlir::ValueRange{value},
                                                    mlir::ValueRange{Empty(loc, type)})
                           ->getResult(0);
  SetSplat(filled, scalar);
  return filled;
}

absl::StatusOr<std::vector<int64_t>> ImportState::I64ArrayAttrOr(mlir::Operation* op,
                                                                 std::string_view name,
                                                                 int64_t count, int64_t fallback,
                                                                 int64_t minimum) {
  if (!GetAttr(op, name)) return std::vector<int64_t>(count, fallback);
  TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> values, I64ArrayAttr(op, name));
  if (static_cast<int64_t>(values.size()) != count) {
    return absl::InvalidArgumentError(absl::StrCat(Where(op), ": ", base::AsAbsl(name), " has ",
                                                   values.size(), " values; expected ", count));
  }
  for (int64_t v : values) {
    if (v < minimum || v > (int64_t{1} << 40)) {
      return absl::InvalidArgumentError(
          absl::StrCat(Where(op), ": ", base::AsAbsl(name), " value ", v, " out of range"));
    }
  }
  return values;
}

mlir::Value PermuteDims(ImportState& state, mlir::Location loc, mlir::Value value,
                        llvm::ArrayRef<int64_t> order) {
  if (std::is_sorted(order.begin(), order.end())) return value;
  auto type = mlir::cast<mlir::RankedTensorType>(value.getType());
  llvm::SmallVector<int64_t> shape;
  for (int64_t d : order) shape.push_back(type.getDimSize(d));
  mlir::Value init = state.Empty(loc, mlir::RankedTensorType::get(shape, type.getElementType()));
  return mlir::linalg::TransposeOp::create(state.builder(), loc, value, init, order)->getResult(0);
}

mlir::Value CollapseRuns(ImportState& state, mlir::Location loc, mlir::Value value,
                         llvm::ArrayRef<mlir::ReassociationIndices> groups) {
  if (llvm::all_of(groups, [](const mlir::ReassociationIndices& g) { return g.size() == 1; })) {
    return value;
  }
  auto type = mlir::cast<mlir::RankedTensorType>(value.getType());
  llvm::SmallVector<int64_t> shape;
  for (const mlir::ReassociationIndices& group : groups) {
    int64_t size = 1;
    for (int64_t d : group) size *= type.getDimSize(d);  // bounded by the element count
    shape.push_back(size);
  }
  auto collapsed = mlir::RankedTensorType::get(shape, type.getElementType());
  return mlir::tensor::CollapseShapeOp::create(state.builder(), loc, collapsed, value, groups)
      .getResult();
}

namespace {

llvm::SmallVector<mlir::OpFoldResult> IndexAttrs(mlir::OpBuilder& b,
                                                 llvm::ArrayRef<int64_t> values) {
  llvm::SmallVector<mlir::OpFoldResult> attrs;
  for (int64_t v : values) attrs.push_back(b.getIndexAttr(v));
  return attrs;
}

}  // namespace

mlir::Value SliceOf(ImportState& state, mlir::Location loc, mlir::Value value,
                    llvm::ArrayRef<int64_t> offsets, llvm::ArrayRef<int64_t> sizes,
                    llvm::ArrayRef<int64_t> strides) {
  auto type = mlir::cast<mlir::RankedTensorType>(value.getType());
  if (type.getShape() == sizes) return value;
  mlir::OpBuilder& b = state.builder();
  return mlir::tensor::ExtractSliceOp::create(
             b, loc, mlir::RankedTensorType::get(sizes, type.getElementType()), value,
             IndexAttrs(b, offsets), IndexAttrs(b, sizes), IndexAttrs(b, strides))
      .getResult();
}

mlir::Value ReverseDims(ImportState& state, mlir::Location loc, mlir::Value value,
                        mlir::RankedTensorType type, const std::vector<bool>& reversed) {
  return BuildElementwise(
      state, loc, type, {}, {},
      [&](mlir::OpBuilder& b, mlir::Location l, mlir::ValueRange) -> mlir::Value {
        llvm::SmallVector<mlir::Value> position;
        for (int64_t d = 0; d < type.getRank(); ++d) {
          mlir::Value index = mlir::linalg::IndexOp::create(b, l, d);
          if (reversed[d]) {
            mlir::Value last = mlir::arith::ConstantIndexOp::create(b, l, type.getDimSize(d) - 1);
            index = mlir::arith::SubIOp::create(b, l, last, index);
          }
          position.push_back(index);
        }
        return mlir::tensor::ExtractOp::create(b, l, value, position);
      });
}

WindowRead ReadInWindow(mlir::OpBuilder& b, mlir::Location loc, mlir::Value i, mlir::Value k,
                        int64_t stride, int64_t window_dilation, int64_t low, int64_t base_dilation,
                        int64_t dilated_size) {
  auto index = [&](int64_t v) { return mlir::arith::ConstantIndexOp::create(b, loc, v); };
  auto times = [&](mlir::Value v, int64_t factor) -> mlir::Value {
    return factor == 1 ? v : mlir::Value(mlir::arith::MulIOp::create(b, loc, v, index(factor)));
  };
  mlir::Value q = mlir::arith::SubIOp::create(
      b, loc, mlir::arith::AddIOp::create(b, loc, times(i, stride), times(k, window_dilation)),
      index(low));
  mlir::Value inside = mlir::arith::AndIOp::create(
      b, loc, mlir::arith::CmpIOp::create(b, loc, mlir::arith::CmpIPredicate::sge, q, index(0)),
      mlir::arith::CmpIOp::create(b, loc, mlir::arith::CmpIPredicate::slt, q, index(dilated_size)));
  // Clamped into range before dividing (an out-of-range q is not read anyway).
  mlir::Value clamped = mlir::arith::SelectOp::create(b, loc, inside, q, index(0));
  if (base_dilation == 1) return {clamped, inside};
  mlir::Value on_element = mlir::arith::CmpIOp::create(
      b, loc, mlir::arith::CmpIPredicate::eq,
      mlir::arith::RemUIOp::create(b, loc, clamped, index(base_dilation)), index(0));
  return {mlir::arith::DivUIOp::create(b, loc, clamped, index(base_dilation)),
          mlir::arith::AndIOp::create(b, loc, inside, on_element)};
}

mlir::Value PadWith(ImportState& state, mlir::Location loc, mlir::Value value,
                    mlir::RankedTensorType type, llvm::ArrayRef<int64_t> low,
                    llvm::ArrayRef<int64_t> high, mlir::TypedAttr fill) {
  mlir::OpBuilder& b = state.builder();
  auto pad =
      mlir::tensor::PadOp::create(b, loc, type, value, IndexAttrs(b, low), IndexAttrs(b, high));
  // The body yields the padding value (the builder leaves the region empty).
  mlir::OpBuilder::InsertionGuard guard(b);
  mlir::Region& region = pad.getRegion();
  if (!region.empty()) region.front().erase();
  llvm::SmallVector<mlir::Type> index_types(type.getRank(), b.getIndexType());
  llvm::SmallVector<mlir::Location> locs(type.getRank(), loc);
  b.createBlock(&region, {}, index_types, locs);
  mlir::tensor::YieldOp::create(b, loc, mlir::arith::ConstantOp::create(b, loc, fill));
  return pad.getResult();
}

absl::Status CheckScalarBodyOp(mlir::Operation* inner, mlir::Block& body, std::string_view what,
                               llvm::function_ref<bool(mlir::Value)> outside) {
  for (mlir::Value v : inner->getOperands()) {
    if (v.getParentBlock() != &body && !(outside && outside(v))) {
      return absl::UnimplementedError(absl::StrCat(
          ImportState::Where(inner), ": ", base::AsAbsl(what), " that uses a value from outside"));
    }
  }
  for (mlir::Type type :
       llvm::concat<const mlir::Type>(inner->getOperandTypes(), inner->getResultTypes())) {
    auto tensor = mlir::dyn_cast<mlir::RankedTensorType>(type);
    if (!tensor || tensor.getRank() != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          ImportState::Where(inner), ": ", base::AsAbsl(what), " computes on rank-0 tensors only"));
    }
  }
  return absl::OkStatus();
}

mlir::Value DilateDims(ImportState& state, mlir::Location loc, mlir::Value value,
                       llvm::ArrayRef<int64_t> interior, mlir::TypedAttr fill) {
  auto type = mlir::cast<mlir::RankedTensorType>(value.getType());
  llvm::SmallVector<int64_t> split_shape, high, dilated_shape;
  llvm::SmallVector<mlir::ReassociationIndices> groups;
  bool dilates = false;
  for (int64_t d = 0; d < type.getRank(); ++d) {
    const int64_t size = type.getDimSize(d);
    mlir::ReassociationIndices group = {static_cast<int64_t>(split_shape.size())};
    split_shape.push_back(size);
    high.push_back(0);
    dilated_shape.push_back(size);
    if (interior[d] > 0 && size > 1) {  // the caller checked that the dilated size fits
      dilates = true;
      group.push_back(static_cast<int64_t>(split_shape.size()));
      split_shape.push_back(1);
      high.push_back(interior[d]);
      dilated_shape.back() = (size - 1) * (interior[d] + 1) + 1;
    }
    groups.push_back(group);
  }
  if (!dilates) return value;
  mlir::OpBuilder& b = state.builder();
  mlir::Value split =
      mlir::tensor::ExpandShapeOp::create(
          b, loc, mlir::RankedTensorType::get(split_shape, type.getElementType()), value, groups)
          .getResult();
  llvm::SmallVector<int64_t> spread_shape;
  for (size_t i = 0; i < split_shape.size(); ++i) spread_shape.push_back(split_shape[i] + high[i]);
  mlir::Value spread =
      PadWith(state, loc, split, mlir::RankedTensorType::get(spread_shape, type.getElementType()),
              llvm::SmallVector<int64_t>(split_shape.size(), 0), high, fill);
  mlir::Value joined = CollapseRuns(state, loc, spread, groups);
  return SliceOf(state, loc, joined, llvm::SmallVector<int64_t>(type.getRank(), 0), dilated_shape,
                 llvm::SmallVector<int64_t>(type.getRank(), 1));
}

mlir::Operation* BinaryBodyOp(mlir::Operation* op) {
  return op->getNumRegions() == 1 ? BinaryRegionOp(op->getRegion(0)) : nullptr;
}

mlir::Operation* BinaryRegionOp(mlir::Region& region) {
  if (!region.hasOneBlock()) return nullptr;
  mlir::Block& body = region.front();
  // (The sharding hints JAX puts in such bodies are gone: DropHintsInScalarBodies.)
  if (body.getNumArguments() != 2 || body.getOperations().size() != 2) return nullptr;
  mlir::Operation& combine = body.front();
  mlir::Operation* ret = &body.back();
  if (combine.getNumOperands() != 2 || combine.getNumResults() != 1 ||
      combine.getOperand(0) != body.getArgument(0) ||
      combine.getOperand(1) != body.getArgument(1) ||
      ret->getName().getStringRef() != "stablehlo.return" || ret->getNumOperands() != 1) {
    return nullptr;
  }
  return ret->getOperand(0) == combine.getResult(0) ? &combine : nullptr;
}

}  // namespace tessera::compiler::stablehlo
