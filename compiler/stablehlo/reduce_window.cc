// stablehlo.reduce_window (pooling, cumsum / cumprod / cummax) and stablehlo.select_and_scatter
// (max and min pooling's gradients), each in one of two forms computing the same values in the
// same order:
//
// Sliced, for windows of at most kMaxSlicedWindow positions (pooling's): the operand dilated and
// padded (reshapes, tensor.pad), cut into one strided tensor.extract_slice per window position,
// the slices combined by one elementwise linalg.generic. Every op keeps the shardings of the
// dimensions the window does not span, so a batch-sharded pooling runs on each device's rows
// with no communication.
//
// Generic, for larger windows (a cumulative sum's spans its dimension): one linalg.generic whose
// loops are the result's dimensions (parallel) and the window's (reduction, row-major), reading
// the operand at each window position by a tensor.extract of the captured operand (so the op
// runs whole on every device, ReplicatePositionalOps in partition.cc).
//
// reduce_window combines, from the init, each window's elements in row-major order by the body's
// one op, the init standing for positions in the padding or between dilated elements.
// select_and_scatter picks each window's element by the select body (the first of the window in
// row-major order that select(kept, candidate) keeps, padding never picked), then adds into each
// operand element (by the scatter body, from the init) the source value of every window that
// picked it, in the windows' row-major order, as XLA does.

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "base/string_view.h"
#include "compiler/stablehlo/import_state.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinAttributes.h"

