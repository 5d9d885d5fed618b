#ifndef TESSERA_COMPILER_STABLEHLO_IMPORT_STATE_H_
#define TESSERA_COMPILER_STABLEHLO_IMPORT_STATE_H_

// compiler/stablehlo/import_state.h: what the StableHLO importer's op converters share (internal
// to compiler/stablehlo/). The importer walks @main of the parsed program (its StableHLO ops
// unregistered, generic form) and builds a new @main in linalg / tensor / arith / math: each
// converter reads one StableHLO op, checks what it relies on (operand count, ranks, shapes,
// attributes: the input was never verified), and maps the op's results to new values.
//
// Types: tensors keep their shapes; unsigned integer element types become signless (arith's
// ops carry the signedness instead), so each converter reads the signedness from the old types.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "llvm/ADT/DenseMap.h"
#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"

namespace tessera::compiler::stablehlo {

// "file.py:12:3 (jit(f)/add)": the source position JAX recorded and the op's name-scope, or
// MLIR's printed location when it has neither.
std::string DescribeLocation(mlir::Location loc);

// The signless (or float) element type arith computes in for `type` (an unsigned integer becomes
// signless of its width; bf16 and f16 become f32, and ConvertOp rounds each such result to its
// precision: RoundToNarrowFloat; others are unchanged).
mlir::Type SignlessType(mlir::Type type);

class ImportState {
 public:
  explicit ImportState(mlir::OpBuilder& builder) : builder_(builder) {}

  mlir::OpBuilder& builder() { return builder_; }

  // "'stablehlo.add' at file.py:12:3 (jit(f)/add)", to start an error message about `op`.
  static std::string Where(mlir::Operation* op);

  // The new value of operand `i` of `op` (already converted). INVALID_ARGUMENT when the op has no
  // such operand or it was not defined before `op`.
  absl::StatusOr<mlir::Value> Operand(mlir::Operation* op, unsigned i);
  // The old (StableHLO) type of operand `i` / result `i` as a ranked static tensor.
  // INVALID_ARGUMENT: not a ranked tensor, a byte count past int64, or a missing operand;
  // UNIMPLEMENTED: a dynamic
  // dimension (named) or an element type outside f16, bf16, f32, f64, i1 and 8-64 bit integers.
  absl::StatusOr<mlir::RankedTensorType> OperandType(mlir::Operation* op, unsigned i);
  absl::StatusOr<mlir::RankedTensorType> ResultType(mlir::Operation* op, unsigned i);
  // INVALID_ARGUMENT unless `op` has exactly `operands` operands and `results` results.
  static absl::Status CheckArity(mlir::Operation* op, unsigned operands, unsigned results);

  // The tensor type of the new value for an old type: same shape, SignlessType elements.
  static mlir::RankedTensorType NewType(mlir::RankedTensorType old);

  void Map(mlir::Value old_value, mlir::Value new_value) { values_[old_value] = new_value; }
  // Forgets `old_value`'s new value (one the importer erased).
  void Unmap(mlir::Value old_value) { values_.erase(old_value); }
  // The new value of `old_value`; null when not mapped.
  mlir::Value Lookup(mlir::Value old_value) const { return values_.lookup(old_value); }
  // A new value known to hold one scalar everywhere (a splat constant): converters fold it (a
  // broadcast of it becomes a fill, a reduction's init its scalar).
  void SetSplat(mlir::Value new_value, mlir::TypedAttr scalar) { splats_[new_value] = scalar; }
  mlir::TypedAttr SplatOf(mlir::Value new_value) const {
    auto it = splats_.find(new_value);
    return it == splats_.end() ? mlir::TypedAttr() : it->second;
  }

