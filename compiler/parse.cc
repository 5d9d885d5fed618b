// Step a: parse and verify the program, and check it uses only what the compiler supports.

#include <string>
#include <string_view>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "compiler/internal.h"
#include "ifrt/status_macros.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"

namespace tessera::compiler {
namespace {

// The ops a program may use: the entry function, the linalg ops the partitioner and the CPU code
// generator both handle (with the ops of their regions), and tensor.empty. arith and math ops are
// accepted whole (on scalars inside regions, or elementwise on tensors).
bool IsSupportedOp(std::string_view name) {
  static const auto* const kOps = new absl::flat_hash_set<std::string_view>{
      "builtin.module",      "func.func",    "func.return",      "linalg.matmul",
      "linalg.batch_matmul", "linalg.fill",  "linalg.transpose", "linalg.broadcast",
      "linalg.reduce",       "linalg.map",   "linalg.generic",   "linalg.yield",
      "linalg.index",        "tensor.empty",
  };
  return kOps->contains(name) || name.rfind("arith.", 0) == 0 || name.rfind("math.", 0) == 0;
}

absl::Status CheckOps(mlir::ModuleOp module) {
  absl::Status status;
  module.walk([&](mlir::Operation* op) {
    std::string name = op->getName().getStringRef().str();
    if (IsSupportedOp(name)) return mlir::WalkResult::advance();
    status = absl::UnimplementedError(absl::StrCat(
        "unsupported op '", name, "' at ", FormatLocation(op->getLoc()),
        " (supported: linalg matmul, batch_matmul, fill, transpose, broadcast, reduce, map, "
        "generic; arith; math; tensor.empty)"));
    return mlir::WalkResult::interrupt();
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
    if (func && func.getSymName() == "main" && !func.isExternal()) {
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
  mlir::OwningOpRef<mlir::ModuleOp> module;
  {
    DiagnosticCollector diagnostics(&context);
    mlir::ParserConfig config(&context, /*verifyAfterParse=*/true);
    module = mlir::parseSourceString<mlir::ModuleOp>(llvm::StringRef(text.data(), text.size()),
                                                     config, "program");
    if (!module) {
      return absl::InvalidArgumentError(
          absl::StrCat("invalid program: ", diagnostics.Message("could not parse")));
    }
  }
  TESSERA_RETURN_IF_ERROR(CheckOps(*module));
  TESSERA_ASSIGN_OR_RETURN(mlir::func::FuncOp main, FindMain(*module));
  TESSERA_RETURN_IF_ERROR(CheckSignature(main));
  return module;
}

}  // namespace tessera::compiler
