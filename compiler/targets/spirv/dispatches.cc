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

// The target environment on the module; on every kernel its work-group size as the entry point
// ABI (from the launch's known block size).
absl::Status SetSpirvAttributes(mlir::ModuleOp module, const std::string& name,
                                const KernelTarget& target) {
  mlir::MLIRContext* context = module.getContext();
  const std::string text = TargetEnvText(target);
  mlir::Attribute env = mlir::parseAttribute(text, context);
  if (!env)
    return absl::InternalError(
        absl::StrCat("the SPIR-V target environment ", text, " does not parse"));
  module->setAttr(mlir::spirv::getTargetEnvAttrName(), env);
  absl::Status status;
  module.walk([&](mlir::gpu::GPUFuncOp kernel) {
    if (!kernel.isKernel()) return;
    std::optional<llvm::ArrayRef<int32_t>> block = kernel.getKnownBlockSize();
    if (!block || block->size() != 3) {
      status = absl::InternalError(absl::StrCat(name, ": a kernel without a known block size"));
      return;
    }
    kernel->setAttr(mlir::spirv::getEntryPointABIAttrName(),
                    mlir::spirv::getEntryPointABIAttr(context, *block));
  });
  return status;
}

namespace {

// The buffer a kernel operand is: a host function argument (its index) or an allocation (a
// scratch buffer, numbered after the arguments).
absl::StatusOr<int> BindingOf(mlir::Value operand, mlir::func::FuncOp host,
                              const std::vector<mlir::Operation*>& scratch) {
  // A buffer viewed as another element type (EmitVectorElementwise's vec4 views) binds as itself.
  if (auto view = operand.getDefiningOp<mlir::UnrealizedConversionCastOp>()) {
    if (view->getNumOperands() == 1) return BindingOf(view->getOperand(0), host, scratch);
  }
  if (auto arg = mlir::dyn_cast<mlir::BlockArgument>(operand)) {
    if (arg.getOwner() == &host.getBody().front()) return static_cast<int>(arg.getArgNumber());
  }
  mlir::Operation* def = operand.getDefiningOp();
  auto it = std::find(scratch.begin(), scratch.end(), def);
  if (def != nullptr && it != scratch.end()) {
    return static_cast<int>(host.getNumArguments() + (it - scratch.begin()));
  }
  return absl::UnimplementedError(absl::StrCat("vulkan code generation: a kernel operand made by ",
                                               def ? PrintOp(def) : std::string("a block argument"),
                                               " (only whole buffers bind)"));
}

absl::StatusOr<std::string> Serialize(mlir::spirv::ModuleOp module) {
  llvm::SmallVector<uint32_t, 0> words;
  mlir::spirv::SerializationOptions options;
  options.emitSymbolName = false;
  DiagnosticCollector diagnostics(module.getContext());
  if (mlir::failed(mlir::spirv::serialize(module, words, options))) {
    return absl::InternalError(
        absl::StrCat("serializing SPIR-V failed: ", diagnostics.Message("no diagnostic")));
  }
  std::string code(words.size() * sizeof(uint32_t), '\0');
  std::memcpy(code.data(), words.data(), code.size());
  return code;
}

absl::StatusOr<SpirvDispatch> MakeDispatch(mlir::ModuleOp module, mlir::gpu::LaunchFuncOp launch,
                                           mlir::func::FuncOp host,
                                           const std::vector<mlir::Operation*>& scratch) {
  SpirvDispatch dispatch;
  dispatch.entry = launch.getKernelName().str();
  const std::string spv_name = absl::StrCat("__spv__", launch.getKernelModuleName().str());
  mlir::spirv::ModuleOp spv;
  module.walk([&](mlir::spirv::ModuleOp m) {
    if (m.getSymName() && *m.getSymName() == spv_name) spv = m;
  });
  if (!spv) return absl::InternalError(absl::StrCat("no SPIR-V module ", spv_name));
  TESSERA_ASSIGN_OR_RETURN(dispatch.code, Serialize(spv));
  mlir::gpu::KernelDim3 grid = launch.getGridSizeOperandValues();
  mlir::gpu::KernelDim3 block = launch.getBlockSizeOperandValues();
  for (mlir::Value v : {grid.x, grid.y, grid.z, block.x, block.y, block.z}) {
    std::optional<int64_t> c = mlir::getConstantIntValue(v);
    if (!c) return absl::InternalError(absl::StrCat(dispatch.entry, ": a launch of dynamic size"));
    (dispatch.workgroup_count.size() < 3 ? dispatch.workgroup_count : dispatch.workgroup_size)
        .push_back(*c);
  }
  for (mlir::Value operand : launch.getKernelOperands()) {
    TESSERA_ASSIGN_OR_RETURN(int binding, BindingOf(operand, host, scratch));
    dispatch.bindings.push_back(binding);
  }
  return dispatch;
}

// A split op's call in the host function -> its dispatches, bound to the call's buffers.
absl::Status AppendSplitDispatches(mlir::func::CallOp call, mlir::func::FuncOp host,
                                   const std::vector<mlir::Operation*>& scratch,
                                   const SplitDispatches& splits, KernelArtifact& artifact) {
  auto it = splits.find(call.getCallee().str());
  if (it == splits.end()) {
    return absl::InternalError(absl::StrCat("a call of @", call.getCallee().str(), " in a kernel"));
  }
  for (SpirvDispatch dispatch : it->second) {
    for (int& binding : dispatch.bindings) {
      TESSERA_ASSIGN_OR_RETURN(binding, BindingOf(call.getOperand(binding), host, scratch));
    }
    MutableSpirvPayload(artifact).dispatches.push_back(std::move(dispatch));
  }
  return absl::OkStatus();
}

}  // namespace