  // A new value that is `source` with size-1 dimensions inserted at `inserted` (ascending): a
  // later squeeze of exactly those dimensions gives `source` back without computing anything.
  struct UnitOrigin {
    mlir::Value source;
    std::vector<int64_t> inserted;
  };
  void SetUnitOrigin(mlir::Value new_value, UnitOrigin origin) {
    unit_origins_[new_value] = std::move(origin);
  }
  const UnitOrigin* UnitOriginOf(mlir::Value new_value) const {
    auto it = unit_origins_.find(new_value);
    return it == unit_origins_.end() ? nullptr : &it->second;
  }

  // An attribute of `op`: from its properties (where generic form puts inherent attributes) or
  // its attribute dictionary; null when neither has it.
  static mlir::Attribute GetAttr(mlir::Operation* op, std::string_view name);
  // The text of an opaque attribute `name` of `op` (`#stablehlo.dot<...>` -> "dot<...>").
  // INVALID_ARGUMENT when missing or not opaque.
  static absl::StatusOr<std::string> OpaqueAttrText(mlir::Operation* op, std::string_view name);
  // An `array<i64: ...>` attribute. INVALID_ARGUMENT when missing or of another kind.
  static absl::StatusOr<std::vector<int64_t>> I64ArrayAttr(mlir::Operation* op,
                                                           std::string_view name);

  // An `array<i64: ...>` attribute of `count` values, each in [minimum, 2^40] (window sizes,
  // strides, dilations); `fallback` `count` times when `op` has no attribute `name`.
  // INVALID_ARGUMENT naming the attribute otherwise.
  static absl::StatusOr<std::vector<int64_t>> I64ArrayAttrOr(mlir::Operation* op,
                                                             std::string_view name, int64_t count,
                                                             int64_t fallback, int64_t minimum);

  // Inside a manual computation's body (shard_map): the axis sizes of its mesh, which its
  // collectives' device groups are over (grid axis i is mesh axis i); null elsewhere.
  void SetManualGrid(std::vector<int64_t> shape) { manual_grid_ = std::move(shape); }
  const std::vector<int64_t>* manual_grid() const {
    return manual_grid_ ? &*manual_grid_ : nullptr;
  }

  // tensor.empty of `type`.
  mlir::Value Empty(mlir::Location loc, mlir::RankedTensorType type);
  // A tensor of `type` filled with `scalar` (tensor.empty + linalg.fill), recorded as a splat.
  mlir::Value Fill(mlir::Location loc, mlir::RankedTensorType type, mlir::TypedAttr scalar);

