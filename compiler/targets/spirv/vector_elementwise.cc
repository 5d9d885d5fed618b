// Elementwise ops as vec4 kernels (EmitVectorElementwise): each invocation loads, computes and
// stores whole vector<4xT> values (one 16-byte load per buffer instead of four scalar ones), and
// walks several of them, so that the launch has few work-groups. The buffers are bound as arrays
// of vector<4xT> (a builtin.unrealized_conversion_cast of each memref in the host function, which
// CollectDispatches binds as the buffer it casts): SPIR-V for Vulkan has no pointer casts in
// logical addressing. The last N % 4 elements run in a second, one-invocation launch on the
// scalar buffers. The ops are the op's own (the same arith and math ops, applied to each lane):
// the results are the scalar kernel's, bit for bit.

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "compiler/targets/spirv/spirv_codegen.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallVector.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/RegionUtils.h"

namespace tessera::compiler::spirv {

bool IsLaneType(mlir::Type type) {
  return type.isInteger(1) || (type.isIntOrFloat() && type.getIntOrFloatBitWidth() == 32);
}

bool IsLaneOp(mlir::Operation& op) {
  if (mlir::isa<mlir::linalg::YieldOp>(op)) return true;
  if (op.getNumRegions() != 0) return false;
  mlir::StringRef dialect = op.getDialect() ? op.getDialect()->getNamespace() : "";
  if (dialect != "arith" && dialect != "math") return false;
  if (!mlir::isa<mlir::arith::ConstantOp>(op) && !IsElementwiseMappable(op)) {
    return false;
  }
  return llvm::all_of(op.getOperandTypes(), IsLaneType) &&
         llvm::all_of(op.getResultTypes(), IsLaneType);
}

namespace {

// Lanes of a vector load or store: 16 bytes of 32-bit elements.
constexpr int64_t kLanes = kVectorLanes;

// Work-groups of a vectorized launch at most: each invocation then walks
// ceil(vectors / (groups * invocations)) vectors (lavapipe pays per work-group; a GPU has enough
// groups to fill it long before this).
constexpr int64_t kMaxVectorGroups = 4096;

// Whether `op` becomes a vec4 kernel: every iterator parallel, every operand a static
// identity-layout buffer of the iteration domain's shape read through the identity map (or a
// constant), 32-bit elements, at least kLanes of them, lane ops only, and only constants captured.
bool IsVectorizable(mlir::linalg::GenericOp op) {
  if (op.getNumReductionLoops() != 0 || !op.hasPureBufferSemantics()) return false;
  const llvm::SmallVector<int64_t> domain = op.getStaticLoopRanges();
  int64_t elements = 1;
  for (int64_t d : domain) elements *= d < 0 ? 0 : d;
  if (elements < kLanes) return false;
  for (mlir::OpOperand& operand : op->getOpOperands()) {
    auto type = mlir::dyn_cast<mlir::MemRefType>(operand.get().getType());
    if (!type) {
      if (!operand.get().getDefiningOp<mlir::arith::ConstantOp>()) return false;
      if (!IsLaneType(operand.get().getType())) return false;
      continue;
    }
    if (!type.hasStaticShape() || !type.getLayout().isIdentity() ||
        type.getShape() != llvm::ArrayRef<int64_t>(domain) ||
        !op.getMatchingIndexingMap(&operand).isIdentity() || !IsLaneType(type.getElementType()) ||
        type.getElementType().isInteger(1) || type.getMemorySpace()) {
      return false;
    }
  }
  if (!llvm::all_of(op.getRegion().front(), IsLaneOp)) return false;
  llvm::SetVector<mlir::Value> above;
  mlir::getUsedValuesDefinedAbove(op.getRegion(), above);
  return llvm::all_of(above, [](mlir::Value v) {
    return v.getDefiningOp<mlir::arith::ConstantOp>() != nullptr && IsLaneType(v.getType());
  });
}

// `type` as lanes-wide vectors (itself when lanes is 1).
mlir::Type Widen(mlir::Type type, int64_t lanes) {
  return lanes == 1 ? type : mlir::VectorType::get({lanes}, type);
}

// A constant `value` (a scalar constant op) as a constant of `lanes` lanes, built by `b`.
mlir::Value WidenConstant(mlir::OpBuilder& b, mlir::Location loc, mlir::Value value,
                          int64_t lanes) {
  auto constant = value.getDefiningOp<mlir::arith::ConstantOp>();
  if (lanes == 1) return b.clone(*constant)->getResult(0);
  auto type = mlir::cast<mlir::VectorType>(Widen(value.getType(), lanes));
  return mlir::arith::ConstantOp::create(b, loc, type,
                                         mlir::DenseElementsAttr::get(type, constant.getValue()));
}

// `op`'s body applied to `loaded` (one value per memref operand, in order, each of `lanes`
// lanes; null where the body does not read it): the yielded values, of `lanes` lanes. Constants
// (operands, captured, in the body) are widened; every other op rebuilt with its operands mapped
// and its result types widened.
std::vector<mlir::Value> ApplyBody(mlir::OpBuilder& b, mlir::linalg::GenericOp op,
                                   const std::vector<mlir::Value>& loaded, int64_t lanes) {
  mlir::Location loc = op.getLoc();
  mlir::Block& body = op.getRegion().front();
  mlir::IRMapping map;
  size_t next = 0;
  for (mlir::OpOperand& operand : op->getOpOperands()) {
    mlir::Value arg = body.getArgument(operand.getOperandNumber());
    map.map(arg, mlir::isa<mlir::MemRefType>(operand.get().getType())
                     ? loaded[next++]
                     : WidenConstant(b, loc, operand.get(), lanes));
  }
  llvm::SetVector<mlir::Value> above;
  mlir::getUsedValuesDefinedAbove(op.getRegion(), above);
  for (mlir::Value v : above) map.map(v, WidenConstant(b, loc, v, lanes));
  for (mlir::Operation& inner : body.without_terminator()) {
    if (mlir::isa<mlir::arith::ConstantOp>(inner)) {
      map.map(inner.getResult(0), WidenConstant(b, loc, inner.getResult(0), lanes));
      continue;
    }
    mlir::OperationState state(inner.getLoc(), inner.getName());
    for (mlir::Value operand : inner.getOperands()) state.operands.push_back(map.lookup(operand));
    for (mlir::Type type : inner.getResultTypes()) state.types.push_back(Widen(type, lanes));
    state.attributes = inner.getAttrs();
    mlir::Operation* built = b.create(state);
    map.map(inner.getResults(), built->getResults());
  }
  std::vector<mlir::Value> results;
  for (mlir::Value v : body.getTerminator()->getOperands()) results.push_back(map.lookup(v));
  return results;
}

// The memref operands of `op`, in operand order.
std::vector<mlir::Value> Buffers(mlir::linalg::GenericOp op) {
  std::vector<mlir::Value> buffers;
  for (mlir::Value v : op->getOperands()) {
    if (mlir::isa<mlir::MemRefType>(v.getType())) buffers.push_back(v);
  }
  return buffers;
}

// Whether the body of `op` reads its memref operand number `buffer` (counting memref operands
// only): an output that is only written is not loaded.
bool BufferUsed(mlir::linalg::GenericOp op, size_t buffer) {
  for (mlir::OpOperand& operand : op->getOpOperands()) {
    if (!mlir::isa<mlir::MemRefType>(operand.get().getType())) continue;
    if (buffer-- == 0) return !op.getMatchingBlockArgument(&operand).use_empty();
  }
  return false;
}

// Invocations per work-group of a vectorized launch: 128, or fewer where the device allows fewer
// (a power of two).
int64_t GroupSize(const KernelTarget& target) {
  int64_t limit = std::min<int64_t>(128, target.max_workgroup_invocations);
  if (!target.max_workgroup_size.empty()) limit = std::min(limit, target.max_workgroup_size[0]);
  int64_t size = 1;
  while (size * 2 <= limit) size *= 2;
  return size;
}

// The vectors [0, vectors) of `op`'s buffers (each cast to memref<vectors x vector<4xT>>) as one
// launch: invocation t of work-group g computes vectors g * size + t + j * stride for each j
// while below `vectors` (stride: the launch's invocations).
void EmitVectorLaunch(mlir::OpBuilder& b, mlir::linalg::GenericOp op, int64_t vectors,
                      const KernelTarget& target) {
  mlir::Location loc = op.getLoc();
  auto index = [&](int64_t v) -> mlir::Value {
    return mlir::arith::ConstantIndexOp::create(b, loc, v);
  };
  std::vector<mlir::Value> views;
  for (mlir::Value buffer : Buffers(op)) {
    mlir::Type element = mlir::cast<mlir::MemRefType>(buffer.getType()).getElementType();
    auto type = mlir::MemRefType::get({vectors}, Widen(element, kLanes));
    views.push_back(mlir::UnrealizedConversionCastOp::create(b, loc, mlir::TypeRange{type}, buffer)
                        .getResult(0));
  }
  const int64_t size = GroupSize(target);
  const int64_t groups = std::min(kMaxVectorGroups, (vectors + size - 1) / size);
  const int64_t stride = groups * size;
  const int64_t steps = (vectors + stride - 1) / stride;
  auto launch = mlir::gpu::LaunchOp::create(b, loc, index(groups), index(1), index(1), index(size),
                                            index(1), index(1));
  b.setInsertionPointToStart(&launch.getBody().front());
  mlir::Value first = mlir::arith::AddIOp::create(
      b, loc, mlir::arith::MulIOp::create(b, loc, launch.getBlockIds().x, index(size)),
      launch.getThreadIds().x);
  auto loop = mlir::scf::ForOp::create(b, loc, index(0), index(steps), index(1));
  b.setInsertionPointToStart(loop.getBody());
  mlir::Value at = mlir::arith::AddIOp::create(
      b, loc, first, mlir::arith::MulIOp::create(b, loc, loop.getInductionVar(), index(stride)));
  if (vectors % stride != 0) {
    mlir::Value inside =
        mlir::arith::CmpIOp::create(b, loc, mlir::arith::CmpIPredicate::ult, at, index(vectors));
    auto guard = mlir::scf::IfOp::create(b, loc, inside, /*withElseRegion=*/false);
    b.setInsertionPointToStart(guard.thenBlock());
  }
  const size_t inputs = views.size() - op.getNumDpsInits();  // the memref inputs
  std::vector<mlir::Value> loaded;
  for (size_t i = 0; i < views.size(); ++i) {
    loaded.push_back(BufferUsed(op, i)
                         ? mlir::memref::LoadOp::create(b, loc, views[i], mlir::ValueRange{at})
                         : mlir::Value());
  }
  std::vector<mlir::Value> results = ApplyBody(b, op, loaded, kLanes);
  for (size_t i = 0; i < results.size(); ++i) {
    mlir::memref::StoreOp::create(b, loc, results[i], views[inputs + i], mlir::ValueRange{at});
  }
  b.setInsertionPointToEnd(&launch.getBody().front());
  mlir::gpu::TerminatorOp::create(b, loc);
  b.setInsertionPointAfter(launch);
}

// The elements [first, total) of `op` (fewer than kLanes) as a one-invocation launch on the
// scalar buffers, each element's indices constants.
void EmitTailLaunch(mlir::OpBuilder& b, mlir::linalg::GenericOp op, int64_t first, int64_t total) {
  mlir::Location loc = op.getLoc();
  auto index = [&](int64_t v) -> mlir::Value {
    return mlir::arith::ConstantIndexOp::create(b, loc, v);
  };
  auto launch = mlir::gpu::LaunchOp::create(b, loc, index(1), index(1), index(1), index(1),
                                            index(1), index(1));
  b.setInsertionPointToStart(&launch.getBody().front());
  const std::vector<mlir::Value> buffers = Buffers(op);
  const size_t inputs = buffers.size() - op.getNumDpsInits();
  const llvm::SmallVector<int64_t> domain = op.getStaticLoopRanges();
  for (int64_t element = first; element < total; ++element) {
    std::vector<mlir::Value> indices(domain.size());
    for (int64_t d = static_cast<int64_t>(domain.size()) - 1, rest = element; d >= 0; --d) {
      indices[d] = index(rest % domain[d]);
      rest /= domain[d];
    }
    std::vector<mlir::Value> loaded;
    for (size_t i = 0; i < buffers.size(); ++i) {
      loaded.push_back(BufferUsed(op, i) ? mlir::memref::LoadOp::create(b, loc, buffers[i], indices)
                                         : mlir::Value());
    }
    std::vector<mlir::Value> results = ApplyBody(b, op, loaded, 1);
    for (size_t i = 0; i < results.size(); ++i) {
      mlir::memref::StoreOp::create(b, loc, results[i], buffers[inputs + i], indices);
    }
  }
  mlir::gpu::TerminatorOp::create(b, loc);
  b.setInsertionPointAfter(launch);
}

}  // namespace

void EmitVectorElementwise(mlir::func::FuncOp func, const KernelTarget& target) {
  func.getContext()
      ->loadDialect<mlir::gpu::GPUDialect, mlir::scf::SCFDialect, mlir::memref::MemRefDialect,
                    mlir::arith::ArithDialect, mlir::math::MathDialect>();
  std::vector<mlir::linalg::GenericOp> ops;
  for (mlir::Operation& op : func.getBody().front()) {
    auto generic = mlir::dyn_cast<mlir::linalg::GenericOp>(op);
    if (generic && IsVectorizable(generic)) ops.push_back(generic);
  }
  for (mlir::linalg::GenericOp op : ops) {
    int64_t total = 1;
    for (int64_t d : op.getStaticLoopRanges()) total *= d;
    mlir::OpBuilder b(op);
    EmitVectorLaunch(b, op, total / kLanes, target);
    if (total % kLanes != 0) EmitTailLaunch(b, op, total - total % kLanes, total);
    op->erase();
  }
}

}  // namespace tessera::compiler::spirv
