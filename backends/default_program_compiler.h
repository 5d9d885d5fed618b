#ifndef TESSERA_BACKENDS_DEFAULT_PROGRAM_COMPILER_H_
#define TESSERA_BACKENDS_DEFAULT_PROGRAM_COMPILER_H_

// The program compiler CreateClient gives every client (Client::GetDefaultCompiler() runs it): the
// MLIR compiler of compiler/ in a build with TESSERA_ENABLE_COMPILER (the default), else none
// (null: Compile is then UNIMPLEMENTED). CMake picks the one source that defines it.

#include <memory>

#include "ifrt/spi/program_compiler.h"

namespace tessera {

std::unique_ptr<ProgramCompiler> CreateDefaultProgramCompiler();

}  // namespace tessera

#endif  // TESSERA_BACKENDS_DEFAULT_PROGRAM_COMPILER_H_