namespace tessera::compiler::stablehlo {
namespace {

using mlir::Value;

// The most operand reads one reduce_window may make (result elements times window elements):
// each result element reads its whole window, so a hostile window over a tiny operand (2^40 wide,
// almost all padding) would otherwise loop for hours.
constexpr int64_t kMaxWindowReads = int64_t{1} << 36;

// The most window positions the sliced form reads as separate slices (pooling windows have 4 to
// 27), and the most elements its dilated, padded operand may have beside the larger of the
// operand and the windows (a hostile padding goes to the generic form, which never builds it).
constexpr int64_t kMaxSlicedWindow = 64;
constexpr int64_t kMaxSlicedGrowth = 8;

// The window's geometry, per dimension.
struct WindowPlan {
  std::vector<int64_t> window, strides, base_dilations, window_dilations, low, high;
};

// The plan, checked against the operand's shape and `windows`, the shape of one value per window
// (reduce_window's result, select_and_scatter's source), named `windows_name` in errors.
absl::StatusOr<WindowPlan> PlanWindow(mlir::Operation* op, mlir::RankedTensorType operand,
                                      mlir::RankedTensorType windows,
                                      std::string_view windows_name) {
  const int64_t rank = operand.getRank();
  WindowPlan plan;
  TESSERA_ASSIGN_OR_RETURN(plan.window,
                           ImportState::I64ArrayAttrOr(op, "window_dimensions", rank, 1, 1));
  TESSERA_ASSIGN_OR_RETURN(plan.strides,
                           ImportState::I64ArrayAttrOr(op, "window_strides", rank, 1, 1));
  TESSERA_ASSIGN_OR_RETURN(plan.base_dilations,
                           ImportState::I64ArrayAttrOr(op, "base_dilations", rank, 1, 1));
  TESSERA_ASSIGN_OR_RETURN(plan.window_dilations,
                           ImportState::I64ArrayAttrOr(op, "window_dilations", rank, 1, 1));
  plan.low.assign(rank, 0);
  plan.high.assign(rank, 0);
  if (mlir::Attribute attr = ImportState::GetAttr(op, "padding")) {
    auto padding = mlir::dyn_cast<mlir::DenseIntElementsAttr>(attr);
    if (!padding || padding.getNumElements() != 2 * rank) {
      return absl::InvalidArgumentError(absl::StrCat(ImportState::Where(op), ": padding must be ",
                                                     rank, " (low, high) pairs of integers"));
    }
    int64_t i = 0;
    for (const llvm::APInt& v : padding.getValues<llvm::APInt>()) {
      if (v.getSignificantBits() > 41 || v.isNegative()) {
        return absl::UnimplementedError(
            absl::StrCat(ImportState::Where(op), ": negative or huge padding is not supported"));
      }
      (i % 2 == 0 ? plan.low : plan.high)[i / 2] = v.getSExtValue();
      ++i;
    }
  }
  for (int64_t d = 0; d < rank; ++d) {
    int64_t dilated = 0, padded = 0, extent = 0;
    if (operand.getDimSize(d) > 0 &&
        (__builtin_mul_overflow(operand.getDimSize(d) - 1, plan.base_dilations[d], &dilated) ||
         __builtin_add_overflow(dilated, plan.low[d] + plan.high[d] + 1, &padded))) {
      return absl::InvalidArgumentError(absl::StrCat(ImportState::Where(op), ": dimension ", d,
                                                     " dilated and padded overflows int64"));
    }
    dilated += operand.getDimSize(d) > 0 ? 1 : 0;
    // Window sizes and dilations are at most 2^40: the extent fits.
    extent = (plan.window[d] - 1) * plan.window_dilations[d] + 1;
    const int64_t size = padded < extent ? 0 : (padded - extent) / plan.strides[d] + 1;
    if (windows.getDimSize(d) != size) {
      return absl::InvalidArgumentError(
          absl::StrCat(ImportState::Where(op), ": ", base::AsAbsl(windows_name), " dimension ", d,
                       " is ", windows.getDimSize(d), "; the window makes ", size));
    }
  }
  int64_t reads = 1;
  for (int64_t d = 0; d < rank; ++d) {
    for (int64_t factor : {windows.getDimSize(d), plan.window[d]}) {
      if (factor > 0 &&
          (__builtin_mul_overflow(reads, factor, &reads) || reads > kMaxWindowReads)) {
        return absl::UnimplementedError(
            absl::StrCat(ImportState::Where(op),
                         ": a window op reading more than 2^36 elements (its windows "
                         "times a window's elements)"));
      }
    }
  }
  return plan;
}

// The body's one op of (accumulated, element), returned.
absl::StatusOr<mlir::Operation*> ReadWindowBody(mlir::Operation* op) {
  mlir::Operation* combine = BinaryBodyOp(op);
  if (combine == nullptr || !IsScalarOp(combine->getName().getStringRef())) {
    return absl::UnimplementedError(absl::StrCat(
        ImportState::Where(op),
        ": a reduce_window whose body is not one elementwise op of its two arguments (the "
        "cumulative sums, products, maxima and minima and pooling JAX emits are)"));
  }
  return combine;
}

// `combined` (one step of a window op's combining, in arith's type) rounded to bf16 or f16 where
// `element` is one of them: XLA combines a window's elements in their type, one rounding a step.
Value RoundedStep(mlir::OpBuilder& b, mlir::Location loc, Value combined, mlir::Type element) {
  return IsNarrowFloat(element) ? RoundToNarrowFloat(b, loc, combined, element) : combined;
}

// The dilated, padded operand's shape when the sliced form fits `plan` over `operand` with
// `windows` (the result's or the source's shape); nullopt when the generic form must read it.
std::optional<std::vector<int64_t>> SlicedShape(const WindowPlan& plan,
                                                mlir::RankedTensorType operand,
                                                mlir::RankedTensorType windows) {
  if (operand.getNumElements() == 0 || windows.getNumElements() == 0) return std::nullopt;
  int64_t positions = 1, padded_elements = 1;
  std::vector<int64_t> padded;
  for (int64_t d = 0; d < operand.getRank(); ++d) {
    positions *= plan.window[d];  // each at most 2^40; the product stops at 64 * 2^40
    if (positions > kMaxSlicedWindow) return std::nullopt;
    // PlanWindow checked that this does not overflow.
    padded.push_back((operand.getDimSize(d) - 1) * plan.base_dilations[d] + 1 + plan.low[d] +
                     plan.high[d]);
    if (__builtin_mul_overflow(padded_elements, padded.back(), &padded_elements)) {
      return std::nullopt;
    }
  }
  const int64_t bound = std::max(operand.getNumElements(), windows.getNumElements());
  if (padded_elements / kMaxSlicedGrowth > bound) return std::nullopt;
  return padded;
}

// The offsets of each of the window's positions in the dilated, padded operand, row-major.
std::vector<std::vector<int64_t>> WindowOffsets(const WindowPlan& plan) {
  std::vector<std::vector<int64_t>> offsets = {{}};
  for (size_t d = 0; d < plan.window.size(); ++d) {
    std::vector<std::vector<int64_t>> longer;
    for (const std::vector<int64_t>& prefix : offsets) {
      for (int64_t k = 0; k < plan.window[d]; ++k) {
        longer.push_back(prefix);
        longer.back().push_back(k * plan.window_dilations[d]);
      }
    }
    offsets = std::move(longer);
  }
  return offsets;
}

// `value` (a new tensor) with `plan`'s base dilation and padding around it, `fill` between and
// around its elements, into `padded`'s shape.
Value DilateAndPad(ImportState& state, mlir::Location loc, Value value, const WindowPlan& plan,
                   llvm::ArrayRef<int64_t> padded, mlir::TypedAttr fill) {
  std::vector<int64_t> interior;
  for (int64_t dilation : plan.base_dilations) interior.push_back(dilation - 1);
  value = DilateDims(state, loc, value, interior, fill);
  if (mlir::cast<mlir::RankedTensorType>(value.getType()).getShape() == padded) return value;
  return PadWith(state, loc, value, mlir::RankedTensorType::get(padded, fill.getType()), plan.low,
                 plan.high, fill);
}

// The window's slices of `padded_value` (a new tensor of the dilated, padded operand's shape):
// one per window position, row-major, each of `windows`' shape.
std::vector<Value> WindowSlices(ImportState& state, mlir::Location loc, Value padded_value,
                                const WindowPlan& plan, llvm::ArrayRef<int64_t> windows) {
  std::vector<Value> slices;
  for (const std::vector<int64_t>& offsets : WindowOffsets(plan)) {
    slices.push_back(SliceOf(state, loc, padded_value, offsets, windows, plan.strides));
  }
  return slices;
}

// The window slices (WindowSlices) of `operand` (a new tensor of `operand_shape`) dilated and
// padded into `padded` with its init, each of `windows`' shape; nullopt where that needs padding
// and the init is not a constant.
std::optional<std::vector<Value>> SlicesPaddedWithInit(ImportState& state, mlir::Location loc,
                                                       const WindowPlan& plan,
                                                       llvm::ArrayRef<int64_t> padded,
                                                       llvm::ArrayRef<int64_t> operand_shape,
                                                       llvm::ArrayRef<int64_t> windows,
                                                       Value operand, Value init) {
  if (padded != operand_shape) {
    mlir::TypedAttr fill = state.SplatOf(init);
    if (!fill) return std::nullopt;
    operand = DilateAndPad(state, loc, operand, plan, padded, fill);
  }
  return WindowSlices(state, loc, operand, plan, windows);
}

// reduce_window in the sliced form; nullopt where the generic form must compute it: a large
// window, a hostile padding, or padding with an init that is not a constant.
absl::StatusOr<std::optional<Value>> SlicedReduceWindow(ImportState& state, mlir::Location loc,
                                                        const WindowPlan& plan,
                                                        mlir::Operation* combine,
                                                        mlir::RankedTensorType operand_type,
                                                        mlir::RankedTensorType result_type,
                                                        Value operand, Value init) {
  const std::optional<std::vector<int64_t>> padded = SlicedShape(plan, operand_type, result_type);
  if (!padded) return std::nullopt;
  std::optional<std::vector<Value>> inputs = SlicesPaddedWithInit(
      state, loc, plan, *padded, operand_type.getShape(), result_type.getShape(), operand, init);
  if (!inputs) return std::nullopt;
  inputs->push_back(init);
  const mlir::Type element = operand_type.getElementType();
  absl::Status status;
  Value result =
      BuildElementwise(state, loc, result_type, *inputs, {},
                       [&](mlir::OpBuilder& b, mlir::Location l, mlir::ValueRange scalars) {
                         Value acc = scalars.back();
                         for (Value x : scalars.drop_back()) {
                           absl::StatusOr<Value> combined =
                               BuildScalarOp(b, l, combine, {acc, x}, {element, element}, element);
                           if (!combined.ok()) {
                             status = combined.status();
                             return acc;
                           }
                           acc = RoundedStep(b, l, *combined, element);
                         }
                         return acc;
                       });
  TESSERA_RETURN_IF_ERROR(status);
  return result;
}

// The body of a reduce_window of `n` operands, checked: 2n rank-0 arguments of `elements`
// (each twice), ops BuildScalarOp knows on the arguments and earlier results, and a
// stablehlo.return of n values of `elements`.
absl::Status CheckVariadicBody(mlir::Operation* op, llvm::ArrayRef<mlir::Type> elements) {
  const std::string where = ImportState::Where(op);
  const size_t n = elements.size();
  if (op->getNumRegions() != 1 || !op->getRegion(0).hasOneBlock()) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": expected a body of one block"));
  }
  mlir::Block& body = op->getRegion(0).front();
  if (body.getNumArguments() != 2 * n) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, ": the body takes ", body.getNumArguments(), " arguments, not ", 2 * n));
  }
  auto scalar = [](mlir::Type element) { return mlir::RankedTensorType::get({}, element); };
  for (unsigned i = 0; i < body.getNumArguments(); ++i) {
    if (body.getArgument(i).getType() != scalar(elements[i % n])) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": body argument ", i, " is not a scalar of its operand's type"));
    }
  }
  if (body.empty() || body.back().getName().getStringRef() != "stablehlo.return" ||
      body.back().getNumOperands() != n) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": the body must end in stablehlo.return of ", n, " values"));
  }
  for (size_t i = 0; i < n; ++i) {
    if (body.back().getOperand(i).getType() != scalar(elements[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": the body's result ", i, " is not a scalar of its operand's type"));
    }
  }
  for (mlir::Operation& inner : body) {
    if (&inner == &body.back()) break;  // the stablehlo.return
    if (!IsScalarOp(inner.getName().getStringRef()) || inner.getNumResults() != 1 ||
        inner.getNumRegions() != 0) {
      return absl::UnimplementedError(absl::StrCat(
          ImportState::Where(&inner), ": not supported in a reduce_window of several operands"));
    }
    TESSERA_RETURN_IF_ERROR(CheckScalarBodyOp(&inner, body, "a reduce_window's body"));
  }
  return absl::OkStatus();
}

