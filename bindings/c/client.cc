// TSR_Client: create (CreateClient), destroy, devices, transfer stats.

#include <cstring>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "bindings/c/internal.h"

namespace tessera::c_api {
namespace {

// A C enum field read as the int the caller stored: a value outside the enumerators is not a
// valid value of the enum type in C++, so it must not be loaded as one.
template <typename Enum>
int RawEnum(const Enum& field) {
  static_assert(sizeof(Enum) == sizeof(int));
  int value = 0;
  std::memcpy(&value, &field, sizeof(value));
  return value;
}

absl::StatusOr<ClientOptions> OptionsOf(const TSR_Client_Create_Args& args) {
  ClientOptions options;
  options.cpu_devices = args.cpu_devices;
  switch (RawEnum(args.vulkan)) {
    case TSR_VULKAN_IF_AVAILABLE:
      options.vulkan = VulkanMode::kIfAvailable;
      break;
    case TSR_VULKAN_OFF:
      options.vulkan = VulkanMode::kOff;
      break;
    case TSR_VULKAN_REQUIRED:
      options.vulkan = VulkanMode::kRequired;
      break;
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "TSR_Client_Create_Args: unknown vulkan mode ", RawEnum(args.vulkan),
          " (expected TSR_VULKAN_IF_AVAILABLE, TSR_VULKAN_OFF or TSR_VULKAN_REQUIRED)"));
  }
  if (args.transfer_guard != nullptr) {
    absl::StatusOr<guard::Policy> policy =
        guard::Policy::Parse(TextOf(args.transfer_guard, args.transfer_guard_size));
    if (!policy.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("transfer_guard: ", policy.status().message()));
    }
    options.transfer_guard = *policy;
  }
  if (TSR_ARGS_HAVE(&args, TSR_Client_Create_Args, cpu_threads_per_device)) {
    options.cpu_threads_per_device = args.cpu_threads_per_device;
  }
  if (TSR_ARGS_HAVE(&args, TSR_Client_Create_Args, distributed)) {
    const int mode = RawEnum(args.distributed);
    switch (mode) {
      case TSR_DISTRIBUTED_NONE:
        options.distributed = Distributed::kNone;
        break;
      case TSR_DISTRIBUTED_MPI:
        options.distributed = Distributed::kMpi;
        break;
      default:
        return absl::InvalidArgumentError(
            absl::StrCat("TSR_Client_Create_Args: unknown distributed mode ", mode,
                         " (expected TSR_DISTRIBUTED_NONE or TSR_DISTRIBUTED_MPI)"));
    }
  }
  return options;
}

}  // namespace

TSR_Error* ClientCreate(TSR_Client_Create_Args* args) {
  TSR_CHECK_ARGS(args, TSR_Client_Create_Args, client);
  absl::StatusOr<ClientOptions> options = OptionsOf(*args);
  if (!options.ok()) return MakeError(options.status());
  absl::StatusOr<std::shared_ptr<Client>> client = CreateClient(*options);
  if (!client.ok()) return MakeError(client.status());
  auto handle = std::make_unique<TSR_Client>();
  handle->client = *std::move(client);
  for (Device* d : handle->client->devices()) {
    handle->device_storage.push_back(MakeDeviceHandle(d));
    handle->devices.push_back(handle->device_storage.back().get());
  }
  args->client = handle.release();
  return nullptr;
}

TSR_Error* ClientDestroy(TSR_Client_Destroy_Args* args) {
  TSR_CHECK_ARGS(args, TSR_Client_Destroy_Args, client);
  delete args->client;
  return nullptr;
}

TSR_Error* ClientDevices(TSR_Client_Devices_Args* args) {
  TSR_CHECK_ARGS(args, TSR_Client_Devices_Args, num_devices);
  if (args->client == nullptr) return MakeError(CheckNotNull(nullptr, "client"));
  args->devices = args->client->devices.data();
  args->num_devices = args->client->devices.size();
  return nullptr;
}

TSR_Error* ClientTransferStats(TSR_Client_TransferStats_Args* args) {
  TSR_CHECK_ARGS(args, TSR_Client_TransferStats_Args, local_copies);
  if (args->client == nullptr) return MakeError(CheckNotNull(nullptr, "client"));
  TransferStats stats = args->client->client->transfer_stats();
  args->host_to_device_bytes = stats.host_to_device.bytes;
  args->host_to_device_copies = stats.host_to_device.copies;
  args->device_to_device_bytes = stats.device_to_device.bytes;
  args->device_to_device_copies = stats.device_to_device.copies;
  args->device_to_host_bytes = stats.device_to_host.bytes;
  args->device_to_host_copies = stats.device_to_host.copies;
  args->local_bytes = stats.local.bytes;
  args->local_copies = stats.local.copies;
  return nullptr;
}

TSR_Error* ClientProcesses(TSR_Client_Processes_Args* args) {
  TSR_CHECK_ARGS(args, TSR_Client_Processes_Args, process_count);
  if (args->client == nullptr) return MakeError(CheckNotNull(nullptr, "client"));
  args->process_index = args->client->client->process_index();
  args->process_count = args->client->client->process_count();
  return nullptr;
}

}  // namespace tessera::c_api
