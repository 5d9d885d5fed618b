// The StableHLO (and CHLO) elementwise ops: one scalar op each (BuildScalarOp), applied over a
// tensor by a linalg.generic whose loops are all parallel (BuildElementwise). The scalar forms
// also build the bodies of reductions (contraction.cc).
//
// Semantics follow the StableHLO spec where arith leaves a case open: shifts by the bit width or
// more give 0 (or the sign, arithmetic right), float max / min propagate NaN, `sign` keeps 0 and
// NaN, integer division by 0 is defined later for every kernel (DefineIntegerDivision).

#include <cmath>
#include <functional>
#include <string>
#include <string_view>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "compiler/stablehlo/attribute_text.h"
#include "compiler/stablehlo/import_state.h"
#include "llvm/Support/raw_ostream.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"

namespace tessera::compiler::stablehlo {
namespace {

using mlir::Value;

std::string TypeText(mlir::Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  type.print(os);
  return text;
}

bool IsUnsigned(mlir::Type type) {
  auto integer = mlir::dyn_cast<mlir::IntegerType>(type);
  return integer && (integer.isUnsigned() || integer.getWidth() == 1);
}

Value Constant(mlir::OpBuilder& b, mlir::Location loc, mlir::Type type, double value) {
  if (mlir::isa<mlir::FloatType>(type)) {
    return mlir::arith::ConstantOp::create(b, loc, b.getFloatAttr(type, value));
  }
  return mlir::arith::ConstantOp::create(b, loc,
                                         b.getIntegerAttr(type, static_cast<int64_t>(value)));
}

// stablehlo.convert from `from` (old type) to `to` (old type) of `x` (in arith's type).
Value Convert(mlir::OpBuilder& b, mlir::Location loc, Value x, mlir::Type from, mlir::Type to) {
  mlir::Type target = SignlessType(to);
  const bool from_float = mlir::isa<mlir::FloatType>(from);
  const bool to_float = mlir::isa<mlir::FloatType>(to);
  if (from_float && to_float) {  // in the types computed in (bf16 is f32: ConvertOp rounds)
    const unsigned from_width = x.getType().getIntOrFloatBitWidth();
    const unsigned to_width = target.getIntOrFloatBitWidth();
    if (from_width < to_width) return mlir::arith::ExtFOp::create(b, loc, target, x);
    if (from_width > to_width) return mlir::arith::TruncFOp::create(b, loc, target, x);
    return x;
  }
  if (to.isInteger(1)) {  // x != 0
    if (from_float) {
      return mlir::arith::CmpFOp::create(b, loc, mlir::arith::CmpFPredicate::UNE, x,
                                         Constant(b, loc, x.getType(), 0));
    }
    return mlir::arith::CmpIOp::create(b, loc, mlir::arith::CmpIPredicate::ne, x,
                                       Constant(b, loc, x.getType(), 0));
  }
  if (!from_float && to_float) {
    if (IsUnsigned(from)) return mlir::arith::UIToFPOp::create(b, loc, target, x);
    return mlir::arith::SIToFPOp::create(b, loc, target, x);
  }
  if (from_float && !to_float) {
    if (IsUnsigned(to)) return mlir::arith::FPToUIOp::create(b, loc, target, x);
    return mlir::arith::FPToSIOp::create(b, loc, target, x);
  }
  const unsigned from_width = from.getIntOrFloatBitWidth();
  const unsigned to_width = to.getIntOrFloatBitWidth();
  if (from_width == to_width) return x;
  if (from_width > to_width) return mlir::arith::TruncIOp::create(b, loc, target, x);
  if (IsUnsigned(from)) return mlir::arith::ExtUIOp::create(b, loc, target, x);
  return mlir::arith::ExtSIOp::create(b, loc, target, x);
}

absl::StatusOr<Value> Compare(mlir::OpBuilder& b, mlir::Location loc, mlir::Operation* op,
                              Value lhs, Value rhs, mlir::Type type) {
  TESSERA_ASSIGN_OR_RETURN(std::string text,
                           ImportState::OpaqueAttrText(op, "comparison_direction"));
  TESSERA_ASSIGN_OR_RETURN(std::string direction, ParseEnumAttr(text, "comparison_direction"));
  std::string compare_type;
  if (ImportState::GetAttr(op, "compare_type")) {
    TESSERA_ASSIGN_OR_RETURN(std::string type_text,
                             ImportState::OpaqueAttrText(op, "compare_type"));
    TESSERA_ASSIGN_OR_RETURN(compare_type, ParseEnumAttr(type_text, "comparison_type"));
  }
  if (compare_type == "TOTALORDER" && mlir::isa<mlir::FloatType>(lhs.getType())) {
    // IEEE totalOrder (-NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN): the bits as a signed
    // integer, the magnitude bits of a negative one flipped, compared as signed integers. bf16
    // and f16, held in f32, keep their order there.
    const unsigned width = lhs.getType().getIntOrFloatBitWidth();
    mlir::Type bits_type = b.getIntegerType(width);
    auto key = [&](Value x) -> Value {
      Value bits = mlir::arith::BitcastOp::create(b, loc, bits_type, x);
      Value sign =
          mlir::arith::ShRSIOp::create(b, loc, bits, Constant(b, loc, bits_type, width - 1));
      Value magnitude = mlir::arith::ConstantOp::create(
          b, loc, b.getIntegerAttr(bits_type, llvm::APInt::getSignedMaxValue(width)));
      return mlir::arith::XOrIOp::create(b, loc, bits,
                                         mlir::arith::AndIOp::create(b, loc, sign, magnitude));
    };
    lhs = key(lhs);
    rhs = key(rhs);
    type = bits_type;
    compare_type = "SIGNED";
  }
  if (mlir::isa<mlir::FloatType>(type)) {
    using P = mlir::arith::CmpFPredicate;
    P predicate;
    if (direction == "EQ") {
      predicate = P::OEQ;
    } else if (direction == "NE") {
      predicate = P::UNE;
    } else if (direction == "LT") {
      predicate = P::OLT;
    } else if (direction == "LE") {
      predicate = P::OLE;
    } else if (direction == "GT") {
      predicate = P::OGT;
    } else if (direction == "GE") {
      predicate = P::OGE;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat(ImportState::Where(op), ": unknown comparison_direction ", direction));
    }
    return Value(mlir::arith::CmpFOp::create(b, loc, predicate, lhs, rhs));
  }
  // An integer TOTALORDER compare is its type's order (signed or not).
  const bool is_unsigned =
      compare_type == "UNSIGNED" ||
      ((compare_type.empty() || compare_type == "TOTALORDER") && IsUnsigned(type));
  using P = mlir::arith::CmpIPredicate;
  P predicate;
  if (direction == "EQ") {
    predicate = P::eq;
  } else if (direction == "NE") {
    predicate = P::ne;
  } else if (direction == "LT") {
    predicate = is_unsigned ? P::ult : P::slt;
  } else if (direction == "LE") {
    predicate = is_unsigned ? P::ule : P::sle;
  } else if (direction == "GT") {
    predicate = is_unsigned ? P::ugt : P::sgt;
  } else if (direction == "GE") {
    predicate = is_unsigned ? P::uge : P::sge;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat(ImportState::Where(op), ": unknown comparison_direction ", direction));
  }
  return Value(mlir::arith::CmpIOp::create(b, loc, predicate, lhs, rhs));
}

