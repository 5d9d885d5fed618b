// PJRT_Memory: a device's default Tessera memory, the one memory each device offers JAX, of kind
// "device".

#include "bindings/pjrt/entry_points.h"
#include "bindings/pjrt/internal.h"

namespace tessera::pjrt {

PJRT_Error* MemoryId(PJRT_Memory_Id_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_Memory_Id_Args);
  TESSERA_PJRT_RETURN_IF_ERROR(CheckNotNull(args->memory, "PJRT_Memory_Id_Args.memory"));
  args->id = args->memory->id;
  return nullptr;
}

PJRT_Error* MemoryKind(PJRT_Memory_Kind_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_Memory_Kind_Args);
  TESSERA_PJRT_RETURN_IF_ERROR(CheckNotNull(args->memory, "PJRT_Memory_Kind_Args.memory"));
  args->kind = args->memory->kind.c_str();
  args->kind_size = args->memory->kind.size();
  return nullptr;
}

PJRT_Error* MemoryKindId(PJRT_Memory_Kind_Id_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_Memory_Kind_Id_Args);
  TESSERA_PJRT_RETURN_IF_ERROR(CheckNotNull(args->memory, "PJRT_Memory_Kind_Id_Args.memory"));
  args->kind_id = 0;  // one kind: "device"
  return nullptr;
}

PJRT_Error* MemoryDebugString(PJRT_Memory_DebugString_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_Memory_DebugString_Args);
  TESSERA_PJRT_RETURN_IF_ERROR(CheckNotNull(args->memory, "PJRT_Memory_DebugString_Args.memory"));
  args->debug_string = args->memory->debug_string.c_str();
  args->debug_string_size = args->memory->debug_string.size();
  return nullptr;
}

PJRT_Error* MemoryToString(PJRT_Memory_ToString_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_Memory_ToString_Args);
  TESSERA_PJRT_RETURN_IF_ERROR(CheckNotNull(args->memory, "PJRT_Memory_ToString_Args.memory"));
  args->to_string = args->memory->to_string.c_str();
  args->to_string_size = args->memory->to_string.size();
  return nullptr;
}

PJRT_Error* MemoryAddressableByDevices(PJRT_Memory_AddressableByDevices_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_Memory_AddressableByDevices_Args);
  TESSERA_PJRT_RETURN_IF_ERROR(
      CheckNotNull(args->memory, "PJRT_Memory_AddressableByDevices_Args.memory"));
  args->devices = args->memory->devices.data();
  args->num_devices = args->memory->devices.size();
  return nullptr;
}

}  // namespace tessera::pjrt
