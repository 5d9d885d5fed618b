// Reductions for Vulkan (EmitTwoPassReductions, internal.h): many outputs one invocation per row
// (EmitRowReduction, below: at least kMinRows outputs, the reduced extent contiguous in each
// input), else over a long extent in two passes.
// Lowered as other generics, a reduction is one invocation per output walking the whole reduced
// extent (a reduction to a scalar: one invocation in all). Here a linalg.generic on buffers with
// its parallel dimensions first and one reduction dimension of at least kMinExtent, whose body
// combines a value computed from its inputs into the output with addf / maximumf / minimumf /
// maxnumf / minnumf on floats, or addi / maxsi / minsi / maxui / minui on integers of 8 to 64
// bits, becomes two gpu.launch ops:
//   pass 1  grid (G, P): work-group g of output p reduces its slice of the extent (each of the
//           kThreads invocations a strided part, then a tree through workgroup memory between
//           barriers) into partials[p * G + g], a scratch buffer;
//   pass 2  grid (1, P): one work-group per output combines its G partials the same way, then
//           with the output's initial value.
// The order of the floating-point operations differs from the sequential loop (a tree: usually
// closer to the exact sum); integer results are the same (wrapping addition is associative).
// Besides speed on GPUs, this keeps every invocation's loops short, which lavapipe needs: its
// driver ends an invocation's loops after 65535 iterations in all (vulkan_codegen.cc).

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "compiler/internal.h"
#include "compiler/targets/spirv/spirv_codegen.h"
#include "llvm/ADT/APFloat.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/RegionUtils.h"

namespace tessera::compiler {
namespace {

constexpr int64_t kThreads = 64;        // invocations per work-group, a power of two
constexpr int64_t kMinExtent = 256;     // shorter reductions keep one pass
constexpr int64_t kPerInvocation = 16;  // elements each invocation of pass 1 walks at least
constexpr int64_t kMaxGroups = 4096;    // slices per output (pass 2 walks them)
constexpr int64_t kMaxOutputs = 65535;  // grid y

// A reduction generic this file lowers: its combining op (operands: the value and the output's
// block argument) and the static loop ranges (parallel dimensions, then the reduced one).
struct Reduction {
  mlir::linalg::GenericOp op;
  mlir::Operation* combiner = nullptr;
  mlir::Value value;  // the combiner's operand that is not the output
  std::vector<int64_t> parallel;
  int64_t extent = 0;

  // How many outputs: the product of the parallel dimensions.
  int64_t outputs() const {
    int64_t n = 1;
    for (int64_t d : parallel) n *= d;
    return n;
  }
  // The output's element type (its one init is the op's last operand).
  mlir::Type element() const {
    return mlir::cast<mlir::MemRefType>(op->getOperand(op->getNumOperands() - 1).getType())
        .getElementType();
  }
};

bool IsCombiner(mlir::Operation* op) {
  return mlir::isa<mlir::arith::AddFOp, mlir::arith::MaximumFOp, mlir::arith::MinimumFOp,
                   mlir::arith::MaxNumFOp, mlir::arith::MinNumFOp, mlir::arith::AddIOp,
                   mlir::arith::MaxSIOp, mlir::arith::MinSIOp, mlir::arith::MaxUIOp,
                   mlir::arith::MinUIOp>(op);
}

bool BuffersFit(mlir::linalg::GenericOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInits() != 1) return false;
  for (mlir::OpOperand& operand : op->getOpOperands()) {
    auto type = mlir::dyn_cast<mlir::MemRefType>(operand.get().getType());
    if (!type || !type.hasStaticShape() || !type.getLayout().isIdentity()) return false;
    if (!op.getMatchingIndexingMap(&operand).isProjectedPermutation()) return false;
  }
  mlir::Type element = mlir::cast<mlir::MemRefType>(op.getDpsInits()[0].getType()).getElementType();
  if (auto integer = mlir::dyn_cast<mlir::IntegerType>(element)) {
    return integer.getWidth() >= 8 && integer.getWidth() <= 64;
  }
  return mlir::isa<mlir::FloatType>(element);
}

std::optional<Reduction> MatchReduction(mlir::linalg::GenericOp op) {
  if (!BuffersFit(op) || op.getNumReductionLoops() != 1) return std::nullopt;
  llvm::SmallVector<mlir::utils::IteratorType> iterators = op.getIteratorTypesArray();
  if (iterators.back() != mlir::utils::IteratorType::reduction) return std::nullopt;
  mlir::Block& body = op.getRegion().front();
  bool has_index = false;  // or a captured value that is not a constant
  op.getRegion().walk([&](mlir::linalg::IndexOp) { has_index = true; });
  mlir::BlockArgument out = body.getArguments().back();
  auto yield = mlir::cast<mlir::linalg::YieldOp>(body.getTerminator());
  mlir::Operation* combiner =
      yield.getNumOperands() == 1 ? yield.getOperand(0).getDefiningOp() : nullptr;
  llvm::SetVector<mlir::Value> above;
  mlir::getUsedValuesDefinedAbove(op.getRegion(), above);
  for (mlir::Value v : above) has_index = has_index || !v.getDefiningOp<mlir::arith::ConstantOp>();
  if (has_index || combiner == nullptr || !IsCombiner(combiner) || !out.hasOneUse() ||
      combiner->getBlock() != &body) {
    return std::nullopt;
  }
  Reduction r{op, combiner};
  if (combiner->getOperand(0) == out) r.value = combiner->getOperand(1);
  if (combiner->getOperand(1) == out) r.value = combiner->getOperand(0);
  if (!r.value || r.value == out) return std::nullopt;
  llvm::SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  r.extent = ranges.back();
  r.parallel.assign(ranges.begin(), ranges.end() - 1);
  if (r.outputs() < 1) return std::nullopt;
  return r;
}

// The builders of one launch body: index constants and arithmetic, the combiner, the tree.
class Emitter {
 public:
  Emitter(mlir::OpBuilder& b, mlir::Location loc, Reduction& r) : b_(b), loc_(loc), r_(r) {}

