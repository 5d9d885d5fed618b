// PJRT_Client and the plugin-wide entry points: a Tessera client (CreateClient) with its devices
// and memories wrapped once, at creation, so that every handle the caller gets lives as long as
// the client.

#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/string_view.h"
#include "bindings/pjrt/client_options.h"
#include "bindings/pjrt/entry_points.h"
#include "bindings/pjrt/internal.h"
#include "bindings/pjrt/program_reader.h"
#include "bindings/pjrt/tessera_pjrt.h"

namespace tessera::pjrt {
namespace {

constexpr std::string_view kPlatformName = "tessera";

// The device's description and memory, wrapped once.
std::unique_ptr<PJRT_Device> WrapDevice(tessera::Device* device, int index) {
  auto handle = std::make_unique<PJRT_Device>();
  handle->device = device;
  handle->local_hardware_id = index;
  PJRT_DeviceDescription& d = handle->description;
  d.id = device->Id().value;
  d.process_index = device->ProcessIndex();
  std::optional<std::string> name = device->Attributes().GetString("name");
  d.kind = device->Kind() == "cpu" || !name.has_value() ? std::string(device->Kind()) : *name;
  d.debug_string = device->DebugString();
  d.to_string = absl::StrCat("TesseraDevice(id=", d.id, ", ", device->ToString(), ")");
  // Strings and lists first (their storage must not move once pointed into).
  const auto& map = device->Attributes().map();
  d.strings.reserve(map.size() * 2);  // a name and a value each, at most
  d.lists.reserve(map.size());
  for (const auto& [key, value] : map) {
    PJRT_NamedValue v{};
    v.struct_size = PJRT_NamedValue_STRUCT_SIZE;
    const std::string& stored_name = d.strings.emplace_back(key);
    v.name = stored_name.c_str();
    v.name_size = stored_name.size();
    if (const auto* s = std::get_if<std::string>(&value)) {
      const std::string& stored = d.strings.emplace_back(*s);
      v.type = PJRT_NamedValue_kString;
      v.string_value = stored.c_str();
      v.value_size = stored.size();
    } else if (const auto* b = std::get_if<bool>(&value)) {
      // As an int64: JAX 0.10 aborts the process on a kBool (or kFloat) device attribute.
      v.type = PJRT_NamedValue_kInt64;
      v.int64_value = *b ? 1 : 0;
      v.value_size = 1;
    } else if (const auto* i = std::get_if<int64_t>(&value)) {
      v.type = PJRT_NamedValue_kInt64;
      v.int64_value = *i;
      v.value_size = 1;
    } else if (const auto* f = std::get_if<double>(&value)) {
      // As text: JAX 0.10 aborts the process on a kFloat (or kBool) device attribute.
      const std::string& stored = d.strings.emplace_back(absl::StrCat(*f));
      v.type = PJRT_NamedValue_kString;
      v.string_value = stored.c_str();
      v.value_size = stored.size();
    } else if (const auto* l = std::get_if<std::vector<int64_t>>(&value)) {
      const std::vector<int64_t>& stored = d.lists.emplace_back(*l);
      v.type = PJRT_NamedValue_kInt64List;
      v.int64_array_value = stored.data();
      v.value_size = stored.size();
    } else {
      continue;
    }
    d.attributes.push_back(v);
  }
  return handle;
}

absl::StatusOr<std::shared_ptr<ClientState>> MakeClientState(
    std::shared_ptr<tessera::Client> client) {
  auto state = std::make_shared<ClientState>();
  state->client = std::move(client);
  absl::Span<tessera::Device* const> devices = state->client->devices();
  for (size_t i = 0; i < devices.size(); ++i) {
    std::unique_ptr<PJRT_Device> device = WrapDevice(devices[i], static_cast<int>(i));
    absl::StatusOr<tessera::Memory*> default_memory = devices[i]->DefaultMemory();
    if (!default_memory.ok()) return default_memory.status();
    auto memory = std::make_unique<PJRT_Memory>();
    memory->memory = *default_memory;
    memory->id = static_cast<int>(i);
    memory->kind = "device";
    memory->debug_string = (*default_memory)->DebugString();
    memory->to_string = absl::StrCat("TesseraMemory(device, ", devices[i]->ToString(), ")");
    memory->devices.push_back(device.get());
    device->memory = memory.get();
    device->memories.push_back(memory.get());
    device->sharding = tessera::SingleDeviceSharding::Create(devices[i], tessera::MemoryKind());
    state->devices.push_back(device.get());
    state->memories.push_back(memory.get());
    state->device_storage.push_back(std::move(device));
    state->memory_storage.push_back(std::move(memory));
  }
  std::vector<std::string> platforms = state->client->platform_names();
  state->platform_version = absl::StrCat("Tessera (", absl::StrJoin(platforms, ", "), ")");
  return state;
}

// The plugin's attributes: built once, they live as long as the process. The StableHLO
// versions are int64 lists ([1, 13, 3]), as JAX reads them.
struct PluginAttributeTable {
  std::vector<std::string> names;
  std::vector<std::vector<int64_t>> versions;
  std::vector<PJRT_NamedValue> values;
};

// "1.13.3" as {1, 13, 3}; nullopt unless it is three non-negative numbers.
std::optional<std::vector<int64_t>> ParseVersion(const std::string& text) {
  std::vector<int64_t> parts;
  for (absl::string_view part : absl::StrSplit(text, '.')) {
    int64_t value = 0;
    if (!absl::SimpleAtoi(part, &value) || value < 0) return std::nullopt;
    parts.push_back(value);
  }
  if (parts.size() != 3) return std::nullopt;
  return parts;
}

const PluginAttributeTable& GetPluginAttributes() {
  static const PluginAttributeTable* attributes = [] {
    auto* a = new PluginAttributeTable;
    std::vector<std::pair<std::string, std::vector<int64_t>>> pairs;
    if (std::optional<std::string> v = StableHloCurrentVersion()) {
      if (std::optional<std::vector<int64_t>> parts = ParseVersion(*v))
        pairs.emplace_back("stablehlo_current_version", *parts);
    }
    if (std::optional<std::string> v = StableHloMinimumVersion()) {
      if (std::optional<std::vector<int64_t>> parts = ParseVersion(*v))
        pairs.emplace_back("stablehlo_minimum_version", *parts);
    }
    a->names.reserve(pairs.size());
    a->versions.reserve(pairs.size());
    for (auto& [name, version] : pairs) {
      const std::string& n = a->names.emplace_back(name);
      const std::vector<int64_t>& list = a->versions.emplace_back(version);
      PJRT_NamedValue v{};
      v.struct_size = PJRT_NamedValue_STRUCT_SIZE;
      v.name = n.c_str();
      v.name_size = n.size();
      v.type = PJRT_NamedValue_kInt64List;
      v.int64_array_value = list.data();
      v.value_size = list.size();
      a->values.push_back(v);
    }
    return a;
  }();
  return *attributes;
}

absl::Status CheckClient(const PJRT_Client* client, std::string_view where) {
  if (client == nullptr || client->state == nullptr)
    return absl::InvalidArgumentError(absl::StrCat(base::AsAbsl(where), ".client is NULL"));
  return absl::OkStatus();
}

// The live clients, for TesseraPjrt_TransferStats.
struct ClientRegistry {
  std::mutex mu;
  std::vector<std::weak_ptr<ClientState>> clients;
};

ClientRegistry& Registry() {
  static auto* registry = new ClientRegistry;  // never destroyed: clients may outlive statics
  return *registry;
}

void Register(const std::shared_ptr<ClientState>& state) {
  ClientRegistry& registry = Registry();
  std::lock_guard<std::mutex> lock(registry.mu);
  std::erase_if(registry.clients, [](const std::weak_ptr<ClientState>& c) { return c.expired(); });
  registry.clients.push_back(state);
}

}  // namespace

PJRT_Device* ClientState::Find(const tessera::Device* device) const {
  for (PJRT_Device* d : devices) {
    if (d->device == device) return d;
  }
  return nullptr;
}

PJRT_Error* PluginInitialize(PJRT_Plugin_Initialize_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_Plugin_Initialize_Args);
  return nullptr;
}

