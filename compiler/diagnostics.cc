// Diagnostics of the compiler's passes and parsers, as one-line error messages (internal.h).

#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/internal.h"
#include "llvm/Support/raw_ostream.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/Verifier.h"

namespace tessera::compiler {

std::string FormatLocation(mlir::Location loc) {
  if (auto file = loc->findInstanceOf<mlir::FileLineColRange>()) {
    return absl::StrCat(file.getStartLine(), ":", file.getStartColumn());
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  loc.print(os);
  return text;
}

DiagnosticCollector::DiagnosticCollector(mlir::MLIRContext* context)
    : handler_(context, [this](mlir::Diagnostic& diagnostic) {
        if (diagnostic.getSeverity() != mlir::DiagnosticSeverity::Error) {
          return mlir::success();  // remarks and warnings are not errors
        }
        std::string text =
            absl::StrCat(FormatLocation(diagnostic.getLocation()), ": ", diagnostic.str());
        for (const mlir::Diagnostic& note : diagnostic.getNotes()) {
          if (note.str().rfind("see current operation", 0) == 0) continue;  // the whole op, noise
          absl::StrAppend(&text, " (", note.str(), ")");
        }
        errors_.push_back(std::move(text));
        return mlir::success();
      }) {}

std::string DiagnosticCollector::Message(std::string_view fallback) const {
  return errors_.empty() ? std::string(fallback) : absl::StrJoin(errors_, "; ");
}

absl::Status RunPipeline(mlir::PassManager& pm, mlir::ModuleOp module, absl::StatusCode code,
                         std::string_view what) {
  DiagnosticCollector diagnostics(module.getContext());
  if (mlir::failed(pm.run(module))) {
    return absl::Status(
        code, absl::StrCat(std::string(what), " failed: ", diagnostics.Message("no diagnostic")));
  }
  return absl::OkStatus();
}

absl::Status VerifyModule(mlir::ModuleOp module, absl::StatusCode code, std::string_view what) {
  DiagnosticCollector diagnostics(module.getContext());
  if (mlir::failed(mlir::verify(module))) {
    return absl::Status(
        code, absl::StrCat(std::string(what), ": ", diagnostics.Message("does not verify")));
  }
  return absl::OkStatus();
}

}  // namespace tessera::compiler
