/* tessera_c.h: Tessera's stable C API, for frameworks that load a runtime through a C ABI.
 *
 * Modelled on PJRT's C API:
 * - One entry point, TSR_GetApi(), returns a table of function pointers that starts with its own
 *   size and version. The major version changes only for incompatible changes (never, so far);
 *   the minor version grows when functions are appended to the table or fields appended to an
 *   argument struct. A newer library serves an older caller: it reads only the fields the
 *   caller's struct_size covers and gives the missing ones their documented defaults.
 * - Every function takes one `TSR_<Name>_Args*` whose first field, `struct_size`, the caller sets
 *   to `TSR_<Name>_Args_STRUCT_SIZE` (the size of the struct in the header it was compiled
 *   with). A struct_size smaller than the struct's first version, or larger than 4096 (an
 *   uninitialised field), is refused with TSR_ERROR_INVALID_ARGUMENT naming the struct.
 * - Every function returns NULL on success or a TSR_Error* (code + message) that the caller frees
 *   with TSR_Error_Destroy. Outputs are written only on success.
 * - Objects are opaque handles. Clients, shardings, arrays, events and executables are owned by
 *   the caller and freed with their *_Destroy function; devices belong to their client.
 *   Arrays, shardings and executables must be destroyed before their client.
 *
 * Thread-safety: every function may be called from any thread; handles may be shared between
 * threads, except that a TSR_Error belongs to the caller that received it. Guard scopes
 * (TSR_Guard_PushScope) are per thread, as in the C++ API.
 *
 * Example (error handling shortened; see docs/c_api.md):
 *
 *   const TSR_Api* api = TSR_GetApi();
 *   TSR_Client_Create_Args c = {TSR_Client_Create_Args_STRUCT_SIZE};
 *   c.cpu_devices = 4;
 *   c.vulkan = TSR_VULKAN_OFF;
 *   TSR_Error* e = api->TSR_Client_Create(&c);          // c.client on success
 *   TSR_Sharding_Create_Args s = {TSR_Sharding_Create_Args_STRUCT_SIZE};
 *   s.client = c.client;
 *   s.text = "mesh{x=4} P(x,None)";                       // devices 0..3 when device_ids is NULL
 *   e = api->TSR_Sharding_Create(&s);
 *
 * This header is plain C11 and is installed as <prefix>/include/tessera/bindings/c/tessera_c.h;
 * the library is libtessera_c (CMake: tessera::c).
 */
#ifndef TESSERA_BINDINGS_C_TESSERA_C_H_
#define TESSERA_BINDINGS_C_TESSERA_C_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TSR_API_MAJOR 1
#define TSR_API_MINOR 2

/* The size of `type` up to and including `last_field`: what struct_size is set to. */
#define TSR_STRUCT_SIZE(type, last_field) \
  (offsetof(type, last_field) + sizeof(((type*)0)->last_field))

#if defined(_WIN32)
#define TSR_EXPORT __declspec(dllexport)
#else
#define TSR_EXPORT __attribute__((visibility("default")))
#endif

/* ---- Handles ---------------------------------------------------------------------------- */
typedef struct TSR_Error TSR_Error;
typedef struct TSR_Client TSR_Client;
typedef struct TSR_Device TSR_Device;
typedef struct TSR_Sharding TSR_Sharding;
typedef struct TSR_Array TSR_Array;
typedef struct TSR_Event TSR_Event;
typedef struct TSR_Executable TSR_Executable;

/* ---- Enums ------------------------------------------------------------------------------ */
/* The codes of absl::Status (and of gRPC). */
typedef enum {
  TSR_ERROR_OK = 0,
  TSR_ERROR_CANCELLED = 1,
  TSR_ERROR_UNKNOWN = 2,
  TSR_ERROR_INVALID_ARGUMENT = 3,
  TSR_ERROR_DEADLINE_EXCEEDED = 4,
  TSR_ERROR_NOT_FOUND = 5,
  TSR_ERROR_ALREADY_EXISTS = 6,
  TSR_ERROR_PERMISSION_DENIED = 7,
  TSR_ERROR_RESOURCE_EXHAUSTED = 8,
  TSR_ERROR_FAILED_PRECONDITION = 9,
  TSR_ERROR_ABORTED = 10,
  TSR_ERROR_OUT_OF_RANGE = 11,
  TSR_ERROR_UNIMPLEMENTED = 12,
  TSR_ERROR_INTERNAL = 13,
  TSR_ERROR_UNAVAILABLE = 14,
  TSR_ERROR_DATA_LOSS = 15,
  TSR_ERROR_UNAUTHENTICATED = 16,
} TSR_ErrorCode;

