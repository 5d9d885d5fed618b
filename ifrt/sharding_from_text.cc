#include "ifrt/sharding_from_text.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/message_text.h"
#include "base/status_macros.h"

namespace tessera {
namespace {

// "sharding "<text>"" for messages.
std::string Named(std::string_view text) {
  return absl::StrCat("sharding ", base::QuoteExcerpt(text));
}

// The devices of `count` slots: `ids`, or the client's first `count` devices.
absl::StatusOr<DeviceListRef> SlotDevices(const Client& client, std::string_view text,
                                          int64_t count, absl::Span<const int32_t> ids) {
  std::vector<Device*> devices;
  if (ids.empty()) {
    if (count > static_cast<int64_t>(client.devices().size())) {
      return absl::InvalidArgumentError(absl::StrCat(
          Named(text), " needs ", count, " devices but the client has ", client.devices().size()));
    }
    devices.assign(client.devices().begin(), client.devices().begin() + count);
  } else {
    if (static_cast<int64_t>(ids.size()) != count) {
      return absl::InvalidArgumentError(absl::StrCat(
          Named(text), " has ", count, " device slots but ", ids.size(), " device ids were given"));
    }
    for (int32_t id : ids) {
      TESSERA_ASSIGN_OR_RETURN(Device * d, client.LookupDevice(DeviceId{id}));
      devices.push_back(d);
    }
  }
  return client.MakeDeviceList(devices);
}

}  // namespace

absl::StatusOr<ShardingRef> BindShardingText(const sharding::ShardingText& parsed,
                                             DeviceListRef devices, MemoryKind memory_kind) {
  if (parsed.is_named()) {
    return NamedSharding::Create(*parsed.mesh, parsed.spec, std::move(devices), memory_kind);
  }
  return ShardingParamSharding::Create(*parsed.param, std::move(devices), memory_kind);
}

absl::StatusOr<ShardingRef> ShardingFromText(const Client& client, std::string_view text,
                                             absl::Span<const int32_t> device_ids,
                                             std::string_view memory_kind) {
  TESSERA_ASSIGN_OR_RETURN(sharding::ShardingText parsed, sharding::ParseShardingText(text));
  TESSERA_ASSIGN_OR_RETURN(DeviceListRef devices,
                           SlotDevices(client, text, parsed.num_devices(), device_ids));
  const MemoryKind kind = memory_kind.empty() ? MemoryKind() : MemoryKind(memory_kind);
  absl::StatusOr<ShardingRef> sharding = BindShardingText(parsed, std::move(devices), kind);
  if (!sharding.ok()) {
    return absl::Status(sharding.status().code(),
                        absl::StrCat(Named(text), ": ", sharding.status().message()));
  }
  return sharding;
}

}  // namespace tessera