// The checked body (CheckVariadicBody) on scalars: `acc` and `x` (arith's types) for its
// arguments; each op's bf16 or f16 result rounded, as XLA computes the body in its types.
absl::StatusOr<llvm::SmallVector<Value>> InlineVariadicBody(mlir::OpBuilder& b, mlir::Location loc,
                                                            mlir::Block& body, mlir::ValueRange acc,
                                                            mlir::ValueRange x) {
  llvm::DenseMap<Value, Value> scalars;
  for (size_t i = 0; i < acc.size(); ++i) {
    scalars[body.getArgument(i)] = acc[i];
    scalars[body.getArgument(acc.size() + i)] = x[i];
  }
  auto element = [](Value v) { return mlir::cast<mlir::ShapedType>(v.getType()).getElementType(); };
  for (mlir::Operation& inner : body) {
    if (&inner == &body.back()) break;  // the stablehlo.return
    llvm::SmallVector<Value> operands;
    llvm::SmallVector<mlir::Type> types;
    for (Value v : inner.getOperands()) {
      operands.push_back(scalars.lookup(v));
      types.push_back(element(v));
      if (!operands.back()) {
        return absl::InvalidArgumentError(absl::StrCat(
            ImportState::Where(&inner), ": an operand the reduce_window's body does not define"));
      }
    }
    const mlir::Type result = element(inner.getResult(0));
    TESSERA_ASSIGN_OR_RETURN(Value v, BuildScalarOp(b, loc, &inner, operands, types, result));
    scalars[inner.getResult(0)] = RoundedStep(b, loc, v, result);
  }
  llvm::SmallVector<Value> results;
  for (Value v : body.back().getOperands()) results.push_back(scalars.lookup(v));
  return results;
}

