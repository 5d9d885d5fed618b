#ifndef TESSERA_TESSERA_H_
#define TESSERA_TESSERA_H_

// The whole public API of Tessera: the client factory, ifrt/ (Client, Device,
// Memory, Array, shardings, futures), the sharding notations of sharding/, and
// the transfer guard of guard/.
//
//   #include "tessera.h"
//   auto client = tessera::CreateClient();

#include "backends/client_factory.h"      // IWYU pragma: export
#include "guard/level.h"                  // IWYU pragma: export
#include "guard/policy.h"                 // IWYU pragma: export
#include "guard/scoped_transfer_guard.h"  // IWYU pragma: export
#include "guard/transfer_guard.h"         // IWYU pragma: export
#include "ifrt/array.h"                   // IWYU pragma: export
#include "ifrt/array_spec.h"              // IWYU pragma: export
#include "ifrt/client.h"                  // IWYU pragma: export
#include "ifrt/compiler.h"                // IWYU pragma: export
#include "ifrt/copy_semantics.h"          // IWYU pragma: export
#include "ifrt/device.h"                  // IWYU pragma: export
#include "ifrt/device_list.h"             // IWYU pragma: export
#include "ifrt/dtype.h"                   // IWYU pragma: export
#include "ifrt/executable.h"              // IWYU pragma: export
#include "ifrt/future.h"                  // IWYU pragma: export
#include "ifrt/memory.h"                  // IWYU pragma: export
#include "ifrt/program.h"                 // IWYU pragma: export
#include "ifrt/remap_plan.h"              // IWYU pragma: export
#include "ifrt/shape.h"                   // IWYU pragma: export
#include "ifrt/sharding.h"                // IWYU pragma: export
#include "ifrt/sharding_from_text.h"      // IWYU pragma: export
#include "ifrt/transfer_options.h"        // IWYU pragma: export
#include "ifrt/transfer_stats.h"          // IWYU pragma: export
#include "sharding/mesh.h"                // IWYU pragma: export
#include "sharding/partition_spec.h"      // IWYU pragma: export
#include "sharding/sharding_param.h"      // IWYU pragma: export
#include "sharding/sharding_text.h"       // IWYU pragma: export

#endif  // TESSERA_TESSERA_H_