// Shifts: an amount of the bit width or more gives 0 (left, logical right) or fills with the sign
// (arithmetic right), as StableHLO defines them; arith leaves them poison.
Value Shift(mlir::OpBuilder& b, mlir::Location loc, std::string_view name, Value x, Value amount) {
  mlir::Type type = x.getType();
  const unsigned width = type.getIntOrFloatBitWidth();
  Value limit = Constant(b, loc, type, width);
  Value in_range =
      mlir::arith::CmpIOp::create(b, loc, mlir::arith::CmpIPredicate::ult, amount, limit);
  if (name == "stablehlo.shift_right_arithmetic") {
    Value clamped =
        mlir::arith::SelectOp::create(b, loc, in_range, amount, Constant(b, loc, type, width - 1));
    return mlir::arith::ShRSIOp::create(b, loc, x, clamped);
  }
  Value zero = Constant(b, loc, type, 0);
  Value safe = mlir::arith::SelectOp::create(b, loc, in_range, amount, zero);
  Value shifted = name == "stablehlo.shift_left"
                      ? Value(mlir::arith::ShLIOp::create(b, loc, x, safe))
                      : Value(mlir::arith::ShRUIOp::create(b, loc, x, safe));
  return mlir::arith::SelectOp::create(b, loc, in_range, shifted, zero);
}

// sign(x): -1, 0 or 1 (floats: -1.0, ±0.0 or 1.0, NaN for NaN).
Value Sign(mlir::OpBuilder& b, mlir::Location loc, Value x) {
  mlir::Type type = x.getType();
  if (mlir::isa<mlir::FloatType>(type)) {
    Value one = Constant(b, loc, type, 1.0);
    Value signed_one = mlir::math::CopySignOp::create(b, loc, one, x);
    Value zero_or_nan = mlir::arith::CmpFOp::create(b, loc, mlir::arith::CmpFPredicate::UEQ, x,
                                                    Constant(b, loc, type, 0.0));
    return mlir::arith::SelectOp::create(b, loc, zero_or_nan, x, signed_one);
  }
  Value zero = Constant(b, loc, type, 0);
  Value positive = mlir::arith::CmpIOp::create(b, loc, mlir::arith::CmpIPredicate::sgt, x, zero);
  Value negative = mlir::arith::CmpIOp::create(b, loc, mlir::arith::CmpIPredicate::slt, x, zero);
  Value p = mlir::arith::ExtUIOp::create(b, loc, type, positive);
  Value n = mlir::arith::ExtUIOp::create(b, loc, type, negative);
  return mlir::arith::SubIOp::create(b, loc, p, n);
}

// The elementwise ops this converter knows, each with the number of operands it takes.
const absl::flat_hash_map<std::string_view, unsigned>& ScalarOps() {
  static const auto* const kOps = new absl::flat_hash_map<std::string_view, unsigned>{
      {"stablehlo.add", 2},
      {"stablehlo.subtract", 2},
      {"stablehlo.multiply", 2},
      {"stablehlo.divide", 2},
      {"stablehlo.remainder", 2},
      {"stablehlo.maximum", 2},
      {"stablehlo.minimum", 2},
      {"stablehlo.power", 2},
      {"stablehlo.atan2", 2},
      {"stablehlo.and", 2},
      {"stablehlo.or", 2},
      {"stablehlo.xor", 2},
      {"stablehlo.shift_left", 2},
      {"stablehlo.shift_right_logical", 2},
      {"stablehlo.shift_right_arithmetic", 2},
      {"stablehlo.negate", 1},
      {"stablehlo.abs", 1},
      {"stablehlo.exponential", 1},
      {"stablehlo.exponential_minus_one", 1},
      {"stablehlo.log", 1},
      {"stablehlo.log_plus_one", 1},
      {"stablehlo.logistic", 1},
      {"stablehlo.tanh", 1},
      {"stablehlo.sqrt", 1},
      {"stablehlo.rsqrt", 1},
      {"stablehlo.cbrt", 1},
      {"stablehlo.sine", 1},
      {"stablehlo.cosine", 1},
      {"stablehlo.tan", 1},
      {"stablehlo.floor", 1},
      {"stablehlo.ceil", 1},
      {"stablehlo.round_nearest_even", 1},
      {"stablehlo.round_nearest_afz", 1},
      {"stablehlo.sign", 1},
      {"stablehlo.not", 1},
      {"stablehlo.popcnt", 1},
      {"stablehlo.count_leading_zeros", 1},
      {"stablehlo.is_finite", 1},
      {"stablehlo.reduce_precision", 1},
      {"stablehlo.compare", 2},
      {"stablehlo.select", 3},
      {"stablehlo.clamp", 3},
      {"stablehlo.convert", 1},
      {"stablehlo.bitcast_convert", 1},
      {"chlo.erf", 1},
      {"chlo.erfc", 1},
      {"chlo.tan", 1},
      {"chlo.square", 1},
  };
  return *kOps;
}