typedef enum {
  TSR_DTYPE_INVALID = 0,
  TSR_DTYPE_PRED = 1,
  TSR_DTYPE_S8 = 2,
  TSR_DTYPE_S16 = 3,
  TSR_DTYPE_S32 = 4,
  TSR_DTYPE_S64 = 5,
  TSR_DTYPE_U8 = 6,
  TSR_DTYPE_U16 = 7,
  TSR_DTYPE_U32 = 8,
  TSR_DTYPE_U64 = 9,
  TSR_DTYPE_F16 = 10,
  TSR_DTYPE_BF16 = 11,
  TSR_DTYPE_F32 = 12,
  TSR_DTYPE_F64 = 13,
} TSR_DType;

typedef enum {
  TSR_VULKAN_IF_AVAILABLE = 0, /* the default */
  TSR_VULKAN_OFF = 1,
  TSR_VULKAN_REQUIRED = 2,
} TSR_VulkanMode;

typedef enum {
  TSR_HOST_BUFFER_IMMUTABLE_ONLY_DURING_CALL = 0, /* the default */
  TSR_HOST_BUFFER_IMMUTABLE_UNTIL_TRANSFER_COMPLETES = 1,
  TSR_HOST_BUFFER_IMMUTABLE_ZERO_COPY = 2,
} TSR_HostBufferSemantics;

typedef enum {
  TSR_COPY_SEMANTICS_REUSE_INPUT = 0, /* the default */
  TSR_COPY_SEMANTICS_ALWAYS_COPY = 1,
  TSR_COPY_SEMANTICS_DONATE_INPUT = 2,
} TSR_CopySemantics;

typedef enum {
  TSR_GUARD_ALLOW = 0,
  TSR_GUARD_LOG = 1,
  TSR_GUARD_DISALLOW = 2,
  TSR_GUARD_LOG_EXPLICIT = 3,
  TSR_GUARD_DISALLOW_EXPLICIT = 4,
} TSR_GuardLevel;

typedef enum {
  TSR_DIRECTION_ALL = -1, /* scopes only: every direction */
  TSR_DIRECTION_HOST_TO_DEVICE = 0,
  TSR_DIRECTION_DEVICE_TO_DEVICE = 1,
  TSR_DIRECTION_DEVICE_TO_HOST = 2,
} TSR_Direction;

typedef enum {
  TSR_VALUE_STRING = 0,
  TSR_VALUE_INT64 = 1,
  TSR_VALUE_BOOL = 2,
  TSR_VALUE_DOUBLE = 3,
  TSR_VALUE_INT64_LIST = 4,
} TSR_ValueType;

/* A device attribute. Strings are not NUL-terminated by contract (use the sizes), though they
 * are in this implementation. */
typedef struct {
  const char* name;
  size_t name_size;
  TSR_ValueType type;
  const char* string_value;
  size_t string_size;
  int64_t int64_value; /* also bool (0/1) */
  double double_value;
  const int64_t* int64_list;
  size_t int64_list_size;
} TSR_NamedValue;

/* ---- Errors ----------------------------------------------------------------------------- */
typedef struct {
  size_t struct_size;
  TSR_Error* error; /* may be NULL */
} TSR_Error_Destroy_Args;
#define TSR_Error_Destroy_Args_STRUCT_SIZE TSR_STRUCT_SIZE(TSR_Error_Destroy_Args, error)

typedef struct {
  size_t struct_size;
  const TSR_Error* error;
  const char* message; /* out: valid until the error is destroyed; NUL-terminated */
  size_t message_size; /* out */
} TSR_Error_Message_Args;
#define TSR_Error_Message_Args_STRUCT_SIZE TSR_STRUCT_SIZE(TSR_Error_Message_Args, message_size)

typedef struct {
  size_t struct_size;
  const TSR_Error* error;
  TSR_ErrorCode code; /* out */
} TSR_Error_GetCode_Args;
#define TSR_Error_GetCode_Args_STRUCT_SIZE TSR_STRUCT_SIZE(TSR_Error_GetCode_Args, code)

