// libFuzzer target for the StableHLO importer (compiler/stablehlo/stablehlo_import.h): the input
// is the program text (generic form, as JAX prints it). ImportStableHlo may not crash or hang; it
// returns OK, INVALID_ARGUMENT, UNIMPLEMENTED or INTERNAL (the importer built invalid IR: a defect,
// not fatal unless TESSERA_FUZZ_INTERNAL=abort), each error with a non-empty message (MLIR's
// diagnostics may span lines); an imported module verifies and holds a func.func @main with a body.
//
// One MLIRContext per process, made as the compiler makes it (CreateCompilerContext in
// compiler/mlir_program_compiler.cc, not linked here): every dialect and extension registered,
// threading off, shard / arith / func / tensor loaded. Only Tessera's importer is instrumented;
// the MLIR and LLVM shared libraries are not (run_fuzz.sh).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "compiler/stablehlo/stablehlo_import.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/IR/Verifier.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"

namespace {

[[noreturn]] void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "%s: %s\n", what, detail.c_str());
  std::abort();
}

mlir::MLIRContext& Context() {
  static mlir::MLIRContext* const context = [] {
    mlir::DialectRegistry registry;
    mlir::registerAllDialects(registry);
    mlir::registerAllExtensions(registry);
    auto* c = new mlir::MLIRContext(registry, mlir::MLIRContext::Threading::DISABLED);
    c->loadDialect<mlir::shard::ShardDialect, mlir::arith::ArithDialect, mlir::func::FuncDialect,
                   mlir::tensor::TensorDialect>();
    return c;
  }();
  return *context;
}

// What an INTERNAL status (an importer defect) does: TESSERA_FUZZ_INTERNAL=report prints it to
// stderr, =abort aborts (libFuzzer then keeps the input as a crash); unset, nothing.
const std::string& OnInternal() {
  static const std::string* const on_internal = [] {
    const char* value = std::getenv("TESSERA_FUZZ_INTERNAL");
    return new std::string(value == nullptr ? "" : value);
  }();
  return *on_internal;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  mlir::MLIRContext& context = Context();
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<mlir::OwningOpRef<mlir::ModuleOp>> module =
      tessera::compiler::stablehlo::ImportStableHlo(context, text);
  if (!module.ok()) {
    const absl::Status& s = module.status();
    switch (s.code()) {
      case absl::StatusCode::kInvalidArgument:
      case absl::StatusCode::kUnimplemented:
        break;
      case absl::StatusCode::kInternal:
        // An importer defect (it built IR that does not verify): worth a fix, not a crash.
        if (OnInternal() == "abort") Fail("INTERNAL", s.ToString());
        if (OnInternal() == "report") std::fprintf(stderr, "INTERNAL: %s\n", s.ToString().c_str());
        break;
      default:
        Fail("unexpected code", s.ToString());
    }
    if (s.message().empty()) Fail("an error without a message", s.ToString());
    return 0;
  }
  if (!*module || !**module) Fail("OK without a module", "");
  {
    // Diagnostics of a failed verification are the finding; keep them out of libFuzzer's log
    // otherwise.
    std::string errors;
    mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic& d) {
      errors += d.str() + "; ";
      return mlir::success();
    });
    if (mlir::failed(mlir::verify(**module))) Fail("the imported module does not verify", errors);
  }
  auto main = (**module).lookupSymbol<mlir::func::FuncOp>("main");
  if (!main || main.isExternal()) Fail("the imported module has no func.func @main", "");
  return 0;
}
