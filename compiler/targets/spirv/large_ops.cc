#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "compiler/targets/spirv/spirv_codegen.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVDialect.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"
#include "mlir/Dialect/SPIRV/IR/TargetAndABI.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/SPIRV/Serialization.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/Passes.h"
#include "mlir/Transforms/RegionUtils.h"

namespace tessera::compiler::spirv {

namespace {

int64_t BufferBytes(mlir::MemRefType type) {
  return type.getNumElements() * ((type.getElementTypeBitWidth() + 7) / 8);
}

// Whether `op` (on buffers) indexes every buffer by the same linear element index: every iterator
// parallel, every memref operand a static identity-layout buffer of the iteration domain's shape
// read through the identity map, every other operand and captured value a constant, no
// linalg.index. Such an op runs as well on any contiguous chunk of its buffers.
bool IsElementwise(mlir::linalg::GenericOp op) {
  if (op.getNumReductionLoops() != 0 || !op.hasPureBufferSemantics()) return false;
  const llvm::SmallVector<int64_t> domain = op.getStaticLoopRanges();
  bool ok = true, any_buffer = false;
  for (mlir::OpOperand& operand : op->getOpOperands()) {
    auto type = mlir::dyn_cast<mlir::MemRefType>(operand.get().getType());
    if (!type) {
      ok = ok && operand.get().getDefiningOp<mlir::arith::ConstantOp>() != nullptr;
      continue;
    }
    any_buffer = true;
    ok = ok && type.hasStaticShape() && type.getLayout().isIdentity() &&
         type.getShape() == llvm::ArrayRef<int64_t>(domain) &&
         op.getMatchingIndexingMap(&operand).isIdentity();
  }
  op.getRegion().walk([&](mlir::linalg::IndexOp) { ok = false; });
  llvm::SetVector<mlir::Value> above;
  mlir::getUsedValuesDefinedAbove(op.getRegion(), above);
  for (mlir::Value v : above) ok = ok && v.getDefiningOp<mlir::arith::ConstantOp>() != nullptr;
  return ok && any_buffer;
}

// A module with one function `fn` that runs `op` (IsElementwise) over `count` elements: one 1-D
// buffer argument per memref operand of `op`, in order; constants cloned.
mlir::OwningOpRef<mlir::ModuleOp> ChunkModule(mlir::linalg::GenericOp op, int64_t count,
                                              const std::string& fn) {
  mlir::MLIRContext* context = op.getContext();
  mlir::Location loc = op.getLoc();
  mlir::OpBuilder b(context);
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::ModuleOp::create(loc);
  std::vector<mlir::Type> args;
  for (mlir::Value v : op->getOperands()) {
    if (auto type = mlir::dyn_cast<mlir::MemRefType>(v.getType())) {
      args.push_back(mlir::MemRefType::get({count}, type.getElementType()));
    }
  }
  b.setInsertionPointToEnd(module->getBody());
  auto func = mlir::func::FuncOp::create(b, loc, fn, b.getFunctionType(args, {}));
  mlir::Block* entry = func.addEntryBlock();
  b.setInsertionPointToStart(entry);
  mlir::IRMapping map;
  auto clone_constant = [&](mlir::Value v) {
    if (!map.contains(v)) map.map(v, b.clone(*v.getDefiningOp())->getResult(0));
  };
  llvm::SetVector<mlir::Value> above;
  mlir::getUsedValuesDefinedAbove(op.getRegion(), above);
  for (mlir::Value v : above) clone_constant(v);
  llvm::SmallVector<mlir::Value> inputs, outputs;
  llvm::SmallVector<mlir::AffineMap> maps;
  unsigned next = 0;
  for (mlir::OpOperand& operand : op->getOpOperands()) {
    mlir::Value v = operand.get(), mapped;
    if (mlir::isa<mlir::MemRefType>(v.getType())) {
      mapped = entry->getArgument(next++);
      maps.push_back(mlir::AffineMap::getMultiDimIdentityMap(1, context));
    } else {
      clone_constant(v);
      mapped = map.lookup(v);
      maps.push_back(mlir::AffineMap::get(1, 0, context));
    }
    (op.isDpsInput(&operand) ? inputs : outputs).push_back(mapped);
  }
  const llvm::SmallVector<mlir::utils::IteratorType> iterators = {
      mlir::utils::IteratorType::parallel};
  auto chunk = mlir::linalg::GenericOp::create(b, loc, mlir::TypeRange{}, mlir::ValueRange(inputs),
                                               mlir::ValueRange(outputs), maps, iterators);
  op.getRegion().cloneInto(&chunk.getRegion(), map);
  mlir::func::ReturnOp::create(b, loc);
  return module;
}

// The dispatches running an elementwise `op` over `count` elements (bindings: its memref
// operands in order; a vec4 launch and one for the elements after the last whole vec4, or one
// scalar launch), each run once per offset in `first_elements`.
absl::StatusOr<std::vector<SpirvDispatch>> ChunkDispatches(
    mlir::linalg::GenericOp op, int64_t count, const std::vector<int64_t>& first_elements,
    const std::string& fn, const KernelTarget& target) {
  mlir::OwningOpRef<mlir::ModuleOp> module = ChunkModule(op, count, fn);
  auto func = module->lookupSymbol<mlir::func::FuncOp>(fn);
  TESSERA_ASSIGN_OR_RETURN(KernelArtifact artifact,
                           LowerLoopsToDispatches(*module, func, fn, target, {}));
  SpirvPayload& chunk = MutableSpirvPayload(artifact);
  if (chunk.dispatches.empty() || chunk.dispatches.size() > 2 || !artifact.scratch_bytes.empty()) {
    return absl::InternalError(absl::StrCat(fn, ": a chunk is not one or two dispatches"));
  }
  std::vector<SpirvBufferRanges> ranges;
  for (int64_t first : first_elements) {
    SpirvBufferRanges r;
    for (mlir::Value v : op->getOperands()) {
      auto type = mlir::dyn_cast<mlir::MemRefType>(v.getType());
      if (!type) continue;
      const int64_t element_bytes = (type.getElementTypeBitWidth() + 7) / 8;
      r.offsets.push_back(first * element_bytes);
      r.sizes.push_back(count * element_bytes);
    }
    ranges.push_back(std::move(r));
  }
  for (SpirvDispatch& dispatch : chunk.dispatches) dispatch.ranges = ranges;
  return std::move(chunk.dispatches);
}

// `op`'s dispatches by ranges: chunks of C elements (each buffer's chunk at most the target's
// range, C a multiple of its offset alignment so that every chunk's offset is aligned), then the
// remainder; `op` replaced by a call of `fn` on its buffers (CollectDispatches binds them).
absl::Status SplitOp(mlir::linalg::GenericOp op, const std::string& fn, int64_t max_element_bytes,
                     const KernelTarget& target, SplitDispatches& splits) {
  const int64_t align = std::max<int64_t>(1, target.min_storage_buffer_offset_alignment);
  const int64_t chunk = std::min(
      kMaxChunkElements, target.max_storage_buffer_range / max_element_bytes / align * align);
  int64_t total = 1;
  for (int64_t d : op.getStaticLoopRanges()) total *= d;
  std::vector<int64_t> full;
  for (int64_t first = 0; first + chunk <= total; first += chunk) full.push_back(first);
  std::vector<SpirvDispatch> dispatches;
  if (!full.empty()) {
    TESSERA_ASSIGN_OR_RETURN(std::vector<SpirvDispatch> whole,
                             ChunkDispatches(op, chunk, full, absl::StrCat(fn, "_chunk"), target));
    for (SpirvDispatch& d : whole) dispatches.push_back(std::move(d));
  }
  if (const int64_t rest = total % chunk; rest > 0) {
    TESSERA_ASSIGN_OR_RETURN(
        std::vector<SpirvDispatch> last,
        ChunkDispatches(op, rest, {total - rest}, absl::StrCat(fn, "_rest"), target));
    for (SpirvDispatch& d : last) dispatches.push_back(std::move(d));
  }
  splits[fn] = std::move(dispatches);
  std::vector<mlir::Value> buffers;
  std::vector<mlir::Type> types;
  for (mlir::Value v : op->getOperands()) {
    if (!mlir::isa<mlir::MemRefType>(v.getType())) continue;
    buffers.push_back(v);
    types.push_back(v.getType());
  }
  auto module = op->getParentOfType<mlir::ModuleOp>();
  mlir::OpBuilder b(module.getContext());
  b.setInsertionPointToEnd(module.getBody());
  auto decl = mlir::func::FuncOp::create(b, op.getLoc(), fn, b.getFunctionType(types, {}));
  decl.setPrivate();
  b.setInsertionPoint(op);
  mlir::func::CallOp::create(b, op.getLoc(), fn, mlir::TypeRange{}, buffers);
  op->erase();
  return absl::OkStatus();
}

}  // namespace

// Every top-level linalg op of the (bufferized) host function binding a buffer above the
// target's max_storage_buffer_range: split into ranges (SplitOp) when elementwise, else
// RESOURCE_EXHAUSTED naming the op, the size and the limit.
absl::Status SplitLargeElementwiseOps(mlir::func::FuncOp func, const std::string& name,
                                      const KernelTarget& target, SplitDispatches& splits) {
  std::vector<mlir::linalg::LinalgOp> ops;
  for (mlir::Operation& op : func.getBody().front()) {
    if (auto linalg = mlir::dyn_cast<mlir::linalg::LinalgOp>(op)) ops.push_back(linalg);
  }
  mlir::IRRewriter rewriter(func.getContext());
  for (mlir::linalg::LinalgOp op : ops) {
    int64_t largest = 0, max_element_bytes = 1;
    for (mlir::Value v : op->getOperands()) {
      auto type = mlir::dyn_cast<mlir::MemRefType>(v.getType());
      if (!type || !type.hasStaticShape()) continue;
      largest = std::max(largest, BufferBytes(type));
      max_element_bytes =
          std::max<int64_t>(max_element_bytes, (type.getElementTypeBitWidth() + 7) / 8);
    }
    if (largest <= target.max_storage_buffer_range) continue;
    const std::string what =
        absl::StrCat(op->getName().getStringRef().str(), " at ", FormatLocation(op->getLoc()));
    mlir::linalg::GenericOp generic = mlir::dyn_cast<mlir::linalg::GenericOp>(op.getOperation());
    if (!generic && mlir::isa<mlir::linalg::CopyOp>(op)) {
      rewriter.setInsertionPoint(op);
      mlir::FailureOr<mlir::linalg::GenericOp> g = mlir::linalg::generalizeNamedOp(rewriter, op);
      if (mlir::failed(g))
        return absl::InternalError(absl::StrCat(name, ": cannot generalize ", what));
      generic = *g;
    }
    if (!generic || !IsElementwise(generic) ||
        target.max_storage_buffer_range / max_element_bytes <
            std::max<int64_t>(1, target.min_storage_buffer_offset_alignment)) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "vulkan code generation: kernel ", name, ": ", what, " binds a buffer of ", largest,
          " bytes, above the target device's maxStorageBufferRange (",
          target.max_storage_buffer_range,
          " bytes); only elementwise ops (every buffer indexed "
          "alike) are split into ranges: shard the program further so that each shard fits"));
    }
    TESSERA_RETURN_IF_ERROR(SplitOp(generic, absl::StrCat(name, "_split", splits.size()),
                                    max_element_bytes, target, splits));
  }
  return absl::OkStatus();
}

}  // namespace tessera::compiler::spirv
