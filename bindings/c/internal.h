#ifndef TESSERA_BINDINGS_C_INTERNAL_H_
#define TESSERA_BINDINGS_C_INTERNAL_H_

// The C++ side of tessera_c.h: what each opaque handle holds, and the helpers every entry point
// uses (struct_size checks, Status -> TSR_Error). Internal to bindings/c; not installed.
//
// Ownership: the caller owns every handle but TSR_Device (owned by its TSR_Client). A handle is
// a thin wrapper over the C++ API's reference (ArrayRef, ShardingRef, Future<>, ...); destroying
// it drops that reference. Thread-safety: handles are immutable after creation (the C++ objects
// they hold are thread-safe), so any thread may use them.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "bindings/c/tessera_c.h"
#include "tessera.h"

struct TSR_Error {
  absl::Status status;
  std::string message;  // status.message(), NUL-terminated for C
};

struct TSR_Device {
  tessera::Device* device = nullptr;
  std::string kind;
  std::string debug_string;
  // The attributes as TSR_NamedValue; `strings` and `lists` own what they point to.
  std::vector<std::string> strings;
  std::vector<std::vector<int64_t>> lists;
  std::vector<TSR_NamedValue> attributes;
};

struct TSR_Client {
  std::shared_ptr<tessera::Client> client;
  std::vector<std::unique_ptr<TSR_Device>> device_storage;
  std::vector<TSR_Device*> devices;  // device_storage, as the C API hands it out
};

struct TSR_Sharding {
  tessera::ShardingRef sharding;
};

struct TSR_Array {
  std::shared_ptr<tessera::Client> client;  // keeps the runtime alive while the array is held
  tessera::ArrayRef array;
  std::string sharding_text;  // for TSR_Array_Describe
};

struct TSR_Event {
  tessera::Future<> future;
};

struct TSR_Executable {
  std::shared_ptr<tessera::Client> client;
  tessera::LoadedExecutableRef executable;
};

namespace tessera::c_api {

// Structs are never larger than this; a larger struct_size is an uninitialised field.
inline constexpr size_t kMaxStructSize = 4096;

// A new TSR_Error for `status` (nullptr when OK).
TSR_Error* MakeError(absl::Status status);

// INVALID_ARGUMENT when `args` is null or `struct_size` is outside [min_size, kMaxStructSize]
// (min_size: the struct's size in version 1.0), naming `name`.
absl::Status CheckStructSize(const void* args, size_t struct_size, std::string_view name,
                             size_t min_size);

// INVALID_ARGUMENT "<what> is NULL" for a null `handle`.
absl::Status CheckNotNull(const void* handle, std::string_view what);

// Text given as (pointer, size); size 0 means NUL-terminated.
std::string_view TextOf(const char* text, size_t size);

// The C API's dtype table (dtype.cc): TSR_DTYPE_INVALID and unknown values <-> kInvalid.
tessera::DType ToDType(TSR_DType dtype);
TSR_DType FromDType(tessera::DType dtype);
TSR_ErrorCode ToErrorCode(absl::StatusCode code);

// The handle of a client's device, with its attributes converted (device.cc).
std::unique_ptr<TSR_Device> MakeDeviceHandle(tessera::Device* device);

// A new array handle over `array` of `client`.
TSR_Array* MakeArrayHandle(std::shared_ptr<tessera::Client> client, tessera::ArrayRef array);

// The entry points of the table (api.cc), one file per concept.
TSR_Error* ErrorDestroy(TSR_Error_Destroy_Args* args);
TSR_Error* ErrorMessage(TSR_Error_Message_Args* args);
TSR_Error* ErrorGetCode(TSR_Error_GetCode_Args* args);
TSR_Error* ClientCreate(TSR_Client_Create_Args* args);
TSR_Error* ClientDestroy(TSR_Client_Destroy_Args* args);
TSR_Error* ClientDevices(TSR_Client_Devices_Args* args);
TSR_Error* DeviceDescribe(TSR_Device_Describe_Args* args);
TSR_Error* ShardingCreate(TSR_Sharding_Create_Args* args);
TSR_Error* ShardingDestroy(TSR_Sharding_Destroy_Args* args);
TSR_Error* ArrayFromHostBuffer(TSR_Array_FromHostBuffer_Args* args);
TSR_Error* ArrayReshard(TSR_Array_Reshard_Args* args);
TSR_Error* ArrayToHostBuffer(TSR_Array_ToHostBuffer_Args* args);
TSR_Error* ArrayDescribe(TSR_Array_Describe_Args* args);
TSR_Error* ArrayReadyEvent(TSR_Array_ReadyEvent_Args* args);
TSR_Error* ArrayDelete(TSR_Array_Delete_Args* args);
TSR_Error* ArrayDestroy(TSR_Array_Destroy_Args* args);
TSR_Error* EventAwait(TSR_Event_Await_Args* args);
TSR_Error* EventIsReady(TSR_Event_IsReady_Args* args);
TSR_Error* EventOnReady(TSR_Event_OnReady_Args* args);
TSR_Error* EventDestroy(TSR_Event_Destroy_Args* args);
TSR_Error* GuardSetPolicy(TSR_Guard_SetPolicy_Args* args);
TSR_Error* GuardPushScope(TSR_Guard_PushScope_Args* args);
TSR_Error* GuardPopScope(TSR_Guard_PopScope_Args* args);
TSR_Error* GuardCounters(TSR_Guard_Counters_Args* args);
TSR_Error* ExecutableCompile(TSR_Executable_Compile_Args* args);
TSR_Error* ExecutableExecute(TSR_Executable_Execute_Args* args);
TSR_Error* ExecutableDestroy(TSR_Executable_Destroy_Args* args);
TSR_Error* ClientTransferStats(TSR_Client_TransferStats_Args* args);
TSR_Error* ClientProcesses(TSR_Client_Processes_Args* args);

}  // namespace tessera::c_api

// Whether the caller's struct has `field` (appended in a later minor version than its own).
#define TSR_ARGS_HAVE(args, Type, field) ((args)->struct_size >= TSR_STRUCT_SIZE(Type, field))

// The first statement of each entry point: returns the error for a bad struct. `Type` is the
// struct's type, `since_1_0_last` its last field in version 1.0.
#define TSR_CHECK_ARGS(args, Type, since_1_0_last)                                             \
  do {                                                                                         \
    absl::Status _tsr_s =                                                                      \
        ::tessera::c_api::CheckStructSize((args), (args) == nullptr ? 0 : (args)->struct_size, \
                                          #Type, TSR_STRUCT_SIZE(Type, since_1_0_last));       \
    if (!_tsr_s.ok()) return ::tessera::c_api::MakeError(std::move(_tsr_s));                   \
  } while (false)

#endif  // TESSERA_BINDINGS_C_INTERNAL_H_
