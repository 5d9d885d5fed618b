// ifrt/sharding_from_text.h: a sharding written as text, bound to devices of a client.
//
//   absl::StatusOr<ShardingRef> s = ShardingFromText(*client, "mesh{x=4} P(x,None)", {}, "");
//   absl::StatusOr<ShardingRef> t = ShardingFromText(*client, "2x1 to [0] on 2", {3, 1}, "host");
//
// JAX's notation "mesh{x=2,y=2} P(x,None)" makes a NamedSharding; IFRT's ShardingParam notation
// "2x1 to [0] on 2" a ShardingParamSharding. The text is parsed by sharding/sharding_text.h, the
// one parser every front end (C API, Python, CLI) shares. Free functions; thread-safe.
#ifndef TESSERA_IFRT_SHARDING_FROM_TEXT_H_
#define TESSERA_IFRT_SHARDING_FROM_TEXT_H_

#include <cstdint>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ifrt/client.h"
#include "ifrt/device_list.h"
#include "ifrt/memory_kind.h"
#include "ifrt/sharding.h"
#include "sharding/sharding_text.h"

namespace tessera {

// `device_ids`: the devices of the notation's slots, in order; empty: the client's first devices,
// as many as the notation needs. `memory_kind`: empty for each device's default memory.
// INVALID_ARGUMENT naming the text for a parse error (ParseShardingText's message), a device count
// that does not match the notation (or exceeds the client's), a repeated device; NOT_FOUND for an
// unknown device id.
absl::StatusOr<ShardingRef> ShardingFromText(const Client& client, std::string_view text,
                                             absl::Span<const int32_t> device_ids,
                                             std::string_view memory_kind);

// `parsed` bound to `devices` (as many as parsed.num_devices()) in `memory_kind`: the
// NamedSharding or ShardingParamSharding the notation names. INVALID_ARGUMENT from their Create.
absl::StatusOr<ShardingRef> BindShardingText(const sharding::ShardingText& parsed,
                                             DeviceListRef devices, MemoryKind memory_kind);

}  // namespace tessera

#endif  // TESSERA_IFRT_SHARDING_FROM_TEXT_H_
