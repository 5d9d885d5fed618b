// stablehlo.reduce_window (cumsum / cumprod / cummax, pooling): one linalg.generic whose loops are
// the result's dimensions (parallel) and the window's (reduction, row-major), reading the operand
// at each window position (a tensor.extract of the captured operand: the op runs whole on every
// device, ReplicatePositionalOps in partition.cc) or the init value where the position falls in
// the padding or between dilated elements, combined into the init by the body's one op.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
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

// Attribute `name` (an array of `rank` i64 in [minimum, ...)), or `fallback` in every dimension
// when absent.
absl::StatusOr<std::vector<int64_t>> DimensionsAttr(mlir::Operation* op, std::string_view name,
                                                    int64_t rank, int64_t fallback,
                                                    int64_t minimum) {
  if (!ImportState::GetAttr(op, name)) return std::vector<int64_t>(rank, fallback);
  TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> values, ImportState::I64ArrayAttr(op, name));
  if (static_cast<int64_t>(values.size()) != rank) {
    return absl::InvalidArgumentError(absl::StrCat(ImportState::Where(op), ": ", std::string(name),
                                                   " has ", values.size(),
                                                   " values for an operand of rank ", rank));
  }
  for (int64_t v : values) {
    if (v < minimum || v > (int64_t{1} << 40)) {
      return absl::InvalidArgumentError(absl::StrCat(
          ImportState::Where(op), ": ", std::string(name), " value ", v, " out of range"));
    }
  }
  return values;
}

// The plan, checked against the operand's and result's shapes.
absl::StatusOr<WindowPlan> PlanWindow(mlir::Operation* op, mlir::RankedTensorType operand,
                                      mlir::RankedTensorType result) {
  const int64_t rank = operand.getRank();
  WindowPlan plan;
  TESSERA_ASSIGN_OR_RETURN(plan.window, DimensionsAttr(op, "window_dimensions", rank, 1, 1));
  TESSERA_ASSIGN_OR_RETURN(plan.strides, DimensionsAttr(op, "window_strides", rank, 1, 1));
  TESSERA_ASSIGN_OR_RETURN(plan.base_dilations, DimensionsAttr(op, "base_dilations", rank, 1, 1));
  TESSERA_ASSIGN_OR_RETURN(plan.window_dilations,
                           DimensionsAttr(op, "window_dilations", rank, 1, 1));
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
    if (result.getDimSize(d) != size) {
      return absl::InvalidArgumentError(absl::StrCat(ImportState::Where(op), ": result dimension ",
                                                     d, " is ", result.getDimSize(d),
                                                     "; the window makes ", size));
    }
  }
  int64_t reads = 1;
  for (int64_t d = 0; d < rank; ++d) {
    for (int64_t factor : {result.getDimSize(d), plan.window[d]}) {
      if (factor > 0 &&
          (__builtin_mul_overflow(reads, factor, &reads) || reads > kMaxWindowReads)) {
        return absl::UnimplementedError(
            absl::StrCat(ImportState::Where(op),
                         ": a reduce_window reading more than 2^36 elements (its "
                         "result's elements times its window's)"));
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
  TESSERA_ASSIGN_OR_RETURN(WindowPlan plan, PlanWindow(op, operand_type, result_type));
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
        auto index = [&](int64_t v) { return mlir::arith::ConstantIndexOp::create(b, l, v); };
        Value valid = mlir::arith::ConstantIntOp::create(b, l, b.getI1Type(), 1);
        llvm::SmallVector<Value> position;
        for (int64_t d = 0; d < rank; ++d) {
          // q = i * stride + k * window_dilation - low, in the dilated, padded operand.
          Value q = mlir::arith::SubIOp::create(
              b, l,
              mlir::arith::AddIOp::create(
                  b, l,
                  mlir::arith::MulIOp::create(b, l, mlir::linalg::IndexOp::create(b, l, d),
                                              index(plan.strides[d])),
                  mlir::arith::MulIOp::create(b, l, mlir::linalg::IndexOp::create(b, l, rank + d),
                                              index(plan.window_dilations[d]))),
              index(plan.low[d]));
          const int64_t dilated = (operand_type.getDimSize(d) - 1) * plan.base_dilations[d] + 1;
          Value inside = mlir::arith::AndIOp::create(
              b, l, mlir::arith::CmpIOp::create(b, l, mlir::arith::CmpIPredicate::sge, q, index(0)),
              mlir::arith::CmpIOp::create(b, l, mlir::arith::CmpIPredicate::slt, q,
                                          index(dilated)));
          // Clamped into range before dividing (an out-of-range q is not read anyway).
          Value clamped = mlir::arith::SelectOp::create(b, l, inside, q, index(0));
          Value element_index = clamped;
          if (plan.base_dilations[d] > 1) {
            Value on_element = mlir::arith::CmpIOp::create(
                b, l, mlir::arith::CmpIPredicate::eq,
                mlir::arith::RemUIOp::create(b, l, clamped, index(plan.base_dilations[d])),
                index(0));
            inside = mlir::arith::AndIOp::create(b, l, inside, on_element);
            element_index =
                mlir::arith::DivUIOp::create(b, l, clamped, index(plan.base_dilations[d]));
          }
          valid = mlir::arith::AndIOp::create(b, l, valid, inside);
          position.push_back(element_index);
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

}  // namespace

void AddReduceWindowConversions(ConversionTable& table) {
  table["stablehlo.reduce_window"] = ConvertReduceWindow;
}

}  // namespace tessera::compiler::stablehlo
