// The tensor ops a kernel may hold that make views or copies (tensor.expand_shape,
// collapse_shape, extract_slice, pad, concat), each rewritten as one linalg.generic over its
// result that computes every element's source position: a code generator that binds whole
// buffers to its dispatches (SPIR-V) then sees only loop nests. A kernel is one device's program,
// so a position here is a local one (linalg.index is safe after partitioning).
//   expand_shape / collapse_shape   the input read through the regrouping's affine map
//   extract_slice                   the input read at offset + stride * position (tensor.extract)
//   pad                             the input where the position is inside it (read at a clamped
//                                   position), the padding value elsewhere: a select
//   concat                          each input where the position is in its part: selects

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "compiler/internal.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"

namespace tessera::compiler {
namespace {

using mlir::Value;

// The source position of a reshape's element, from its result position: row-major within each
// group of dimensions.
mlir::AffineMap ReshapeSourceMap(mlir::RankedTensorType source, mlir::RankedTensorType result,
                                 llvm::ArrayRef<mlir::ReassociationIndices> groups, bool expand) {
  mlir::MLIRContext* context = source.getContext();
  llvm::SmallVector<mlir::AffineExpr> exprs(source.getRank());
  for (size_t g = 0; g < groups.size(); ++g) {
    const mlir::ReassociationIndices& group = groups[g];
    int64_t stride = 1;
    if (expand) {  // result dimensions `group` make source dimension g
      mlir::AffineExpr sum = mlir::getAffineConstantExpr(0, context);
      for (size_t i = group.size(); i-- > 0;) {
        sum = sum + mlir::getAffineDimExpr(group[i], context) * stride;
        stride *= result.getDimSize(group[i]);
      }
      exprs[g] = sum;
    } else {  // source dimensions `group` make result dimension g
      for (size_t i = group.size(); i-- > 0;) {
        mlir::AffineExpr index = mlir::getAffineDimExpr(g, context).floorDiv(stride);
        exprs[group[i]] = i == 0 ? index : index % source.getDimSize(group[i]);
        stride *= source.getDimSize(group[i]);
      }
    }
  }
  return mlir::AffineMap::get(result.getRank(), 0, exprs, context);
}

// A linalg.generic over `result` (all loops parallel) replacing `op`: inputs read through `maps`
// (the output's identity map is added), the body from `body`.
void ReplaceWithGeneric(
    mlir::IRRewriter& rewriter, mlir::Operation* op, mlir::RankedTensorType result,
    mlir::ValueRange inputs, llvm::ArrayRef<mlir::AffineMap> maps,
    llvm::function_ref<Value(mlir::OpBuilder&, mlir::Location, mlir::ValueRange)> body) {
  rewriter.setInsertionPoint(op);
  mlir::Location loc = op->getLoc();
  Value init =
      mlir::tensor::EmptyOp::create(rewriter, loc, result.getShape(), result.getElementType());
  llvm::SmallVector<mlir::AffineMap> all(maps.begin(), maps.end());
  all.push_back(mlir::AffineMap::getMultiDimIdentityMap(result.getRank(), op->getContext()));
  llvm::SmallVector<mlir::utils::IteratorType> iterators(result.getRank(),
                                                         mlir::utils::IteratorType::parallel);
  auto generic = mlir::linalg::GenericOp::create(
      rewriter, loc, mlir::TypeRange{result}, inputs, mlir::ValueRange{init}, all, iterators,
      [&](mlir::OpBuilder& b, mlir::Location l, mlir::ValueRange args) {
        mlir::linalg::YieldOp::create(b, l, body(b, l, args));
      });
  rewriter.replaceOp(op, generic->getResults());
}

template <typename ReshapeOp>
void ReshapeAsLinalg(mlir::IRRewriter& rewriter, ReshapeOp op, bool expand) {
  mlir::AffineMap map =
      ReshapeSourceMap(op.getSrcType(), op.getResultType(), op.getReassociationIndices(), expand);
  ReplaceWithGeneric(
      rewriter, op, op.getResultType(), {op.getSrc()}, {map},
      [](mlir::OpBuilder&, mlir::Location, mlir::ValueRange args) { return args[0]; });
}

absl::Status SliceAsLinalg(mlir::IRRewriter& rewriter, mlir::tensor::ExtractSliceOp op) {
  llvm::ArrayRef<int64_t> offsets = op.getStaticOffsets();
  llvm::ArrayRef<int64_t> strides = op.getStaticStrides();
  mlir::RankedTensorType source = op.getSourceType();
  if (llvm::any_of(offsets, mlir::ShapedType::isDynamic) ||
      llvm::any_of(strides, mlir::ShapedType::isDynamic) || !op.getType().hasStaticShape()) {
    return absl::UnimplementedError("a tensor.extract_slice with dynamic offsets or strides");
  }
  // Read with tensor.extract: an input map of d + 0 would be taken for the whole dimension.
  const llvm::SmallBitVector dropped = op.getDroppedDims();
  Value source_value = op.getSource();
  ReplaceWithGeneric(rewriter, op, op.getType(), {}, {},
                     [&](mlir::OpBuilder& b, mlir::Location loc, mlir::ValueRange) -> Value {
                       llvm::SmallVector<Value> at;
                       for (int64_t d = 0, r = 0; d < source.getRank(); ++d) {
                         Value offset = mlir::arith::ConstantIndexOp::create(b, loc, offsets[d]);
                         if (dropped.test(d)) {
                           at.push_back(offset);
                           continue;
                         }
                         Value stride = mlir::arith::ConstantIndexOp::create(b, loc, strides[d]);
                         Value index = mlir::linalg::IndexOp::create(b, loc, r++);
                         at.push_back(mlir::arith::AddIOp::create(
                             b, loc, offset, mlir::arith::MulIOp::create(b, loc, index, stride)));
                       }
                       return mlir::tensor::ExtractOp::create(b, loc, source_value, at);
                     });
  return absl::OkStatus();
}

// `index` clamped to [0, size - 1] (index arithmetic).
Value Clamp(mlir::OpBuilder& b, mlir::Location loc, Value index, int64_t size) {
  Value zero = mlir::arith::ConstantIndexOp::create(b, loc, 0);
  Value last = mlir::arith::ConstantIndexOp::create(b, loc, size - 1);
  return mlir::arith::MinSIOp::create(b, loc, mlir::arith::MaxSIOp::create(b, loc, index, zero),
                                      last);
}

// The element of `input` at `position` - `start` (clamped into `input`), and whether `position`
// lies in [start, start + size) in every dimension.
struct Read {
  Value value;
  Value inside;
};
Read ReadShifted(mlir::OpBuilder& b, mlir::Location loc, Value input,
                 llvm::ArrayRef<Value> position, llvm::ArrayRef<int64_t> start) {
  auto type = mlir::cast<mlir::RankedTensorType>(input.getType());
  Value inside = mlir::arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1);
  llvm::SmallVector<Value> at;
  for (int64_t d = 0; d < type.getRank(); ++d) {
    Value first = mlir::arith::ConstantIndexOp::create(b, loc, start[d]);
    Value end = mlir::arith::ConstantIndexOp::create(b, loc, start[d] + type.getDimSize(d));
    Value low =
        mlir::arith::CmpIOp::create(b, loc, mlir::arith::CmpIPredicate::sge, position[d], first);
    Value high =
        mlir::arith::CmpIOp::create(b, loc, mlir::arith::CmpIPredicate::slt, position[d], end);
    inside =
        mlir::arith::AndIOp::create(b, loc, inside, mlir::arith::AndIOp::create(b, loc, low, high));
    at.push_back(
        Clamp(b, loc, mlir::arith::SubIOp::create(b, loc, position[d], first), type.getDimSize(d)));
  }
  return {mlir::tensor::ExtractOp::create(b, loc, input, at), inside};
}

llvm::SmallVector<Value> Position(mlir::OpBuilder& b, mlir::Location loc, int64_t rank) {
  llvm::SmallVector<Value> position;
  for (int64_t d = 0; d < rank; ++d) position.push_back(mlir::linalg::IndexOp::create(b, loc, d));
  return position;
}

absl::Status PadAsLinalg(mlir::IRRewriter& rewriter, mlir::tensor::PadOp op) {
  llvm::ArrayRef<int64_t> low = op.getStaticLow();
  mlir::RankedTensorType source = op.getSourceType();
  if (!op.getLow().empty() || !op.getHigh().empty() || !source.hasStaticShape() ||
      source.getNumElements() == 0) {
    return absl::UnimplementedError("a tensor.pad with dynamic or empty shapes");
  }
  // The padding value: defined outside the pad, or a constant in its body.
  Value padding = op.getConstantPaddingValue();
  mlir::Operation* constant = nullptr;
  if (!padding) {
    auto yield = mlir::cast<mlir::tensor::YieldOp>(op.getRegion().front().getTerminator());
    constant = yield.getValue().getDefiningOp<mlir::arith::ConstantOp>();
    if (!constant) return absl::UnimplementedError("a tensor.pad whose padding is computed");
  }
  ReplaceWithGeneric(rewriter, op, op.getResultType(), {}, {},
                     [&](mlir::OpBuilder& b, mlir::Location loc, mlir::ValueRange) -> Value {
                       Value pad = padding ? padding : b.clone(*constant)->getResult(0);
                       Read read = ReadShifted(b, loc, op.getSource(),
                                               Position(b, loc, source.getRank()), low);
                       return mlir::arith::SelectOp::create(b, loc, read.inside, read.value, pad);
                     });
  return absl::OkStatus();
}

absl::Status ConcatAsLinalg(mlir::IRRewriter& rewriter, mlir::tensor::ConcatOp op) {
  const int64_t dim = static_cast<int64_t>(op.getDim());
  mlir::RankedTensorType result = op.getResultType();
  if (!result.hasStaticShape()) return absl::UnimplementedError("a dynamic tensor.concat");
  ReplaceWithGeneric(rewriter, op, result, {}, {},
                     [&](mlir::OpBuilder& b, mlir::Location loc, mlir::ValueRange) -> Value {
                       llvm::SmallVector<Value> position = Position(b, loc, result.getRank());
                       Value value;
                       std::vector<int64_t> start(result.getRank(), 0);
                       for (Value input : op.getInputs()) {
                         auto type = mlir::cast<mlir::RankedTensorType>(input.getType());
                         if (type.getDimSize(dim) > 0) {
                           Read read = ReadShifted(b, loc, input, position, start);
                           value = value ? mlir::arith::SelectOp::create(b, loc, read.inside,
                                                                         read.value, value)
                                               .getResult()
                                         : read.value;
                         }
                         start[dim] += type.getDimSize(dim);
                       }
                       return value;
                     });
  return absl::OkStatus();
}

}  // namespace

