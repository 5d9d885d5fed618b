#include "bindings/c/sharding_text.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "ifrt/status_macros.h"
#include "sharding/mesh.h"
#include "sharding/partition_spec.h"
#include "sharding/sharding_param.h"

namespace tessera::bindings {
namespace {

// Debian's Abseil has its own string_view: StrCat and the strip functions take that one.
absl::string_view AV(std::string_view s) { return absl::string_view(s.data(), s.size()); }
std::string_view SV(absl::string_view s) { return std::string_view(s.data(), s.size()); }

absl::Status Prefixed(std::string_view text, const absl::Status& s) {
  return absl::Status(s.code(), absl::StrCat("sharding '", AV(text), "': ", s.message()));
}

// The devices of `count` slots: `ids`, or the client's first `count` devices.
absl::StatusOr<DeviceListRef> SlotDevices(const Client& client, std::string_view text, int count,
                                          absl::Span<const int32_t> ids) {
  std::vector<Device*> devices;
  if (ids.empty()) {
    if (count > static_cast<int>(client.devices().size())) {
      return absl::InvalidArgumentError(absl::StrCat("sharding '", AV(text), "' needs ", count,
                                                     " devices but the client has ",
                                                     client.devices().size()));
    }
    devices.assign(client.devices().begin(), client.devices().begin() + count);
  } else {
    if (static_cast<int>(ids.size()) != count) {
      return absl::InvalidArgumentError(absl::StrCat("sharding '", AV(text), "' has ", count,
                                                     " device slots but ", ids.size(),
                                                     " device ids were given"));
    }
    for (int32_t id : ids) {
      TESSERA_ASSIGN_OR_RETURN(Device * d, client.LookupDevice(DeviceId{id}));
      devices.push_back(d);
    }
  }
  return client.MakeDeviceList(devices);
}

}  // namespace

absl::StatusOr<ShardingRef> ShardingFromText(const Client& client, std::string_view text,
                                             absl::Span<const int32_t> device_ids,
                                             std::string_view memory_kind) {
  std::string_view t = SV(absl::StripAsciiWhitespace(AV(text)));
  MemoryKind kind = memory_kind.empty() ? MemoryKind() : MemoryKind(memory_kind);
  if (absl::StartsWith(AV(t), "mesh")) {
    size_t close = t.find('}');
    if (close == std::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("sharding '", AV(text), "': the mesh has no closing '}' (expected e.g. ",
                       "mesh{x=4} P(x,None))"));
    }
    absl::StatusOr<sharding::Mesh> mesh = sharding::Mesh::Parse(t.substr(0, close + 1));
    if (!mesh.ok()) return Prefixed(text, mesh.status());
    std::string_view rest = SV(absl::StripAsciiWhitespace(AV(t.substr(close + 1))));
    if (rest.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sharding '", AV(text), "': a PartitionSpec must follow the mesh (e.g. P(x,None))"));
    }
    absl::StatusOr<sharding::PartitionSpec> spec = sharding::PartitionSpec::Parse(rest);
    if (!spec.ok()) return Prefixed(text, spec.status());
    TESSERA_ASSIGN_OR_RETURN(DeviceListRef devices,
                             SlotDevices(client, text, mesh->num_devices(), device_ids));
    absl::StatusOr<ShardingRef> s = NamedSharding::Create(*mesh, *spec, devices, kind);
    if (!s.ok()) return Prefixed(text, s.status());
    return s;
  }
  absl::StatusOr<sharding::ShardingParam> param = sharding::ShardingParam::Parse(t);
  if (!param.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sharding '", AV(text),
        "' is neither 'mesh{...} P(...)' nor a ShardingParam: ", param.status().message()));
  }
  TESSERA_ASSIGN_OR_RETURN(DeviceListRef devices,
                           SlotDevices(client, text, param->NumDevices(), device_ids));
  absl::StatusOr<ShardingRef> s = ShardingParamSharding::Create(*param, devices, kind);
  if (!s.ok()) return Prefixed(text, s.status());
  return s;
}

}  // namespace tessera::bindings
