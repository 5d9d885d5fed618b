#ifndef TESSERA_BINDINGS_C_SHARDING_TEXT_H_
#define TESSERA_BINDINGS_C_SHARDING_TEXT_H_

// ShardingFromText: a sharding written in either text notation, bound to devices of a client —
// the one parser the C API and the Python package share.
//
//   absl::StatusOr<ShardingRef> s = ShardingFromText(*client, "mesh{x=4} P(x,None)", {}, {});
//   absl::StatusOr<ShardingRef> t = ShardingFromText(*client, "2x1 to [0] on 2", ids, "host");
//
// JAX's notation "mesh{x=2,y=2} P(x,None)" makes a NamedSharding; IFRT's ShardingParam
// notation "2x1 to [0] on 2" a ShardingParamSharding. A pure function; thread-safe.

#include <cstdint>
#include <optional>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ifrt/client.h"
#include "ifrt/sharding.h"

namespace tessera::bindings {

// `device_ids`: the devices of the notation's slots, in order; empty: the client's first
// devices, as many as the notation needs. `memory_kind`: empty for each device's default memory.
// INVALID_ARGUMENT naming the text for a parse error, a device count that does not match the
// notation (or exceeds the client's), a repeated device; NOT_FOUND for an unknown device id.
absl::StatusOr<ShardingRef> ShardingFromText(const Client& client, std::string_view text,
                                             absl::Span<const int32_t> device_ids,
                                             std::string_view memory_kind);

}  // namespace tessera::bindings

#endif  // TESSERA_BINDINGS_C_SHARDING_TEXT_H_
