// Float max / min made exact (ExpandFloatMinMax, internal.h): each arith.maxnumf / minnumf (and,
// when asked, maximumf / minimumf) becomes compares and selects with the semantics the runtime's
// all-reduce has (ReductionKind, ifrt/spi/program_plan.h), so that a reduction computes the same
// bits on every device, in any order, and across devices:
//   maximumf(a, b) = a > b ? a : b > a ? b : a == b ? bits(a) & bits(b) : isnan(a) ? a : b
//   maxnumf(a, b)  = a > b ? a : b > a ? b : a == b ? bits(a) & bits(b) : isnan(a) ? b : a
// and the same for minimumf / minnumf with < and |. Two equal operands are either the same value
// or +-0, so the AND of their bits is +0 unless both are -0 (OR: -0 unless both are +0): -0 < +0.
// Why: LLVM's maxnum and SPIR-V's FMax / FMin (and their NaN selects that MLIR adds) leave the sign
// of max(-0, +0) to the implementation; lavapipe returns the second operand.

#include <vector>

#include "compiler/internal.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

namespace tessera::compiler {
namespace {

// The integer type of `type`'s bit width (a vector of them for a vector of floats).
mlir::Type BitsType(mlir::Type type) {
  auto element = mlir::cast<mlir::FloatType>(mlir::getElementTypeOrSelf(type));
  mlir::Type bits = mlir::IntegerType::get(type.getContext(), element.getWidth());
  if (auto shaped = mlir::dyn_cast<mlir::ShapedType>(type)) return shaped.clone(bits);
  return bits;
}

// The expansion of one op: `is_max` (maximumf / maxnumf), `propagates_nan` (maximumf / minimumf).
mlir::Value Expand(mlir::OpBuilder& b, mlir::Operation* op, bool is_max, bool propagates_nan) {
  using P = mlir::arith::CmpFPredicate;
  const mlir::Location loc = op->getLoc();
  const mlir::Value x = op->getOperand(0), y = op->getOperand(1);
  auto cmp = [&](P predicate, mlir::Value l, mlir::Value r) {
    return mlir::arith::CmpFOp::create(b, loc, predicate, l, r).getResult();
  };
  auto select = [&](mlir::Value c, mlir::Value t, mlir::Value f) {
    return mlir::arith::SelectOp::create(b, loc, c, t, f).getResult();
  };
  const mlir::Type bits_type = BitsType(x.getType());
  const mlir::Value x_bits = mlir::arith::BitcastOp::create(b, loc, bits_type, x);
  const mlir::Value y_bits = mlir::arith::BitcastOp::create(b, loc, bits_type, y);
  const mlir::Value merged_bits =
      is_max ? mlir::arith::AndIOp::create(b, loc, x_bits, y_bits).getResult()
             : mlir::arith::OrIOp::create(b, loc, x_bits, y_bits).getResult();
  const mlir::Value merged = mlir::arith::BitcastOp::create(b, loc, x.getType(), merged_bits);
  const mlir::Value x_is_nan = cmp(P::UNO, x, x);
  const mlir::Value unordered = propagates_nan ? select(x_is_nan, x, y) : select(x_is_nan, y, x);
  const mlir::Value x_wins = cmp(is_max ? P::OGT : P::OLT, x, y);
  const mlir::Value y_wins = cmp(is_max ? P::OLT : P::OGT, x, y);
  const mlir::Value equal = cmp(P::OEQ, x, y);
  return select(x_wins, x, select(y_wins, y, select(equal, merged, unordered)));
}

}  // namespace

void ExpandFloatMinMax(mlir::Operation* root, bool maximum_minimum_too) {
  std::vector<mlir::Operation*> ops;
  root->walk([&](mlir::Operation* op) {
    if (mlir::isa<mlir::arith::MaxNumFOp, mlir::arith::MinNumFOp>(op) ||
        (maximum_minimum_too && mlir::isa<mlir::arith::MaximumFOp, mlir::arith::MinimumFOp>(op))) {
      // Scalars and vectors (on tensors they are elementwise ops, converted to linalg earlier).
      if (!mlir::isa<mlir::TensorType>(op->getResult(0).getType())) ops.push_back(op);
    }
  });
  mlir::OpBuilder builder(root->getContext());
  for (mlir::Operation* op : ops) {
    builder.setInsertionPoint(op);
    const bool is_max = mlir::isa<mlir::arith::MaxNumFOp, mlir::arith::MaximumFOp>(op);
    const bool propagates_nan = mlir::isa<mlir::arith::MaximumFOp, mlir::arith::MinimumFOp>(op);
    op->getResult(0).replaceAllUsesWith(Expand(builder, op, is_max, propagates_nan));
    op->erase();
  }
}

}  // namespace tessera::compiler