/* ---- Clients ---------------------------------------------------------------------------- */
/* Since 1.2: whether a client spans processes (ClientOptions::distributed). */
typedef enum {
  TSR_DISTRIBUTED_NONE = 0, /* this process only (the default) */
  TSR_DISTRIBUTED_MPI = 1   /* every process of MPI_COMM_WORLD; MPI initialized if needed */
} TSR_Distributed;

typedef struct {
  size_t struct_size;
  int cpu_devices;       /* 0: none (then Vulkan must provide devices) */
  TSR_VulkanMode vulkan; /* TSR_VULKAN_IF_AVAILABLE (0) by default */
  /* The guard policy in its text form ("h2d=log,d2d=disallow"); NULL: from
   * TESSERA_TRANSFER_GUARD, else allow. */
  const char* transfer_guard;
  size_t transfer_guard_size;
  TSR_Client* client; /* out */
  /* Since 1.1 (older callers: 0, automatic). Threads of each CPU device. */
  int cpu_threads_per_device;
  /* Since 1.2 (older callers: TSR_DISTRIBUTED_NONE). With TSR_DISTRIBUTED_MPI the client spans
   * every process of MPI_COMM_WORLD (docs/multi-process.md): creation, reshards and executes are
   * collective, cpu_devices and vulkan count each process's own devices. */
  TSR_Distributed distributed;
} TSR_Client_Create_Args;
#define TSR_Client_Create_Args_STRUCT_SIZE TSR_STRUCT_SIZE(TSR_Client_Create_Args, distributed)

typedef struct {
  size_t struct_size;
  TSR_Client* client; /* may be NULL */
} TSR_Client_Destroy_Args;
#define TSR_Client_Destroy_Args_STRUCT_SIZE TSR_STRUCT_SIZE(TSR_Client_Destroy_Args, client)

typedef struct {
  size_t struct_size;
  TSR_Client* client;
  TSR_Device* const* devices; /* out: owned by the client, in device-id order */
  size_t num_devices;         /* out */
} TSR_Client_Devices_Args;
#define TSR_Client_Devices_Args_STRUCT_SIZE TSR_STRUCT_SIZE(TSR_Client_Devices_Args, num_devices)

/* Bytes and copies moved since the client was created (Client::transfer_stats()). Since 1.1. */
typedef struct {
  size_t struct_size;
  TSR_Client* client;
  int64_t host_to_device_bytes, host_to_device_copies; /* out, likewise below */
  int64_t device_to_device_bytes, device_to_device_copies;
  int64_t device_to_host_bytes, device_to_host_copies;
  int64_t local_bytes, local_copies;
} TSR_Client_TransferStats_Args;
#define TSR_Client_TransferStats_Args_STRUCT_SIZE \
  TSR_STRUCT_SIZE(TSR_Client_TransferStats_Args, local_copies)

/* Since 1.2: this process's index and the number of processes the client spans (0 and 1 for a
 * client created without TSR_DISTRIBUTED_MPI). */
typedef struct {
  size_t struct_size;
  TSR_Client* client;
  int process_index; /* out */
  int process_count; /* out */
} TSR_Client_Processes_Args;
#define TSR_Client_Processes_Args_STRUCT_SIZE \
  TSR_STRUCT_SIZE(TSR_Client_Processes_Args, process_count)

/* ---- Devices ---------------------------------------------------------------------------- */
/* Strings are owned by the device and live as long as the client; NUL-terminated. */
typedef struct {
  size_t struct_size;
  TSR_Device* device;
  int32_t id;                       /* out */
  const char* kind;                 /* out: "cpu" or "vulkan" */
  size_t kind_size;                 /* out */
  const char* debug_string;         /* out: "Device(id=2, kind=vulkan, name=...)" */
  size_t debug_string_size;         /* out */
  const TSR_NamedValue* attributes; /* out: name order */
  size_t num_attributes;            /* out */
  /* Since 1.2: the process that owns the device, and whether it is this process (only this
   * process's devices hold data here; TSR_Client_Devices lists every process's devices). */
  int process_index; /* out */
  bool addressable;  /* out */
} TSR_Device_Describe_Args;
#define TSR_Device_Describe_Args_STRUCT_SIZE TSR_STRUCT_SIZE(TSR_Device_Describe_Args, addressable)

