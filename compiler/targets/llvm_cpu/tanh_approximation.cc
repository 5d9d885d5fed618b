#include "compiler/targets/llvm_cpu/tanh_approximation.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace tessera::compiler {

absl::Status ApproximateTanh(mlir::ModuleOp kernel, const std::string& name) {
  bool any = false;
  kernel.walk([&](mlir::math::TanhOp) { any = true; });
  if (!any) return absl::OkStatus();
  mlir::RewritePatternSet patterns(kernel.getContext());
  mlir::populatePolynomialApproximateTanhPattern(patterns);
  if (mlir::failed(mlir::applyPatternsGreedily(kernel, std::move(patterns)))) {
    return absl::InternalError(absl::StrCat("approximating tanh in ", name, " did not converge"));
  }
  return absl::OkStatus();
}

}  // namespace tessera::compiler