  mlir::Value Index(int64_t v) { return mlir::arith::ConstantIndexOp::create(b_, loc_, v); }
  mlir::Value Add(mlir::Value x, mlir::Value y) {
    return mlir::arith::AddIOp::create(b_, loc_, x, y);
  }
  mlir::Value Mul(mlir::Value x, mlir::Value y) {
    return mlir::arith::MulIOp::create(b_, loc_, x, y);
  }
  mlir::Value Less(mlir::Value x, mlir::Value y) {
    return mlir::arith::CmpIOp::create(b_, loc_, mlir::arith::CmpIPredicate::ult, x, y);
  }
  // The combiner on (acc, x): a clone with the output argument mapped to acc.
  mlir::Value Combine(mlir::Value acc, mlir::Value x) {
    mlir::IRMapping map;
    map.map(r_.value, x);
    map.map(r_.op.getRegion().front().getArguments().back(), acc);
    return b_.clone(*r_.combiner, map)->getResult(0);
  }
  // The combiner on (acc, x) where both may be vectors: rebuilt with the result type of `acc`.
  mlir::Value CombineWide(mlir::Value acc, mlir::Value x) {
    mlir::OperationState state(r_.combiner->getLoc(), r_.combiner->getName());
    for (mlir::Value operand : r_.combiner->getOperands()) {
      state.operands.push_back(operand == r_.value ? x : acc);
    }
    state.types.push_back(acc.getType());
    state.attributes = r_.combiner->getAttrs();
    return b_.create(state)->getResult(0);
  }
  // The combiner's identity: 0 for an integer addition, -0.0 for a float one (-0 + x is x, also for
  // x = -0), -inf / the least integer for a max, +inf / the greatest integer for a min, NaN for a
  // maxnum / minnum.
  mlir::Value Identity(mlir::Type element) {
    if (auto integer = mlir::dyn_cast<mlir::IntegerType>(element)) {
      const unsigned bits = integer.getWidth();
      llvm::APInt value = llvm::APInt::getZero(bits);  // addi, maxui
      if (mlir::isa<mlir::arith::MaxSIOp>(r_.combiner))
        value = llvm::APInt::getSignedMinValue(bits);
      if (mlir::isa<mlir::arith::MinSIOp>(r_.combiner))
        value = llvm::APInt::getSignedMaxValue(bits);
      if (mlir::isa<mlir::arith::MinUIOp>(r_.combiner)) value = llvm::APInt::getMaxValue(bits);
      return mlir::arith::ConstantOp::create(b_, loc_, mlir::IntegerAttr::get(integer, value));
    }
    auto type = mlir::cast<mlir::FloatType>(element);
    llvm::APFloat value = llvm::APFloat::getZero(type.getFloatSemantics(), /*Negative=*/true);
    if (mlir::isa<mlir::arith::MaximumFOp>(r_.combiner)) {
      value = llvm::APFloat::getInf(type.getFloatSemantics(), /*Negative=*/true);
    } else if (mlir::isa<mlir::arith::MinimumFOp>(r_.combiner)) {
      value = llvm::APFloat::getInf(type.getFloatSemantics(), /*Negative=*/false);
    } else if (mlir::isa<mlir::arith::MaxNumFOp, mlir::arith::MinNumFOp>(r_.combiner)) {
      value = llvm::APFloat::getQNaN(type.getFloatSemantics());  // NaN: all-NaN slices stay NaN
    }
    return mlir::arith::ConstantOp::create(b_, loc_, mlir::FloatAttr::get(type, value));
  }
  // The parallel coordinates of output `p` (row-major over the parallel dimensions).
  std::vector<mlir::Value> Delinearize(mlir::Value p) {
    std::vector<mlir::Value> dims(r_.parallel.size());
    for (int64_t d = static_cast<int64_t>(dims.size()) - 1; d >= 0; --d) {
      dims[d] = mlir::arith::RemUIOp::create(b_, loc_, p, Index(r_.parallel[d]));
      p = mlir::arith::DivUIOp::create(b_, loc_, p, Index(r_.parallel[d]));
    }
    return dims;
  }
  // `operand` loaded at the loop coordinates `dims` through its indexing map.
  mlir::Value Load(mlir::OpOperand& operand, const std::vector<mlir::Value>& dims) {
    mlir::AffineMap map = r_.op.getMatchingIndexingMap(&operand);
    llvm::SmallVector<mlir::Value> indices;
    for (unsigned i = 0; i < map.getNumResults(); ++i)
      indices.push_back(dims[map.getDimPosition(i)]);
    return mlir::memref::LoadOp::create(b_, loc_, operand.get(), indices);
  }
  // shared[t] = acc for every invocation, then a tree over the work-group; shared[0] holds the
  // combination of all (every invocation reaches every barrier).
  void Tree(mlir::Value shared, mlir::Value t, mlir::Value acc) {
    mlir::memref::StoreOp::create(b_, loc_, acc, shared, mlir::ValueRange{t});
    mlir::gpu::BarrierOp::create(b_, loc_);
    for (int64_t s = kThreads / 2; s > 0; s /= 2) {
      auto guard = mlir::scf::IfOp::create(b_, loc_, Less(t, Index(s)), /*withElseRegion=*/false);
      b_.setInsertionPointToStart(guard.thenBlock());
      mlir::Value a = mlir::memref::LoadOp::create(b_, loc_, shared, mlir::ValueRange{t});
      mlir::Value c =
          mlir::memref::LoadOp::create(b_, loc_, shared, mlir::ValueRange{Add(t, Index(s))});
      mlir::memref::StoreOp::create(b_, loc_, Combine(a, c), shared, mlir::ValueRange{t});
      b_.setInsertionPointAfter(guard);
      mlir::gpu::BarrierOp::create(b_, loc_);
    }
  }
  // scf.if t == 0 { body }, the builder left after it.
  template <typename F>
  void IfFirst(mlir::Value t, F body) {
    mlir::Value first =
        mlir::arith::CmpIOp::create(b_, loc_, mlir::arith::CmpIPredicate::eq, t, Index(0));
    auto guard = mlir::scf::IfOp::create(b_, loc_, first, /*withElseRegion=*/false);
    b_.setInsertionPointToStart(guard.thenBlock());
    body();
    b_.setInsertionPointAfter(guard);
  }