/* ---- Shardings -------------------------------------------------------------------------- */
/* A sharding from text in either notation — JAX's "mesh{x=2,y=2} P(x,None)" or IFRT's
 * "2x1 to [0] on 2" — over `device_ids` (NULL: the client's first devices, as many as the
 * notation needs), in `memory_kind` (NULL: each device's default memory). */
typedef struct {
  size_t struct_size;
  TSR_Client* client;
  const char* text;
  size_t text_size; /* 0: strlen(text) */
  const int32_t* device_ids;
  size_t num_device_ids;
  const char* memory_kind;
  size_t memory_kind_size; /* 0: strlen(memory_kind) */
  TSR_Sharding* sharding;  /* out */
} TSR_Sharding_Create_Args;
#define TSR_Sharding_Create_Args_STRUCT_SIZE TSR_STRUCT_SIZE(TSR_Sharding_Create_Args, sharding)

typedef struct {
  size_t struct_size;
  TSR_Sharding* sharding; /* may be NULL */
} TSR_Sharding_Destroy_Args;
#define TSR_Sharding_Destroy_Args_STRUCT_SIZE TSR_STRUCT_SIZE(TSR_Sharding_Destroy_Args, sharding)

/* ---- Arrays ----------------------------------------------------------------------------- */
typedef struct {
  size_t struct_size;
  TSR_Client* client;
  const void* data;
  TSR_DType dtype;
  const int64_t* dims;
  size_t num_dims;
  const int64_t* byte_strides; /* NULL: row-major; else one per dimension, in bytes */
  const TSR_Sharding* sharding;
  TSR_HostBufferSemantics host_buffer_semantics;
  TSR_Array* array; /* out */
  /* out: set when the runtime no longer reads `data` (at once for ONLY_DURING_CALL). */
  TSR_Event* done_with_host_buffer;
  /* Since 1.1 (older callers: true). false for transfers the user did not ask for. */
  bool is_explicit;
} TSR_Array_FromHostBuffer_Args;
#define TSR_Array_FromHostBuffer_Args_STRUCT_SIZE \
  TSR_STRUCT_SIZE(TSR_Array_FromHostBuffer_Args, is_explicit)

/* Reshards arrays[i] to shardings[i] in one call (Client::ReshardArrays). */
typedef struct {
  size_t struct_size;
  TSR_Client* client;
  TSR_Array* const* arrays;
  const TSR_Sharding* const* shardings;
  size_t num_arrays;
  TSR_CopySemantics semantics;
  TSR_Array** out_arrays; /* caller-allocated, num_arrays entries; filled with new handles */
  /* Since 1.1 (older callers: true). */
  bool is_explicit;
} TSR_Array_Reshard_Args;
#define TSR_Array_Reshard_Args_STRUCT_SIZE TSR_STRUCT_SIZE(TSR_Array_Reshard_Args, is_explicit)

/* Copies the whole array into `dst` (row-major, or `byte_strides`). `dst` must stay valid until
 * the event is set; the transfer's errors (a guard refusal included) arrive on the event. */
typedef struct {
  size_t struct_size;
  TSR_Array* array;
  void* dst;
  /* Bytes available at dst. INVALID_ARGUMENT (nothing written) when smaller than the copy
   * writes: the whole array row-major, or with byte_strides (non-negative, one per dimension) up
   * to one past the last element, (dims[0]-1)*byte_strides[0] + ... + element size. */
  size_t dst_size;
  const int64_t* byte_strides; /* NULL: row-major */
  TSR_Event* event;            /* out */
  /* Since 1.1 (older callers: true). */
  bool is_explicit;
} TSR_Array_ToHostBuffer_Args;
#define TSR_Array_ToHostBuffer_Args_STRUCT_SIZE \
  TSR_STRUCT_SIZE(TSR_Array_ToHostBuffer_Args, is_explicit)

/* dtype, dims and the sharding's description. The pointers live as long as the array handle. */
typedef struct {
  size_t struct_size;
  TSR_Array* array;
  TSR_DType dtype;      /* out */
  const int64_t* dims;  /* out */
  size_t num_dims;      /* out */
  const char* sharding; /* out: Sharding::DebugString() */
  size_t sharding_size; /* out */
  size_t num_devices;   /* out */
  bool is_deleted;      /* out */
} TSR_Array_Describe_Args;
#define TSR_Array_Describe_Args_STRUCT_SIZE TSR_STRUCT_SIZE(TSR_Array_Describe_Args, is_deleted)

