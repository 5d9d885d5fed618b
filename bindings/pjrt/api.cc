// GetPjrtApi: the table of Tessera's PJRT functions, the one symbol (with tessera_pjrt.h's
// reader hooks) that libtessera_pjrt.so exports. Functions Tessera does not offer return
// UNIMPLEMENTED, naming themselves (docs/jax.md lists them).

#include "bindings/pjrt/entry_points.h"
#include "bindings/pjrt/internal.h"

namespace tessera::pjrt {
namespace {

// JAX calls some PJRT functions unconditionally: a NULL entry would be a segfault, not an error.
#define TESSERA_PJRT_UNIMPLEMENTED(Name)                      \
  PJRT_Error* Unimplemented_##Name(Name##_Args* args) {       \
    return Unimplemented(#Name, "Tessera does not offer it"); \
  }

TESSERA_PJRT_UNIMPLEMENTED(PJRT_Executable_Serialize)
TESSERA_PJRT_UNIMPLEMENTED(PJRT_Executable_DeserializeAndLoad)
TESSERA_PJRT_UNIMPLEMENTED(PJRT_CopyToDeviceStream_Destroy)
TESSERA_PJRT_UNIMPLEMENTED(PJRT_CopyToDeviceStream_AddChunk)
TESSERA_PJRT_UNIMPLEMENTED(PJRT_CopyToDeviceStream_TotalBytes)
TESSERA_PJRT_UNIMPLEMENTED(PJRT_CopyToDeviceStream_GranuleSize)
TESSERA_PJRT_UNIMPLEMENTED(PJRT_CopyToDeviceStream_CurrentBytes)
TESSERA_PJRT_UNIMPLEMENTED(PJRT_TopologyDescription_Create)
TESSERA_PJRT_UNIMPLEMENTED(PJRT_TopologyDescription_Destroy)
TESSERA_PJRT_UNIMPLEMENTED(PJRT_TopologyDescription_PlatformName)
TESSERA_PJRT_UNIMPLEMENTED(PJRT_TopologyDescription_PlatformVersion)
TESSERA_PJRT_UNIMPLEMENTED(PJRT_TopologyDescription_GetDeviceDescriptions)
TESSERA_PJRT_UNIMPLEMENTED(PJRT_TopologyDescription_Serialize)
TESSERA_PJRT_UNIMPLEMENTED(PJRT_TopologyDescription_Attributes)
TESSERA_PJRT_UNIMPLEMENTED(PJRT_Compile)
TESSERA_PJRT_UNIMPLEMENTED(PJRT_Client_CreateViewOfDeviceBuffer)
TESSERA_PJRT_UNIMPLEMENTED(PJRT_Client_TopologyDescription)
TESSERA_PJRT_UNIMPLEMENTED(PJRT_Executable_GetCompiledMemoryStats)
TESSERA_PJRT_UNIMPLEMENTED(PJRT_ExecuteContext_Create)
TESSERA_PJRT_UNIMPLEMENTED(PJRT_ExecuteContext_Destroy)
TESSERA_PJRT_UNIMPLEMENTED(PJRT_Buffer_CopyRawToHost)
TESSERA_PJRT_UNIMPLEMENTED(PJRT_AsyncHostToDeviceTransferManager_Destroy)
TESSERA_PJRT_UNIMPLEMENTED(PJRT_AsyncHostToDeviceTransferManager_TransferData)
TESSERA_PJRT_UNIMPLEMENTED(PJRT_Client_CreateBuffersForAsyncHostToDevice)
TESSERA_PJRT_UNIMPLEMENTED(PJRT_AsyncHostToDeviceTransferManager_RetrieveBuffer)
TESSERA_PJRT_UNIMPLEMENTED(PJRT_AsyncHostToDeviceTransferManager_Device)
TESSERA_PJRT_UNIMPLEMENTED(PJRT_AsyncHostToDeviceTransferManager_BufferCount)
TESSERA_PJRT_UNIMPLEMENTED(PJRT_AsyncHostToDeviceTransferManager_BufferSize)
TESSERA_PJRT_UNIMPLEMENTED(PJRT_AsyncHostToDeviceTransferManager_SetBufferError)
TESSERA_PJRT_UNIMPLEMENTED(PJRT_AsyncHostToDeviceTransferManager_AddMetadata)
TESSERA_PJRT_UNIMPLEMENTED(PJRT_Client_DmaMap)
TESSERA_PJRT_UNIMPLEMENTED(PJRT_Client_DmaUnmap)
TESSERA_PJRT_UNIMPLEMENTED(PJRT_Client_CreateUninitializedBuffer)
TESSERA_PJRT_UNIMPLEMENTED(PJRT_Client_UpdateGlobalProcessInfo)
TESSERA_PJRT_UNIMPLEMENTED(PJRT_TopologyDescription_Deserialize)
TESSERA_PJRT_UNIMPLEMENTED(PJRT_Client_CreateAliasBuffer)
TESSERA_PJRT_UNIMPLEMENTED(PJRT_Client_FulfillAliasBuffer)

#undef TESSERA_PJRT_UNIMPLEMENTED

PJRT_Api MakeApi() {
  PJRT_Api api{};
  api.struct_size = PJRT_Api_STRUCT_SIZE;
  api.extension_start = nullptr;
  api.pjrt_api_version.struct_size = PJRT_Api_Version_STRUCT_SIZE;
  api.pjrt_api_version.extension_start = nullptr;
  api.pjrt_api_version.major_version = PJRT_API_MAJOR;
  api.pjrt_api_version.minor_version = PJRT_API_MINOR;
  api.PJRT_Error_Destroy = ErrorDestroy;
  api.PJRT_Error_Message = ErrorMessage;
  api.PJRT_Error_GetCode = ErrorGetCode;
  api.PJRT_Plugin_Initialize = PluginInitialize;
  api.PJRT_Plugin_Attributes = PluginAttributes;
  api.PJRT_Event_Destroy = EventDestroy;
  api.PJRT_Event_IsReady = EventIsReady;
  api.PJRT_Event_Error = EventError;
  api.PJRT_Event_Await = EventAwait;
  api.PJRT_Event_OnReady = EventOnReady;
  api.PJRT_Client_Create = ClientCreate;
  api.PJRT_Client_Destroy = ClientDestroy;
  api.PJRT_Client_PlatformName = ClientPlatformName;
  api.PJRT_Client_ProcessIndex = ClientProcessIndex;
  api.PJRT_Client_PlatformVersion = ClientPlatformVersion;
  api.PJRT_Client_Devices = ClientDevices;
  api.PJRT_Client_AddressableDevices = ClientAddressableDevices;
  api.PJRT_Client_LookupDevice = ClientLookupDevice;
  api.PJRT_Client_LookupAddressableDevice = ClientLookupAddressableDevice;
  api.PJRT_Client_AddressableMemories = ClientAddressableMemories;
  api.PJRT_Client_Compile = ClientCompile;
  api.PJRT_Client_DefaultDeviceAssignment = ClientDefaultDeviceAssignment;
  api.PJRT_Client_BufferFromHostBuffer = ClientBufferFromHostBuffer;
  api.PJRT_DeviceDescription_Id = DeviceDescriptionId;
  api.PJRT_DeviceDescription_ProcessIndex = DeviceDescriptionProcessIndex;
  api.PJRT_DeviceDescription_Attributes = DeviceDescriptionAttributes;
  api.PJRT_DeviceDescription_Kind = DeviceDescriptionKind;
  api.PJRT_DeviceDescription_DebugString = DeviceDescriptionDebugString;
  api.PJRT_DeviceDescription_ToString = DeviceDescriptionToString;
  api.PJRT_Device_GetDescription = DeviceGetDescription;
  api.PJRT_Device_IsAddressable = DeviceIsAddressable;
  api.PJRT_Device_LocalHardwareId = DeviceLocalHardwareId;
  api.PJRT_Device_AddressableMemories = DeviceAddressableMemories;
  api.PJRT_Device_DefaultMemory = DeviceDefaultMemory;
  api.PJRT_Device_MemoryStats = DeviceMemoryStats;
  api.PJRT_Memory_Id = MemoryId;
  api.PJRT_Memory_Kind = MemoryKind;
  api.PJRT_Memory_DebugString = MemoryDebugString;
  api.PJRT_Memory_ToString = MemoryToString;
  api.PJRT_Memory_AddressableByDevices = MemoryAddressableByDevices;
  api.PJRT_Executable_Destroy = ExecutableDestroy;
  api.PJRT_Executable_Name = ExecutableName;
  api.PJRT_Executable_NumReplicas = ExecutableNumReplicas;
  api.PJRT_Executable_NumPartitions = ExecutableNumPartitions;
  api.PJRT_Executable_NumOutputs = ExecutableNumOutputs;
  api.PJRT_Executable_SizeOfGeneratedCodeInBytes = ExecutableSizeOfGeneratedCodeInBytes;
  api.PJRT_Executable_GetCostAnalysis = ExecutableGetCostAnalysis;
  api.PJRT_Executable_OutputMemoryKinds = ExecutableOutputMemoryKinds;
  api.PJRT_Executable_OptimizedProgram = ExecutableOptimizedProgram;
  api.PJRT_Executable_Serialize = Unimplemented_PJRT_Executable_Serialize;
  api.PJRT_LoadedExecutable_Destroy = LoadedExecutableDestroy;
  api.PJRT_LoadedExecutable_GetExecutable = LoadedExecutableGetExecutable;
  api.PJRT_LoadedExecutable_AddressableDevices = LoadedExecutableAddressableDevices;
  api.PJRT_LoadedExecutable_Delete = LoadedExecutableDelete;
  api.PJRT_LoadedExecutable_IsDeleted = LoadedExecutableIsDeleted;
  api.PJRT_LoadedExecutable_Execute = LoadedExecutableExecute;
  api.PJRT_Executable_DeserializeAndLoad = Unimplemented_PJRT_Executable_DeserializeAndLoad;
  api.PJRT_LoadedExecutable_Fingerprint = LoadedExecutableFingerprint;
  api.PJRT_Buffer_Destroy = BufferDestroy;
  api.PJRT_Buffer_ElementType = BufferElementType;
  api.PJRT_Buffer_Dimensions = BufferDimensions;
  api.PJRT_Buffer_UnpaddedDimensions = BufferUnpaddedDimensions;
  api.PJRT_Buffer_DynamicDimensionIndices = BufferDynamicDimensionIndices;
  api.PJRT_Buffer_GetMemoryLayout = BufferGetMemoryLayout;
  api.PJRT_Buffer_OnDeviceSizeInBytes = BufferOnDeviceSizeInBytes;
  api.PJRT_Buffer_Device = BufferDevice;
  api.PJRT_Buffer_Memory = BufferMemory;
  api.PJRT_Buffer_Delete = BufferDelete;
  api.PJRT_Buffer_IsDeleted = BufferIsDeleted;
  api.PJRT_Buffer_CopyToDevice = BufferCopyToDevice;
  api.PJRT_Buffer_ToHostBuffer = BufferToHostBuffer;
  api.PJRT_Buffer_IsOnCpu = BufferIsOnCpu;
  api.PJRT_Buffer_ReadyEvent = BufferReadyEvent;
  api.PJRT_Buffer_UnsafePointer = BufferUnsafePointer;
  api.PJRT_Buffer_IncreaseExternalReferenceCount = BufferIncreaseExternalReferenceCount;
  api.PJRT_Buffer_DecreaseExternalReferenceCount = BufferDecreaseExternalReferenceCount;
  api.PJRT_Buffer_OpaqueDeviceMemoryDataPointer = BufferOpaqueDeviceMemoryDataPointer;
  api.PJRT_CopyToDeviceStream_Destroy = Unimplemented_PJRT_CopyToDeviceStream_Destroy;
  api.PJRT_CopyToDeviceStream_AddChunk = Unimplemented_PJRT_CopyToDeviceStream_AddChunk;
  api.PJRT_CopyToDeviceStream_TotalBytes = Unimplemented_PJRT_CopyToDeviceStream_TotalBytes;
  api.PJRT_CopyToDeviceStream_GranuleSize = Unimplemented_PJRT_CopyToDeviceStream_GranuleSize;
  api.PJRT_CopyToDeviceStream_CurrentBytes = Unimplemented_PJRT_CopyToDeviceStream_CurrentBytes;
  api.PJRT_TopologyDescription_Create = Unimplemented_PJRT_TopologyDescription_Create;
  api.PJRT_TopologyDescription_Destroy = Unimplemented_PJRT_TopologyDescription_Destroy;
  api.PJRT_TopologyDescription_PlatformName = Unimplemented_PJRT_TopologyDescription_PlatformName;
  api.PJRT_TopologyDescription_PlatformVersion =
      Unimplemented_PJRT_TopologyDescription_PlatformVersion;
  api.PJRT_TopologyDescription_GetDeviceDescriptions =
      Unimplemented_PJRT_TopologyDescription_GetDeviceDescriptions;
  api.PJRT_TopologyDescription_Serialize = Unimplemented_PJRT_TopologyDescription_Serialize;
  api.PJRT_TopologyDescription_Attributes = Unimplemented_PJRT_TopologyDescription_Attributes;
  api.PJRT_Compile = Unimplemented_PJRT_Compile;
  api.PJRT_Executable_OutputElementTypes = ExecutableOutputElementTypes;
  api.PJRT_Executable_OutputDimensions = ExecutableOutputDimensions;
  api.PJRT_Buffer_CopyToMemory = BufferCopyToMemory;
  api.PJRT_Client_CreateViewOfDeviceBuffer = Unimplemented_PJRT_Client_CreateViewOfDeviceBuffer;
  api.PJRT_Executable_Fingerprint = ExecutableFingerprint;
  api.PJRT_Client_TopologyDescription = Unimplemented_PJRT_Client_TopologyDescription;
  api.PJRT_Executable_GetCompiledMemoryStats = Unimplemented_PJRT_Executable_GetCompiledMemoryStats;
  api.PJRT_Memory_Kind_Id = MemoryKindId;
  api.PJRT_ExecuteContext_Create = Unimplemented_PJRT_ExecuteContext_Create;
  api.PJRT_ExecuteContext_Destroy = Unimplemented_PJRT_ExecuteContext_Destroy;
  api.PJRT_Buffer_CopyRawToHost = Unimplemented_PJRT_Buffer_CopyRawToHost;
  api.PJRT_AsyncHostToDeviceTransferManager_Destroy =
      Unimplemented_PJRT_AsyncHostToDeviceTransferManager_Destroy;
  api.PJRT_AsyncHostToDeviceTransferManager_TransferData =
      Unimplemented_PJRT_AsyncHostToDeviceTransferManager_TransferData;
  api.PJRT_Client_CreateBuffersForAsyncHostToDevice =
      Unimplemented_PJRT_Client_CreateBuffersForAsyncHostToDevice;
  api.PJRT_AsyncHostToDeviceTransferManager_RetrieveBuffer =
      Unimplemented_PJRT_AsyncHostToDeviceTransferManager_RetrieveBuffer;
  api.PJRT_AsyncHostToDeviceTransferManager_Device =
      Unimplemented_PJRT_AsyncHostToDeviceTransferManager_Device;
  api.PJRT_AsyncHostToDeviceTransferManager_BufferCount =
      Unimplemented_PJRT_AsyncHostToDeviceTransferManager_BufferCount;
  api.PJRT_AsyncHostToDeviceTransferManager_BufferSize =
      Unimplemented_PJRT_AsyncHostToDeviceTransferManager_BufferSize;
  api.PJRT_AsyncHostToDeviceTransferManager_SetBufferError =
      Unimplemented_PJRT_AsyncHostToDeviceTransferManager_SetBufferError;
  api.PJRT_AsyncHostToDeviceTransferManager_AddMetadata =
      Unimplemented_PJRT_AsyncHostToDeviceTransferManager_AddMetadata;
  api.PJRT_Client_DmaMap = Unimplemented_PJRT_Client_DmaMap;
  api.PJRT_Client_DmaUnmap = Unimplemented_PJRT_Client_DmaUnmap;
  api.PJRT_Client_CreateUninitializedBuffer = Unimplemented_PJRT_Client_CreateUninitializedBuffer;
  api.PJRT_Client_UpdateGlobalProcessInfo = Unimplemented_PJRT_Client_UpdateGlobalProcessInfo;
  api.PJRT_TopologyDescription_Deserialize = Unimplemented_PJRT_TopologyDescription_Deserialize;
  api.PJRT_Client_CreateAliasBuffer = Unimplemented_PJRT_Client_CreateAliasBuffer;
  api.PJRT_Client_FulfillAliasBuffer = Unimplemented_PJRT_Client_FulfillAliasBuffer;
  api.PJRT_LoadedExecutable_GetDeviceAssignment = LoadedExecutableGetDeviceAssignment;
  return api;
}

}  // namespace
}  // namespace tessera::pjrt

extern "C" __attribute__((visibility("default"))) const PJRT_Api* GetPjrtApi() {
  static const PJRT_Api api = tessera::pjrt::MakeApi();
  return &api;
}
