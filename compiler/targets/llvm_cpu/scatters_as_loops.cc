// ScattersAsLoops: the importer's scatter generic (compiler/stablehlo/gather_scatter.cc) as
//   for each reduction loop (the updates' scatter dimensions, window offsets), in order:
//     for each operand dimension the window spans whole, or a batching dimension:
//       v = where the update lands (its start, start + offset, or the loop)
//       if the window lies inside the operand: out[v] = combine(out[v], update)
// on tensors (scf.for carrying the result, tensor.extract / tensor.insert), which bufferization
// turns into stores in place.

#include "compiler/targets/llvm_cpu/scatters_as_loops.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "base/string_view.h"
#include "compiler/internal.h"
#include "llvm/ADT/SetVector.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"

namespace tessera::compiler {
namespace {

using mlir::Value;

// The generic's kScatterAttrName, read and checked against its loops and types.
struct ScatterDescription {
  int64_t index_vector_dim = 0;
  bool is_unsigned = false;
  llvm::SmallVector<int64_t> index_loops, index_of_operand, inserted, window_loop, window_size;
};

std::optional<ScatterDescription> ReadDescription(mlir::linalg::GenericOp op, int64_t rank,
                                                  mlir::RankedTensorType indices) {
  const int64_t indices_rank = indices.getRank();
  auto dict = op->getAttrOfType<mlir::DictionaryAttr>(kScatterAttrName);
  if (!dict) return std::nullopt;
  auto vector_dim = dict.getAs<mlir::IntegerAttr>("index_vector_dim");
  auto is_unsigned = dict.getAs<mlir::BoolAttr>("unsigned");
  ScatterDescription d;
  auto read = [&](llvm::StringRef name, llvm::SmallVector<int64_t>& into) {
    auto array = dict.getAs<mlir::DenseI64ArrayAttr>(name);
    if (array) into.assign(array.asArrayRef().begin(), array.asArrayRef().end());
    return static_cast<bool>(array);
  };
  if (!vector_dim || !is_unsigned || !read("index_loops", d.index_loops) ||
      !read("index_of_operand", d.index_of_operand) || !read("inserted", d.inserted) ||
      !read("window_loop", d.window_loop) || !read("window_size", d.window_size)) {
    return std::nullopt;
  }
  d.index_vector_dim = vector_dim.getInt();
  d.is_unsigned = is_unsigned.getValue();
  const auto loops = static_cast<int64_t>(op.getNumLoops());
  const int64_t batch_rank = indices_rank - (d.index_vector_dim < indices_rank ? 1 : 0);
  bool valid = static_cast<int64_t>(d.index_of_operand.size()) == rank &&
               static_cast<int64_t>(d.inserted.size()) == rank &&
               static_cast<int64_t>(d.window_loop.size()) == rank &&
               static_cast<int64_t>(d.window_size.size()) == rank &&
               static_cast<int64_t>(d.index_loops.size()) == batch_rank &&
               d.index_vector_dim >= 0 && d.index_vector_dim <= indices_rank;
  for (int64_t loop : d.index_loops) valid = valid && loop >= 0 && loop < loops;
  for (int64_t loop : d.window_loop) valid = valid && loop >= -1 && loop < loops;
  // Each index vector element it reads lies in the vector.
  const int64_t vector_size =
      valid && d.index_vector_dim < indices_rank ? indices.getDimSize(d.index_vector_dim) : 1;
  for (int64_t k : d.index_of_operand) valid = valid && k >= -1 && k < vector_size;
  if (!valid) return std::nullopt;
  return d;
}

// The ops of the body that compute what it writes where an update lands (the true value of the
// select its yield returns, the else value the element itself), in body order, when they read the
// update (block argument 0) and the element (1) only; nullopt otherwise. `written` is that value.
std::optional<std::vector<mlir::Operation*>> CombineOps(mlir::linalg::GenericOp op,
                                                        Value& written) {
  mlir::Block* body = op.getBody();
  auto yield = mlir::dyn_cast<mlir::linalg::YieldOp>(body->getTerminator());
  if (!yield || yield.getNumOperands() != 1) return std::nullopt;
  auto select = yield.getOperand(0).getDefiningOp<mlir::arith::SelectOp>();
  if (!select || select.getFalseValue() != body->getArgument(1)) return std::nullopt;
  written = select.getTrueValue();
  llvm::SetVector<mlir::Operation*> needed;
  llvm::SmallVector<Value> pending = {written};
  while (!pending.empty()) {
    Value value = pending.pop_back_val();
    if (value == body->getArgument(0) || value == body->getArgument(1)) continue;
    mlir::Operation* producer = value.getDefiningOp();
    if (producer == nullptr || producer->getBlock() != body || producer->getNumRegions() != 0 ||
        !mlir::isPure(producer) || mlir::isa<mlir::linalg::IndexOp>(producer)) {
      return std::nullopt;
    }
    if (!needed.insert(producer)) continue;
    for (Value operand : producer->getOperands()) pending.push_back(operand);
  }
  std::vector<mlir::Operation*> ordered;
  for (mlir::Operation& inner : *body) {
    if (needed.contains(&inner)) ordered.push_back(&inner);
  }
  return ordered;
}

// Whether the body reads no tensor from outside.
bool CapturesNoTensor(mlir::linalg::GenericOp op) {
  llvm::SetVector<Value> captured;
  mlir::getUsedValuesDefinedAbove(op->getRegions(), captured);
  return llvm::none_of(captured,
                       [](Value value) { return mlir::isa<mlir::TensorType>(value.getType()); });
}

// The one tensor the body reads from outside (the indices), or null.
Value CapturedIndices(mlir::linalg::GenericOp op) {
  llvm::SetVector<Value> captured;
  mlir::getUsedValuesDefinedAbove(op->getRegions(), captured);
  Value indices;
  for (Value value : captured) {
    if (!mlir::isa<mlir::TensorType>(value.getType())) continue;
    if (indices) return nullptr;
    indices = value;
  }
  return indices;
}

class ScatterNest {
 public:
  ScatterNest(mlir::OpBuilder& b, mlir::Location loc, const ScatterDescription& d, Value indices)
      : b_(b), loc_(loc), d_(d), indices_(indices) {}