typedef struct {
  size_t struct_size;
  TSR_Array* array;
  TSR_Event* event; /* out: set when every shard is in place, or with the error */
} TSR_Array_ReadyEvent_Args;
#define TSR_Array_ReadyEvent_Args_STRUCT_SIZE TSR_STRUCT_SIZE(TSR_Array_ReadyEvent_Args, event)

/* Releases the array's buffers (Array::Delete); the handle stays valid until destroyed. */
typedef struct {
  size_t struct_size;
  TSR_Array* array;
} TSR_Array_Delete_Args;
#define TSR_Array_Delete_Args_STRUCT_SIZE TSR_STRUCT_SIZE(TSR_Array_Delete_Args, array)

/* Frees the handle (the buffers too, once no other handle or operation holds them). */
typedef struct {
  size_t struct_size;
  TSR_Array* array; /* may be NULL */
} TSR_Array_Destroy_Args;
#define TSR_Array_Destroy_Args_STRUCT_SIZE TSR_STRUCT_SIZE(TSR_Array_Destroy_Args, array)

/* ---- Events ----------------------------------------------------------------------------- */
typedef struct {
  size_t struct_size;
  TSR_Event* event;
} TSR_Event_Await_Args; /* returns the event's error, if any (a fresh TSR_Error each call) */
#define TSR_Event_Await_Args_STRUCT_SIZE TSR_STRUCT_SIZE(TSR_Event_Await_Args, event)

typedef struct {
  size_t struct_size;
  TSR_Event* event;
  bool is_ready; /* out */
} TSR_Event_IsReady_Args;
#define TSR_Event_IsReady_Args_STRUCT_SIZE TSR_STRUCT_SIZE(TSR_Event_IsReady_Args, is_ready)

/* `callback` runs once, when the event is set (on the calling thread if it already is, else on
 * a runtime thread), with the event's error (NULL on success; the callback frees it) and
 * `user_arg`. It must not block for long. */
typedef void (*TSR_EventCallback)(TSR_Error* error, void* user_arg);
typedef struct {
  size_t struct_size;
  TSR_Event* event;
  TSR_EventCallback callback;
  void* user_arg;
} TSR_Event_OnReady_Args;
#define TSR_Event_OnReady_Args_STRUCT_SIZE TSR_STRUCT_SIZE(TSR_Event_OnReady_Args, user_arg)

typedef struct {
  size_t struct_size;
  TSR_Event* event; /* may be NULL; a pending callback still runs */
} TSR_Event_Destroy_Args;
#define TSR_Event_Destroy_Args_STRUCT_SIZE TSR_STRUCT_SIZE(TSR_Event_Destroy_Args, event)

/* ---- The transfer guard ----------------------------------------------------------------- */
/* Replaces the client's policy (text form as in TSR_Client_Create_Args::transfer_guard). */
typedef struct {
  size_t struct_size;
  TSR_Client* client;
  const char* policy;
  size_t policy_size; /* 0: strlen(policy) */
} TSR_Guard_SetPolicy_Args;
#define TSR_Guard_SetPolicy_Args_STRUCT_SIZE TSR_STRUCT_SIZE(TSR_Guard_SetPolicy_Args, policy_size)

/* Enters a thread-local scope (ScopedTransferGuard) on the calling thread: `level` for
 * `direction` (TSR_DIRECTION_ALL: every direction), for `client`'s guard only, or for every
 * client's when `client` is NULL. Scopes nest; TSR_Guard_PopScope leaves the innermost one that
 * this thread pushed. */
typedef struct {
  size_t struct_size;
  TSR_Client* client;
  TSR_Direction direction;
  TSR_GuardLevel level;
} TSR_Guard_PushScope_Args;
#define TSR_Guard_PushScope_Args_STRUCT_SIZE TSR_STRUCT_SIZE(TSR_Guard_PushScope_Args, level)

/* FAILED_PRECONDITION when this thread has no scope pushed through this API. */
typedef struct {
  size_t struct_size;
} TSR_Guard_PopScope_Args;
#define TSR_Guard_PopScope_Args_STRUCT_SIZE TSR_STRUCT_SIZE(TSR_Guard_PopScope_Args, struct_size)