// The element types StableHLO relates for `op` (the input was never verified): each value in
// `args` of its old type's arith type; convert and bitcast_convert take any types; compare takes
// two of one type into i1, select an i1 predicate, is_finite gives i1; every other operand has the
// result's type. INVALID_ARGUMENT naming the op otherwise.
absl::Status CheckElementTypes(mlir::Operation* op, std::string_view name, mlir::ValueRange args,
                               mlir::TypeRange arg_types, mlir::Type result_type) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].getType() != SignlessType(arg_types[i])) {
      return absl::InvalidArgumentError(absl::StrCat(ImportState::Where(op), ": operand ", i,
                                                     " is not of its declared type ",
                                                     TypeText(arg_types[i])));
    }
  }
  if (name == "stablehlo.convert" || name == "stablehlo.bitcast_convert") return absl::OkStatus();
  mlir::Type expected = result_type;
  if (name == "stablehlo.compare" || name == "stablehlo.is_finite") {
    if (!result_type.isInteger(1)) {
      return absl::InvalidArgumentError(absl::StrCat(ImportState::Where(op),
                                                     ": the result has element type ",
                                                     TypeText(result_type), ", expected i1"));
    }
    if (name == "stablehlo.is_finite" || arg_types.empty()) return absl::OkStatus();
    expected = arg_types[0];
  }
  for (size_t i = 0; i < arg_types.size(); ++i) {
    const bool predicate = name == "stablehlo.select" && i == 0;
    if (predicate ? !arg_types[i].isInteger(1) : arg_types[i] != expected) {
      return absl::InvalidArgumentError(absl::StrCat(
          ImportState::Where(op), ": operand ", i, " has element type ", TypeText(arg_types[i]),
          ", expected ", predicate ? "i1" : TypeText(expected)));
    }
  }
  return absl::OkStatus();
}

// Binary arithmetic on two values of one arith type (`type` the old element type).
absl::StatusOr<Value> Binary(mlir::OpBuilder& b, mlir::Location loc, std::string_view name, Value x,
                             Value y, mlir::Type type) {
  namespace arith = mlir::arith;
  const bool is_float = mlir::isa<mlir::FloatType>(type);
  const bool is_unsigned = IsUnsigned(type);
  if (name == "stablehlo.add") {
    return is_float ? Value(arith::AddFOp::create(b, loc, x, y))
                    : Value(arith::AddIOp::create(b, loc, x, y));
  }
  if (name == "stablehlo.subtract") {
    return is_float ? Value(arith::SubFOp::create(b, loc, x, y))
                    : Value(arith::SubIOp::create(b, loc, x, y));
  }
  if (name == "stablehlo.multiply") {
    if (type.isInteger(1)) return Value(arith::AndIOp::create(b, loc, x, y));
    return is_float ? Value(arith::MulFOp::create(b, loc, x, y))
                    : Value(arith::MulIOp::create(b, loc, x, y));
  }
  if (name == "stablehlo.divide") {
    if (is_float) return Value(arith::DivFOp::create(b, loc, x, y));
    return is_unsigned ? Value(arith::DivUIOp::create(b, loc, x, y))
                       : Value(arith::DivSIOp::create(b, loc, x, y));
  }
  if (name == "stablehlo.remainder") {
    if (is_float) return Value(arith::RemFOp::create(b, loc, x, y));
    return is_unsigned ? Value(arith::RemUIOp::create(b, loc, x, y))
                       : Value(arith::RemSIOp::create(b, loc, x, y));
  }
  if (name == "stablehlo.maximum") {
    if (is_float) return Value(arith::MaximumFOp::create(b, loc, x, y));
    return is_unsigned ? Value(arith::MaxUIOp::create(b, loc, x, y))
                       : Value(arith::MaxSIOp::create(b, loc, x, y));
  }
  if (name == "stablehlo.minimum") {
    if (is_float) return Value(arith::MinimumFOp::create(b, loc, x, y));
    return is_unsigned ? Value(arith::MinUIOp::create(b, loc, x, y))
                       : Value(arith::MinSIOp::create(b, loc, x, y));
  }
  if (name == "stablehlo.power") {
    if (is_float) return Value(mlir::math::PowFOp::create(b, loc, x, y));
    return Value(mlir::math::IPowIOp::create(b, loc, x, y));
  }
  if (name == "stablehlo.atan2" && is_float)
    return Value(mlir::math::Atan2Op::create(b, loc, x, y));
  if (name == "stablehlo.and" && !is_float) return Value(arith::AndIOp::create(b, loc, x, y));
  if (name == "stablehlo.or" && !is_float) return Value(arith::OrIOp::create(b, loc, x, y));
  if (name == "stablehlo.xor" && !is_float) return Value(arith::XOrIOp::create(b, loc, x, y));
  if (name.rfind("stablehlo.shift_", 0) == 0 && !is_float) return Shift(b, loc, name, x, y);
  return absl::UnimplementedError(absl::StrCat("on ", is_float ? "floats" : "integers"));
}

absl::StatusOr<Value> Unary(mlir::OpBuilder& b, mlir::Location loc, std::string_view name, Value x,
                            mlir::Type type) {
  namespace math = mlir::math;
  namespace arith = mlir::arith;
  const bool is_float = mlir::isa<mlir::FloatType>(type);
  if (name == "stablehlo.negate") {
    if (is_float) return Value(arith::NegFOp::create(b, loc, x));
    return Value(arith::SubIOp::create(b, loc, Constant(b, loc, x.getType(), 0), x));
  }
  if (name == "stablehlo.abs") {
    return is_float ? Value(math::AbsFOp::create(b, loc, x))
                    : Value(math::AbsIOp::create(b, loc, x));
  }
  if (name == "stablehlo.sign" && !type.isInteger(1)) return Sign(b, loc, x);
  if (name == "stablehlo.not" && !is_float) {
    return Value(arith::XOrIOp::create(
        b, loc, x, arith::ConstantOp::create(b, loc, b.getIntegerAttr(x.getType(), -1))));
  }
  if (name == "stablehlo.popcnt" && !is_float) return Value(math::CtPopOp::create(b, loc, x));
  if (name == "stablehlo.count_leading_zeros" && !is_float) {
    return Value(math::CountLeadingZerosOp::create(b, loc, x));
  }
  if (!is_float) return absl::UnimplementedError("on integers");
  if (name == "stablehlo.exponential") return Value(math::ExpOp::create(b, loc, x));
  if (name == "stablehlo.exponential_minus_one") return Value(math::ExpM1Op::create(b, loc, x));
  if (name == "stablehlo.log") return Value(math::LogOp::create(b, loc, x));
  if (name == "stablehlo.log_plus_one") return Value(math::Log1pOp::create(b, loc, x));
  if (name == "stablehlo.tanh") return Value(math::TanhOp::create(b, loc, x));
  if (name == "stablehlo.sqrt") return Value(math::SqrtOp::create(b, loc, x));
  if (name == "stablehlo.rsqrt") return Value(math::RsqrtOp::create(b, loc, x));
  if (name == "stablehlo.cbrt") return Value(math::CbrtOp::create(b, loc, x));
  if (name == "stablehlo.sine") return Value(math::SinOp::create(b, loc, x));
  if (name == "stablehlo.cosine") return Value(math::CosOp::create(b, loc, x));
  if (name == "stablehlo.tan" || name == "chlo.tan") return Value(math::TanOp::create(b, loc, x));
  if (name == "stablehlo.floor") return Value(math::FloorOp::create(b, loc, x));
  if (name == "stablehlo.ceil") return Value(math::CeilOp::create(b, loc, x));
  if (name == "stablehlo.round_nearest_even") return Value(math::RoundEvenOp::create(b, loc, x));
  if (name == "stablehlo.round_nearest_afz") return Value(math::RoundOp::create(b, loc, x));
  if (name == "stablehlo.is_finite") return Value(math::IsFiniteOp::create(b, loc, x));
  if (name == "chlo.erf") return Value(math::ErfOp::create(b, loc, x));
  if (name == "chlo.erfc") return Value(math::ErfcOp::create(b, loc, x));
  if (name == "chlo.square") return Value(arith::MulFOp::create(b, loc, x, x));
  if (name == "stablehlo.logistic") {  // 1 / (1 + exp(-x))
    Value one = Constant(b, loc, x.getType(), 1.0);
    Value e = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, x));
    return Value(arith::DivFOp::create(b, loc, one, arith::AddFOp::create(b, loc, one, e)));
  }
  return absl::UnimplementedError("on floats");
}

