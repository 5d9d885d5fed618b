// Transposes in blocks on the CPU (blocked_transposes.cc).
#ifndef TESSERA_COMPILER_TARGETS_LLVM_CPU_BLOCKED_TRANSPOSES_H_
#define TESSERA_COMPILER_TARGETS_LLVM_CPU_BLOCKED_TRANSPOSES_H_

#include <string>

#include "absl/status/status.h"
#include "mlir/IR/BuiltinOps.h"

namespace tessera::compiler {

// Tiles each transpose of a kernel that moves the innermost dimension into 32x32 blocks over the
// two dimensions it swaps, so that its strided reads stay in the cache and the TLB; on tensors,
// before bufferization. Results are bit-identical. INTERNAL naming `name` when a transpose cannot
// be tiled.
absl::Status BlockTransposes(mlir::ModuleOp kernel, const std::string& name);

}  // namespace tessera::compiler

#endif  // TESSERA_COMPILER_TARGETS_LLVM_CPU_BLOCKED_TRANSPOSES_H_