// The host function, after outlining, as the artifact's dispatch list and scratch buffers.
absl::Status CollectDispatches(mlir::ModuleOp module, mlir::func::FuncOp host,
                               const SplitDispatches& splits, KernelArtifact& artifact) {
  std::vector<mlir::Operation*> scratch;
  for (mlir::Operation& op : host.getBody().front()) {
    if (mlir::isa<mlir::arith::ConstantOp, mlir::func::ReturnOp, mlir::memref::DeallocOp,
                  mlir::UnrealizedConversionCastOp>(op)) {
      continue;
    }
    if (auto alloc = mlir::dyn_cast<mlir::memref::AllocOp>(op)) {
      mlir::MemRefType type = alloc.getType();
      if (!type.hasStaticShape()) return absl::InternalError("a dynamic scratch allocation");
      scratch.push_back(&op);
      const int64_t element_bytes = (type.getElementTypeBitWidth() + 7) / 8;
      artifact.scratch_bytes.push_back(type.getNumElements() * element_bytes);
      continue;
    }
    if (auto launch = mlir::dyn_cast<mlir::gpu::LaunchFuncOp>(op)) {
      TESSERA_ASSIGN_OR_RETURN(SpirvDispatch dispatch, MakeDispatch(module, launch, host, scratch));
      MutableSpirvPayload(artifact).dispatches.push_back(std::move(dispatch));
      continue;
    }
    if (auto call = mlir::dyn_cast<mlir::func::CallOp>(op)) {
      TESSERA_RETURN_IF_ERROR(AppendSplitDispatches(call, host, scratch, splits, artifact));
      continue;
    }
    return absl::UnimplementedError(
        absl::StrCat("vulkan code generation: host operation ", op.getName().getStringRef().str(),
                     " at ", FormatLocation(op.getLoc()), " left outside every kernel"));
  }
  return absl::OkStatus();
}

// The trailing i64 arguments (the device's grid position) are often dead once the kernel is
// simplified (the partitioner's `scf.if` on the position whose branches agree, or a position made
// constant by LowerPositionVariants): then removed. UNIMPLEMENTED where a kernel still reads one.
absl::Status DropPositionArguments(mlir::func::FuncOp func, const std::string& name) {
  llvm::BitVector erase(func.getNumArguments());
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    if (!func.getArgumentTypes()[i].isInteger(64)) continue;
    if (!func.getArgument(i).use_empty()) {
      return absl::UnimplementedError(absl::StrCat(
          "vulkan code generation: kernel ", name,
          " computes with the device's grid position (shard.process_multi_index), which Vulkan "
          "kernels do not take yet"));
    }
    erase.set(i);
  }
  if (mlir::failed(func.eraseArguments(erase))) {
    return absl::InternalError(absl::StrCat(name, ": cannot erase the position arguments"));
  }
  return absl::OkStatus();
}

}  // namespace tessera::compiler::spirv
