// Step a: parse and verify the program, and check it uses only what the compiler supports: its
// text nests boundedly (before MLIR's recursive parser sees it), its ops are supported, @main is
// defined, and every value it computes has a static shape whose byte count fits in int64.

#include <string>
#include <string_view>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "base/checked_math.h"
#include "base/status_macros.h"
#include "compiler/internal.h"
#include "compiler/nesting.h"
#include "compiler/stablehlo/stablehlo_import.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Parser/Parser.h"

namespace tessera::compiler {
namespace {

// The ops a program may use: the entry function, the linalg ops the partitioner and the CPU code
// generator both handle (with the ops of their regions), tensor.empty, the reshapes
// tensor.expand_shape / collapse_shape (reshape_sharding.cc), tensor.extract_slice, pad and concat
// (slice_sharding.cc), tensor.extract (inside a linalg body: a lookup; or of a rank-0 tensor), and
// scf.while / scf.if, which run whole on every device (control_flow_sharding.cc). arith and math
// ops are accepted whole (on scalars inside regions, or elementwise on tensors).
bool IsSupportedOp(std::string_view name) {
  static const auto* const kOps = new absl::flat_hash_set<std::string_view>{
      "builtin.module",
      "func.func",
      "func.return",
      "linalg.matmul",
      "linalg.batch_matmul",
      "linalg.fill",
      "linalg.transpose",
      "linalg.broadcast",
      "linalg.reduce",
      "linalg.map",
      "linalg.generic",
      "linalg.yield",
      "linalg.index",
      "tensor.empty",
      "tensor.expand_shape",
      "tensor.collapse_shape",
      "tensor.extract_slice",
      "tensor.pad",
      "tensor.yield",
      "tensor.concat",
      "tensor.extract",
      "scf.while",
      "scf.condition",
      "scf.if",
      "scf.yield",
  };
  return kOps->contains(name) || name.rfind("arith.", 0) == 0 || name.rfind("math.", 0) == 0;
}

// Outermost first: an unsupported op is named itself, not by the first op of its region.
// The ops of a manual computation (internal.h): its cast in @main, and in the bodies' module the
// grid and the collectives its bodies communicate with.
bool IsManualComputationOp(mlir::Operation* op) {
  static const auto* const kShardOps = new absl::flat_hash_set<std::string_view>{
      "shard.grid",       "shard.all_reduce", "shard.all_gather",         "shard.reduce_scatter",
      "shard.all_to_all", "shard.shift",      "shard.process_multi_index"};
  const std::string_view name = op->getName().getStringRef();
  if (name == "builtin.unrealized_conversion_cast") return op->hasAttr(kManualBodyAttrName);
  auto parent = op->getParentOfType<mlir::ModuleOp>();
  return kShardOps->contains(name) && parent &&
         parent.getSymName() == llvm::StringRef(kManualBodiesModuleName);
}

absl::Status CheckOps(mlir::ModuleOp module) {
  absl::Status status;
  module.walk<mlir::WalkOrder::PreOrder>([&](mlir::Operation* op) {
    std::string name = op->getName().getStringRef().str();
    if (IsSupportedOp(name) || IsManualComputationOp(op)) return mlir::WalkResult::advance();
    const std::string_view dialect = op->getName().getDialectNamespace();
    std::string why =
        " (supported: linalg matmul, batch_matmul, fill, transpose, broadcast, "
        "reduce, map, generic; arith; math; tensor.empty, expand_shape, collapse_shape, "
        "extract_slice, pad, concat, extract; scf.while, if)";
    if (dialect == "scf" || dialect == "cf" || dialect == "affine") {
      why =
          ": the control flow a program may use is scf.while and scf.if (run whole on every "
          "device, on CPU devices); write a loop over elements as a linalg op (linalg.generic "
          "with its iterator_types, linalg.reduce, linalg.map) and a choice as arith.select";
    }
    status = absl::UnimplementedError(
        absl::StrCat("unsupported op '", name, "' at ", FormatLocation(op->getLoc()), why));
    return mlir::WalkResult::interrupt();
  });
  return status;
}

// A shaped `type` of a value the program computes (`what`) must be static and its byte count fit
// in int64: the runtime and the generated code compute sizes and offsets from it.
absl::Status CheckValueType(mlir::Type type, const std::string& what) {
  auto shaped = mlir::dyn_cast<mlir::ShapedType>(type);
  if (!shaped) return absl::OkStatus();
  if (!shaped.hasStaticShape()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " has type ", PrintType(type),
                     ", not a ranked tensor of static shape: every value of a program needs one"));
  }
  mlir::Type element = shaped.getElementType();
  int64_t element_bytes = 8;  // index and the types without a bit width
  if (element.isIntOrFloat()) element_bytes = (element.getIntOrFloatBitWidth() + 7) / 8;
  llvm::ArrayRef<int64_t> dims = shaped.getShape();
  if (!base::CheckedByteCount(absl::MakeConstSpan(dims.data(), dims.size()), element_bytes)) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " has type ", PrintType(type), ", whose byte count overflows int64"));
  }
  return absl::OkStatus();
}

