// TSR_Executable: compile an MLIR program (Client::GetDefaultCompiler) and execute it.

#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bindings/c/internal.h"

namespace tessera::c_api {
namespace {

absl::StatusOr<DeviceListRef> CompileDevices(const Client& client, const int32_t* ids,
                                             size_t count) {
  std::vector<Device*> devices;
  if (ids == nullptr) {
    devices.assign(client.devices().begin(), client.devices().end());
  } else {
    for (size_t i = 0; i < count; ++i) {
      absl::StatusOr<Device*> d = client.LookupDevice(DeviceId{ids[i]});
      if (!d.ok()) return d.status();
      devices.push_back(*d);
    }
  }
  return client.MakeDeviceList(devices);
}

absl::Status Compile(TSR_Executable_Compile_Args& a) {
  if (a.client == nullptr) return CheckNotNull(nullptr, "client");
  if (a.mlir == nullptr) return CheckNotNull(nullptr, "mlir");
  Client& client = *a.client->client;
  absl::StatusOr<DeviceListRef> devices = CompileDevices(client, a.device_ids, a.num_device_ids);
  if (!devices.ok()) return devices.status();
  absl::StatusOr<LoadedExecutableRef> exe = client.GetDefaultCompiler()->Compile(
      ProgramFromText(std::string(TextOf(a.mlir, a.mlir_size))),
      CompileOptions{.devices = *devices});
  if (!exe.ok()) return exe.status();
  a.num_outputs = (*exe)->GetOutputShardings().size();
  a.executable = new TSR_Executable{a.client->client, *std::move(exe)};
  return absl::OkStatus();
}

absl::Status Execute(TSR_Executable_Execute_Args& a) {
  if (a.executable == nullptr) return CheckNotNull(nullptr, "executable");
  const LoadedExecutable& exe = *a.executable->executable;
  const size_t num_outputs = exe.GetOutputShardings().size();
  if (a.num_outputs != num_outputs || (num_outputs > 0 && a.outputs == nullptr)) {
    return absl::InvalidArgumentError(absl::StrCat("num_outputs is ", a.num_outputs, " but ",
                                                   exe.name(), " has ", num_outputs, " results"));
  }
  std::vector<ArrayRef> args;
  for (size_t i = 0; i < a.num_args; ++i) {
    if (a.args == nullptr || a.args[i] == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("args[", i, "] is NULL"));
    }
    args.push_back(a.args[i]->array);
  }
  absl::StatusOr<ExecuteResult> result = a.executable->executable->Execute(absl::MakeSpan(args));
  if (!result.ok()) return result.status();
  for (size_t i = 0; i < num_outputs; ++i) {
    a.outputs[i] = MakeArrayHandle(a.executable->client, result->outputs[i]);
  }
  a.event = new TSR_Event{std::move(result->status)};
  return absl::OkStatus();
}

}  // namespace

TSR_Error* ExecutableCompile(TSR_Executable_Compile_Args* args) {
  TSR_CHECK_ARGS(args, TSR_Executable_Compile_Args, num_outputs);
  return MakeError(Compile(*args));
}

TSR_Error* ExecutableExecute(TSR_Executable_Execute_Args* args) {
  TSR_CHECK_ARGS(args, TSR_Executable_Execute_Args, event);
  return MakeError(Execute(*args));
}

TSR_Error* ExecutableDestroy(TSR_Executable_Destroy_Args* args) {
  TSR_CHECK_ARGS(args, TSR_Executable_Destroy_Args, executable);
  delete args->executable;
  return nullptr;
}

}  // namespace tessera::c_api
