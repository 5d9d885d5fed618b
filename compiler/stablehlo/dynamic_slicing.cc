// The StableHLO ops that slice at offsets the program computes (a scan over xs, indexing with a
// traced index): dynamic_slice and dynamic_update_slice become linalg.generic ops that take the
// start indices as rank-0 inputs and read the sliced tensor at the shifted position
// (tensor.extract). The partitioner runs them on whole tensors (ReplicatePositionalOps,
// partition.cc). Start indices are clamped as the StableHLO spec says: into [0, dim - size].

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "compiler/stablehlo/import_state.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace tessera::compiler::stablehlo {
namespace {

using mlir::Value;

std::string Dims(llvm::ArrayRef<int64_t> dims) { return absl::StrJoin(dims, "x"); }

// The start indices of `op` (operands `first`...): their new values, each a rank-0 integer
// tensor, and whether each is unsigned. INVALID_ARGUMENT: not one per dimension of `rank`, or not
// a rank-0 integer.
absl::Status ReadStarts(ImportState& state, mlir::Operation* op, unsigned first, int64_t rank,
                        std::vector<Value>& starts, std::vector<bool>& is_unsigned) {
  if (op->getNumOperands() != first + rank) {
    return absl::InvalidArgumentError(absl::StrCat(ImportState::Where(op), ": ",
                                                   op->getNumOperands() - first,
                                                   " start indices for an operand of rank ", rank));
  }
  for (unsigned i = first; i < op->getNumOperands(); ++i) {
    TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType type, state.OperandType(op, i));
    if (type.getRank() != 0 || !mlir::isa<mlir::IntegerType>(type.getElementType()) ||
        type.getElementType().isInteger(1)) {
      return absl::InvalidArgumentError(absl::StrCat(ImportState::Where(op), ": start index ",
                                                     i - first, " is not a rank-0 integer"));
    }
    TESSERA_ASSIGN_OR_RETURN(Value start, state.Operand(op, i));
    starts.push_back(start);
    is_unsigned.push_back(type.getElementType().isUnsignedInteger());
  }
  return absl::OkStatus();
}

// `start` (an integer scalar, unsigned when `is_unsigned`) clamped into [0, limit], as an index.
// Clamped in its own type first: an index may be narrower (32 bits on SPIR-V), and a u64 at or
// above 2^63 is no negative number.
Value ClampedIndex(mlir::OpBuilder& b, mlir::Location loc, Value start, bool is_unsigned,
                   int64_t limit) {
  auto type = mlir::cast<mlir::IntegerType>(start.getType());
  const unsigned width = type.getWidth();
  // Whether `limit` fits the start's type (else every start is below it: no upper clamp).
  const bool limit_fits =
      width >= 64 || limit <= (int64_t{1} << (is_unsigned ? width : width - 1)) - 1;
  auto constant = [&](int64_t v) {
    return mlir::arith::ConstantOp::create(b, loc, b.getIntegerAttr(type, v)).getResult();
  };
  Value clamped = start;
  if (!is_unsigned) clamped = mlir::arith::MaxSIOp::create(b, loc, clamped, constant(0));
  if (limit_fits) {
    clamped = is_unsigned
                  ? mlir::arith::MinUIOp::create(b, loc, clamped, constant(limit)).getResult()
                  : mlir::arith::MinSIOp::create(b, loc, clamped, constant(limit)).getResult();
  }
  return mlir::arith::IndexCastUIOp::create(b, loc, b.getIndexType(), clamped);
}

// stablehlo.dynamic_slice: result[i] = operand[i + clamp(start, 0, dim - slice_size)].
absl::Status ConvertDynamicSlice(ImportState& state, mlir::Operation* op) {
  if (op->getNumOperands() < 1 || op->getNumResults() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        ImportState::Where(op), ": expected an operand, its start indices and 1 result"));
  }
  TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType in, state.OperandType(op, 0));
  TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType out, state.ResultType(op, 0));
  TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> sizes,
                           ImportState::I64ArrayAttr(op, "slice_sizes"));
  bool valid = sizes.size() == static_cast<size_t>(in.getRank()) && out.getRank() == in.getRank() &&
               in.getElementType() == out.getElementType();
  for (size_t d = 0; valid && d < sizes.size(); ++d) {
    valid = sizes[d] >= 0 && sizes[d] <= in.getDimSize(d) && out.getDimSize(d) == sizes[d];
  }
  if (!valid) {
    return absl::InvalidArgumentError(
        absl::StrCat(ImportState::Where(op), ": slice_sizes [", absl::StrJoin(sizes, ", "),
                     "] do not slice ", Dims(in.getShape()), " into ", Dims(out.getShape())));
  }
  std::vector<Value> starts;
  std::vector<bool> is_unsigned;
  TESSERA_RETURN_IF_ERROR(ReadStarts(state, op, 1, in.getRank(), starts, is_unsigned));
  TESSERA_ASSIGN_OR_RETURN(Value input, state.Operand(op, 0));
  if (in.getShape() == out.getShape() || out.getNumElements() == 0) {
    // The whole operand (every start clamps to 0), or nothing.
    state.Map(op->getResult(0), out.getNumElements() == 0
                                    ? state.Empty(op->getLoc(), ImportState::NewType(out))
                                    : input);
    return absl::OkStatus();
  }
  Value result = BuildElementwise(
      state, op->getLoc(), out, starts, {},
      [&](mlir::OpBuilder& b, mlir::Location loc, mlir::ValueRange scalars) -> Value {
        llvm::SmallVector<Value> position;
        for (int64_t d = 0; d < in.getRank(); ++d) {
          Value start =
              ClampedIndex(b, loc, scalars[d], is_unsigned[d], in.getDimSize(d) - sizes[d]);
          Value index = mlir::linalg::IndexOp::create(b, loc, d);
          position.push_back(mlir::arith::AddIOp::create(b, loc, index, start));
        }
        return mlir::tensor::ExtractOp::create(b, loc, input, position);
      });
  state.Map(op->getResult(0), result);
  return absl::OkStatus();
}