// Every value of every op and block of the program: static shapes whose byte counts fit in int64
// (intermediates inside kernels too, not only those the plan describes).
absl::Status CheckValueSizes(mlir::ModuleOp module) {
  absl::Status status;
  module.walk<mlir::WalkOrder::PreOrder>([&](mlir::Operation* op) {
    const std::string name = op->getName().getStringRef().str();
    const std::string at = FormatLocation(op->getLoc());
    for (mlir::OpResult result : op->getResults()) {
      status = CheckValueType(result.getType(), absl::StrCat("result ", result.getResultNumber(),
                                                             " of '", name, "' at ", at));
      if (!status.ok()) return mlir::WalkResult::interrupt();
    }
    auto func = mlir::dyn_cast<mlir::func::FuncOp>(op);
    for (mlir::Region& region : op->getRegions()) {
      for (mlir::Block& block : region) {
        for (mlir::BlockArgument arg : block.getArguments()) {
          const std::string owner = func && block.isEntryBlock()
                                        ? absl::StrCat("@", func.getSymName().str())
                                        : absl::StrCat("a block of '", name, "'");
          status = CheckValueType(
              arg.getType(), absl::StrCat("argument ", arg.getArgNumber(), " of ", owner, " at ",
                                          FormatLocation(arg.getLoc())));
          if (!status.ok()) return mlir::WalkResult::interrupt();
        }
      }
    }
    return mlir::WalkResult::advance();
  });
  return status;
}

absl::Status CheckSignature(mlir::func::FuncOp main) {
  mlir::FunctionType type = main.getFunctionType();
  for (auto [what, types] :
       {std::pair{"argument", type.getInputs()}, std::pair{"result", type.getResults()}}) {
    for (size_t i = 0; i < types.size(); ++i) {
      absl::StatusOr<ProgramValue> value = ValueOfType(types[i]);
      if (!value.ok()) {
        return absl::Status(value.status().code(), absl::StrCat("@main ", what, " ", i, " at ",
                                                                FormatLocation(main.getLoc()), ": ",
                                                                value.status().message()));
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<mlir::func::FuncOp> FindMain(mlir::ModuleOp module) {
  mlir::func::FuncOp main;
  for (mlir::Operation& op : module.getBody()->getOperations()) {
    auto func = mlir::dyn_cast<mlir::func::FuncOp>(op);
    if (func && func.getSymName() == "main" && func.isExternal()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "func.func @main at ", FormatLocation(func.getLoc()),
          " is a declaration without a body; the program's @main must define what it computes"));
    }
    if (func && func.getSymName() == "main") {
      main = func;
    } else if (func) {
      return absl::UnimplementedError(absl::StrCat("function @", func.getSymName().str(), " at ",
                                                   FormatLocation(func.getLoc()),
                                                   ": only a single func.func @main is supported"));
    }
  }
  if (!main) return absl::InvalidArgumentError("the program has no func.func @main");
  return main;
}

}  // namespace

absl::StatusOr<mlir::OwningOpRef<mlir::ModuleOp>> ParseProgram(mlir::MLIRContext& context,
                                                               std::string_view text) {
  TESSERA_RETURN_IF_ERROR(CheckNestingDepth(text, kMaxProgramNesting));
  mlir::OwningOpRef<mlir::ModuleOp> module;
  {
    DiagnosticCollector diagnostics(&context);
    mlir::ParserConfig config(&context, /*verifyAfterParse=*/true);
    // MLIR's lexer reads up to the NUL after the text (an unterminated string literal runs on to
    // a quote or a newline): a view need not have one, a std::string has.
    const std::string terminated(text);
    module = mlir::parseSourceString<mlir::ModuleOp>(terminated, config, "program");
    if (!module) {
      return absl::InvalidArgumentError(
          absl::StrCat("invalid program: ", diagnostics.Message("could not parse")));
    }
  }
  TESSERA_RETURN_IF_ERROR(CheckProgram(*module));
  return module;
}

absl::Status CheckProgram(mlir::ModuleOp module) {
  TESSERA_RETURN_IF_ERROR(CheckOps(module));
  TESSERA_ASSIGN_OR_RETURN(mlir::func::FuncOp main, FindMain(module));
  TESSERA_RETURN_IF_ERROR(CheckSignature(main));
  return CheckValueSizes(module);
}

absl::StatusOr<mlir::OwningOpRef<mlir::ModuleOp>> ImportProgram(mlir::MLIRContext& context,
                                                                std::string_view text) {
  TESSERA_ASSIGN_OR_RETURN(mlir::OwningOpRef<mlir::ModuleOp> module,
                           stablehlo::ImportStableHlo(context, text));
  TESSERA_RETURN_IF_ERROR(CheckProgram(*module));
  return module;
}

}  // namespace tessera::compiler