PJRT_Error* PluginAttributes(PJRT_Plugin_Attributes_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_Plugin_Attributes_Args);
  const PluginAttributeTable& attributes = GetPluginAttributes();
  args->attributes = attributes.values.data();
  args->num_attributes = attributes.values.size();
  return nullptr;
}

PJRT_Error* ClientCreate(PJRT_Client_Create_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_Client_Create_Args);
  absl::StatusOr<tessera::ClientOptions> options =
      ReadClientOptions(args->create_options, args->num_options);
  TESSERA_PJRT_RETURN_IF_ERROR(options.status());
  absl::StatusOr<std::shared_ptr<tessera::Client>> client = tessera::CreateClient(*options);
  TESSERA_PJRT_RETURN_IF_ERROR(client.status());
  absl::StatusOr<std::shared_ptr<ClientState>> state = MakeClientState(std::move(*client));
  TESSERA_PJRT_RETURN_IF_ERROR(state.status());
  Register(*state);
  args->client = new PJRT_Client{std::move(*state)};
  return nullptr;
}

PJRT_Error* ClientDestroy(PJRT_Client_Destroy_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_Client_Destroy_Args);
  delete args->client;  // the state lives on while buffers or executables hold it
  return nullptr;
}

PJRT_Error* ClientPlatformName(PJRT_Client_PlatformName_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_Client_PlatformName_Args);
  TESSERA_PJRT_RETURN_IF_ERROR(CheckClient(args->client, "PJRT_Client_PlatformName_Args"));
  args->platform_name = kPlatformName.data();
  args->platform_name_size = kPlatformName.size();
  return nullptr;
}

