#ifndef TESSERA_BINDINGS_PJRT_PROGRAM_READER_H_
#define TESSERA_BINDINGS_PJRT_PROGRAM_READER_H_

// The program a PJRT_Program of format "mlir" holds, as the text Tessera's compiler reads:
// MLIR bytecode (a StableHLO portable artifact) goes through the registered reader
// (tessera_pjrt.h); text passes as it is.
//
// Errors: FAILED_PRECONDITION when bytecode arrives and no reader is registered (naming how to
// load the plugin so that one is); the reader's own error as INVALID_ARGUMENT.

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace tessera::pjrt {

absl::StatusOr<std::string> ReadProgram(std::string_view code);

// The versions set by TesseraPjrt_SetStableHloVersions (nullopt when unset).
std::optional<std::string> StableHloCurrentVersion();
std::optional<std::string> StableHloMinimumVersion();

}  // namespace tessera::pjrt

#endif  // TESSERA_BINDINGS_PJRT_PROGRAM_READER_H_