/* What the client's guard decided in `direction` so far (TransferGuard::counters). */
typedef struct {
  size_t struct_size;
  TSR_Client* client;
  TSR_Direction direction;
  int64_t allowed_events, logged_events, refused_events; /* out */
  int64_t allowed_bytes, logged_bytes, refused_bytes;    /* out */
} TSR_Guard_Counters_Args;
#define TSR_Guard_Counters_Args_STRUCT_SIZE TSR_STRUCT_SIZE(TSR_Guard_Counters_Args, refused_bytes)

/* ---- Programs --------------------------------------------------------------------------- */
/* Compiles a program (as `tessera run` reads) for `device_ids` (NULL: the client's first
 * devices, as many as the program's shardings need — all of them here): linalg MLIR, its
 * shardings from its tessera.sharding attributes, or StableHLO in generic form (a text naming
 * "stablehlo.", "chlo." or "sdy."), its shardings from its Shardy attributes (none: replicated).
 * UNIMPLEMENTED in a build without the compiler. */
typedef struct {
  size_t struct_size;
  TSR_Client* client;
  const char* mlir;
  size_t mlir_size; /* 0: strlen(mlir) */
  const int32_t* device_ids;
  size_t num_device_ids;
  TSR_Executable* executable; /* out */
  size_t num_outputs;         /* out */
} TSR_Executable_Compile_Args;
#define TSR_Executable_Compile_Args_STRUCT_SIZE \
  TSR_STRUCT_SIZE(TSR_Executable_Compile_Args, num_outputs)

/* Runs the executable on `args`; `outputs` (caller-allocated, num_outputs entries) receives new
 * handles. Errors while running arrive on `event` and on the outputs' ready events. */
typedef struct {
  size_t struct_size;
  TSR_Executable* executable;
  TSR_Array* const* args;
  size_t num_args;
  TSR_Array** outputs;
  size_t num_outputs;
  TSR_Event* event; /* out */
} TSR_Executable_Execute_Args;
#define TSR_Executable_Execute_Args_STRUCT_SIZE TSR_STRUCT_SIZE(TSR_Executable_Execute_Args, event)

typedef struct {
  size_t struct_size;
  TSR_Executable* executable; /* may be NULL */
} TSR_Executable_Destroy_Args;
#define TSR_Executable_Destroy_Args_STRUCT_SIZE \
  TSR_STRUCT_SIZE(TSR_Executable_Destroy_Args, executable)

/* ---- The table -------------------------------------------------------------------------- */
typedef TSR_Error* TSR_Error_Destroy_Fn(TSR_Error_Destroy_Args* args);
typedef TSR_Error* TSR_Error_Message_Fn(TSR_Error_Message_Args* args);
typedef TSR_Error* TSR_Error_GetCode_Fn(TSR_Error_GetCode_Args* args);
typedef TSR_Error* TSR_Client_Create_Fn(TSR_Client_Create_Args* args);
typedef TSR_Error* TSR_Client_Destroy_Fn(TSR_Client_Destroy_Args* args);
typedef TSR_Error* TSR_Client_Devices_Fn(TSR_Client_Devices_Args* args);
typedef TSR_Error* TSR_Device_Describe_Fn(TSR_Device_Describe_Args* args);
typedef TSR_Error* TSR_Sharding_Create_Fn(TSR_Sharding_Create_Args* args);
typedef TSR_Error* TSR_Sharding_Destroy_Fn(TSR_Sharding_Destroy_Args* args);
typedef TSR_Error* TSR_Array_FromHostBuffer_Fn(TSR_Array_FromHostBuffer_Args* args);
typedef TSR_Error* TSR_Array_Reshard_Fn(TSR_Array_Reshard_Args* args);
typedef TSR_Error* TSR_Array_ToHostBuffer_Fn(TSR_Array_ToHostBuffer_Args* args);
typedef TSR_Error* TSR_Array_Describe_Fn(TSR_Array_Describe_Args* args);
typedef TSR_Error* TSR_Array_ReadyEvent_Fn(TSR_Array_ReadyEvent_Args* args);
typedef TSR_Error* TSR_Array_Delete_Fn(TSR_Array_Delete_Args* args);
typedef TSR_Error* TSR_Array_Destroy_Fn(TSR_Array_Destroy_Args* args);
typedef TSR_Error* TSR_Event_Await_Fn(TSR_Event_Await_Args* args);
typedef TSR_Error* TSR_Event_IsReady_Fn(TSR_Event_IsReady_Args* args);
typedef TSR_Error* TSR_Event_OnReady_Fn(TSR_Event_OnReady_Args* args);
typedef TSR_Error* TSR_Event_Destroy_Fn(TSR_Event_Destroy_Args* args);
typedef TSR_Error* TSR_Guard_SetPolicy_Fn(TSR_Guard_SetPolicy_Args* args);
typedef TSR_Error* TSR_Guard_PushScope_Fn(TSR_Guard_PushScope_Args* args);
typedef TSR_Error* TSR_Guard_PopScope_Fn(TSR_Guard_PopScope_Args* args);
typedef TSR_Error* TSR_Guard_Counters_Fn(TSR_Guard_Counters_Args* args);
typedef TSR_Error* TSR_Executable_Compile_Fn(TSR_Executable_Compile_Args* args);
typedef TSR_Error* TSR_Executable_Execute_Fn(TSR_Executable_Execute_Args* args);
typedef TSR_Error* TSR_Executable_Destroy_Fn(TSR_Executable_Destroy_Args* args);
typedef TSR_Error* TSR_Client_TransferStats_Fn(TSR_Client_TransferStats_Args* args);
typedef TSR_Error* TSR_Client_Processes_Fn(TSR_Client_Processes_Args* args);

