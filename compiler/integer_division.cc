// Defined results for integer division and remainder (XLA's), before any code generator sees them:
// arith's divisions are undefined for a zero divisor and for INT_MIN / -1, which trap on x86 (the
// CPU kernel's process gets SIGFPE) and give the driver's choice on Vulkan. Each division gets a
// divisor that cannot fault, and its result is selected:
//   signed   (divsi, ceildivsi, floordivsi)  x / 0 = -1         x / -1 = -x (INT_MIN / -1 =
//   INT_MIN) unsigned (divui, ceildivui)              x / 0 = all ones remsi x % 0 = x          x %
//   -1 = 0 remui                                    x % 0 = x
// The divisor a division runs with is 1 where the result is selected, so no operand pair faults;
// selects keep the code straight-line (vectorizable) and equal on every platform. Then the ceiling
// and floor divisions are expanded into plain ones (on their chosen divisors), which every code
// generator lowers.

#include <cstdint>
#include <vector>

#include "compiler/internal.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"

namespace tessera::compiler {
namespace {

enum class Kind { kSignedDivision, kUnsignedDivision, kSignedRemainder, kUnsignedRemainder };

bool KindOf(mlir::Operation* op, Kind& kind) {
  if (mlir::isa<mlir::arith::DivSIOp, mlir::arith::CeilDivSIOp, mlir::arith::FloorDivSIOp>(op)) {
    kind = Kind::kSignedDivision;
  } else if (mlir::isa<mlir::arith::DivUIOp, mlir::arith::CeilDivUIOp>(op)) {
    kind = Kind::kUnsignedDivision;
  } else if (mlir::isa<mlir::arith::RemSIOp>(op)) {
    kind = Kind::kSignedRemainder;
  } else if (mlir::isa<mlir::arith::RemUIOp>(op)) {
    kind = Kind::kUnsignedRemainder;
  } else {
    return false;
  }
  return true;
}

// A constant `value` of `type` (an integer, index, or a shaped type of them: a splat).
mlir::Value Constant(mlir::OpBuilder& b, mlir::Location loc, mlir::Type type, int64_t value) {
  mlir::Type element = mlir::getElementTypeOrSelf(type);
  mlir::TypedAttr scalar = b.getIntegerAttr(element, value);
  if (auto shaped = mlir::dyn_cast<mlir::ShapedType>(type)) {
    return mlir::arith::ConstantOp::create(b, loc, mlir::DenseElementsAttr::get(shaped, scalar));
  }
  return mlir::arith::ConstantOp::create(b, loc, scalar);
}

mlir::Value Equals(mlir::OpBuilder& b, mlir::Location loc, mlir::Value x, int64_t value) {
  return mlir::arith::CmpIOp::create(b, loc, mlir::arith::CmpIPredicate::eq, x,
                                     Constant(b, loc, x.getType(), value));
}

mlir::Value Select(mlir::OpBuilder& b, mlir::Location loc, mlir::Value condition, mlir::Value yes,
                   mlir::Value no) {
  return mlir::arith::SelectOp::create(b, loc, condition, yes, no);
}

bool IsOneBit(mlir::Type type) {
  auto element = mlir::dyn_cast<mlir::IntegerType>(mlir::getElementTypeOrSelf(type));
  return element && element.getWidth() == 1;
}

// Rewrites one division `op` (x op y) as described at the top.
void DefineDivision(mlir::Operation* op, Kind kind) {
  mlir::OpBuilder b(op);
  mlir::Location loc = op->getLoc();
  mlir::Value x = op->getOperand(0), y = op->getOperand(1);
  mlir::Type type = x.getType();
  std::vector<mlir::OpOperand*> uses;  // the division's readers: they read the selected result
  for (mlir::OpOperand& use : op->getResult(0).getUses()) uses.push_back(&use);
  const bool is_signed = kind == Kind::kSignedDivision || kind == Kind::kSignedRemainder;
  mlir::Value zero_divisor = Equals(b, loc, y, 0);
  mlir::Value minus_one = is_signed ? Equals(b, loc, y, -1) : mlir::Value();
  mlir::Value selected =
      is_signed ? mlir::arith::OrIOp::create(b, loc, zero_divisor, minus_one) : zero_divisor;
  // On i1 the signed divisors are 0 and -1 only: every result is selected, no division is left.
  const bool keep_division = !(is_signed && IsOneBit(type));
  mlir::Value computed = x;  // what a kept division's place holds when there is none
  if (keep_division) {
    op->setOperand(1, Select(b, loc, selected, Constant(b, loc, type, 1), y));
    b.setInsertionPointAfter(op);
    computed = op->getResult(0);
  }
  mlir::Value result;
  switch (kind) {
    case Kind::kSignedDivision: {
      mlir::Value negated = mlir::arith::SubIOp::create(b, loc, Constant(b, loc, type, 0), x);
      result = Select(b, loc, minus_one, negated, computed);
      result = Select(b, loc, zero_divisor, Constant(b, loc, type, -1), result);
      break;
    }
    case Kind::kUnsignedDivision:
      result = Select(b, loc, zero_divisor, Constant(b, loc, type, -1), computed);
      break;
    case Kind::kSignedRemainder:
      result = Select(b, loc, minus_one, Constant(b, loc, type, 0), keep_division ? computed : x);
      result = Select(b, loc, zero_divisor, x, result);
      break;
    case Kind::kUnsignedRemainder:
      result = Select(b, loc, zero_divisor, x, computed);
      break;
  }
  for (mlir::OpOperand* use : uses) use->set(result);
  if (!keep_division) op->erase();
}

}  // namespace

void DefineIntegerDivision(mlir::Operation* root) {
  std::vector<std::pair<mlir::Operation*, Kind>> divisions;
  root->walk([&](mlir::Operation* op) {
    Kind kind;
    if (KindOf(op, kind)) divisions.push_back({op, kind});
  });
  for (auto [op, kind] : divisions) DefineDivision(op, kind);
  // ceildivsi, ceildivui, floordivsi -> divsi / divui and arithmetic (the SPIR-V conversion has
  // no pattern for them), on the divisors chosen above.
  mlir::RewritePatternSet patterns(root->getContext());
  mlir::arith::populateCeilFloorDivExpandOpsPatterns(patterns);
  mlir::walkAndApplyPatterns(root, std::move(patterns));
}

}  // namespace tessera::compiler