absl::Status TensorOpsAsLinalg(mlir::func::FuncOp func, const std::string& name) {
  std::vector<mlir::Operation*> ops;
  func.walk([&](mlir::Operation* op) {
    if (mlir::isa<mlir::tensor::ExpandShapeOp, mlir::tensor::CollapseShapeOp,
                  mlir::tensor::ExtractSliceOp, mlir::tensor::PadOp, mlir::tensor::ConcatOp>(op)) {
      ops.push_back(op);
    }
  });
  mlir::IRRewriter rewriter(func.getContext());
  for (mlir::Operation* op : ops) {
    absl::Status status;
    if (auto expand = mlir::dyn_cast<mlir::tensor::ExpandShapeOp>(op)) {
      ReshapeAsLinalg(rewriter, expand, /*expand=*/true);
    } else if (auto collapse = mlir::dyn_cast<mlir::tensor::CollapseShapeOp>(op)) {
      ReshapeAsLinalg(rewriter, collapse, /*expand=*/false);
    } else if (auto slice = mlir::dyn_cast<mlir::tensor::ExtractSliceOp>(op)) {
      status = SliceAsLinalg(rewriter, slice);
    } else if (auto pad = mlir::dyn_cast<mlir::tensor::PadOp>(op)) {
      status = PadAsLinalg(rewriter, pad);
    } else if (auto concat = mlir::dyn_cast<mlir::tensor::ConcatOp>(op)) {
      status = ConcatAsLinalg(rewriter, concat);
    }
    if (!status.ok()) {
      return absl::UnimplementedError(
          absl::StrCat(name, ": ", status.message(), " at ", FormatLocation(op->getLoc())));
    }
  }
  return absl::OkStatus();
}

}  // namespace tessera::compiler
