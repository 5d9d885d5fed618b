#include "compiler/mlir_program_compiler.h"

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "compiler/internal.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/Support/raw_ostream.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Location.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"

namespace tessera {
namespace compiler {

std::unique_ptr<mlir::MLIRContext> CreateCompilerContext() {
  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  RegisterReshapeShardings(registry);
  RegisterSliceShardings(registry);
  RegisterControlFlowShardings(registry);
  auto context =
      std::make_unique<mlir::MLIRContext>(registry, mlir::MLIRContext::Threading::DISABLED);
  // The dialects whose ops the compiler builds itself (the rest load as the parser meets them).
  context->loadDialect<mlir::shard::ShardDialect, mlir::arith::ArithDialect,
                       mlir::func::FuncDialect, mlir::tensor::TensorDialect>();
  // The builtin dialect is loaded already: its cast gets its model here.
  RegisterManualComputationShardings(*context);
  return context;
}

absl::StatusOr<ProgramValue> ValueOfType(mlir::Type type) {
  auto tensor = mlir::dyn_cast<mlir::RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape()) {
    return absl::InvalidArgumentError("expected a ranked tensor of static shape");
  }
  mlir::Type element = tensor.getElementType();
  DType dtype(DType::kInvalid);
  if (element.isF32()) {
    dtype = DType(DType::kF32);
  } else if (element.isF64()) {
    dtype = DType(DType::kF64);
  } else if (element.isSignlessInteger(1)) {
    dtype = DType(DType::kPred);
  } else if (element.isSignlessInteger(8)) {
    dtype = DType(DType::kS8);
  } else if (element.isSignlessInteger(16)) {
    dtype = DType(DType::kS16);
  } else if (element.isSignlessInteger(32)) {
    dtype = DType(DType::kS32);
  } else if (element.isSignlessInteger(64)) {
    dtype = DType(DType::kS64);
  } else {
    return absl::UnimplementedError(
        "unsupported element type (f32, f64, i1, i8, i16, i32, i64 are)");
  }
  llvm::ArrayRef<int64_t> dims = tensor.getShape();
  return ProgramValue{dtype, Shape(absl::MakeConstSpan(dims.data(), dims.size()))};
}

std::string PrintType(mlir::Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  type.print(os);
  return text;
}

std::string PrintOp(mlir::Operation* op) {
  std::string text;
  llvm::raw_string_ostream os(text);
  op->print(os);
  return text;
}

namespace {

// The dtype of a value whose attributes `attrs` may say its i16 elements are bf16's or f16's
// bits (kBf16AttrName, kF16AttrName); INVALID_ARGUMENT for such a value of other elements.
absl::StatusOr<DType> FloatOfBits(const ProgramValue& value, mlir::DictionaryAttr attrs) {
  for (auto [name, dtype] :
       {std::pair{kBf16AttrName, DType::kBF16}, std::pair{kF16AttrName, DType::kF16}}) {
    if (!attrs || !attrs.get(name)) continue;
    if (value.dtype.kind() != DType::kS16) {
      return absl::InvalidArgumentError(absl::StrCat("a ", std::string(name),
                                                     " value must be of i16 elements (its bits), "
                                                     "not ",
                                                     value.dtype.DebugString()));
    }
    return DType(dtype);
  }
  return value.dtype;
}

// The unsigned dtype of the width of `dtype` (a signed integer), the others unchanged.
DType Unsigned(DType dtype) {
  switch (dtype.kind()) {
    case DType::kS8:
      return DType(DType::kU8);
    case DType::kS16:
      return DType(DType::kU16);
    case DType::kS32:
      return DType(DType::kU32);
    case DType::kS64:
      return DType(DType::kU64);
    default:
      return dtype;
  }
}

// The global signature and the sharding texts of the plan, from @main before partitioning.
absl::Status FillSignature(mlir::func::FuncOp main, const ProgramShardings& shardings,
                           ProgramPlan& plan) {
  for (unsigned i = 0; i < main.getNumArguments(); ++i) {
    TESSERA_ASSIGN_OR_RETURN(ProgramValue value, ValueOfType(main.getArgumentTypes()[i]));
    if (main.getArgAttr(i, kUnsignedAttrName)) value.dtype = Unsigned(value.dtype);
    TESSERA_ASSIGN_OR_RETURN(value.dtype, FloatOfBits(value, main.getArgAttrDict(i)));
    plan.global_parameters.push_back(std::move(value));
  }
  for (unsigned i = 0; i < main.getNumResults(); ++i) {
    TESSERA_ASSIGN_OR_RETURN(ProgramValue value, ValueOfType(main.getResultTypes()[i]));
    if (main.getResultAttr(i, kUnsignedAttrName)) value.dtype = Unsigned(value.dtype);
    TESSERA_ASSIGN_OR_RETURN(value.dtype, FloatOfBits(value, main.getResultAttrDict(i)));
    plan.global_results.push_back(std::move(value));
  }
  const std::string mesh = shardings.mesh.ToString();
  for (size_t i = 0; i < shardings.parameters.size(); ++i) {
    plan.parameter_shardings.push_back({mesh, shardings.parameters[i].ToString(),
                                        i < shardings.parameter_device_orders.size()
                                            ? shardings.parameter_device_orders[i]
                                            : std::vector<int64_t>()});
  }
  for (const sharding::PartitionSpec& spec : shardings.results) {
    plan.result_shardings.push_back({mesh, spec.ToString(), {}});
  }
  for (const sharding::Mesh::Axis& axis : shardings.mesh.axes()) {
    plan.grid_shape.push_back(axis.size);
  }
  plan.sharding_attributes = shardings.from_attributes;
  return absl::OkStatus();
}

absl::Status CheckRequest(const ProgramCompileRequest& request) {
  if (request.num_devices < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_devices must be at least 1, got ", request.num_devices));
  }
  for (const std::string& platform : request.platforms) {
    if (platform != "cpu" && platform != "vulkan") {
      return absl::UnimplementedError(absl::StrCat("no code generator for platform '", platform,
                                                   "' (cpu and vulkan have one)"));
    }
  }
  return absl::OkStatus();
}

// The shard shape of `global` under `spec` (the division is even: ResolveShardings checked it).
ProgramValue LocalValue(const ProgramValue& global, const sharding::Mesh& mesh,
                        const sharding::PartitionSpec& spec) {
  std::vector<int64_t> dims(global.local_shape.dims().begin(), global.local_shape.dims().end());
  for (int d = 0; d < spec.size(); ++d) {
    for (const std::string& axis : spec.dims()[d])
      dims[d] /= mesh.axes()[*mesh.FindAxis(axis)].size;
  }
  return ProgramValue{global.dtype, Shape(dims)};
}

// MLIR 22's shard-partition crashes on a function whose arguments are all unused. Unused
// arguments take no part in the computation: they are removed before partitioning (with their
// shardings) and given back to the plan by RestoreUnusedParameters. Returns which were removed.
std::vector<bool> RemoveUnusedArguments(mlir::func::FuncOp main, ProgramShardings& shardings) {
  std::vector<bool> unused(main.getNumArguments());
  llvm::BitVector erase(main.getNumArguments());
  std::vector<sharding::PartitionSpec> kept;
  for (unsigned i = 0; i < main.getNumArguments(); ++i) {
    unused[i] = main.getArgument(i).use_empty();
    if (unused[i]) {
      erase.set(i);
    } else {
      kept.push_back(shardings.parameters[i]);
    }
  }
  (void)main.eraseArguments(erase);
  shardings.parameters = std::move(kept);
  return unused;
}

void RestoreUnusedParameters(const std::vector<bool>& unused, const ProgramPlan& signature,
                             const ProgramShardings& shardings, ProgramPlan& plan) {
  std::vector<int> parameters;
  size_t next_kept = 0;
  for (size_t i = 0; i < unused.size(); ++i) {
    if (!unused[i]) {
      parameters.push_back(plan.parameters[next_kept++]);
      continue;
    }
    absl::StatusOr<sharding::PartitionSpec> spec =
        sharding::PartitionSpec::Parse(signature.parameter_shardings[i].spec);
    parameters.push_back(static_cast<int>(plan.values.size()));
    plan.values.push_back(LocalValue(signature.global_parameters[i], shardings.mesh, *spec));
  }
  plan.parameters = std::move(parameters);
}

KernelTarget TargetOf(const ProgramCompileRequest& request, const std::string& platform) {
  auto it = request.targets.find(platform);
  return it == request.targets.end() ? KernelTarget{} : it->second;
}

// Each platform's artifact of one kernel step ("cpu" when the request names none). Code generators
// modify the module they lower: each but the last gets a copy.
absl::Status GenerateCode(const ProgramCompileRequest& request, mlir::ModuleOp kernel,
                          const std::vector<int64_t>& grid_shape, KernelStep& step) {
  std::vector<std::string> platforms = request.platforms;
  if (platforms.empty()) platforms.push_back("cpu");
  DefineIntegerDivision(kernel);
  for (size_t p = 0; p < platforms.size(); ++p) {
    mlir::OwningOpRef<mlir::ModuleOp> copy;
    mlir::ModuleOp module = kernel;
    if (p + 1 < platforms.size()) {
      copy = kernel.clone();
      module = *copy;
    }
    absl::StatusOr<KernelArtifact> artifact =
        platforms[p] == "vulkan"
            ? LowerKernelForVulkan(module, step.name, step.takes_device_position, grid_shape,
                                   TargetOf(request, platforms[p]))
            : LowerKernelForCpu(module, step.name, step.takes_device_position);
    if (!artifact.ok()) return artifact.status();
    step.artifacts[platforms[p]] = *std::move(artifact);
  }
  return absl::OkStatus();
}

class MlirProgramCompiler final : public ProgramCompiler {
 public:
  absl::StatusOr<ProgramPlan> Compile(const ProgramCompileRequest& request) override {
    TESSERA_RETURN_IF_ERROR(CheckRequest(request));
    std::unique_ptr<mlir::MLIRContext> context = CreateCompilerContext();
    TESSERA_ASSIGN_OR_RETURN(mlir::OwningOpRef<mlir::ModuleOp> module,
                             request.format == ProgramFormat::kStableHlo
                                 ? ImportProgram(*context, request.mlir_text)
                                 : ParseProgram(*context, request.mlir_text));
    auto main = module->lookupSymbol<mlir::func::FuncOp>("main");
    TESSERA_ASSIGN_OR_RETURN(ProgramShardings shardings, ResolveShardings(main, request));
    ProgramPlan signature;
    TESSERA_RETURN_IF_ERROR(FillSignature(main, shardings, signature));

    std::vector<bool> unused = RemoveUnusedArguments(main, shardings);
    AnnotateShardings(*module, main, shardings);
    TESSERA_RETURN_IF_ERROR(PartitionProgram(*module, shardings));
    main = module->lookupSymbol<mlir::func::FuncOp>("main");  // PartitionProgram may replace it
    // The open results' shardings, as the propagation gave them.
    for (size_t i = 0; i < shardings.open_results.size(); ++i) {
      if (shardings.open_results[i]) {
        signature.result_shardings[i].spec = shardings.results[i].ToString();
      }
    }
    std::string partitioned_text = PrintOp(*module);
    TESSERA_ASSIGN_OR_RETURN(CutProgram cut, CutIntoSteps(*module, main, signature.grid_shape));
    RestoreUnusedParameters(unused, signature, shardings, cut.plan);

    for (size_t i = 0; i < cut.kernels.size(); ++i) {
      KernelStep& step = cut.plan.steps[cut.kernel_step_indices[i]].kernel;
      TESSERA_RETURN_IF_ERROR(GenerateCode(request, *cut.kernels[i], signature.grid_shape, step));
    }
    ProgramPlan plan = std::move(cut.plan);
    // A StableHLO program's module name (JAX's "jit_f"); "main" for the rest.
    std::optional<llvm::StringRef> module_name = module->getSymName();
    plan.name = module_name && !module_name->empty() ? module_name->str() : "main";
    plan.grid_shape = std::move(signature.grid_shape);
    plan.global_parameters = std::move(signature.global_parameters);
    plan.global_results = std::move(signature.global_results);
    plan.parameter_shardings = std::move(signature.parameter_shardings);
    plan.result_shardings = std::move(signature.result_shardings);
    plan.sharding_attributes = signature.sharding_attributes;
    plan.partitioned_text = std::move(partitioned_text);
    return plan;
  }
};

}  // namespace
}  // namespace compiler

std::unique_ptr<ProgramCompiler> CreateMlirProgramCompiler() {
  return std::make_unique<compiler::MlirProgramCompiler>();
}

}  // namespace tessera
