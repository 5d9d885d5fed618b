// The StableHLO ops that cut, pad, join or reverse dimensions: slice -> tensor.extract_slice,
// pad -> tensor.pad (after a tensor.extract_slice for negative padding), concatenate ->
// tensor.concat; compiler/slice_sharding.cc shards the dimensions they leave whole. reverse is a
// linalg.generic reading its operand at the mirrored position (tensor.extract): the partitioner
// runs it on the whole operand (ReplicatePositionalOps, partition.cc).

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/algorithm/container.h"
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

// `input` (of `in`'s shape) sliced to `out`: the input itself when whole, a fill when a splat,
// else a tensor.extract_slice.
Value Slice(ImportState& state, mlir::Location loc, Value input, mlir::RankedTensorType in,
            mlir::RankedTensorType out, llvm::ArrayRef<int64_t> start,
            llvm::ArrayRef<int64_t> strides) {
  mlir::RankedTensorType new_out = ImportState::NewType(out);
  if (in.getShape() == out.getShape()) return input;
  if (mlir::TypedAttr splat = state.SplatOf(input)) return state.Fill(loc, new_out, splat);
  if (out.getNumElements() == 0) return state.Empty(loc, new_out);
  return SliceOf(state, loc, input, start, out.getShape(), strides);
}

absl::Status ConvertSlice(ImportState& state, mlir::Operation* op) {
  TESSERA_RETURN_IF_ERROR(ImportState::CheckArity(op, 1, 1));
  TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType in, state.OperandType(op, 0));
  TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType out, state.ResultType(op, 0));
  TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> start,
                           ImportState::I64ArrayAttr(op, "start_indices"));
  TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> limit,
                           ImportState::I64ArrayAttr(op, "limit_indices"));
  TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> strides, ImportState::I64ArrayAttr(op, "strides"));
  const size_t rank = in.getRank();
  bool valid = start.size() == rank && limit.size() == rank && strides.size() == rank &&
               out.getRank() == in.getRank() && in.getElementType() == out.getElementType();
  for (size_t d = 0; valid && d < rank; ++d) {
    // ceil((limit - start) / stride), without overflow for a stride near int64's limit.
    valid = start[d] >= 0 && start[d] <= limit[d] && limit[d] <= in.getDimSize(d) &&
            strides[d] > 0 &&
            out.getDimSize(d) ==
                (limit[d] == start[d] ? 0 : (limit[d] - start[d] - 1) / strides[d] + 1);
  }
  if (!valid) {
    return absl::InvalidArgumentError(
        absl::StrCat(ImportState::Where(op), ": start_indices [", absl::StrJoin(start, ", "),
                     "], limit_indices [", absl::StrJoin(limit, ", "), "] and strides [",
                     absl::StrJoin(strides, ", "), "] do not slice ", Dims(in.getShape()), " into ",
                     Dims(out.getShape())));
  }
  TESSERA_ASSIGN_OR_RETURN(Value input, state.Operand(op, 0));
  state.Map(op->getResult(0), Slice(state, op->getLoc(), input, in, out, start, strides));
  return absl::OkStatus();
}

