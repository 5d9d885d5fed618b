#ifndef TESSERA_BINDINGS_PJRT_CLIENT_OPTIONS_H_
#define TESSERA_BINDINGS_PJRT_CLIENT_OPTIONS_H_

// The options of the plugin's Tessera client, from the environment and from PJRT_Client_Create's
// create_options (which win):
//
//   TESSERA_CPU_DEVICES     / cpu_devices      int: CPU devices (default 4; 0 for none)
//   TESSERA_VULKAN          / vulkan           off | if_available (default) | required
//   TESSERA_TRANSFER_GUARD  / transfer_guard   the guard's policy text (guard/policy.h)
//
// INVALID_ARGUMENT naming the variable or option and the value that does not fit; an unknown
// create option is refused too (a misspelt option never goes unnoticed).

#include <cstddef>

#include "absl/status/statusor.h"
#include "tessera.h"
#include "xla/pjrt/c/pjrt_c_api.h"

namespace tessera::pjrt {

absl::StatusOr<tessera::ClientOptions> ReadClientOptions(const PJRT_NamedValue* create_options,
                                                         size_t num_options);

}  // namespace tessera::pjrt

#endif  // TESSERA_BINDINGS_PJRT_CLIENT_OPTIONS_H_
