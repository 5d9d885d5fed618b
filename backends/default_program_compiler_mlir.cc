// A build with compiler/: programs are compiled with MLIR.
#include "backends/default_program_compiler.h"
#include "compiler/mlir_program_compiler.h"

namespace tessera {

std::unique_ptr<ProgramCompiler> CreateDefaultProgramCompiler() {
  return CreateMlirProgramCompiler();
}

}  // namespace tessera