typedef struct {
  size_t struct_size;
  int major_version;
  int minor_version;
} TSR_Api_Version;
#define TSR_Api_Version_STRUCT_SIZE TSR_STRUCT_SIZE(TSR_Api_Version, minor_version)

/* The function table. Entries are appended, never reordered: a caller compiled against version
 * 1.m may call every entry its header has when TSR_GetApi()->version.minor_version >= m (an
 * entry is present exactly when struct_size covers it). */
typedef struct {
  size_t struct_size;
  TSR_Api_Version version;
  /* 1.0 */
  TSR_Error_Destroy_Fn* TSR_Error_Destroy;
  TSR_Error_Message_Fn* TSR_Error_Message;
  TSR_Error_GetCode_Fn* TSR_Error_GetCode;
  TSR_Client_Create_Fn* TSR_Client_Create;
  TSR_Client_Destroy_Fn* TSR_Client_Destroy;
  TSR_Client_Devices_Fn* TSR_Client_Devices;
  TSR_Device_Describe_Fn* TSR_Device_Describe;
  TSR_Sharding_Create_Fn* TSR_Sharding_Create;
  TSR_Sharding_Destroy_Fn* TSR_Sharding_Destroy;
  TSR_Array_FromHostBuffer_Fn* TSR_Array_FromHostBuffer;
  TSR_Array_Reshard_Fn* TSR_Array_Reshard;
  TSR_Array_ToHostBuffer_Fn* TSR_Array_ToHostBuffer;
  TSR_Array_Describe_Fn* TSR_Array_Describe;
  TSR_Array_ReadyEvent_Fn* TSR_Array_ReadyEvent;
  TSR_Array_Delete_Fn* TSR_Array_Delete;
  TSR_Array_Destroy_Fn* TSR_Array_Destroy;
  TSR_Event_Await_Fn* TSR_Event_Await;
  TSR_Event_IsReady_Fn* TSR_Event_IsReady;
  TSR_Event_OnReady_Fn* TSR_Event_OnReady;
  TSR_Event_Destroy_Fn* TSR_Event_Destroy;
  TSR_Guard_SetPolicy_Fn* TSR_Guard_SetPolicy;
  TSR_Guard_PushScope_Fn* TSR_Guard_PushScope;
  TSR_Guard_PopScope_Fn* TSR_Guard_PopScope;
  TSR_Guard_Counters_Fn* TSR_Guard_Counters;
  TSR_Executable_Compile_Fn* TSR_Executable_Compile;
  TSR_Executable_Execute_Fn* TSR_Executable_Execute;
  TSR_Executable_Destroy_Fn* TSR_Executable_Destroy;
  /* 1.1 */
  TSR_Client_TransferStats_Fn* TSR_Client_TransferStats;
  /* 1.2 */
  TSR_Client_Processes_Fn* TSR_Client_Processes;
} TSR_Api;
#define TSR_Api_STRUCT_SIZE TSR_STRUCT_SIZE(TSR_Api, TSR_Client_Processes)

/* The table of this library; never NULL, lives as long as the process. */
TSR_EXPORT const TSR_Api* TSR_GetApi(void);

#ifdef __cplusplus
}
#endif

#endif /* TESSERA_BINDINGS_C_TESSERA_C_H_ */