 private:
  mlir::OpBuilder& builder_;
  llvm::DenseMap<mlir::Value, mlir::Value> values_;
  llvm::DenseMap<mlir::Value, mlir::TypedAttr> splats_;
  llvm::DenseMap<mlir::Value, UnitOrigin> unit_origins_;
  std::optional<std::vector<int64_t>> manual_grid_;
};

// `value` (a new tensor) with its dimensions in the order `order` (a linalg.transpose): itself
// when `order` is the identity.
mlir::Value PermuteDims(ImportState& state, mlir::Location loc, mlir::Value value,
                        llvm::ArrayRef<int64_t> order);
// `value` with each group of consecutive dimensions collapsed into one (tensor.collapse_shape):
// itself when every group is one dimension.
mlir::Value CollapseRuns(ImportState& state, mlir::Location loc, mlir::Value value,
                         llvm::ArrayRef<mlir::ReassociationIndices> groups);

// value[offsets : offsets + sizes * strides : strides] (a tensor.extract_slice of a new value); the
// value itself when `sizes` is all of it.
mlir::Value SliceOf(ImportState& state, mlir::Location loc, mlir::Value value,
                    llvm::ArrayRef<int64_t> offsets, llvm::ArrayRef<int64_t> sizes,
                    llvm::ArrayRef<int64_t> strides);

// `value` (a new value of old type `type`) with each dimension d where `reversed[d]` read from
// its end: a linalg.generic reading the mirrored position (tensor.extract), which the
// partitioner runs on the whole value (ReplicatePositionalOps, partition.cc).
mlir::Value ReverseDims(ImportState& state, mlir::Location loc, mlir::Value value,
                        mlir::RankedTensorType type, const std::vector<bool>& reversed);

// Where element `k` of window `i` reads an operand along one dimension, inside a linalg body:
// q = i * stride + k * window_dilation - low in the operand dilated by `base_dilation` (its
// extent `dilated_size`) and padded. `index` is the operand's element there (clamped into range
// when q is not one), `inside` whether q falls on an element: not in the padding, not between
// dilated elements.
struct WindowRead {
  mlir::Value index;
  mlir::Value inside;  // i1
};
WindowRead ReadInWindow(mlir::OpBuilder& b, mlir::Location loc, mlir::Value i, mlir::Value k,
                        int64_t stride, int64_t window_dilation, int64_t low, int64_t base_dilation,
                        int64_t dilated_size);

// `value` padded into `type` with `low` / `high` elements of the constant `fill` before / after
// each dimension (a tensor.pad; the padding is not negative).
mlir::Value PadWith(ImportState& state, mlir::Location loc, mlir::Value value,
                    mlir::RankedTensorType type, llvm::ArrayRef<int64_t> low,
                    llvm::ArrayRef<int64_t> high, mlir::TypedAttr fill);

// `value` with `interior[d]` elements of the constant `fill` between consecutive elements of
// dimension d (a size n becomes (n - 1) * (interior + 1) + 1): each such dimension split into
// [n, 1], padded to [n, interior + 1], joined and its tail cut (reshapes, a tensor.pad and a
// tensor.extract_slice, which keep the shardings of the other dimensions).
mlir::Value DilateDims(ImportState& state, mlir::Location loc, mlir::Value value,
                       llvm::ArrayRef<int64_t> interior, mlir::TypedAttr fill);

// Converts one StableHLO op (its operands already converted) into new ops at the builder's
// insertion point, mapping its results.
using OpConversion = std::function<absl::Status(ImportState&, mlir::Operation*)>;

// The conversions by op name: elementwise.cc, structural.cc, contraction.cc, gather_scatter.cc,
// slicing.cc, dynamic_slicing.cc, control_flow.cc, collectives.cc, reduce_window.cc, sort.cc,
// convolution.cc each add theirs.
using ConversionTable = absl::flat_hash_map<std::string, OpConversion>;
void AddElementwiseConversions(ConversionTable& table);
void AddStructuralConversions(ConversionTable& table);
void AddContractionConversions(ConversionTable& table);
void AddGatherConversions(ConversionTable& table);
void AddSlicingConversions(ConversionTable& table);
void AddDynamicSlicingConversions(ConversionTable& table);
void AddControlFlowConversions(ConversionTable& table);
void AddCollectiveConversions(ConversionTable& table);
void AddReduceWindowConversions(ConversionTable& table);
void AddSortConversions(ConversionTable& table);
void AddConvolutionConversions(ConversionTable& table);

// Converts `op` (of @main's body or of a region inside it) with its entry in the conversion
// table; UNIMPLEMENTED naming it when it has none (stablehlo_import.cc).
absl::Status ConvertOp(ImportState& state, mlir::Operation* op);

// One StableHLO elementwise op on scalars (the body of a linalg op): `name` ("stablehlo.add"),
// `args` in arith's types, `arg_types` / `result_type` the old element types (for signedness),
// `op` the StableHLO op (for its attributes: comparison direction). UNIMPLEMENTED for an op this
// converter does not know; INVALID_ARGUMENT for attributes it cannot read.
absl::StatusOr<mlir::Value> BuildScalarOp(mlir::OpBuilder& builder, mlir::Location loc,
                                          mlir::Operation* op, mlir::ValueRange args,
                                          mlir::TypeRange arg_types, mlir::Type result_type);
// stablehlo.convert of one element `x` (in arith's type) from old element type `from` to `to`.
mlir::Value ConvertElement(mlir::OpBuilder& builder, mlir::Location loc, mlir::Value x,
                           mlir::Type from, mlir::Type to);
// bf16 and f16: computed in f32, each result rounded to its precision (RoundToNarrowFloat).
inline bool IsNarrowFloat(mlir::Type type) { return type.isBF16() || type.isF16(); }

// `x` (f32) rounded to the nearest bf16 (ties to even; NaN stays NaN, quiet), as an f32: how a
// bf16 value is held while the program computes in f32. Integer ops only (every target has them).
mlir::Value RoundToBf16(mlir::OpBuilder& builder, mlir::Location loc, mlir::Value x);
// `x` (f32) rounded to the nearest f16 (ties to even, subnormals too; from 65520 up infinity;
// NaN quiet), as an f32. Integer ops and f32 adds only.
mlir::Value RoundToF16(mlir::OpBuilder& builder, mlir::Location loc, mlir::Value x);
// RoundToBf16 or RoundToF16, for `narrow` (bf16 or f16).
mlir::Value RoundToNarrowFloat(mlir::OpBuilder& builder, mlir::Location loc, mlir::Value x,
                               mlir::Type narrow);
// The f32 value of the f16 bits `h` (i16), exact (subnormals, infinities, NaN payloads); and the
// f16 bits (i16) of `x`, an f32 that RoundToF16 rounded.
mlir::Value F16BitsToF32(mlir::OpBuilder& builder, mlir::Location loc, mlir::Value h);
mlir::Value F32ToF16Bits(mlir::OpBuilder& builder, mlir::Location loc, mlir::Value x);
// The 16 bits (i16) of `x`, an f32 holding a value of `narrow` (bf16: the f32's upper half, a
// NaN's payload as it came; f16: F32ToF16Bits); and the f32 holding the `narrow` value of the
// bits `h` (i16), exact.
mlir::Value NarrowFloatBits(mlir::OpBuilder& builder, mlir::Location loc, mlir::Value x,
                            mlir::Type narrow);
mlir::Value NarrowFloatFromBits(mlir::OpBuilder& builder, mlir::Location loc, mlir::Value h,
                                mlir::Type narrow);

// The one op of `op`'s region (one block of two arguments) that takes the two arguments in order
// and whose result the block returns (stablehlo.return): a reduction's or a collective's body.
// Null for any other region.
mlir::Operation* BinaryBodyOp(mlir::Operation* op);
// The same of one region (an op of several: select_and_scatter's select and scatter).
mlir::Operation* BinaryRegionOp(mlir::Region& region);

// Whether BuildScalarOp knows `name`.
bool IsScalarOp(std::string_view name);

// OK when `inner`, an op of `body` (a comparator's, a window's), computes on rank-0 tensors only
// (INVALID_ARGUMENT otherwise) from values of `body` or values `outside` accepts (UNIMPLEMENTED
// otherwise); `what` names the body in the errors ("a comparator").
absl::Status CheckScalarBodyOp(mlir::Operation* inner, mlir::Block& body, std::string_view what,
                               llvm::function_ref<bool(mlir::Value)> outside = nullptr);

// A linalg.generic over `result_type`'s shape, all loops parallel, each input read through its
// map (identity when `maps` is empty; an input of rank 0 is read at every point), the body built
// by `body` from the inputs' scalars.
mlir::Value BuildElementwise(
    ImportState& state, mlir::Location loc, mlir::RankedTensorType result_type,
    mlir::ValueRange inputs, llvm::ArrayRef<mlir::AffineMap> maps,
    const std::function<mlir::Value(mlir::OpBuilder&, mlir::Location, mlir::ValueRange)>& body);

}  // namespace tessera::compiler::stablehlo

#endif  // TESSERA_COMPILER_STABLEHLO_IMPORT_STATE_H_
