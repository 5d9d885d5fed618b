// PJRT_Device and PJRT_DeviceDescription: a Tessera device, described once at client creation.

#include "bindings/pjrt/entry_points.h"
#include "bindings/pjrt/internal.h"

namespace tessera::pjrt {
namespace {

absl::Status CheckDescription(const PJRT_DeviceDescription* d, std::string_view where) {
  return CheckNotNull(d, std::string(where) + ".device_description");
}

absl::Status CheckDevice(const PJRT_Device* d, std::string_view where) {
  return CheckNotNull(d, std::string(where) + ".device");
}

}  // namespace

PJRT_Error* DeviceDescriptionId(PJRT_DeviceDescription_Id_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_DeviceDescription_Id_Args);
  TESSERA_PJRT_RETURN_IF_ERROR(
      CheckDescription(args->device_description, "PJRT_DeviceDescription_Id_Args"));
  args->id = args->device_description->id;
  return nullptr;
}

PJRT_Error* DeviceDescriptionProcessIndex(PJRT_DeviceDescription_ProcessIndex_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_DeviceDescription_ProcessIndex_Args);
  TESSERA_PJRT_RETURN_IF_ERROR(
      CheckDescription(args->device_description, "PJRT_DeviceDescription_ProcessIndex_Args"));
  args->process_index = args->device_description->process_index;
  return nullptr;
}

PJRT_Error* DeviceDescriptionAttributes(PJRT_DeviceDescription_Attributes_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_DeviceDescription_Attributes_Args);
  TESSERA_PJRT_RETURN_IF_ERROR(
      CheckDescription(args->device_description, "PJRT_DeviceDescription_Attributes_Args"));
  args->attributes = args->device_description->attributes.data();
  args->num_attributes = args->device_description->attributes.size();
  return nullptr;
}

PJRT_Error* DeviceDescriptionKind(PJRT_DeviceDescription_Kind_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_DeviceDescription_Kind_Args);
  TESSERA_PJRT_RETURN_IF_ERROR(
      CheckDescription(args->device_description, "PJRT_DeviceDescription_Kind_Args"));
  args->device_kind = args->device_description->kind.c_str();
  args->device_kind_size = args->device_description->kind.size();
  return nullptr;
}

PJRT_Error* DeviceDescriptionDebugString(PJRT_DeviceDescription_DebugString_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_DeviceDescription_DebugString_Args);
  TESSERA_PJRT_RETURN_IF_ERROR(
      CheckDescription(args->device_description, "PJRT_DeviceDescription_DebugString_Args"));
  args->debug_string = args->device_description->debug_string.c_str();
  args->debug_string_size = args->device_description->debug_string.size();
  return nullptr;
}

PJRT_Error* DeviceDescriptionToString(PJRT_DeviceDescription_ToString_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_DeviceDescription_ToString_Args);
  TESSERA_PJRT_RETURN_IF_ERROR(
      CheckDescription(args->device_description, "PJRT_DeviceDescription_ToString_Args"));
  args->to_string = args->device_description->to_string.c_str();
  args->to_string_size = args->device_description->to_string.size();
  return nullptr;
}

PJRT_Error* DeviceGetDescription(PJRT_Device_GetDescription_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_Device_GetDescription_Args);
  TESSERA_PJRT_RETURN_IF_ERROR(CheckDevice(args->device, "PJRT_Device_GetDescription_Args"));
  args->device_description = &args->device->description;
  return nullptr;
}

PJRT_Error* DeviceIsAddressable(PJRT_Device_IsAddressable_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_Device_IsAddressable_Args);
  TESSERA_PJRT_RETURN_IF_ERROR(CheckDevice(args->device, "PJRT_Device_IsAddressable_Args"));
  args->is_addressable = args->device->device->IsAddressable();
  return nullptr;
}

PJRT_Error* DeviceLocalHardwareId(PJRT_Device_LocalHardwareId_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_Device_LocalHardwareId_Args);
  TESSERA_PJRT_RETURN_IF_ERROR(CheckDevice(args->device, "PJRT_Device_LocalHardwareId_Args"));
  args->local_hardware_id = args->device->local_hardware_id;
  return nullptr;
}

PJRT_Error* DeviceAddressableMemories(PJRT_Device_AddressableMemories_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_Device_AddressableMemories_Args);
  TESSERA_PJRT_RETURN_IF_ERROR(CheckDevice(args->device, "PJRT_Device_AddressableMemories_Args"));
  args->memories = args->device->memories.data();
  args->num_memories = args->device->memories.size();
  return nullptr;
}

PJRT_Error* DeviceDefaultMemory(PJRT_Device_DefaultMemory_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_Device_DefaultMemory_Args);
  TESSERA_PJRT_RETURN_IF_ERROR(CheckDevice(args->device, "PJRT_Device_DefaultMemory_Args"));
  args->memory = args->device->memory;
  return nullptr;
}

PJRT_Error* DeviceMemoryStats(PJRT_Device_MemoryStats_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_Device_MemoryStats_Args);
  TESSERA_PJRT_RETURN_IF_ERROR(CheckDevice(args->device, "PJRT_Device_MemoryStats_Args"));
  // Only bytes_in_use is known: the bytes Tessera has allocated in the device's memory.
  args->bytes_in_use = args->device->memory->memory->BytesInUse();
  args->peak_bytes_in_use_is_set = false;
  args->num_allocs_is_set = false;
  args->largest_alloc_size_is_set = false;
  args->bytes_limit_is_set = false;
  args->bytes_reserved_is_set = false;
  args->peak_bytes_reserved_is_set = false;
  args->bytes_reservable_limit_is_set = false;
  args->largest_free_block_bytes_is_set = false;
  if (TESSERA_PJRT_HAS_FIELD(args, PJRT_Device_MemoryStats_Args, peak_pool_bytes_is_set)) {
    args->pool_bytes_is_set = false;
    args->peak_pool_bytes_is_set = false;
  }
  return nullptr;
}

}  // namespace tessera::pjrt