// reduce_window of n > 1 operands (select_and_gather_add: JAX's forward-mode derivative of max
// pooling), in the sliced form only: each operand dilated and padded with its init (constants),
// cut into its window slices, and one linalg.generic of n results folding them, from the inits,
// through the body in the window's row-major order. UNIMPLEMENTED where the sliced form does not
// fit (SlicedShape) or an init is computed.
absl::Status ConvertVariadicReduceWindow(ImportState& state, mlir::Operation* op) {
  const unsigned n = op->getNumResults();
  TESSERA_RETURN_IF_ERROR(ImportState::CheckArity(op, 2 * n, n));
  std::vector<mlir::RankedTensorType> operand_types, result_types;
  std::vector<mlir::Type> elements;
  for (unsigned i = 0; i < n; ++i) {
    TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType operand, state.OperandType(op, i));
    TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType init, state.OperandType(op, n + i));
    TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType result, state.ResultType(op, i));
    if ((!operand_types.empty() && (operand.getShape() != operand_types[0].getShape() ||
                                    result.getShape() != result_types[0].getShape())) ||
        init.getRank() != 0 || init.getElementType() != operand.getElementType() ||
        result.getElementType() != operand.getElementType() ||
        result.getRank() != operand.getRank()) {
      return absl::InvalidArgumentError(absl::StrCat(
          ImportState::Where(op),
          ": expected operands of one shape, results of one shape, and for each operand a rank-0 "
          "init and a result of its element type and rank"));
    }
    operand_types.push_back(operand);
    result_types.push_back(result);
    elements.push_back(operand.getElementType());
  }
  TESSERA_ASSIGN_OR_RETURN(WindowPlan plan,
                           PlanWindow(op, operand_types[0], result_types[0], "result"));
  TESSERA_RETURN_IF_ERROR(CheckVariadicBody(op, elements));
  const std::optional<std::vector<int64_t>> padded =
      SlicedShape(plan, operand_types[0], result_types[0]);
  if (!padded) {
    return absl::UnimplementedError(absl::StrCat(
        ImportState::Where(op),
        ": a reduce_window of several operands over more than 64 window positions or empty"));
  }
  const mlir::Location loc = op->getLoc();
  std::vector<Value> inits;
  std::vector<std::vector<Value>> slices;
  for (unsigned i = 0; i < n; ++i) {
    TESSERA_ASSIGN_OR_RETURN(Value operand, state.Operand(op, i));
    TESSERA_ASSIGN_OR_RETURN(Value init, state.Operand(op, n + i));
    std::optional<std::vector<Value>> operand_slices =
        SlicesPaddedWithInit(state, loc, plan, *padded, operand_types[i].getShape(),
                             result_types[i].getShape(), operand, init);
    if (!operand_slices) {
      return absl::UnimplementedError(
          absl::StrCat(ImportState::Where(op),
                       ": a padded reduce_window of several operands with a computed init"));
    }
    slices.push_back(*std::move(operand_slices));
    inits.push_back(init);
  }
  // Inputs: operand 0's slices, operand 1's, ..., then the inits (rank 0: read at every point).
  mlir::OpBuilder& b = state.builder();
  const int64_t rank = result_types[0].getRank();
  const size_t positions = slices[0].size();
  llvm::SmallVector<Value> inputs, outputs;
  llvm::SmallVector<mlir::AffineMap> maps;
  llvm::SmallVector<mlir::Type> new_results;
  for (const std::vector<Value>& operand_slices : slices) {
    for (Value slice : operand_slices) {
      inputs.push_back(slice);
      maps.push_back(b.getMultiDimIdentityMap(rank));
    }
  }
  for (Value init : inits) {
    inputs.push_back(init);
    maps.push_back(mlir::AffineMap::get(rank, 0, b.getContext()));
  }
  for (unsigned i = 0; i < n; ++i) {
    mlir::RankedTensorType type = ImportState::NewType(result_types[i]);
    outputs.push_back(state.Empty(loc, type));
    new_results.push_back(type);
    maps.push_back(b.getMultiDimIdentityMap(rank));
  }
  llvm::SmallVector<mlir::utils::IteratorType> iterators(rank, mlir::utils::IteratorType::parallel);
  mlir::Block& body = op->getRegion(0).front();
  absl::Status status;
  auto generic = mlir::linalg::GenericOp::create(
      b, loc, new_results, inputs, outputs, maps, iterators,
      [&](mlir::OpBuilder& nested, mlir::Location l, mlir::ValueRange args) {
        llvm::SmallVector<Value> acc(args.begin() + n * positions,
                                     args.begin() + n * positions + n);
        for (size_t k = 0; k < positions && status.ok(); ++k) {
          llvm::SmallVector<Value> x;
          for (unsigned i = 0; i < n; ++i) x.push_back(args[i * positions + k]);
          absl::StatusOr<llvm::SmallVector<Value>> next =
              InlineVariadicBody(nested, l, body, acc, x);
          if (!next.ok()) {
            status = next.status();
            break;
          }
          acc = *std::move(next);
        }
        mlir::linalg::YieldOp::create(nested, l, acc);
      });
  TESSERA_RETURN_IF_ERROR(status);
  for (unsigned i = 0; i < n; ++i) state.Map(op->getResult(i), generic->getResult(i));
  return absl::OkStatus();
}