// stablehlo.dynamic_update_slice: the operand with `update` written at clamp(start, 0, dim -
// update_dim): inside that window result[i] = update[i - start], elsewhere operand[i].
absl::Status ConvertDynamicUpdateSlice(ImportState& state, mlir::Operation* op) {
  if (op->getNumOperands() < 2 || op->getNumResults() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(ImportState::Where(op),
                     ": expected an operand, an update, its start indices and 1 result"));
  }
  TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType in, state.OperandType(op, 0));
  TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType update_type, state.OperandType(op, 1));
  TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType out, state.ResultType(op, 0));
  bool valid = in == out && update_type.getRank() == in.getRank() &&
               update_type.getElementType() == in.getElementType();
  for (int64_t d = 0; valid && d < in.getRank(); ++d) {
    valid = update_type.getDimSize(d) <= in.getDimSize(d);
  }
  if (!valid) {
    return absl::InvalidArgumentError(absl::StrCat(
        ImportState::Where(op), ": an update of ", Dims(update_type.getShape()),
        " does not fit an operand of ", Dims(in.getShape()), " into ", Dims(out.getShape())));
  }
  std::vector<Value> starts;
  std::vector<bool> is_unsigned;
  TESSERA_RETURN_IF_ERROR(ReadStarts(state, op, 2, in.getRank(), starts, is_unsigned));
  TESSERA_ASSIGN_OR_RETURN(Value input, state.Operand(op, 0));
  TESSERA_ASSIGN_OR_RETURN(Value update, state.Operand(op, 1));
  if (update_type.getNumElements() == 0) {  // nothing written
    state.Map(op->getResult(0), input);
    return absl::OkStatus();
  }
  if (update_type.getShape() == in.getShape()) {  // written whole (every start clamps to 0)
    state.Map(op->getResult(0), update);
    return absl::OkStatus();
  }
  std::vector<Value> inputs = {input};
  inputs.insert(inputs.end(), starts.begin(), starts.end());
  Value result = BuildElementwise(
      state, op->getLoc(), out, inputs, {},
      [&](mlir::OpBuilder& b, mlir::Location loc, mlir::ValueRange scalars) -> Value {
        Value inside = mlir::arith::ConstantIntOp::create(b, loc, 1, 1);
        llvm::SmallVector<Value> position;
        Value zero = mlir::arith::ConstantIndexOp::create(b, loc, 0);
        for (int64_t d = 0; d < in.getRank(); ++d) {
          const int64_t size = update_type.getDimSize(d);
          Value start =
              ClampedIndex(b, loc, scalars[1 + d], is_unsigned[d], in.getDimSize(d) - size);
          Value index = mlir::linalg::IndexOp::create(b, loc, d);
          // i - start, in [0, size) inside the window; unsigned compare covers both ends.
          Value offset = mlir::arith::SubIOp::create(b, loc, index, start);
          Value bound = mlir::arith::ConstantIndexOp::create(b, loc, size);
          Value in_dim =
              mlir::arith::CmpIOp::create(b, loc, mlir::arith::CmpIPredicate::ult, offset, bound);
          inside = mlir::arith::AndIOp::create(b, loc, inside, in_dim);
          position.push_back(offset);
        }
        // Outside the window the update is read at 0 (in bounds) and not used.
        for (Value& index : position) {
          index = mlir::arith::SelectOp::create(b, loc, inside, index, zero);
        }
        Value written = mlir::tensor::ExtractOp::create(b, loc, update, position);
        return mlir::arith::SelectOp::create(b, loc, inside, written, scalars[0]);
      });
  state.Map(op->getResult(0), result);
  return absl::OkStatus();
}

}  // namespace

void AddDynamicSlicingConversions(ConversionTable& table) {
  table["stablehlo.dynamic_slice"] = ConvertDynamicSlice;
  table["stablehlo.dynamic_update_slice"] = ConvertDynamicUpdateSlice;
}

}  // namespace tessera::compiler::stablehlo
