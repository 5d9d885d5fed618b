#ifndef TESSERA_BINDINGS_PJRT_INTERNAL_H_
#define TESSERA_BINDINGS_PJRT_INTERNAL_H_

// The C++ side of the PJRT C API (pjrt_c_api.h, from the xla-cpu-pjrt wheel): what each opaque
// PJRT handle holds, and the helpers every entry point uses. Internal to bindings/pjrt.
//
// Ownership, as PJRT defines it: the caller destroys errors, events, buffers, executables and
// the client; devices, memories and device descriptions belong to the client. Here every object
// the caller owns holds a reference to the ClientState, so that a buffer or an executable that
// outlives PJRT_Client_Destroy (JAX destroys them in any order at exit) still has its devices.
// Thread-safety: handles are immutable after creation (the C++ objects they hold are
// thread-safe) except a buffer's external references, which take its mutex.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tessera.h"
#include "xla/pjrt/c/pjrt_c_api.h"

struct PJRT_Error {
  absl::Status status;
  std::string message;  // status.message(), kept for PJRT_Error_Message
};

struct PJRT_Event {
  tessera::Future<> future;
};

namespace tessera::pjrt {
// An event of `future`: a new one, or, for a future already set OK (the common case of a call run
// inline), one shared event that PJRT_Event_Destroy leaves alone. Either way the caller destroys
// it with PJRT_Event_Destroy.
PJRT_Event* NewEvent(tessera::Future<> future);
}  // namespace tessera::pjrt

struct PJRT_Memory {
  tessera::Memory* memory = nullptr;
  int id = 0;
  std::string kind;  // "device": JAX's name for a device's default memory
  std::string debug_string;
  std::string to_string;
  std::vector<PJRT_Device*> devices;  // the one device that holds it
};

struct PJRT_DeviceDescription {
  int id = 0;
  int process_index = 0;
  std::string kind;  // "cpu", or the Vulkan device's name
  std::string debug_string;
  std::string to_string;
  // The device's attributes as PJRT_NamedValues; `strings` and `lists` own what they point to.
  std::vector<std::string> strings;
  std::vector<std::vector<int64_t>> lists;
  std::vector<PJRT_NamedValue> attributes;
};

struct PJRT_Device {
  tessera::Device* device = nullptr;
  int local_hardware_id = 0;  // the index in the client's devices
  PJRT_DeviceDescription description;
  PJRT_Memory* memory = nullptr;  // the device's default memory, its only one here
  std::vector<PJRT_Memory*> memories;
  // The sharding of every buffer put on the device: one object, so that Tessera's caches, keyed by
  // a sharding's identity, find its uploads' and downloads' plans.
  tessera::ShardingRef sharding;
};

namespace tessera::pjrt {

// Everything a client's handles point into: the Tessera client, its devices and memories.
struct ClientState {
  std::shared_ptr<tessera::Client> client;
  std::vector<std::unique_ptr<PJRT_Device>> device_storage;
  std::vector<std::unique_ptr<PJRT_Memory>> memory_storage;
  std::vector<PJRT_Device*> devices;   // as PJRT_Client_Devices hands them out
  std::vector<PJRT_Memory*> memories;  // as PJRT_Client_AddressableMemories hands them out
  std::string platform_version;

  // The handle of a Tessera device of this client, or nullptr.
  PJRT_Device* Find(const tessera::Device* device) const;
};

}  // namespace tessera::pjrt

struct PJRT_Client {
  std::shared_ptr<tessera::pjrt::ClientState> state;
};

struct PJRT_Buffer {
  std::shared_ptr<tessera::pjrt::ClientState> state;
  tessera::ArrayRef array;  // a single-device array
  PJRT_Device* device = nullptr;
  PJRT_Buffer_Type type = PJRT_Buffer_Type_INVALID;
  // Inline: a buffer per output of every call, so no allocation of their own for ranks up to 6.
  absl::InlinedVector<int64_t, 6> dims;
  absl::InlinedVector<int64_t, 6> minor_to_major;  // the row-major layout GetMemoryLayout gives
  std::mutex mu;
  std::vector<std::shared_ptr<void>> external_references;  // guarded by mu
};

