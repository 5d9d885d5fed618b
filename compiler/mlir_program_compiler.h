#ifndef TESSERA_COMPILER_MLIR_PROGRAM_COMPILER_H_
#define TESSERA_COMPILER_MLIR_PROGRAM_COMPILER_H_

// The MLIR program compiler: a ProgramCompiler (ifrt/spi/program_compiler.h) that partitions a
// global program with MLIR's shard dialect and compiles each kernel for the CPU (LLVM dialect,
// JIT-compiled by backends/cpu/kernel_loader.h) and for Vulkan (SPIR-V, backends/vulkan). This
// header names no MLIR type: the runtime and the client factory include it without MLIR's headers.
//
// Input: MLIR text with a func.func @main over ranked static tensors of f32, f64, i32 or i64,
// using linalg (matmul, batch_matmul, fill, transpose, broadcast, reduce, map, generic), arith and
// math ops (on scalars or, elementwise, on tensors) and tensor.empty. Shardings come from the
// request or from `tessera.sharding = "mesh{x=4} P(x,None)"` argument / result attributes.
//
// Compile runs: parse -> shardings -> annotate -> partition -> cut at collectives -> CPU code
// generation per kernel and platform (compiler/internal.h). Each call uses its own MLIRContext: the
// compiler is stateless and Compile is thread-safe. Platforms: "cpu" (LLVM; an empty list means
// "cpu") and "vulkan" (SPIR-V compute dispatches); any other is UNIMPLEMENTED.
//
//   std::unique_ptr<ProgramCompiler> compiler = CreateMlirProgramCompiler();
//   ProgramCompileRequest request{.mlir_text = text, .num_devices = 4, .platforms = {"cpu"}};
//   absl::StatusOr<ProgramPlan> plan = compiler->Compile(request);

#include <memory>

#include "ifrt/spi/program_compiler.h"

namespace tessera {

std::unique_ptr<ProgramCompiler> CreateMlirProgramCompiler();

}  // namespace tessera

#endif  // TESSERA_COMPILER_MLIR_PROGRAM_COMPILER_H_