// stablehlo.convert of the scalar `value` (of old type `from`) to old type `to`, when exact
// arithmetic on constants gives it (integers to floats or integers, floats to floats); null
// otherwise (the op is then computed).
mlir::TypedAttr FoldConvert(mlir::TypedAttr value, mlir::Type from, mlir::Type to) {
  mlir::Type target = SignlessType(to);
  const bool from_unsigned = from.isUnsignedInteger() || from.isInteger(1);
  if (auto integer = mlir::dyn_cast<mlir::IntegerAttr>(value)) {
    const llvm::APInt& bits = integer.getValue();
    if (auto float_type = mlir::dyn_cast<mlir::FloatType>(target)) {
      llvm::APFloat result(float_type.getFloatSemantics());
      result.convertFromAPInt(bits, !from_unsigned, llvm::APFloat::rmNearestTiesToEven);
      return mlir::FloatAttr::get(target, result);
    }
    if (auto int_type = mlir::dyn_cast<mlir::IntegerType>(target); int_type && !to.isInteger(1)) {
      const unsigned width = int_type.getWidth();
      return mlir::IntegerAttr::get(
          target, from_unsigned ? bits.zextOrTrunc(width) : bits.sextOrTrunc(width));
    }
    return {};
  }
  auto floating = mlir::dyn_cast<mlir::FloatAttr>(value);
  auto float_type = mlir::dyn_cast<mlir::FloatType>(target);
  if (!floating || !float_type) return {};
  llvm::APFloat result = floating.getValue();
  bool loses = false;
  result.convert(float_type.getFloatSemantics(), llvm::APFloat::rmNearestTiesToEven, &loses);
  return mlir::FloatAttr::get(target, result);
}

// Converts one elementwise StableHLO op over tensors: checks that every operand has the result's
// shape (or, for select's predicate and clamp's bounds, is a scalar), then one linalg.generic.
absl::Status ConvertElementwise(ImportState& state, mlir::Operation* op) {
  TESSERA_RETURN_IF_ERROR(
      ImportState::CheckArity(op, ScalarOps().at(op->getName().getStringRef().str()), 1));
  TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType result, state.ResultType(op, 0));
  llvm::SmallVector<Value> inputs;
  llvm::SmallVector<mlir::Type> old_types;
  for (unsigned i = 0; i < op->getNumOperands(); ++i) {
    TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType type, state.OperandType(op, i));
    const bool scalar_allowed = (op->getName().getStringRef() == "stablehlo.select" && i == 0) ||
                                (op->getName().getStringRef() == "stablehlo.clamp" && i != 1);
    if (type.getShape() != result.getShape() && !(scalar_allowed && type.getRank() == 0)) {
      return absl::InvalidArgumentError(absl::StrCat(ImportState::Where(op), ": operand ", i,
                                                     " has another shape than the result"));
    }
    TESSERA_ASSIGN_OR_RETURN(Value input, state.Operand(op, i));
    inputs.push_back(input);
    old_types.push_back(type.getElementType());
  }
  // A convert to the type it has (JAX emits them around pad values) is its operand: a constant
  // stays one.
  if (op->getName().getStringRef() == "stablehlo.convert" &&
      old_types[0] == result.getElementType()) {
    state.Map(op->getResult(0), inputs[0]);
    return absl::OkStatus();
  }
  if (op->getName().getStringRef() == "stablehlo.convert") {
    if (mlir::TypedAttr splat = state.SplatOf(inputs[0])) {
      if (mlir::TypedAttr folded = FoldConvert(splat, old_types[0], result.getElementType())) {
        state.Map(op->getResult(0), state.Fill(op->getLoc(), ImportState::NewType(result), folded));
        return absl::OkStatus();
      }
    }
  }
  // Check the scalar op once on scalars of the right types, outside any region, before building.
  absl::Status status;
  mlir::Location loc = op->getLoc();
  Value built = BuildElementwise(
      state, loc, result, inputs, {},
      [&](mlir::OpBuilder& b, mlir::Location l, mlir::ValueRange args) -> Value {
        absl::StatusOr<Value> v = BuildScalarOp(b, l, op, args, old_types, result.getElementType());
        if (v.ok()) return *v;
        status = v.status();
        return mlir::arith::ConstantOp::create(
            b, l, b.getZeroAttr(SignlessType(result.getElementType())));
      });
  if (!status.ok()) {
    built.getDefiningOp()->erase();
    return status;
  }
  state.Map(op->getResult(0), built);
  return absl::OkStatus();
}

}  // namespace

mlir::Value ConvertElement(mlir::OpBuilder& builder, mlir::Location loc, mlir::Value x,
                           mlir::Type from, mlir::Type to) {
  return Convert(builder, loc, x, from, to);
}

mlir::Value RoundToBf16(mlir::OpBuilder& b, mlir::Location loc, mlir::Value x) {
  mlir::Type i32 = b.getI32Type();
  auto constant = [&](uint32_t v) {
    return mlir::arith::ConstantOp::create(b, loc, b.getIntegerAttr(i32, static_cast<int32_t>(v)))
        .getResult();
  };
  Value bits = mlir::arith::BitcastOp::create(b, loc, i32, x);
  // + 0x7fff + the last kept bit: ties go to even; a carry into the exponent rounds up to the
  // next binade (or to infinity, as it should).
  Value lsb = mlir::arith::AndIOp::create(
      b, loc, mlir::arith::ShRUIOp::create(b, loc, bits, constant(16)), constant(1));
  Value rounded = mlir::arith::AddIOp::create(
      b, loc, bits, mlir::arith::AddIOp::create(b, loc, lsb, constant(0x7fff)));
  rounded = mlir::arith::AndIOp::create(b, loc, rounded, constant(0xffff0000u));
  // NaN: quiet, its sign and upper payload kept (rounding could carry it into infinity).
  Value nan = mlir::arith::AndIOp::create(
      b, loc, mlir::arith::OrIOp::create(b, loc, bits, constant(0x00400000u)),
      constant(0xffff0000u));
  Value is_nan = mlir::arith::CmpFOp::create(b, loc, mlir::arith::CmpFPredicate::UNO, x, x);
  Value result = mlir::arith::SelectOp::create(b, loc, is_nan, nan, rounded);
  return mlir::arith::BitcastOp::create(b, loc, x.getType(), result);
}