PJRT_Error* ClientProcessIndex(PJRT_Client_ProcessIndex_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_Client_ProcessIndex_Args);
  TESSERA_PJRT_RETURN_IF_ERROR(CheckClient(args->client, "PJRT_Client_ProcessIndex_Args"));
  args->process_index = args->client->state->client->process_index();
  return nullptr;
}

PJRT_Error* ClientPlatformVersion(PJRT_Client_PlatformVersion_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_Client_PlatformVersion_Args);
  TESSERA_PJRT_RETURN_IF_ERROR(CheckClient(args->client, "PJRT_Client_PlatformVersion_Args"));
  const std::string& version = args->client->state->platform_version;
  args->platform_version = version.c_str();
  args->platform_version_size = version.size();
  return nullptr;
}

PJRT_Error* ClientDevices(PJRT_Client_Devices_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_Client_Devices_Args);
  TESSERA_PJRT_RETURN_IF_ERROR(CheckClient(args->client, "PJRT_Client_Devices_Args"));
  args->devices = args->client->state->devices.data();
  args->num_devices = args->client->state->devices.size();
  return nullptr;
}

PJRT_Error* ClientAddressableDevices(PJRT_Client_AddressableDevices_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_Client_AddressableDevices_Args);
  TESSERA_PJRT_RETURN_IF_ERROR(CheckClient(args->client, "PJRT_Client_AddressableDevices_Args"));
  args->addressable_devices = args->client->state->devices.data();
  args->num_addressable_devices = args->client->state->devices.size();
  return nullptr;
}

PJRT_Error* ClientLookupDevice(PJRT_Client_LookupDevice_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_Client_LookupDevice_Args);
  TESSERA_PJRT_RETURN_IF_ERROR(CheckClient(args->client, "PJRT_Client_LookupDevice_Args"));
  for (PJRT_Device* device : args->client->state->devices) {
    if (device->description.id == args->id) {
      args->device = device;
      return nullptr;
    }
  }
  return MakeError(absl::NotFoundError(absl::StrCat("PJRT_Client_LookupDevice: no device with id ",
                                                    args->id, " (the client has ",
                                                    args->client->state->devices.size(), ")")));
}

