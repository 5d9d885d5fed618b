// TSR_GetApi: the versioned table of entry points (tessera_c.h).

#include "bindings/c/internal.h"

extern "C" const TSR_Api* TSR_GetApi(void) {
  static const TSR_Api api = {
      .struct_size = TSR_Api_STRUCT_SIZE,
      .version = {.struct_size = TSR_Api_Version_STRUCT_SIZE,
                  .major_version = TSR_API_MAJOR,
                  .minor_version = TSR_API_MINOR},
      .TSR_Error_Destroy = tessera::c_api::ErrorDestroy,
      .TSR_Error_Message = tessera::c_api::ErrorMessage,
      .TSR_Error_GetCode = tessera::c_api::ErrorGetCode,
      .TSR_Client_Create = tessera::c_api::ClientCreate,
      .TSR_Client_Destroy = tessera::c_api::ClientDestroy,
      .TSR_Client_Devices = tessera::c_api::ClientDevices,
      .TSR_Device_Describe = tessera::c_api::DeviceDescribe,
      .TSR_Sharding_Create = tessera::c_api::ShardingCreate,
      .TSR_Sharding_Destroy = tessera::c_api::ShardingDestroy,
      .TSR_Array_FromHostBuffer = tessera::c_api::ArrayFromHostBuffer,
      .TSR_Array_Reshard = tessera::c_api::ArrayReshard,
      .TSR_Array_ToHostBuffer = tessera::c_api::ArrayToHostBuffer,
      .TSR_Array_Describe = tessera::c_api::ArrayDescribe,
      .TSR_Array_ReadyEvent = tessera::c_api::ArrayReadyEvent,
      .TSR_Array_Delete = tessera::c_api::ArrayDelete,
      .TSR_Array_Destroy = tessera::c_api::ArrayDestroy,
      .TSR_Event_Await = tessera::c_api::EventAwait,
      .TSR_Event_IsReady = tessera::c_api::EventIsReady,
      .TSR_Event_OnReady = tessera::c_api::EventOnReady,
      .TSR_Event_Destroy = tessera::c_api::EventDestroy,
      .TSR_Guard_SetPolicy = tessera::c_api::GuardSetPolicy,
      .TSR_Guard_PushScope = tessera::c_api::GuardPushScope,
      .TSR_Guard_PopScope = tessera::c_api::GuardPopScope,
      .TSR_Guard_Counters = tessera::c_api::GuardCounters,
      .TSR_Executable_Compile = tessera::c_api::ExecutableCompile,
      .TSR_Executable_Execute = tessera::c_api::ExecutableExecute,
      .TSR_Executable_Destroy = tessera::c_api::ExecutableDestroy,
      .TSR_Client_TransferStats = tessera::c_api::ClientTransferStats,
      .TSR_Client_Processes = tessera::c_api::ClientProcesses,
  };
  return &api;
}