namespace tessera::pjrt {

// What PJRT_Executable and PJRT_LoadedExecutable share: the compiled program and what PJRT asks
// of it, computed once at Compile.
struct CompiledProgram {
  std::shared_ptr<ClientState> state;
  tessera::LoadedExecutableRef executable;
  std::string name;
  std::string fingerprint;
  std::vector<PJRT_Device*> devices;  // the executable's devices, in partition order
  absl::flat_hash_map<const tessera::Device*, size_t> partition_of;  // devices[i] -> i
  std::vector<tessera::ArraySpec> parameters;
  std::vector<tessera::ArraySpec> outputs;
  std::vector<PJRT_Buffer_Type> output_types;
  std::vector<int64_t> output_dims;      // concatenated, of each output's shard on a device
  std::vector<size_t> output_dim_sizes;  // each output's rank
  // What PJRT_Executable_OptimizedProgram hands out (optimized_program.h), or why it cannot.
  absl::StatusOr<std::string> optimized_program;
  std::vector<const char*> output_memory_kinds;
  std::vector<size_t> output_memory_kind_sizes;
};

}  // namespace tessera::pjrt

struct PJRT_Executable {
  std::shared_ptr<tessera::pjrt::CompiledProgram> program;
};

struct PJRT_DeviceAssignmentSerialized {
  std::string bytes;  // a serialized xla.DeviceAssignmentProto
};

struct PJRT_LoadedExecutable {
  std::shared_ptr<tessera::pjrt::CompiledProgram> program;
};

namespace tessera::pjrt {

// A new PJRT_Error for `status` (nullptr when OK).
PJRT_Error* MakeError(absl::Status status);
// INVALID_ARGUMENT "<what> is NULL" for a null pointer.
absl::Status CheckNotNull(const void* pointer, std::string_view what);
// UNIMPLEMENTED, naming the PJRT function and why.
PJRT_Error* Unimplemented(std::string_view function, std::string_view why);

// PJRT element types <-> Tessera dtypes (dtypes.cc); kInvalid / PJRT_Buffer_Type_INVALID for
// types the other side lacks.
tessera::DType ToDType(PJRT_Buffer_Type type);
PJRT_Buffer_Type ToBufferType(tessera::DType dtype);
// "f32" for PJRT_Buffer_Type_F32; the enum's number for the rest.
std::string BufferTypeName(PJRT_Buffer_Type type);

// A new buffer handle over a single-device `array` of the client.
absl::StatusOr<PJRT_Buffer*> MakeBuffer(std::shared_ptr<ClientState> state,
                                        tessera::ArrayRef array);

// The byte strides a PJRT memory layout describes for `dims` of `element_bytes`, or nullopt for
// the dense row-major layout. UNIMPLEMENTED for tiled layouts; INVALID_ARGUMENT for a layout
// whose rank or permutation does not fit.
absl::StatusOr<std::optional<std::vector<int64_t>>> ByteStridesOf(
    const PJRT_Buffer_MemoryLayout* layout, absl::Span<const int64_t> dims, int64_t element_bytes);

}  // namespace tessera::pjrt

// Whether the caller's struct has `field` (PJRT adds fields at the end in later minor versions).
#define TESSERA_PJRT_HAS_FIELD(args, Type, field) \
  ((args)->struct_size >= PJRT_STRUCT_SIZE(Type, field))

// The first statement of each entry point: an error for a null argument struct.
#define TESSERA_PJRT_CHECK_ARGS(args, Type)                                            \
  do {                                                                                 \
    if ((args) == nullptr)                                                             \
      return ::tessera::pjrt::MakeError(absl::InvalidArgumentError(#Type " is NULL")); \
  } while (false)

// Returns the error of a failed status from an entry point.
#define TESSERA_PJRT_RETURN_IF_ERROR(expr)                                              \
  do {                                                                                  \
    absl::Status _pjrt_status = (expr);                                                 \
    if (!_pjrt_status.ok()) return ::tessera::pjrt::MakeError(std::move(_pjrt_status)); \
  } while (false)

#endif  // TESSERA_BINDINGS_PJRT_INTERNAL_H_