 private:
  mlir::OpBuilder& b_;
  mlir::Location loc_;
  Reduction& r_;
};

// A gpu.launch of grid (gx, gy) x kThreads invocations; the builder at the start of its body.
mlir::gpu::LaunchOp Launch(mlir::OpBuilder& b, mlir::Location loc, int64_t gx, int64_t gy) {
  auto index = [&](int64_t v) -> mlir::Value {
    return mlir::arith::ConstantIndexOp::create(b, loc, v);
  };
  auto launch = mlir::gpu::LaunchOp::create(b, loc, index(gx), index(gy), index(1), index(kThreads),
                                            index(1), index(1));
  b.setInsertionPointToStart(&launch.getBody().front());
  return launch;
}

mlir::Value SharedTile(mlir::OpBuilder& b, mlir::Location loc, mlir::Type element) {
  // Workgroup memory (memory space 3), as the tiled matmul's tiles.
  auto type = mlir::MemRefType::get({kThreads}, element, mlir::MemRefLayoutAttrInterface{},
                                    b.getI64IntegerAttr(3));
  return mlir::memref::AllocOp::create(b, loc, type);
}

// Pass 1: partials[p * groups + g] = the combination of slice g (`slice` elements) of output p.
void EmitPartials(mlir::OpBuilder& b, Reduction& r, mlir::Value partials, int64_t groups,
                  int64_t slice, int64_t outputs, mlir::Type element) {
  mlir::Location loc = r.op.getLoc();
  auto launch = Launch(b, loc, groups, outputs);
  Emitter e(b, loc, r);
  mlir::Value shared = SharedTile(b, loc, element);
  mlir::Value t = launch.getThreadIds().x, g = launch.getBlockIds().x, p = launch.getBlockIds().y;
  std::vector<mlir::Value> dims = e.Delinearize(p);
  mlir::Value begin = e.Mul(g, e.Index(slice));
  mlir::Value end =
      mlir::arith::MinUIOp::create(b, loc, e.Add(begin, e.Index(slice)), e.Index(r.extent));
  auto loop = mlir::scf::ForOp::create(b, loc, e.Add(begin, t), end, e.Index(kThreads),
                                       mlir::ValueRange{e.Identity(element)});
  b.setInsertionPointToStart(loop.getBody());
  dims.push_back(loop.getInductionVar());
  mlir::IRMapping map;
  mlir::Block& body = r.op.getRegion().front();
  for (mlir::OpOperand* input : r.op.getDpsInputOperands()) {
    map.map(body.getArgument(input->getOperandNumber()), e.Load(*input, dims));
  }
  for (mlir::Operation& op : body.without_terminator()) {
    if (&op != r.combiner) b.clone(op, map);
  }
  mlir::Value acc = loop.getRegionIterArgs()[0];
  mlir::scf::YieldOp::create(b, loc, e.Combine(acc, map.lookupOrDefault(r.value)));
  b.setInsertionPointAfter(loop);
  e.Tree(shared, t, loop.getResult(0));
  e.IfFirst(t, [&] {
    mlir::Value at = e.Add(e.Mul(p, e.Index(groups)), g);
    mlir::Value total = mlir::memref::LoadOp::create(b, loc, shared, mlir::ValueRange{e.Index(0)});
    mlir::memref::StoreOp::create(b, loc, total, partials, mlir::ValueRange{at});
  });
  mlir::gpu::TerminatorOp::create(b, loc);
  b.setInsertionPointAfter(launch);
}

// Pass 2: output[p] = combine(output[p], the combination of its `groups` partials).
void EmitTotals(mlir::OpBuilder& b, Reduction& r, mlir::Value partials, int64_t groups,
                int64_t outputs, mlir::Type element) {
  mlir::Location loc = r.op.getLoc();
  auto launch = Launch(b, loc, 1, outputs);
  Emitter e(b, loc, r);
  mlir::Value shared = SharedTile(b, loc, element);
  mlir::Value t = launch.getThreadIds().x, p = launch.getBlockIds().y;
  auto loop = mlir::scf::ForOp::create(b, loc, t, e.Index(groups), e.Index(kThreads),
                                       mlir::ValueRange{e.Identity(element)});
  b.setInsertionPointToStart(loop.getBody());
  mlir::Value at = e.Add(e.Mul(p, e.Index(groups)), loop.getInductionVar());
  mlir::Value partial = mlir::memref::LoadOp::create(b, loc, partials, mlir::ValueRange{at});
  mlir::scf::YieldOp::create(b, loc, e.Combine(loop.getRegionIterArgs()[0], partial));
  b.setInsertionPointAfter(loop);
  e.Tree(shared, t, loop.getResult(0));
  e.IfFirst(t, [&] {
    std::vector<mlir::Value> dims = e.Delinearize(p);
    dims.push_back(e.Index(0));  // the reduced dimension: not among the output's
    mlir::OpOperand* out = r.op.getDpsInitOperand(0);
    mlir::Value old = e.Load(*out, dims);
    mlir::Value total = mlir::memref::LoadOp::create(b, loc, shared, mlir::ValueRange{e.Index(0)});
    mlir::AffineMap map = r.op.getMatchingIndexingMap(out);
    llvm::SmallVector<mlir::Value> indices;
    for (unsigned i = 0; i < map.getNumResults(); ++i)
      indices.push_back(dims[map.getDimPosition(i)]);
    mlir::memref::StoreOp::create(b, loc, e.Combine(old, total), out->get(), indices);
  });
  mlir::gpu::TerminatorOp::create(b, loc);
  b.setInsertionPointAfter(launch);
}

// Row reductions (many outputs, the reduced extent contiguous): one invocation per output walks
// its row, no workgroup memory and no barrier (lavapipe emulates barriers at great cost). Where
// the row is a whole number of vec4s of 32-bit elements and the body is lane ops, the input binds
// as an array of vector<4xT> and each invocation keeps kRowVectorAccumulators vec4 accumulators
// (combined, then their lanes, at the end); otherwise scalar loads into kRowScalarAccumulators.
constexpr int64_t kMinRows = 256;         // fewer outputs: the two-pass split
constexpr int64_t kMaxRowSteps = 16384;   // loop iterations per invocation at most
constexpr int64_t kRowGroup = kThreads;   // invocations per work-group (Launch)
constexpr int64_t kMaxRowGroups = 65535;  // grid x
constexpr int64_t kRowVectorAccumulators = 2;
constexpr int64_t kRowScalarAccumulators = 4;

// Whether `operand` (an input of r.op) is read along the row: the identity map over a buffer of
// the iteration domain's shape; else (not reading the reduced dimension) once per row.
bool Streamed(Reduction& r, mlir::OpOperand& operand) {
  auto type = mlir::cast<mlir::MemRefType>(operand.get().getType());
  llvm::SmallVector<int64_t> domain = r.op.getStaticLoopRanges();
  return r.op.getMatchingIndexingMap(&operand).isIdentity() &&
         type.getShape() == llvm::ArrayRef<int64_t>(domain);
}

bool ReadsRow(Reduction& r, mlir::OpOperand& operand) {
  mlir::AffineMap map = r.op.getMatchingIndexingMap(&operand);
  return map.isFunctionOfDim(map.getNumDims() - 1);
}

// Lanes per load of the row path for `r` (kVectorLanes or 1), or 0 where the row path does not
// apply.
int64_t RowLanes(Reduction& r) {
  const int64_t outputs = r.outputs();
  if (outputs < kMinRows || outputs > kMaxRowGroups * kRowGroup || r.extent < 1) return 0;
  bool lanes = r.extent % spirv::kVectorLanes == 0;
  for (mlir::OpOperand* input : r.op.getDpsInputOperands()) {
    if (ReadsRow(r, *input) && !Streamed(r, *input)) return 0;
    auto type = mlir::cast<mlir::MemRefType>(input->get().getType());
    lanes = lanes && spirv::IsLaneType(type.getElementType()) &&
            !type.getElementType().isInteger(1) && !type.getMemorySpace();
  }
  mlir::Block& body = r.op.getRegion().front();
  lanes = lanes && llvm::all_of(body, spirv::IsLaneOp) &&
          spirv::IsLaneType(body.getArguments().back().getType());
  const int64_t per = lanes ? spirv::kVectorLanes * kRowVectorAccumulators : kRowScalarAccumulators;
  if (r.extent / per > kMaxRowSteps) return 0;
  return lanes ? spirv::kVectorLanes : 1;
}

// `value` (a scalar) as `lanes` lanes.
mlir::Value Splat(mlir::OpBuilder& b, mlir::Location loc, mlir::Value value, int64_t lanes) {
  if (lanes == 1) return value;
  auto type = mlir::VectorType::get({lanes}, value.getType());
  if (auto constant = value.getDefiningOp<mlir::arith::ConstantOp>()) {
    return mlir::arith::ConstantOp::create(b, loc, type,
                                           mlir::DenseElementsAttr::get(type, constant.getValue()));
  }
  return mlir::vector::BroadcastOp::create(b, loc, type, value);
}

// The body of r.op but its combiner, on `lanes` lanes, with its block arguments mapped by `map`:
// the value combined into the accumulator.
mlir::Value RowValue(mlir::OpBuilder& b, Reduction& r, mlir::IRMapping map, int64_t lanes) {
  mlir::Location loc = r.op.getLoc();
  llvm::SetVector<mlir::Value> above;
  mlir::getUsedValuesDefinedAbove(r.op.getRegion(), above);
  for (mlir::Value v : above)
    map.map(v, Splat(b, loc, b.clone(*v.getDefiningOp())->getResult(0), lanes));
  for (mlir::Operation& op : r.op.getRegion().front().without_terminator()) {
    if (&op == r.combiner) continue;
    if (lanes == 1 || mlir::isa<mlir::arith::ConstantOp>(op)) {
      mlir::Value v = b.clone(op, map)->getResult(0);
      map.map(op.getResult(0), Splat(b, loc, v, lanes));
      continue;
    }
    mlir::OperationState state(op.getLoc(), op.getName());
    for (mlir::Value operand : op.getOperands()) state.operands.push_back(map.lookup(operand));
    for (mlir::Type type : op.getResultTypes()) {
      state.types.push_back(mlir::VectorType::get({lanes}, type));
    }
    state.attributes = op.getAttrs();
    map.map(op.getResults(), b.create(state)->getResults());
  }
  return map.lookup(r.value);
}

// One launch of ceil(outputs / kRowGroup) work-groups: invocation p reduces row p into output p.
void EmitRowReduction(Reduction& r, int64_t lanes) {
  mlir::OpBuilder b(r.op);
  mlir::Location loc = r.op.getLoc();
  const mlir::Type element = r.element();
  const int64_t outputs = r.outputs();
  const int64_t steps = r.extent / lanes;  // loads per row and streamed input
  const int64_t unroll =
      lanes == spirv::kVectorLanes ? kRowVectorAccumulators : kRowScalarAccumulators;
  std::vector<mlir::Value> views(r.op->getNumOperands());
  if (lanes == spirv::kVectorLanes) {
    for (mlir::OpOperand* input : r.op.getDpsInputOperands()) {
      if (!Streamed(r, *input)) continue;
      auto buffer = mlir::cast<mlir::MemRefType>(input->get().getType());
      auto type = mlir::MemRefType::get(
          {outputs * steps}, mlir::VectorType::get({spirv::kVectorLanes}, buffer.getElementType()));
      views[input->getOperandNumber()] =
          mlir::UnrealizedConversionCastOp::create(b, loc, mlir::TypeRange{type}, input->get())
              .getResult(0);
    }
  }
  auto launch = Launch(b, loc, (outputs + kRowGroup - 1) / kRowGroup, 1);
  Emitter e(b, loc, r);
  mlir::Value p = e.Add(e.Mul(launch.getBlockIds().x, e.Index(kRowGroup)), launch.getThreadIds().x);
  if (outputs % kRowGroup != 0) {
    auto guard = mlir::scf::IfOp::create(b, loc, e.Less(p, e.Index(outputs)), false);
    b.setInsertionPointToStart(guard.thenBlock());
  }
  std::vector<mlir::Value> dims = e.Delinearize(p);
  mlir::Block& body = r.op.getRegion().front();
  mlir::IRMapping rows;  // the inputs read once per row
  for (mlir::OpOperand* input : r.op.getDpsInputOperands()) {
    if (ReadsRow(r, *input)) continue;
    rows.map(body.getArgument(input->getOperandNumber()),
             Splat(b, loc, e.Load(*input, dims), lanes));
  }
  mlir::Value base = e.Mul(p, e.Index(steps));
  // The value at step `j` (an index) of the row.
  auto value_at = [&](mlir::Value j) {
    mlir::IRMapping map = rows;
    for (mlir::OpOperand* input : r.op.getDpsInputOperands()) {
      if (!ReadsRow(r, *input)) continue;
      mlir::Value loaded;
      if (lanes == spirv::kVectorLanes) {
        loaded = mlir::memref::LoadOp::create(b, loc, views[input->getOperandNumber()],
                                              mlir::ValueRange{e.Add(base, j)});
      } else {
        std::vector<mlir::Value> at = dims;
        at.push_back(j);
        loaded = e.Load(*input, at);
      }
      map.map(body.getArgument(input->getOperandNumber()), loaded);
    }
    return RowValue(b, r, map, lanes);
  };
  std::vector<mlir::Value> accs(unroll, Splat(b, loc, e.Identity(element), lanes));
  auto loop =
      mlir::scf::ForOp::create(b, loc, e.Index(0), e.Index(steps / unroll), e.Index(1), accs);
  b.setInsertionPointToStart(loop.getBody());
  std::vector<mlir::Value> next;
  for (int64_t u = 0; u < unroll; ++u) {
    mlir::Value j = e.Add(e.Mul(loop.getInductionVar(), e.Index(unroll)), e.Index(u));
    next.push_back(e.CombineWide(loop.getRegionIterArgs()[u], value_at(j)));
  }
  mlir::scf::YieldOp::create(b, loc, next);
  b.setInsertionPointAfter(loop);
  for (int64_t u = 0; u < unroll; ++u) accs[u] = loop.getResult(u);
  for (int64_t u = 0; u < steps % unroll; ++u) {
    accs[u] = e.CombineWide(accs[u], value_at(e.Index(steps - steps % unroll + u)));
  }
  for (int64_t width = unroll / 2; width > 0; width /= 2) {  // a tree over the accumulators
    for (int64_t u = 0; u < width; ++u) accs[u] = e.CombineWide(accs[u], accs[u + width]);
  }
  mlir::Value total = accs[0];
  if (lanes == spirv::kVectorLanes) {
    std::vector<mlir::Value> lane(spirv::kVectorLanes);
    for (int64_t l = 0; l < spirv::kVectorLanes; ++l)
      lane[l] = mlir::vector::ExtractOp::create(b, loc, total, l);
    total = e.Combine(e.Combine(lane[0], lane[1]), e.Combine(lane[2], lane[3]));
  }
  mlir::OpOperand* out = r.op.getDpsInitOperand(0);
  dims.push_back(e.Index(0));  // the reduced dimension: not among the output's
  mlir::Value old = e.Load(*out, dims);
  mlir::AffineMap map = r.op.getMatchingIndexingMap(out);
  llvm::SmallVector<mlir::Value> indices;
  for (unsigned i = 0; i < map.getNumResults(); ++i) indices.push_back(dims[map.getDimPosition(i)]);
  mlir::memref::StoreOp::create(b, loc, e.Combine(old, total), out->get(), indices);
  b.setInsertionPointToEnd(&launch.getBody().front());
  mlir::gpu::TerminatorOp::create(b, loc);
  r.op->erase();
}

void EmitTwoPassReduction(Reduction& r) {
  mlir::OpBuilder b(r.op);
  mlir::Location loc = r.op.getLoc();
  const mlir::Type element = r.element();
  const int64_t outputs = r.outputs();
  const int64_t groups = std::clamp<int64_t>(
      (r.extent + kThreads * kPerInvocation - 1) / (kThreads * kPerInvocation), 1, kMaxGroups);
  const int64_t slice = (r.extent + groups - 1) / groups;
  auto partials_type = mlir::MemRefType::get({outputs * groups}, element);
  mlir::Value partials = mlir::memref::AllocOp::create(b, loc, partials_type);
  EmitPartials(b, r, partials, groups, slice, outputs, element);
  EmitTotals(b, r, partials, groups, outputs, element);
  r.op->erase();
}

}  // namespace

