// stablehlo.reduce_window (cumsum / cumprod / cummax, pooling): one linalg.generic whose loops are
// the result's dimensions (parallel) and the window's (reduction, row-major), reading the operand
// at each window position (a tensor.extract of the captured operand: the op runs whole on every
// device, ReplicatePositionalOps in partition.cc) or the init value where the position falls in
// the padding or between dilated elements, combined into the init by the body's one op.
//
// stablehlo.select_and_scatter (max pooling's gradient) in two such generics: one over the
// windows picks each window's element by the select body (the first of the window in row-major
// order that select(kept, candidate) keeps, padding never picked), as its offset in the operand;
// one over the operand adds into each element (by the scatter body, from the init) the source
// value of every window that picked it, in the windows' row-major order, as XLA does.

#include <cstdint>
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

absl::Status ConvertReduceWindow(ImportState& state, mlir::Operation* op) {
  if (op->getNumOperands() != 2) {
    return absl::UnimplementedError(absl::StrCat(
        ImportState::Where(op), ": a reduce_window of several operands is not supported"));
  }
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
        mlir::linalg::YieldOp::create(b, l, *combined);
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
            b, l, Value(mlir::arith::SelectOp::create(b, l, mine, *combined, args[1])));
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
