// f32 tanh as arithmetic the loop vectorizer can vectorize (tanh_approximation.cc).
#ifndef TESSERA_COMPILER_TARGETS_LLVM_CPU_TANH_APPROXIMATION_H_
#define TESSERA_COMPILER_TARGETS_LLVM_CPU_TANH_APPROXIMATION_H_

#include <string>

#include "absl/status/status.h"
#include "mlir/IR/BuiltinOps.h"

namespace tessera::compiler {

// Rewrites every f32 math.tanh of a kernel into MLIR's rational approximation (Eigen's fast tanh,
// which XLA's CPU backend uses too: within a few ulp of libm, tanh(+-inf) = +-1, NaN and signed
// zeros kept). Lowered as it is, math.tanh is a call of libm's tanhf per element, which keeps
// the loop around it scalar; the approximation is fma, mul, div and select. f64 tanh stays a libm
// call. INTERNAL naming `name` if the rewrite fails.
absl::Status ApproximateTanh(mlir::ModuleOp kernel, const std::string& name);

}  // namespace tessera::compiler

#endif  // TESSERA_COMPILER_TARGETS_LLVM_CPU_TANH_APPROXIMATION_H_
