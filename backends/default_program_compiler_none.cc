// A build without compiler/ (TESSERA_ENABLE_COMPILER=OFF): no program compiler.
#include "backends/default_program_compiler.h"

namespace tessera {

std::unique_ptr<ProgramCompiler> CreateDefaultProgramCompiler() { return nullptr; }

}  // namespace tessera