namespace {

Value I32(mlir::OpBuilder& b, mlir::Location loc, uint32_t v) {
  return mlir::arith::ConstantOp::create(b, loc,
                                         b.getIntegerAttr(b.getI32Type(), static_cast<int32_t>(v)))
      .getResult();
}

Value F32(mlir::OpBuilder& b, mlir::Location loc, float v) {
  return mlir::arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v)).getResult();
}

Value Select(mlir::OpBuilder& b, mlir::Location loc, Value condition, Value t, Value f) {
  return mlir::arith::SelectOp::create(b, loc, condition, t, f).getResult();
}

Value Unsigned(mlir::OpBuilder& b, mlir::Location loc, mlir::arith::CmpIPredicate predicate,
               Value x, uint32_t v) {
  return mlir::arith::CmpIOp::create(b, loc, predicate, x, I32(b, loc, v)).getResult();
}

}  // namespace

mlir::Value RoundToF16(mlir::OpBuilder& b, mlir::Location loc, mlir::Value x) {
  using mlir::arith::CmpIPredicate;
  namespace arith = mlir::arith;
  Value bits = arith::BitcastOp::create(b, loc, b.getI32Type(), x);
  Value abs = arith::AndIOp::create(b, loc, bits, I32(b, loc, 0x7fffffffu));
  Value sign = arith::AndIOp::create(b, loc, bits, I32(b, loc, 0x80000000u));
  // Normal range: 13 mantissa bits dropped, ties to even; from 65520 up, infinity.
  Value lsb = arith::AndIOp::create(b, loc, arith::ShRUIOp::create(b, loc, bits, I32(b, loc, 13)),
                                    I32(b, loc, 1));
  Value rounded = arith::AndIOp::create(
      b, loc,
      arith::AddIOp::create(b, loc, bits, arith::AddIOp::create(b, loc, lsb, I32(b, loc, 0xfff))),
      I32(b, loc, 0xffffe000u));
  Value overflows = Unsigned(b, loc, CmpIPredicate::uge,
                             arith::AndIOp::create(b, loc, rounded, I32(b, loc, 0x7fffffffu)),
                             0x47800000u);  // 65536.0
  Value normal = Select(b, loc, overflows,
                        arith::OrIOp::create(b, loc, sign, I32(b, loc, 0x7f800000u)), rounded);
  // Below 2^-14, f16's subnormals: multiples of 2^-24, to which adding and removing 0.5 in f32
  // rounds (ties to even; every value involved is a normal f32).
  Value abs_f = arith::BitcastOp::create(b, loc, b.getF32Type(), abs);
  Value half = F32(b, loc, 0.5f);
  Value sub = arith::SubFOp::create(b, loc, arith::AddFOp::create(b, loc, abs_f, half), half);
  Value sub_bits =
      arith::OrIOp::create(b, loc, arith::BitcastOp::create(b, loc, b.getI32Type(), sub), sign);
  Value is_sub = Unsigned(b, loc, CmpIPredicate::ult, abs, 0x38800000u);  // 2^-14
  // NaN: quiet, its sign and upper payload kept.
  Value nan =
      arith::AndIOp::create(b, loc, arith::OrIOp::create(b, loc, bits, I32(b, loc, 0x00400000u)),
                            I32(b, loc, 0xffffe000u));
  Value is_nan = Unsigned(b, loc, CmpIPredicate::ugt, abs, 0x7f800000u);
  Value result = Select(b, loc, is_nan, nan, Select(b, loc, is_sub, sub_bits, normal));
  return arith::BitcastOp::create(b, loc, x.getType(), result);
}

mlir::Value F16BitsToF32(mlir::OpBuilder& b, mlir::Location loc, mlir::Value h) {
  using mlir::arith::CmpIPredicate;
  namespace arith = mlir::arith;
  Value h32 = arith::ExtUIOp::create(b, loc, b.getI32Type(), h);
  Value sign = arith::ShLIOp::create(
      b, loc, arith::AndIOp::create(b, loc, h32, I32(b, loc, 0x8000)), I32(b, loc, 16));
  Value exponent = arith::AndIOp::create(
      b, loc, arith::ShRUIOp::create(b, loc, h32, I32(b, loc, 10)), I32(b, loc, 0x1f));
  Value mantissa = arith::AndIOp::create(b, loc, h32, I32(b, loc, 0x3ff));
  Value fraction = arith::ShLIOp::create(b, loc, mantissa, I32(b, loc, 13));
  Value normal = arith::OrIOp::create(
      b, loc, sign,
      arith::OrIOp::create(
          b, loc,
          arith::ShLIOp::create(b, loc, arith::AddIOp::create(b, loc, exponent, I32(b, loc, 112)),
                                I32(b, loc, 23)),
          fraction));
  Value special = arith::OrIOp::create(
      b, loc, sign, arith::OrIOp::create(b, loc, fraction, I32(b, loc, 0x7f800000u)));
  // Subnormal: mantissa * 2^-24, exact in f32.
  Value sub_value = arith::MulFOp::create(
      b, loc, arith::UIToFPOp::create(b, loc, b.getF32Type(), mantissa), F32(b, loc, 0x1p-24f));
  Value sub = arith::OrIOp::create(
      b, loc, arith::BitcastOp::create(b, loc, b.getI32Type(), sub_value), sign);
  Value result =
      Select(b, loc, Unsigned(b, loc, CmpIPredicate::eq, exponent, 0), sub,
             Select(b, loc, Unsigned(b, loc, CmpIPredicate::eq, exponent, 31), special, normal));
  return arith::BitcastOp::create(b, loc, b.getF32Type(), result);
}