// stablehlo.pad: negative edge padding cuts (a slice first), positive pads with the padding value,
// which must be a constant (JAX pads with constants); interior padding is UNIMPLEMENTED.
absl::Status ConvertPad(ImportState& state, mlir::Operation* op) {
  TESSERA_RETURN_IF_ERROR(ImportState::CheckArity(op, 2, 1));
  TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType in, state.OperandType(op, 0));
  TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType value_type, state.OperandType(op, 1));
  TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType out, state.ResultType(op, 0));
  TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> low,
                           ImportState::I64ArrayAttr(op, "edge_padding_low"));
  TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> high,
                           ImportState::I64ArrayAttr(op, "edge_padding_high"));
  TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> interior,
                           ImportState::I64ArrayAttr(op, "interior_padding"));
  const size_t rank = in.getRank();
  bool valid = low.size() == rank && high.size() == rank && interior.size() == rank &&
               value_type.getRank() == 0 && out.getRank() == in.getRank() &&
               in.getElementType() == out.getElementType() &&
               value_type.getElementType() == in.getElementType();
  // What is kept of each dimension, and the padding added on each side (in int64: the checks
  // bound every size by the operand's and result's, whose byte counts fit).
  std::vector<int64_t> cut_start(rank, 0), kept(rank, 0), pad_low(rank, 0), pad_high(rank, 0);
  std::vector<int64_t> dilated_shape(rank, 0);
  for (size_t d = 0; valid && d < rank; ++d) {
    valid = interior[d] >= 0 && interior[d] < (int64_t{1} << 62) && low[d] > -(int64_t{1} << 62) &&
            low[d] < (int64_t{1} << 62) && high[d] > -(int64_t{1} << 62) &&
            high[d] < (int64_t{1} << 62);
    if (!valid) break;
    // With interior padding: (size - 1) * (interior + 1) + 1 elements before the edges'.
    int64_t size = in.getDimSize(d);
    if (interior[d] > 0 && size > 0) {
      valid =
          !__builtin_mul_overflow(size - 1, interior[d] + 1, &size) && size < (int64_t{1} << 62);
      if (!valid) break;
      size += 1;
    }
    dilated_shape[d] = size;
    cut_start[d] = low[d] < 0 ? -low[d] : 0;
    const int64_t cut_end = high[d] < 0 ? -high[d] : 0;
    kept[d] = size - cut_start[d] - cut_end;
    pad_low[d] = low[d] > 0 ? low[d] : 0;
    pad_high[d] = high[d] > 0 ? high[d] : 0;
    // Each term is below 2^62, and the sum is checked for overflow.
    int64_t padded = 0;
    valid = kept[d] >= 0 && !__builtin_add_overflow(pad_low[d], kept[d], &padded) &&
            !__builtin_add_overflow(padded, pad_high[d], &padded) && out.getDimSize(d) == padded;
  }
  if (!valid) {
    return absl::InvalidArgumentError(
        absl::StrCat(ImportState::Where(op), ": edge_padding_low [", absl::StrJoin(low, ", "),
                     "], edge_padding_high [", absl::StrJoin(high, ", "),
                     "] and interior_padding [", absl::StrJoin(interior, ", "), "] do not pad ",
                     Dims(in.getShape()), " into ", Dims(out.getShape())));
  }
  TESSERA_ASSIGN_OR_RETURN(Value input, state.Operand(op, 0));
  TESSERA_ASSIGN_OR_RETURN(Value padding, state.Operand(op, 1));
  mlir::TypedAttr constant = state.SplatOf(padding);
  mlir::Location loc = op->getLoc();
  Value holes;  // with interior padding and a computed value: i1, false in the holes
  if (absl::c_any_of(interior, [](int64_t i) { return i != 0; })) {
    // The dilated operand is built whole before negative edges cut it: refused where that would
    // dwarf both the operand and the result (a hostile interior padding cut away again).
    int64_t dilated_elements = 1;
    for (int64_t size : dilated_shape) {
      if (__builtin_mul_overflow(dilated_elements, size, &dilated_elements)) {
        dilated_elements = std::numeric_limits<int64_t>::max();
        break;
      }
    }
    if (dilated_elements / 4 > std::max(in.getNumElements(), out.getNumElements())) {
      return absl::UnimplementedError(
          absl::StrCat(ImportState::Where(op), ": interior padding [",
                       absl::StrJoin(interior, ", "), "] making ", dilated_elements,
                       " elements that negative edge padding cuts to ", out.getNumElements()));
    }
    // The operand with the interior padding, then the edges as without (the gradient of a
    // strided slice, of average pooling). A computed padding value fills the holes as it fills
    // the edges: `holes` says where they are.
    mlir::OpBuilder& b = state.builder();
    input = DilateDims(state, loc, input, interior,
                       constant ? constant : b.getZeroAttr(SignlessType(in.getElementType())));
    if (!constant) {
      holes = DilateDims(state, loc,
                         state.Fill(loc, mlir::RankedTensorType::get(in.getShape(), b.getI1Type()),
                                    b.getBoolAttr(true)),
                         interior, b.getBoolAttr(false));
    }
    in = mlir::RankedTensorType::get(dilated_shape, in.getElementType());
  }
  mlir::RankedTensorType new_out = ImportState::NewType(out);
  auto kept_type = mlir::RankedTensorType::get(kept, in.getElementType());
  Value core = Slice(state, loc, input, in, kept_type, cut_start, std::vector<int64_t>(rank, 1));
  if (kept_type.getShape() == out.getShape() && !holes) {
    state.Map(op->getResult(0), core);
    return absl::OkStatus();
  }
  mlir::OpBuilder& b = state.builder();
  // `value` padded with the constant `fill` into `type`.
  auto pad_with = [&](Value value, mlir::TypedAttr fill, mlir::RankedTensorType type) -> Value {
    return PadWith(state, loc, value, type, pad_low, pad_high, fill);
  };
  if (constant) {
    state.Map(op->getResult(0), kept_type.getNumElements() == 0 || state.SplatOf(core) == constant
                                    ? state.Fill(loc, new_out, constant)
                                    : pad_with(core, constant, new_out));
    return absl::OkStatus();
  }
  // A computed padding value (jnp.pad's constant_values from an argument): the value broadcast
  // where a pad of the kept part with `true` says false; ops every platform runs sharded.
  llvm::SmallVector<int64_t> all_dims;
  for (size_t d = 0; d < rank; ++d) all_dims.push_back(static_cast<int64_t>(d));
  Value everywhere =
      mlir::linalg::BroadcastOp::create(b, loc, padding, state.Empty(loc, new_out), all_dims)
          ->getResult(0);
  if (kept_type.getNumElements() == 0) {
    state.Map(op->getResult(0), everywhere);
    return absl::OkStatus();
  }
  auto flags = [&](llvm::ArrayRef<int64_t> shape) {
    return mlir::RankedTensorType::get(shape, b.getI1Type());
  };
  Value kept_flags = holes ? Slice(state, loc, holes, flags(in.getShape()), flags(kept), cut_start,
                                   std::vector<int64_t>(rank, 1))
                           : state.Fill(loc, flags(kept), b.getBoolAttr(true));
  Value inside = kept_type.getShape() == out.getShape()
                     ? kept_flags
                     : pad_with(kept_flags, b.getBoolAttr(false), flags(new_out.getShape()));
  Value zeros = kept_type.getShape() == out.getShape()
                    ? core
                    : pad_with(core, b.getZeroAttr(new_out.getElementType()), new_out);
  state.Map(op->getResult(0), mlir::arith::SelectOp::create(b, loc, inside, zeros, everywhere));
  return absl::OkStatus();
}