  // indices[the loops' position, k at index_vector_dim], as i64.
  Value ReadIndex(llvm::ArrayRef<Value> ivs, int64_t k) {
    auto type = mlir::cast<mlir::RankedTensorType>(indices_.getType());
    llvm::SmallVector<Value> position;
    for (int64_t i = 0, j = 0; i < type.getRank(); ++i) {
      position.push_back(i == d_.index_vector_dim ? Index(k) : ivs[d_.index_loops[j++]]);
    }
    Value raw = mlir::tensor::ExtractOp::create(b_, loc_, indices_, position);
    if (raw.getType().getIntOrFloatBitWidth() >= 64) return raw;
    if (d_.is_unsigned) return mlir::arith::ExtUIOp::create(b_, loc_, b_.getI64Type(), raw);
    return mlir::arith::ExtSIOp::create(b_, loc_, b_.getI64Type(), raw);
  }

  // Where the update at `ivs` lands in each operand dimension, and whether its window lies
  // inside the operand (as UpdateLandsHere in gather_scatter.cc decides element by element).
  Value Lands(mlir::RankedTensorType operand, llvm::ArrayRef<Value> ivs,
              llvm::SmallVector<Value>& position) {
    using mlir::arith::CmpIPredicate;
    Value inside = mlir::arith::ConstantIntOp::create(b_, loc_, b_.getI1Type(), 1);
    auto require = [&](CmpIPredicate predicate, Value lhs, Value rhs) {
      Value holds = mlir::arith::CmpIOp::create(b_, loc_, predicate, lhs, rhs);
      inside = mlir::arith::AndIOp::create(b_, loc_, inside, holds);
    };
    for (int64_t d = 0; d < operand.getRank(); ++d) {
      const bool indexed = d_.index_of_operand[d] >= 0;
      Value start = indexed ? ReadIndex(ivs, d_.index_of_operand[d]) : I64(0);
      Value at;
      if (d_.inserted[d] != 0) {
        at = start;
        require(CmpIPredicate::sge, start, I64(0));
        require(CmpIPredicate::slt, start, I64(operand.getDimSize(d)));
      } else if (d_.window_loop[d] >= 0) {
        at = mlir::arith::AddIOp::create(b_, loc_, start, AsI64(ivs[d_.window_loop[d]]));
        require(CmpIPredicate::sge, start, I64(0));
        require(CmpIPredicate::sle, start, I64(operand.getDimSize(d) - d_.window_size[d]));
      } else {
        at = AsI64(ivs[d]);
        if (indexed) require(CmpIPredicate::eq, start, I64(0));
      }
      position.push_back(mlir::arith::IndexCastOp::create(b_, loc_, b_.getIndexType(), at));
    }
    return inside;
  }