absl::Status ConvertReduceWindow(ImportState& state, mlir::Operation* op) {
  if (op->getNumResults() > 1) return ConvertVariadicReduceWindow(state, op);
  TESSERA_RETURN_IF_ERROR(ImportState::CheckArity(op, 2, 1));
  TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType operand_type, state.OperandType(op, 0));
  TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType init_type, state.OperandType(op, 1));
  TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType result_type, state.ResultType(op, 0));
  mlir::Type element = operand_type.getElementType();
  if (init_type.getRank() != 0 || init_type.getElementType() != element ||
      result_type.getElementType() != element || result_type.getRank() != operand_type.getRank()) {
    return absl::InvalidArgumentError(
        absl::StrCat(ImportState::Where(op),
                     ": expected a rank-0 init and a result of the operand's element type "
                     "and rank"));
  }
  TESSERA_ASSIGN_OR_RETURN(WindowPlan plan, PlanWindow(op, operand_type, result_type, "result"));
  TESSERA_ASSIGN_OR_RETURN(mlir::Operation * combine, ReadWindowBody(op));
  TESSERA_ASSIGN_OR_RETURN(Value operand, state.Operand(op, 0));
  TESSERA_ASSIGN_OR_RETURN(Value init, state.Operand(op, 1));
  TESSERA_ASSIGN_OR_RETURN(std::optional<Value> sliced,
                           SlicedReduceWindow(state, op->getLoc(), plan, combine, operand_type,
                                              result_type, operand, init));
  if (sliced) {
    state.Map(op->getResult(0), *sliced);
    return absl::OkStatus();
  }

  mlir::OpBuilder& builder = state.builder();
  mlir::MLIRContext* context = op->getContext();
  const mlir::Location loc = op->getLoc();
  const int64_t rank = operand_type.getRank();
  mlir::RankedTensorType new_result = ImportState::NewType(result_type);
  mlir::Type new_element = new_result.getElementType();
  // The result starts as the init everywhere; the window's loops range over a tensor of its
  // shape (never read).
  Value acc = BuildElementwise(
      state, loc, result_type, {init}, {},
      [](mlir::OpBuilder&, mlir::Location, mlir::ValueRange scalars) { return scalars[0]; });
  Value window = mlir::tensor::EmptyOp::create(builder, loc, plan.window, new_element);
  llvm::SmallVector<mlir::AffineExpr> result_exprs, window_exprs;
  for (int64_t d = 0; d < rank; ++d) {
    result_exprs.push_back(mlir::getAffineDimExpr(d, context));
    window_exprs.push_back(mlir::getAffineDimExpr(rank + d, context));
  }
  llvm::SmallVector<mlir::AffineMap> maps = {
      mlir::AffineMap::get(2 * rank, 0, window_exprs, context),
      mlir::AffineMap::get(2 * rank, 0, result_exprs, context)};
  llvm::SmallVector<mlir::utils::IteratorType> iterators(2 * rank,
                                                         mlir::utils::IteratorType::reduction);
  for (int64_t d = 0; d < rank; ++d) iterators[d] = mlir::utils::IteratorType::parallel;
  absl::Status status;
  auto generic = mlir::linalg::GenericOp::create(
      builder, loc, mlir::TypeRange{new_result}, mlir::ValueRange{window}, mlir::ValueRange{acc},
      maps, iterators, [&](mlir::OpBuilder& b, mlir::Location l, mlir::ValueRange args) {
        Value valid = mlir::arith::ConstantIntOp::create(b, l, b.getI1Type(), 1);
        llvm::SmallVector<Value> position;
        for (int64_t d = 0; d < rank; ++d) {
          const int64_t dilated = (operand_type.getDimSize(d) - 1) * plan.base_dilations[d] + 1;
          const WindowRead read =
              ReadInWindow(b, l, mlir::linalg::IndexOp::create(b, l, d),
                           mlir::linalg::IndexOp::create(b, l, rank + d), plan.strides[d],
                           plan.window_dilations[d], plan.low[d], plan.base_dilations[d], dilated);
          valid = mlir::arith::AndIOp::create(b, l, valid, read.inside);
          position.push_back(read.index);
        }
        Value read = mlir::tensor::ExtractOp::create(b, l, operand, position);
        Value read_init = mlir::tensor::ExtractOp::create(b, l, init, mlir::ValueRange{});
        Value value = mlir::arith::SelectOp::create(b, l, valid, read, read_init);
        absl::StatusOr<Value> combined =
            BuildScalarOp(b, l, combine, {args[1], value}, {element, element}, element);
        if (!combined.ok()) {
          status = combined.status();
          mlir::linalg::YieldOp::create(b, l, args[1]);
          return;
        }
        mlir::linalg::YieldOp::create(b, l, RoundedStep(b, l, *combined, element));
      });
  TESSERA_RETURN_IF_ERROR(status);
  state.Map(op->getResult(0), generic->getResult(0));
  return absl::OkStatus();
}

// The row-major offset of `position` in a tensor of `shape`, as an i64.
Value LinearOffset(mlir::OpBuilder& b, mlir::Location l, llvm::ArrayRef<Value> position,
                   llvm::ArrayRef<int64_t> shape) {
  Value offset = mlir::arith::ConstantIndexOp::create(b, l, 0);
  for (size_t d = 0; d < shape.size(); ++d) {
    offset = mlir::arith::AddIOp::create(
        b, l,
        mlir::arith::MulIOp::create(b, l, offset,
                                    mlir::arith::ConstantIndexOp::create(b, l, shape[d])),
        position[d]);
  }
  return mlir::arith::IndexCastOp::create(b, l, b.getI64Type(), offset);
}

// The generic's loops: `rank` parallel ones over `shape`'s tensor and the window's, reduction.
mlir::linalg::GenericOp WindowLoops(
    ImportState& state, mlir::Location loc, const WindowPlan& plan, mlir::ValueRange outputs,
    llvm::function_ref<void(mlir::OpBuilder&, mlir::Location, mlir::ValueRange)> body) {
  mlir::MLIRContext* context = state.builder().getContext();
  const int64_t rank = static_cast<int64_t>(plan.window.size());
  llvm::SmallVector<mlir::AffineExpr> outer_exprs, window_exprs;
  for (int64_t d = 0; d < rank; ++d) {
    outer_exprs.push_back(mlir::getAffineDimExpr(d, context));
    window_exprs.push_back(mlir::getAffineDimExpr(rank + d, context));
  }
  llvm::SmallVector<mlir::AffineMap> maps = {
      mlir::AffineMap::get(2 * rank, 0, window_exprs, context)};
  for (size_t i = 0; i < outputs.size(); ++i) {
    maps.push_back(mlir::AffineMap::get(2 * rank, 0, outer_exprs, context));
  }
  llvm::SmallVector<mlir::utils::IteratorType> iterators(2 * rank,
                                                         mlir::utils::IteratorType::reduction);
  for (int64_t d = 0; d < rank; ++d) iterators[d] = mlir::utils::IteratorType::parallel;
  auto element = mlir::cast<mlir::RankedTensorType>(outputs[0].getType()).getElementType();
  Value window = mlir::tensor::EmptyOp::create(state.builder(), loc, plan.window, element);
  return mlir::linalg::GenericOp::create(state.builder(), loc, mlir::TypeRange(outputs),
                                         mlir::ValueRange{window}, outputs, maps, iterators, body);
}