mlir::Value F32ToF16Bits(mlir::OpBuilder& b, mlir::Location loc, mlir::Value x) {
  using mlir::arith::CmpIPredicate;
  namespace arith = mlir::arith;
  Value bits = arith::BitcastOp::create(b, loc, b.getI32Type(), x);
  Value abs = arith::AndIOp::create(b, loc, bits, I32(b, loc, 0x7fffffffu));
  Value sign = arith::AndIOp::create(b, loc, arith::ShRUIOp::create(b, loc, bits, I32(b, loc, 16)),
                                     I32(b, loc, 0x8000));
  Value fraction = arith::AndIOp::create(
      b, loc, arith::ShRUIOp::create(b, loc, abs, I32(b, loc, 13)), I32(b, loc, 0x3ff));
  Value exponent = arith::ShRUIOp::create(b, loc, abs, I32(b, loc, 23));
  Value normal = arith::OrIOp::create(
      b, loc, sign,
      arith::OrIOp::create(
          b, loc,
          arith::ShLIOp::create(b, loc, arith::SubIOp::create(b, loc, exponent, I32(b, loc, 112)),
                                I32(b, loc, 10)),
          fraction));
  Value special = arith::OrIOp::create(b, loc, sign,
                                       arith::OrIOp::create(b, loc, fraction, I32(b, loc, 0x7c00)));
  // Below 2^-14: a multiple of 2^-24 (the value is rounded to f16), exactly that many units.
  Value units = arith::FPToUIOp::create(
      b, loc, b.getI32Type(),
      arith::MulFOp::create(b, loc, arith::BitcastOp::create(b, loc, b.getF32Type(), abs),
                            F32(b, loc, 0x1p24f)));
  Value sub = arith::OrIOp::create(b, loc, sign, units);
  Value result =
      Select(b, loc, Unsigned(b, loc, CmpIPredicate::uge, abs, 0x7f800000u), special,
             Select(b, loc, Unsigned(b, loc, CmpIPredicate::ult, abs, 0x38800000u), sub, normal));
  return arith::TruncIOp::create(b, loc, b.getIntegerType(16), result);
}

mlir::Value NarrowFloatBits(mlir::OpBuilder& b, mlir::Location loc, mlir::Value x,
                            mlir::Type narrow) {
  if (narrow.isF16()) return F32ToF16Bits(b, loc, x);
  Value bits = mlir::arith::BitcastOp::create(b, loc, b.getI32Type(), x);
  Value upper = mlir::arith::ShRUIOp::create(
      b, loc, bits, mlir::arith::ConstantIntOp::create(b, loc, b.getI32Type(), 16));
  return mlir::arith::TruncIOp::create(b, loc, b.getIntegerType(16), upper);
}

mlir::Value NarrowFloatFromBits(mlir::OpBuilder& b, mlir::Location loc, mlir::Value h,
                                mlir::Type narrow) {
  if (narrow.isF16()) return F16BitsToF32(b, loc, h);
  Value wide = mlir::arith::ExtUIOp::create(b, loc, b.getI32Type(), h);
  Value shifted = mlir::arith::ShLIOp::create(
      b, loc, wide, mlir::arith::ConstantIntOp::create(b, loc, b.getI32Type(), 16));
  return mlir::arith::BitcastOp::create(b, loc, b.getF32Type(), shifted);
}

mlir::Value RoundToNarrowFloat(mlir::OpBuilder& b, mlir::Location loc, mlir::Value x,
                               mlir::Type narrow) {
  return narrow.isF16() ? RoundToF16(b, loc, x) : RoundToBf16(b, loc, x);
}

mlir::Value BuildElementwise(
    ImportState& state, mlir::Location loc, mlir::RankedTensorType result_type,
    mlir::ValueRange inputs, llvm::ArrayRef<mlir::AffineMap> maps,
    const std::function<Value(mlir::OpBuilder&, mlir::Location, mlir::ValueRange)>& body) {
  mlir::OpBuilder& b = state.builder();
  const unsigned rank = result_type.getRank();
  mlir::MLIRContext* context = b.getContext();
  llvm::SmallVector<mlir::AffineMap> indexing;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!maps.empty()) {
      indexing.push_back(maps[i]);
    } else if (mlir::cast<mlir::RankedTensorType>(inputs[i].getType()).getRank() == 0 && rank > 0) {
      indexing.push_back(mlir::AffineMap::get(rank, 0, context));
    } else {
      indexing.push_back(b.getMultiDimIdentityMap(rank));
    }
  }
  indexing.push_back(b.getMultiDimIdentityMap(rank));
  mlir::RankedTensorType new_type = ImportState::NewType(result_type);
  Value init = state.Empty(loc, new_type);
  llvm::SmallVector<mlir::utils::IteratorType> iterators(rank, mlir::utils::IteratorType::parallel);
  auto generic = mlir::linalg::GenericOp::create(
      b, loc, mlir::TypeRange{new_type}, inputs, mlir::ValueRange{init}, indexing, iterators,
      [&](mlir::OpBuilder& nested, mlir::Location l, mlir::ValueRange args) {
        Value v = body(nested, l, args.drop_back());
        mlir::linalg::YieldOp::create(nested, l, v);
      });
  return generic.getResult(0);
}