 private:
  Value Index(int64_t value) { return mlir::arith::ConstantIndexOp::create(b_, loc_, value); }
  Value I64(int64_t value) {
    return mlir::arith::ConstantIntOp::create(b_, loc_, b_.getI64Type(), value);
  }
  Value AsI64(Value index) {
    return mlir::arith::IndexCastOp::create(b_, loc_, b_.getI64Type(), index);
  }

  mlir::OpBuilder& b_;
  mlir::Location loc_;
  const ScatterDescription& d_;
  Value indices_;
};

absl::Status RewriteScatter(mlir::linalg::GenericOp op) {
  const std::string what = absl::StrCat("the scatter at ", FormatLocation(op.getLoc()));
  if (op.getNumDpsInputs() != 1 || op.getNumDpsInits() != 1 || op->getNumResults() != 1) {
    return absl::InternalError(absl::StrCat(what, " does not take one input and one init"));
  }
  Value updates = op.getDpsInputOperand(0)->get();
  Value init = op.getDpsInitOperand(0)->get();
  auto operand = mlir::dyn_cast<mlir::RankedTensorType>(init.getType());
  auto updates_type = mlir::dyn_cast<mlir::RankedTensorType>(updates.getType());
  Value indices = CapturedIndices(op);
  // Constant indices the canonicalizer folded into the body (`x.at[:, -1].set(...)`): the body
  // holds them, the description cannot; the generic stays (it matches a few updates).
  if (!indices && CapturesNoTensor(op)) return absl::OkStatus();
  if (!operand || !updates_type || !indices || !operand.hasStaticShape() ||
      !updates_type.hasStaticShape() ||
      !mlir::cast<mlir::RankedTensorType>(indices.getType()).hasStaticShape()) {
    return absl::InternalError(
        absl::StrCat(what, " does not read one captured indices tensor, all of static shape"));
  }
  const int64_t rank = operand.getRank();
  const auto loops = static_cast<int64_t>(op.getNumLoops());
  auto indices_type = mlir::cast<mlir::RankedTensorType>(indices.getType());
  std::optional<ScatterDescription> description = ReadDescription(op, rank, indices_type);
  Value written;
  std::optional<std::vector<mlir::Operation*>> combine = CombineOps(op, written);
  const llvm::SmallVector<mlir::AffineMap> maps = op.getIndexingMapsArray();
  // The element at the operand's loops, the first `rank`.
  const bool writes_at_operand_loops =
      maps[1].getNumResults() == rank &&
      llvm::all_of(llvm::enumerate(maps[1].getResults()), [](const auto& result) {
        auto dim = mlir::dyn_cast<mlir::AffineDimExpr>(result.value());
        return dim && dim.getPosition() == result.index();
      });
  if (!description || !combine || loops < rank || !writes_at_operand_loops) {
    return absl::InternalError(absl::StrCat(what, ": its ", base::AsAbsl(kScatterAttrName),
                                            " description, body or maps are not the importer's"));
  }
  // Each loop's extent: the operand's dimensions, then what the updates map reads with each.
  llvm::SmallVector<int64_t> extent(loops, -1);
  for (int64_t d = 0; d < rank; ++d) extent[d] = operand.getDimSize(d);
  llvm::SmallVector<int64_t> updates_loops;
  for (auto [u, expr] : llvm::enumerate(maps[0].getResults())) {
    auto dim = mlir::dyn_cast<mlir::AffineDimExpr>(expr);
    if (!dim) return absl::InternalError(absl::StrCat(what, " reads its updates at no loop"));
    updates_loops.push_back(dim.getPosition());
    if (dim.getPosition() >= rank) extent[dim.getPosition()] = updates_type.getDimSize(u);
  }
  // The nest: the reduction loops in order (the order updates arrive at an element), then the
  // operand dimensions no start places (batching ones, windows over the whole dimension).
  llvm::SmallVector<int64_t> order;
  for (int64_t loop = rank; loop < loops; ++loop) {
    if (extent[loop] < 0) {
      return absl::InternalError(absl::StrCat(what, " has a loop the updates do not bound"));
    }
    order.push_back(loop);
  }
  for (int64_t d = 0; d < rank; ++d) {
    if (description->inserted[d] == 0 && description->window_loop[d] < 0) order.push_back(d);
  }
  // Every loop the nest reads at is one of its loops, and over the extent of what it reads: each
  // read and write stays inside its tensor (the generic's verifier checked the updates' and the
  // operand's shapes against the loops, not the captured indices or the description).
  llvm::SmallVector<bool> in_nest(loops, false);
  for (int64_t loop : order) in_nest[loop] = true;
  bool fits = llvm::all_of(updates_loops, [&](int64_t loop) { return in_nest[loop]; });
  for (int64_t i = 0, j = 0; fits && i < indices_type.getRank(); ++i) {
    if (i == description->index_vector_dim) continue;
    const int64_t loop = description->index_loops[j++];
    fits = in_nest[loop] && extent[loop] == indices_type.getDimSize(i);
  }
  for (int64_t d = 0; fits && d < rank; ++d) {
    const int64_t loop = description->window_loop[d];
    fits =
        loop < 0 || (in_nest[loop] && loop >= rank && extent[loop] == description->window_size[d]);
  }
  if (!fits) {
    return absl::InternalError(
        absl::StrCat(what, ": its ", base::AsAbsl(kScatterAttrName),
                     " description reads at loops or extents its tensors do not have"));
  }
  mlir::OpBuilder b(op);
  const mlir::Location loc = op.getLoc();
  Value zero = mlir::arith::ConstantIndexOp::create(b, loc, 0);
  Value one = mlir::arith::ConstantIndexOp::create(b, loc, 1);
  llvm::SmallVector<Value> ivs(loops);
  llvm::SmallVector<mlir::scf::ForOp> nest;
  Value current = init;
  for (int64_t loop : order) {
    Value bound = mlir::arith::ConstantIndexOp::create(b, loc, extent[loop]);
    auto for_op = mlir::scf::ForOp::create(b, loc, zero, bound, one, mlir::ValueRange{current});
    nest.push_back(for_op);
    ivs[loop] = for_op.getInductionVar();
    current = for_op.getRegionIterArgs()[0];
    b.setInsertionPointToStart(for_op.getBody());
  }
  ScatterNest where(b, loc, *description, indices);
  llvm::SmallVector<Value> position;
  Value inside = where.Lands(operand, ivs, position);
  auto branch = mlir::scf::IfOp::create(b, loc, mlir::TypeRange{operand}, inside,
                                        /*withElseRegion=*/true);
  {
    mlir::OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(branch.thenBlock());
    llvm::SmallVector<Value> at_update;
    for (int64_t loop : updates_loops) at_update.push_back(ivs[loop]);
    mlir::IRMapping mapping;
    mapping.map(op.getBody()->getArgument(0),
                mlir::tensor::ExtractOp::create(b, loc, updates, at_update).getResult());
    mapping.map(op.getBody()->getArgument(1),
                mlir::tensor::ExtractOp::create(b, loc, current, position).getResult());
    for (mlir::Operation* inner : *combine) b.clone(*inner, mapping);
    Value stored =
        mlir::tensor::InsertOp::create(b, loc, mapping.lookup(written), current, position);
    mlir::scf::YieldOp::create(b, loc, stored);
    b.setInsertionPointToStart(branch.elseBlock());
    mlir::scf::YieldOp::create(b, loc, current);
  }
  Value result = branch.getResult(0);
  for (auto it = nest.rbegin(); it != nest.rend(); ++it) {
    b.setInsertionPointToEnd(it->getBody());
    mlir::scf::YieldOp::create(b, loc, result);
    result = it->getResult(0);
  }
  op->getResult(0).replaceAllUsesWith(result);
  op->erase();
  return absl::OkStatus();
}

}  // namespace

absl::Status ScattersAsLoops(mlir::func::FuncOp func) {
  llvm::SmallVector<mlir::linalg::GenericOp> scatters;
  func.walk([&](mlir::linalg::GenericOp op) {
    if (op->hasAttr(kScatterAttrName)) scatters.push_back(op);
  });
  for (mlir::linalg::GenericOp op : scatters) TESSERA_RETURN_IF_ERROR(RewriteScatter(op));
  return absl::OkStatus();
}

}  // namespace tessera::compiler