// `values` (a new tensor of one value per window) placed where the windows at `offsets` start in
// the padded operand of shape `padded`: element w at w * stride + offset, `fill` elsewhere.
Value PlaceAtWindows(ImportState& state, mlir::Location loc, Value values, const WindowPlan& plan,
                     llvm::ArrayRef<int64_t> offsets, llvm::ArrayRef<int64_t> padded,
                     mlir::TypedAttr fill) {
  std::vector<int64_t> interior, high;
  for (int64_t stride : plan.strides) interior.push_back(stride - 1);
  values = DilateDims(state, loc, values, interior, fill);
  auto dilated = mlir::cast<mlir::RankedTensorType>(values.getType());
  for (size_t d = 0; d < padded.size(); ++d) {
    // The last window starts at most at padded - window extent: high is not negative.
    high.push_back(padded[d] - offsets[d] - dilated.getDimSize(d));
  }
  if (dilated.getShape() == padded) return values;
  return PadWith(state, loc, values, mlir::RankedTensorType::get(padded, fill.getType()), offsets,
                 high, fill);
}

// select_and_scatter in the sliced form over the operand padded into `padded`. The picks: one
// elementwise generic over the windows folding the window positions' slices (and slices of a
// mask that is false in the padding) into the position picked, an i32 (-1 while none). The
// scatter: each position's picks and source values placed back where its windows read (dilated
// by the strides, padded to its offset), folded by one elementwise generic over the padded
// operand in reverse row-major order of the positions, which is the windows' row-major order for
// each element; its padding cut away.
absl::StatusOr<Value> SlicedSelectAndScatter(ImportState& state, mlir::Location loc,
                                             const WindowPlan& plan, llvm::ArrayRef<int64_t> padded,
                                             mlir::Operation* select, mlir::Operation* scatter,
                                             mlir::RankedTensorType operand_type,
                                             mlir::RankedTensorType source_type,
                                             mlir::RankedTensorType result_type, Value operand,
                                             Value source, Value init) {
  mlir::OpBuilder& builder = state.builder();
  const mlir::Type element = operand_type.getElementType();
  const mlir::Type scattered = source_type.getElementType();
  const mlir::Type new_element = ImportState::NewType(operand_type).getElementType();
  const mlir::Type new_scattered = ImportState::NewType(source_type).getElementType();
  const bool pads = padded != operand_type.getShape();
  std::vector<Value> candidates = WindowSlices(
      state, loc,
      pads ? DilateAndPad(state, loc, operand, plan, padded,
                          mlir::cast<mlir::TypedAttr>(builder.getZeroAttr(new_element)))
           : operand,
      plan, source_type.getShape());
  const int64_t positions = static_cast<int64_t>(candidates.size());
  std::vector<Value> inputs = candidates;
  if (pads) {
    Value inside = DilateAndPad(
        state, loc,
        state.Fill(loc, mlir::RankedTensorType::get(operand_type.getShape(), builder.getI1Type()),
                   builder.getBoolAttr(true)),
        plan, padded, builder.getBoolAttr(false));
    for (Value slice : WindowSlices(state, loc, inside, plan, source_type.getShape())) {
      inputs.push_back(slice);
    }
  }
  auto picks_type = mlir::RankedTensorType::get(source_type.getShape(), builder.getI32Type());
  absl::Status status;
  Value picks = BuildElementwise(
      state, loc, picks_type, inputs, {},
      [&](mlir::OpBuilder& b, mlir::Location l, mlir::ValueRange scalars) -> Value {
        Value picked = mlir::arith::ConstantIntOp::create(b, l, b.getI32Type(), -1);
        Value kept = scalars[0];
        for (int64_t k = 0; k < positions; ++k) {
          Value candidate = scalars[k];
          absl::StatusOr<Value> keep =
              BuildScalarOp(b, l, select, {kept, candidate}, {element, element}, b.getI1Type());
          if (!keep.ok()) {
            status = keep.status();
            return picked;
          }
          Value first = mlir::arith::CmpIOp::create(
              b, l, mlir::arith::CmpIPredicate::slt, picked,
              mlir::arith::ConstantIntOp::create(b, l, b.getI32Type(), 0));
          Value take = mlir::arith::OrIOp::create(
              b, l, first,
              mlir::arith::XOrIOp::create(
                  b, l, *keep, mlir::arith::ConstantIntOp::create(b, l, b.getI1Type(), 1)));
          if (pads) take = mlir::arith::AndIOp::create(b, l, take, scalars[positions + k]);
          kept = mlir::arith::SelectOp::create(b, l, take, candidate, kept);
          picked = mlir::arith::SelectOp::create(
              b, l, take, mlir::arith::ConstantIntOp::create(b, l, b.getI32Type(), k), picked);
        }
        return picked;
      });
  TESSERA_RETURN_IF_ERROR(status);

  const std::vector<std::vector<int64_t>> offsets = WindowOffsets(plan);
  std::vector<Value> placed_sources, placed_picks;
  for (const std::vector<int64_t>& at : offsets) {
    placed_sources.push_back(
        PlaceAtWindows(state, loc, source, plan, at, padded,
                       mlir::cast<mlir::TypedAttr>(builder.getZeroAttr(new_scattered))));
    placed_picks.push_back(
        PlaceAtWindows(state, loc, picks, plan, at, padded, builder.getI32IntegerAttr(-1)));
  }
  inputs = placed_sources;
  for (Value v : placed_picks) inputs.push_back(v);
  inputs.push_back(init);
  auto padded_result = mlir::RankedTensorType::get(padded, scattered);
  Value result = BuildElementwise(
      state, loc, padded_result, inputs, {},
      [&](mlir::OpBuilder& b, mlir::Location l, mlir::ValueRange scalars) -> Value {
        Value acc = scalars.back();
        for (int64_t k = positions - 1; k >= 0; --k) {
          absl::StatusOr<Value> combined =
              BuildScalarOp(b, l, scatter, {acc, scalars[k]}, {scattered, scattered}, scattered);
          if (!combined.ok()) {
            status = combined.status();
            return acc;
          }
          Value mine = mlir::arith::CmpIOp::create(
              b, l, mlir::arith::CmpIPredicate::eq, scalars[positions + k],
              mlir::arith::ConstantIntOp::create(b, l, b.getI32Type(), k));
          acc = mlir::arith::SelectOp::create(b, l, mine, RoundedStep(b, l, *combined, scattered),
                                              acc);
        }
        return acc;
      });
  TESSERA_RETURN_IF_ERROR(status);
  if (!pads) return result;
  return SliceOf(state, loc, result, plan.low, result_type.getShape(),
                 std::vector<int64_t>(plan.low.size(), 1));
}