namespace {

// stablehlo.reduce_precision of `x`, a value of float type `native` computed in the f32 or f64
// `x.getType()` (bf16 and f16 arrive widened to f32, which holds them exactly): rounded to
// `mantissa` bits of mantissa, to nearest with ties to even, and to the range of `exponent` bits
// of exponent (overflow to infinity, underflow, subnormals of the narrower format included, to
// zero, either keeping the sign), as XLA computes it on the bits of `native`; a NaN stays the NaN
// it was. On f32's bits the same steps give what they give on bf16's; f16's subnormals, normal
// numbers in f32, are rounded on their own grid.
Value ReducePrecision(mlir::OpBuilder& b, mlir::Location loc, Value x, mlir::Type native,
                      int64_t exponent, int64_t mantissa) {
  namespace arith = mlir::arith;
  auto type = mlir::cast<mlir::FloatType>(x.getType());
  auto native_type = mlir::cast<mlir::FloatType>(native);
  const int64_t width = type.getWidth();
  const int64_t own_mantissa = type.getFPMantissaWidth() - 1;  // 23, 52: without the implicit 1
  const int64_t own_exponent = width - 1 - own_mantissa;
  const int64_t native_mantissa = native_type.getFPMantissaWidth() - 1;
  const int64_t native_exponent = native_type.getWidth() - 1 - native_mantissa;
  const mlir::IntegerType bits_type = b.getIntegerType(width);
  auto c = [&](uint64_t v) -> Value {
    return arith::ConstantOp::create(b, loc, b.getIntegerAttr(bits_type, static_cast<int64_t>(v)));
  };
  Value bits = arith::BitcastOp::create(b, loc, bits_type, x);
  if (mantissa < native_mantissa) {
    const uint64_t last = uint64_t{1} << (own_mantissa - mantissa);
    Value last_bit = arith::ShRUIOp::create(b, loc, arith::AndIOp::create(b, loc, bits, c(last)),
                                            c(own_mantissa - mantissa));
    Value bias = arith::AddIOp::create(b, loc, last_bit, c((last >> 1) - 1));
    bits = arith::AndIOp::create(b, loc, arith::AddIOp::create(b, loc, bits, bias), c(~(last - 1)));
    if (native.isF16()) {  // a subnormal: to a multiple of 2^(-14 - mantissa), ties to even
      Value scale = Constant(b, loc, type, std::ldexp(1.0, static_cast<int>(14 + mantissa)));
      Value grid = arith::DivFOp::create(
          b, loc, mlir::math::RoundEvenOp::create(b, loc, arith::MulFOp::create(b, loc, x, scale)),
          scale);
      Value subnormal = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT,
                                              mlir::math::AbsFOp::create(b, loc, x),
                                              Constant(b, loc, type, std::ldexp(1.0, -14)));
      bits = arith::SelectOp::create(b, loc, subnormal,
                                     arith::BitcastOp::create(b, loc, bits_type, grid), bits);
    }
  }
  if (exponent < native_exponent) {
    const uint64_t bias = (uint64_t{1} << (own_exponent - 1)) - 1;
    const uint64_t reduced_bias = (uint64_t{1} << (exponent - 1)) - 1;
    const uint64_t exponent_mask = ((uint64_t{1} << own_exponent) - 1) << own_mantissa;
    Value biased = arith::AndIOp::create(b, loc, bits, c(exponent_mask));
    Value overflows = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, biased,
                                            c((bias + reduced_bias) << own_mantissa));
    Value underflows = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule, biased,
                                             c((bias - reduced_bias) << own_mantissa));
    Value signed_zero = arith::AndIOp::create(b, loc, bits, c(uint64_t{1} << (width - 1)));
    Value signed_infinity = arith::OrIOp::create(b, loc, signed_zero, c(exponent_mask));
    bits = arith::SelectOp::create(b, loc, overflows, signed_infinity,
                                   arith::SelectOp::create(b, loc, underflows, signed_zero, bits));
  }
  Value nan = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO, x, x);
  return arith::SelectOp::create(b, loc, nan, x, arith::BitcastOp::create(b, loc, type, bits));
}

// reduce_precision's exponent_bits (at least 1) and mantissa_bits (at least 0).
absl::StatusOr<std::pair<int64_t, int64_t>> PrecisionBits(mlir::Operation* op) {
  auto exponent =
      mlir::dyn_cast_or_null<mlir::IntegerAttr>(ImportState::GetAttr(op, "exponent_bits"));
  auto mantissa =
      mlir::dyn_cast_or_null<mlir::IntegerAttr>(ImportState::GetAttr(op, "mantissa_bits"));
  if (!exponent || !mantissa || exponent.getInt() < 1 || mantissa.getInt() < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        ImportState::Where(op),
        ": expected integer exponent_bits (at least 1) and mantissa_bits (at least 0)"));
  }
  return std::make_pair(exponent.getInt(), mantissa.getInt());
}

}  // namespace

bool IsScalarOp(std::string_view name) { return ScalarOps().contains(name); }

absl::StatusOr<Value> BuildScalarOp(mlir::OpBuilder& b, mlir::Location loc, mlir::Operation* op,
                                    mlir::ValueRange args, mlir::TypeRange arg_types,
                                    mlir::Type result_type) {
  const std::string name = op->getName().getStringRef().str();
  TESSERA_RETURN_IF_ERROR(CheckElementTypes(op, name, args, arg_types, result_type));
  absl::StatusOr<Value> value = absl::UnimplementedError("");
  if (name == "stablehlo.compare" && args.size() == 2) {
    return Compare(b, loc, op, args[0], args[1], arg_types[0]);
  } else if (name == "stablehlo.select" && args.size() == 3) {
    return Value(mlir::arith::SelectOp::create(b, loc, args[0], args[1], args[2]));
  } else if (name == "stablehlo.clamp" && args.size() == 3) {
    TESSERA_ASSIGN_OR_RETURN(Value low,
                             Binary(b, loc, "stablehlo.maximum", args[1], args[0], arg_types[1]));
    return Binary(b, loc, "stablehlo.minimum", low, args[2], arg_types[1]);
  } else if (name == "stablehlo.reduce_precision" && args.size() == 1) {
    if (!mlir::isa<mlir::FloatType>(args[0].getType())) {
      return absl::UnimplementedError(
          absl::StrCat(ImportState::Where(op), ": reduce_precision of a non-float"));
    }
    TESSERA_ASSIGN_OR_RETURN(auto precision, PrecisionBits(op));
    return ReducePrecision(b, loc, args[0], arg_types[0], precision.first, precision.second);
  } else if (name == "stablehlo.convert" && args.size() == 1) {
    return Convert(b, loc, args[0], arg_types[0], result_type);
  } else if (name == "stablehlo.bitcast_convert" && args.size() == 1) {
    if (arg_types[0].getIntOrFloatBitWidth() != result_type.getIntOrFloatBitWidth()) {
      return absl::UnimplementedError(absl::StrCat(
          ImportState::Where(op), ": bitcast_convert between element types of different widths"));
    }
    // bf16 and f16 are held in f32: through their 16 bits.
    Value input = args[0];
    mlir::Type input_type = SignlessType(arg_types[0]);
    if (IsNarrowFloat(arg_types[0])) {
      input = NarrowFloatBits(b, loc, input, arg_types[0]);
      input_type = b.getIntegerType(16);
    }
    if (IsNarrowFloat(result_type)) {
      if (IsNarrowFloat(arg_types[0]) && arg_types[0] == result_type) return args[0];
      if (input_type != b.getIntegerType(16)) {
        input = mlir::arith::BitcastOp::create(b, loc, b.getIntegerType(16), input);
      }
      return NarrowFloatFromBits(b, loc, input, result_type);
    }
    if (input_type == SignlessType(result_type)) return input;
    return Value(mlir::arith::BitcastOp::create(b, loc, SignlessType(result_type), input));
  } else if (args.size() == 2) {
    value = Binary(b, loc, name, args[0], args[1], arg_types[0]);
  } else if (args.size() == 1) {
    value = Unary(b, loc, name, args[0], arg_types[0]);
  }
  if (value.ok()) return value;
  if (!IsScalarOp(name)) {
    return absl::UnimplementedError(absl::StrCat(ImportState::Where(op), ": not supported"));
  }
  return absl::UnimplementedError(absl::StrCat(ImportState::Where(op), ": not supported ",
                                               value.status().message(), " with ", args.size(),
                                               " operands"));
}