void EmitTwoPassReductions(mlir::func::FuncOp func, const KernelTarget& target) {
  func.getContext()
      ->loadDialect<mlir::gpu::GPUDialect, mlir::scf::SCFDialect, mlir::memref::MemRefDialect,
                    mlir::arith::ArithDialect, mlir::vector::VectorDialect>();
  std::vector<Reduction> reductions;
  std::vector<std::pair<Reduction, int64_t>> rows;
  for (mlir::Operation& op : func.getBody().front()) {
    auto generic = mlir::dyn_cast<mlir::linalg::GenericOp>(op);
    if (!generic) continue;
    std::optional<Reduction> r = MatchReduction(generic);
    if (!r) continue;
    if (const int64_t lanes = RowLanes(*r); lanes > 0) {
      rows.emplace_back(*r, lanes);
      continue;
    }
    if (r->extent < kMinExtent || r->outputs() > kMaxOutputs) continue;
    const int64_t element_bytes = (r->element().getIntOrFloatBitWidth() + 7) / 8;
    // The partials buffer binds whole: it must fit the range.
    if (r->outputs() * kMaxGroups * element_bytes > target.max_storage_buffer_range) continue;
    reductions.push_back(*r);
  }
  for (auto& [r, lanes] : rows) EmitRowReduction(r, lanes);
  for (Reduction& r : reductions) EmitTwoPassReduction(r);
}

}  // namespace tessera::compiler