absl::Status ConvertSelectAndScatter(ImportState& state, mlir::Operation* op) {
  TESSERA_RETURN_IF_ERROR(ImportState::CheckArity(op, 3, 1));
  TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType operand_type, state.OperandType(op, 0));
  TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType source_type, state.OperandType(op, 1));
  TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType init_type, state.OperandType(op, 2));
  TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType result_type, state.ResultType(op, 0));
  const mlir::Type element = operand_type.getElementType();
  const mlir::Type scattered = source_type.getElementType();
  if (source_type.getRank() != operand_type.getRank() || init_type.getRank() != 0 ||
      init_type.getElementType() != scattered ||
      result_type.getShape() != operand_type.getShape() ||
      result_type.getElementType() != scattered || op->getNumRegions() != 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        ImportState::Where(op),
        ": expected a source of the operand's rank, a rank-0 init and a result of the source's "
        "element type and the operand's shape, and a select and a scatter region"));
  }
  if (ImportState::GetAttr(op, "base_dilations") || ImportState::GetAttr(op, "window_dilations")) {
    return absl::InvalidArgumentError(
        absl::StrCat(ImportState::Where(op), ": select_and_scatter has no dilations"));
  }
  TESSERA_ASSIGN_OR_RETURN(WindowPlan plan, PlanWindow(op, operand_type, source_type, "source"));
  int64_t reads = operand_type.getNumElements();
  for (int64_t w : plan.window) {
    if (reads > 0 && (__builtin_mul_overflow(reads, w, &reads) || reads > kMaxWindowReads)) {
      return absl::UnimplementedError(
          absl::StrCat(ImportState::Where(op),
                       ": a select_and_scatter reading more than 2^36 elements (its operand's "
                       "elements times its window's)"));
    }
  }
  mlir::Operation* select = BinaryRegionOp(op->getRegion(0));
  mlir::Operation* scatter = BinaryRegionOp(op->getRegion(1));
  if (select == nullptr || select->getName().getStringRef() != "stablehlo.compare" ||
      scatter == nullptr || !IsScalarOp(scatter->getName().getStringRef())) {
    return absl::UnimplementedError(absl::StrCat(
        ImportState::Where(op),
        ": a select_and_scatter whose select is not one compare and whose scatter is not one "
        "elementwise op of their two arguments (max and min pooling's gradients are)"));
  }
  TESSERA_ASSIGN_OR_RETURN(Value operand, state.Operand(op, 0));
  TESSERA_ASSIGN_OR_RETURN(Value source, state.Operand(op, 1));
  TESSERA_ASSIGN_OR_RETURN(Value init, state.Operand(op, 2));
  const mlir::Location loc = op->getLoc();
  const int64_t rank = operand_type.getRank();
  const llvm::ArrayRef<int64_t> shape = operand_type.getShape();
  mlir::OpBuilder& builder = state.builder();
  if (result_type.getNumElements() == 0 || source_type.getNumElements() == 0) {
    state.Map(op->getResult(0), BuildElementwise(state, loc, result_type, {init}, {},
                                                 [](mlir::OpBuilder&, mlir::Location,
                                                    mlir::ValueRange x) { return x[0]; }));
    return absl::OkStatus();
  }
  if (std::optional<std::vector<int64_t>> padded = SlicedShape(plan, operand_type, source_type)) {
    TESSERA_ASSIGN_OR_RETURN(
        Value result,
        SlicedSelectAndScatter(state, loc, plan, *padded, select, scatter, operand_type,
                               source_type, result_type, operand, source, init));
    state.Map(op->getResult(0), result);
    return absl::OkStatus();
  }

  // Each window's pick: (kept value, its offset in the operand; -1 while none).
  mlir::RankedTensorType new_operand = ImportState::NewType(operand_type);
  auto picks_type = mlir::RankedTensorType::get(source_type.getShape(), builder.getI64Type());
  auto kept_type =
      mlir::RankedTensorType::get(source_type.getShape(), new_operand.getElementType());
  Value none = state.Fill(loc, picks_type, builder.getI64IntegerAttr(-1));
  Value kept0 =
      state.Fill(loc, kept_type,
                 mlir::cast<mlir::TypedAttr>(builder.getZeroAttr(new_operand.getElementType())));
  absl::Status status;
  auto picking = WindowLoops(
      state, loc, plan, {kept0, none},
      [&](mlir::OpBuilder& b, mlir::Location l, mlir::ValueRange args) {
        Value inside = mlir::arith::ConstantIntOp::create(b, l, b.getI1Type(), 1);
        llvm::SmallVector<Value> position;
        for (int64_t d = 0; d < rank; ++d) {
          const WindowRead p = ReadInWindow(b, l, mlir::linalg::IndexOp::create(b, l, d),
                                            mlir::linalg::IndexOp::create(b, l, rank + d),
                                            plan.strides[d], 1, plan.low[d], 1, shape[d]);
          inside = mlir::arith::AndIOp::create(b, l, inside, p.inside);
          position.push_back(p.index);
        }
        Value candidate = mlir::tensor::ExtractOp::create(b, l, operand, position);
        absl::StatusOr<Value> keep =
            BuildScalarOp(b, l, select, {args[1], candidate}, {element, element}, b.getI1Type());
        if (!keep.ok()) {
          status = keep.status();
          mlir::linalg::YieldOp::create(b, l, mlir::ValueRange{args[1], args[2]});
          return;
        }
        Value first = mlir::arith::CmpIOp::create(
            b, l, mlir::arith::CmpIPredicate::slt, args[2],
            mlir::arith::ConstantIntOp::create(b, l, b.getI64Type(), 0));
        Value take = mlir::arith::AndIOp::create(
            b, l, inside,
            mlir::arith::OrIOp::create(
                b, l, first,
                mlir::arith::XOrIOp::create(
                    b, l, *keep, mlir::arith::ConstantIntOp::create(b, l, b.getI1Type(), 1))));
        mlir::linalg::YieldOp::create(
            b, l,
            mlir::ValueRange{mlir::arith::SelectOp::create(b, l, take, candidate, args[1]),
                             mlir::arith::SelectOp::create(
                                 b, l, take, LinearOffset(b, l, position, shape), args[2])});
      });
  TESSERA_RETURN_IF_ERROR(status);
  Value picks = picking.getResult(1);

  // Each operand element: the init, then scatter(acc, source) of each window that picked it, in
  // the windows' row-major order (k' = window - 1 - k runs them forward).
  Value acc =
      BuildElementwise(state, loc, result_type, {init}, {},
                       [](mlir::OpBuilder&, mlir::Location, mlir::ValueRange x) { return x[0]; });
  auto scattering = WindowLoops(
      state, loc, plan, {acc}, [&](mlir::OpBuilder& b, mlir::Location l, mlir::ValueRange args) {
        auto index = [&](int64_t v) { return mlir::arith::ConstantIndexOp::create(b, l, v); };
        Value valid = mlir::arith::ConstantIntOp::create(b, l, b.getI1Type(), 1);
        llvm::SmallVector<Value> here, window_index;
        for (int64_t d = 0; d < rank; ++d) {
          here.push_back(mlir::linalg::IndexOp::create(b, l, d));
          // t = p + low - (window - 1 - k') = w * stride.
          Value t = mlir::arith::SubIOp::create(
              b, l, mlir::arith::AddIOp::create(b, l, here.back(), index(plan.low[d])),
              mlir::arith::SubIOp::create(b, l, index(plan.window[d] - 1),
                                          mlir::linalg::IndexOp::create(b, l, rank + d)));
          Value nonnegative =
              mlir::arith::CmpIOp::create(b, l, mlir::arith::CmpIPredicate::sge, t, index(0));
          Value clamped = mlir::arith::SelectOp::create(b, l, nonnegative, t, index(0));
          Value w = mlir::arith::DivUIOp::create(b, l, clamped, index(plan.strides[d]));
          Value ok = mlir::arith::AndIOp::create(
              b, l, nonnegative,
              mlir::arith::AndIOp::create(
                  b, l,
                  mlir::arith::CmpIOp::create(
                      b, l, mlir::arith::CmpIPredicate::eq,
                      mlir::arith::RemUIOp::create(b, l, clamped, index(plan.strides[d])),
                      index(0)),
                  mlir::arith::CmpIOp::create(b, l, mlir::arith::CmpIPredicate::slt, w,
                                              index(source_type.getDimSize(d)))));
          valid = mlir::arith::AndIOp::create(b, l, valid, ok);
          window_index.push_back(mlir::arith::SelectOp::create(b, l, ok, w, index(0)));
        }
        Value picked = mlir::tensor::ExtractOp::create(b, l, picks, window_index);
        Value mine = mlir::arith::AndIOp::create(
            b, l, valid,
            mlir::arith::CmpIOp::create(b, l, mlir::arith::CmpIPredicate::eq, picked,
                                        LinearOffset(b, l, here, shape)));
        Value value = mlir::tensor::ExtractOp::create(b, l, source, window_index);
        absl::StatusOr<Value> combined =
            BuildScalarOp(b, l, scatter, {args[1], value}, {scattered, scattered}, scattered);
        if (!combined.ok()) {
          status = combined.status();
          mlir::linalg::YieldOp::create(b, l, args[1]);
          return;
        }
        mlir::linalg::YieldOp::create(
            b, l,
            Value(mlir::arith::SelectOp::create(b, l, mine, RoundedStep(b, l, *combined, scattered),
                                                args[1])));
      });
  TESSERA_RETURN_IF_ERROR(status);
  state.Map(op->getResult(0), scattering.getResult(0));
  return absl::OkStatus();
}

}  // namespace

void AddReduceWindowConversions(ConversionTable& table) {
  table["stablehlo.reduce_window"] = ConvertReduceWindow;
  table["stablehlo.select_and_scatter"] = ConvertSelectAndScatter;
}

}  // namespace tessera::compiler::stablehlo