absl::Status ConvertConcatenate(ImportState& state, mlir::Operation* op) {
  if (op->getNumOperands() == 0 || op->getNumResults() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(ImportState::Where(op), ": concatenate takes one or more operands"));
  }
  TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType out, state.ResultType(op, 0));
  auto dim = mlir::dyn_cast_or_null<mlir::IntegerAttr>(ImportState::GetAttr(op, "dimension"));
  const int64_t d =
      dim && dim.getValue().getSignificantBits() <= 64 ? dim.getValue().getSExtValue() : -1;
  bool valid = d >= 0 && d < out.getRank();
  int64_t total = 0;
  llvm::SmallVector<Value> inputs;
  for (unsigned i = 0; valid && i < op->getNumOperands(); ++i) {
    TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType in, state.OperandType(op, i));
    valid = in.getRank() == out.getRank() && in.getElementType() == out.getElementType();
    for (int64_t k = 0; valid && k < out.getRank(); ++k) {
      valid = k == d || in.getDimSize(k) == out.getDimSize(k);
    }
    if (!valid) break;
    valid = !__builtin_add_overflow(total, in.getDimSize(d), &total);  // many operands
    if (!valid) break;
    if (in.getNumElements() == 0) continue;
    TESSERA_ASSIGN_OR_RETURN(Value input, state.Operand(op, i));
    inputs.push_back(input);
  }
  if (!valid || total != out.getDimSize(d)) {
    return absl::InvalidArgumentError(absl::StrCat(ImportState::Where(op),
                                                   ": the operands do not concatenate into ",
                                                   Dims(out.getShape()), " along dimension ", d));
  }
  mlir::Location loc = op->getLoc();
  if (inputs.empty()) {
    state.Map(op->getResult(0), state.Empty(loc, ImportState::NewType(out)));
  } else if (inputs.size() == 1) {
    state.Map(op->getResult(0), inputs[0]);
  } else {
    state.Map(op->getResult(0), mlir::tensor::ConcatOp::create(state.builder(), loc,
                                                               ImportState::NewType(out), d, inputs)
                                    .getResult());
  }
  return absl::OkStatus();
}

absl::Status ConvertReverse(ImportState& state, mlir::Operation* op) {
  TESSERA_RETURN_IF_ERROR(ImportState::CheckArity(op, 1, 1));
  TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType in, state.OperandType(op, 0));
  TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType out, state.ResultType(op, 0));
  TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> dims, ImportState::I64ArrayAttr(op, "dimensions"));
  std::vector<bool> reversed(in.getRank(), false);
  bool valid = in == out;
  for (int64_t d : dims) {
    valid = valid && d >= 0 && d < in.getRank() && !reversed[d];
    if (valid) reversed[d] = true;
  }
  if (!valid) {
    return absl::InvalidArgumentError(
        absl::StrCat(ImportState::Where(op), ": dimensions [", absl::StrJoin(dims, ", "),
                     "] do not reverse ", Dims(in.getShape()), " into ", Dims(out.getShape())));
  }
  TESSERA_ASSIGN_OR_RETURN(Value input, state.Operand(op, 0));
  if (dims.empty() || state.SplatOf(input) || in.getNumElements() == 0) {
    state.Map(op->getResult(0), input);
    return absl::OkStatus();
  }
  Value result = ReverseDims(state, op->getLoc(), input, out, reversed);
  state.Map(op->getResult(0), result);
  return absl::OkStatus();
}

}  // namespace

void AddSlicingConversions(ConversionTable& table) {
  table["stablehlo.slice"] = ConvertSlice;
  table["stablehlo.pad"] = ConvertPad;
  table["stablehlo.concatenate"] = ConvertConcatenate;
  table["stablehlo.reverse"] = ConvertReverse;
}

}  // namespace tessera::compiler::stablehlo