namespace {

// stablehlo.bitcast_convert between element types of different widths (jax.lax.bitcast_convert_type
// of f32 to u8 and back): the narrower side has one more dimension, of the widths' ratio, its
// index 0 the lowest bits (StableHLO's little-endian order). Integer ops on the bits (bf16 and f16,
// held in f32, through their 16 bits). Same width: elementwise. UNIMPLEMENTED: widths below 8.
absl::Status ConvertBitcastConvert(ImportState& state, mlir::Operation* op) {
  TESSERA_RETURN_IF_ERROR(ImportState::CheckArity(op, 1, 1));
  TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType in, state.OperandType(op, 0));
  TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType out, state.ResultType(op, 0));
  const unsigned in_width = in.getElementType().getIntOrFloatBitWidth();
  const unsigned out_width = out.getElementType().getIntOrFloatBitWidth();
  if (in_width == out_width) return ConvertElementwise(state, op);
  const std::string where = ImportState::Where(op);
  if (in_width < 8 || out_width < 8) {
    return absl::UnimplementedError(
        absl::StrCat(where, ": bitcast_convert of types narrower than a byte between widths"));
  }
  const bool splits = in_width > out_width;  // the result has one more dimension
  const unsigned wide = splits ? in_width : out_width, narrow = splits ? out_width : in_width;
  mlir::RankedTensorType longer = splits ? out : in, shorter = splits ? in : out;
  llvm::SmallVector<int64_t> expected(shorter.getShape());
  expected.push_back(wide / narrow);
  if (longer.getShape() != llvm::ArrayRef<int64_t>(expected)) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, ": the narrower side must have the wider one's shape and a last dimension of ",
        wide / narrow));
  }
  TESSERA_ASSIGN_OR_RETURN(Value input, state.Operand(op, 0));
  mlir::OpBuilder& b = state.builder();
  const mlir::Location loc = op->getLoc();
  mlir::Type wide_int = b.getIntegerType(wide), narrow_int = b.getIntegerType(narrow);
  const unsigned rank = longer.getRank();
  // An element of `type` as integer bits of its width, and back (bf16 and f16 are held in f32).
  auto as_bits = [&](mlir::OpBuilder& nb, mlir::Location l, Value x, mlir::Type type) -> Value {
    if (IsNarrowFloat(type)) return NarrowFloatBits(nb, l, x, type);
    mlir::Type bits = nb.getIntegerType(type.getIntOrFloatBitWidth());
    return x.getType() == bits ? x : mlir::arith::BitcastOp::create(nb, l, bits, x).getResult();
  };
  auto from_bits = [&](mlir::OpBuilder& nb, mlir::Location l, Value bits, mlir::Type type) {
    if (IsNarrowFloat(type)) return NarrowFloatFromBits(nb, l, bits, type);
    mlir::Type element = SignlessType(type);
    return bits.getType() == element
               ? bits
               : mlir::arith::BitcastOp::create(nb, l, element, bits).getResult();
  };
  auto shift = [&](mlir::OpBuilder& nb, mlir::Location l) -> Value {  // k * narrow, as wide_int
    Value k = mlir::linalg::IndexOp::create(nb, l, rank - 1);
    Value kw = mlir::arith::IndexCastOp::create(nb, l, wide_int, k);
    return mlir::arith::MulIOp::create(nb, l, kw, Constant(nb, l, wide_int, narrow));
  };
  // The shorter side, read or written at the longer side's position without its last index.
  llvm::SmallVector<mlir::AffineExpr> dims;
  for (unsigned d = 0; d + 1 < rank; ++d) dims.push_back(b.getAffineDimExpr(d));
  const mlir::AffineMap drop_last = mlir::AffineMap::get(rank, 0, dims, b.getContext());
  if (splits) {
    state.Map(op->getResult(0),
              BuildElementwise(
                  state, loc, out, {input}, {drop_last},
                  [&](mlir::OpBuilder& nb, mlir::Location l, mlir::ValueRange args) -> Value {
                    Value bits = as_bits(nb, l, args[0], in.getElementType());
                    Value moved = mlir::arith::ShRUIOp::create(nb, l, bits, shift(nb, l));
                    Value part = mlir::arith::TruncIOp::create(nb, l, narrow_int, moved);
                    return from_bits(nb, l, part, out.getElementType());
                  }));
    return absl::OkStatus();
  }
  // Joining: a reduction over the last dimension, each part shifted to its place and or-ed.
  auto bits_type = mlir::RankedTensorType::get(out.getShape(), wide_int);
  Value init = state.Fill(loc, bits_type, b.getIntegerAttr(wide_int, 0));
  llvm::SmallVector<mlir::AffineMap> maps = {b.getMultiDimIdentityMap(rank), drop_last};
  llvm::SmallVector<mlir::utils::IteratorType> iterators(rank, mlir::utils::IteratorType::parallel);
  iterators.back() = mlir::utils::IteratorType::reduction;
  auto joined = mlir::linalg::GenericOp::create(
      b, loc, mlir::TypeRange{bits_type}, mlir::ValueRange{input}, mlir::ValueRange{init}, maps,
      iterators, [&](mlir::OpBuilder& nb, mlir::Location l, mlir::ValueRange args) {
        Value part = mlir::arith::ExtUIOp::create(nb, l, wide_int,
                                                  as_bits(nb, l, args[0], in.getElementType()));
        Value placed = mlir::arith::ShLIOp::create(nb, l, part, shift(nb, l));
        mlir::linalg::YieldOp::create(nb, l,
                                      Value(mlir::arith::OrIOp::create(nb, l, args[1], placed)));
      });
  Value result = joined.getResult(0);
  if (SignlessType(out.getElementType()) != wide_int) {
    result = BuildElementwise(state, loc, out, {result}, {},
                              [&](mlir::OpBuilder& nb, mlir::Location l, mlir::ValueRange args) {
                                return from_bits(nb, l, args[0], out.getElementType());
                              });
  }
  state.Map(op->getResult(0), result);
  return absl::OkStatus();
}

}  // namespace

void AddElementwiseConversions(ConversionTable& table) {
  for (const auto& [name, operands] : ScalarOps()) table[std::string(name)] = ConvertElementwise;
  table["stablehlo.bitcast_convert"] = ConvertBitcastConvert;
}

}  // namespace tessera::compiler::stablehlo