PJRT_Error* ClientLookupAddressableDevice(PJRT_Client_LookupAddressableDevice_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_Client_LookupAddressableDevice_Args);
  TESSERA_PJRT_RETURN_IF_ERROR(
      CheckClient(args->client, "PJRT_Client_LookupAddressableDevice_Args"));
  const std::vector<PJRT_Device*>& devices = args->client->state->devices;
  if (args->local_hardware_id < 0 ||
      static_cast<size_t>(args->local_hardware_id) >= devices.size()) {
    return MakeError(absl::NotFoundError(
        absl::StrCat("PJRT_Client_LookupAddressableDevice: no device with local hardware id ",
                     args->local_hardware_id, " (the client has ", devices.size(), ")")));
  }
  args->addressable_device = devices[args->local_hardware_id];
  return nullptr;
}

PJRT_Error* ClientAddressableMemories(PJRT_Client_AddressableMemories_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_Client_AddressableMemories_Args);
  TESSERA_PJRT_RETURN_IF_ERROR(CheckClient(args->client, "PJRT_Client_AddressableMemories_Args"));
  args->addressable_memories = args->client->state->memories.data();
  args->num_addressable_memories = args->client->state->memories.size();
  return nullptr;
}

PJRT_Error* ClientDefaultDeviceAssignment(PJRT_Client_DefaultDeviceAssignment_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_Client_DefaultDeviceAssignment_Args);
  TESSERA_PJRT_RETURN_IF_ERROR(
      CheckClient(args->client, "PJRT_Client_DefaultDeviceAssignment_Args"));
  const std::vector<PJRT_Device*>& devices = args->client->state->devices;
  if (args->num_replicas < 1 || args->num_partitions < 1) {
    return MakeError(absl::InvalidArgumentError(
        absl::StrCat("PJRT_Client_DefaultDeviceAssignment: ", args->num_replicas, " replicas and ",
                     args->num_partitions, " partitions (each must be at least 1)")));
  }
  int64_t needed = int64_t{args->num_replicas} * args->num_partitions;
  if (needed > static_cast<int64_t>(devices.size())) {
    return MakeError(absl::InvalidArgumentError(
        absl::StrCat("PJRT_Client_DefaultDeviceAssignment: ", args->num_replicas, " replicas x ",
                     args->num_partitions, " partitions need ", needed, " devices; the client has ",
                     devices.size(), " (TESSERA_CPU_DEVICES sets how many CPU devices it has)")));
  }
  if (args->default_assignment == nullptr ||
      args->default_assignment_size < static_cast<size_t>(needed)) {
    return MakeError(absl::InvalidArgumentError(
        absl::StrCat("PJRT_Client_DefaultDeviceAssignment: default_assignment holds ",
                     args->default_assignment_size, " ints; ", needed, " are needed")));
  }
  for (int64_t i = 0; i < needed; ++i) args->default_assignment[i] = devices[i]->description.id;
  return nullptr;
}

}  // namespace tessera::pjrt

extern "C" __attribute__((visibility("default"))) int TesseraPjrt_TransferStats(long long* counters,
                                                                                size_t n) {
  tessera::pjrt::ClientRegistry& registry = tessera::pjrt::Registry();
  std::vector<std::shared_ptr<tessera::pjrt::ClientState>> live;
  {
    std::lock_guard<std::mutex> lock(registry.mu);
    for (const auto& weak : registry.clients) {
      if (auto state = weak.lock()) live.push_back(std::move(state));
    }
  }
  long long sums[8] = {};
  for (const auto& state : live) {
    tessera::TransferStats stats = state->client->transfer_stats();
    const tessera::TransferStats::Counter* counters_in[4] = {
        &stats.host_to_device, &stats.device_to_device, &stats.device_to_host, &stats.local};
    for (int i = 0; i < 4; ++i) {
      sums[2 * i] += counters_in[i]->bytes;
      sums[2 * i + 1] += counters_in[i]->copies;
    }
  }
  for (size_t i = 0; i < n && i < 8 && counters != nullptr; ++i) counters[i] = sums[i];
  return static_cast<int>(live.size());
}
