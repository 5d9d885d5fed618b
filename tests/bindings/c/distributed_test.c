/* A multi-process client through the C API (1.2), compiled as C11; run by mpirun -np 2
 * (tests/mpi, case c_api): each process has 2 CPU devices, the client spans both. Checks the
 * process index and count, devices' owners and addressability, a rows -> columns -> replicated
 * reshard chain across the processes (verified bit-exact on every process), the refusal of a
 * host copy of a not fully addressable array, and a guard scope on process 1 alone refusing a
 * reshard on both processes. Prints "distributed OK" from each process. */
#include <stdbool.h>
#include <stdint.h>

#include "bindings/c/tessera_c.h"
#include "tests/bindings/c/check.h"
#include "tests/bindings/c/helpers.h"

enum { kRows = 96, kCols = 64 };

/* The event must carry an error of `code` whose message contains `substring`. */
static void AwaitError(TSR_Event* event, TSR_ErrorCode code, const char* substring) {
  TSR_Event_Await_Args a = {TSR_Event_Await_Args_STRUCT_SIZE};
  a.event = event;
  CHECK_ERROR(api, api->TSR_Event_Await(&a), code, substring);
  TSR_Event_Destroy_Args d = {TSR_Event_Destroy_Args_STRUCT_SIZE};
  d.event = event;
  CHECK_OK(api, api->TSR_Event_Destroy(&d));
}

/* Collective: every process calls it with the same arguments. */
static TSR_Error* Reshard(TSR_Client* client, TSR_Array* in, TSR_Sharding* to, TSR_Array** out) {
  TSR_Array_Reshard_Args r = {TSR_Array_Reshard_Args_STRUCT_SIZE};
  r.client = client;
  r.arrays = &in;
  r.shardings = (const TSR_Sharding* const*)&to;
  r.num_arrays = 1;
  r.out_arrays = out;
  r.is_explicit = true;
  return api->TSR_Array_Reshard(&r);
}

/* 2 processes x 2 devices: process p owns devices 2p and 2p+1, listed in that global order. */
static void TestTopology(TSR_Client* client, int* process_index) {
  TSR_Client_Processes_Args p = {TSR_Client_Processes_Args_STRUCT_SIZE};
  p.client = client;
  CHECK_OK(api, api->TSR_Client_Processes(&p));
  CHECK(p.process_count == 2);
  CHECK(p.process_index == 0 || p.process_index == 1);
  *process_index = p.process_index;
  TSR_Client_Devices_Args d = {TSR_Client_Devices_Args_STRUCT_SIZE};
  d.client = client;
  CHECK_OK(api, api->TSR_Client_Devices(&d));
  CHECK(d.num_devices == 4);
  for (size_t i = 0; i < d.num_devices; ++i) {
    TSR_Device_Describe_Args a = {TSR_Device_Describe_Args_STRUCT_SIZE};
    a.device = d.devices[i];
    CHECK_OK(api, api->TSR_Device_Describe(&a));
    CHECK(a.id == (int32_t)i);
    CHECK(a.process_index == (int)i / 2);
    CHECK(a.addressable == (a.process_index == p.process_index));
  }
}

/* rows -> columns across the processes; a host copy of the columns (half of them on the other
 * process) fails with FAILED_PRECONDITION. Then the columns are replicated onto each process's
 * pair of devices in turn (two collective reshards, the same on both processes), and each process
 * reads its own replica back: the input, bit for bit. */
static void TestReshardChain(TSR_Client* client, int process_index) {
  static float data[kRows * kCols], back[kRows * kCols];
  for (int i = 0; i < kRows * kCols; ++i) data[i] = (float)i * 0.5f - 7.0f;
  TSR_Sharding* rows = MakeSharding(client, "mesh{x=4} P(x,None)");
  TSR_Sharding* cols = MakeSharding(client, "mesh{x=4} P(None,x)");
  TSR_Array* in = Put(client, data, kRows, kCols, rows);

  TSR_Array* by_cols = NULL;
  CHECK_OK(api, Reshard(client, in, cols, &by_cols));
  TSR_Array_ToHostBuffer_Args h = {TSR_Array_ToHostBuffer_Args_STRUCT_SIZE};
  h.array = by_cols;
  h.dst = back;
  h.dst_size = sizeof(back);
  h.is_explicit = true;
  CHECK_OK(api, api->TSR_Array_ToHostBuffer(&h));
  AwaitError(h.event, TSR_ERROR_FAILED_PRECONDITION, "this process cannot read devices");

  for (int q = 0; q < 2; ++q) {
    const int32_t pair[2] = {2 * q, 2 * q + 1};
    TSR_Sharding* on_q = MakeShardingOn(client, "mesh{x=2} P()", pair, 2);
    TSR_Array* replica = NULL;
    CHECK_OK(api, Reshard(client, by_cols, on_q, &replica));
    if (q == process_index) {
      memset(back, 0, sizeof(back));
      Fetch(replica, back, sizeof(back));
      CHECK(memcmp(back, data, sizeof(data)) == 0);
    }
    DestroyArray(replica);
    DestroySharding(on_q);
  }
  DestroyArray(by_cols);
  DestroyArray(in);
  DestroySharding(cols);
  DestroySharding(rows);
}

/* A device-to-device disallow_explicit scope on process 1 only: the reshard fails on both processes
 * with process 1's refusal; after the pop it goes through on both. */
static void TestGuardOnOneProcess(TSR_Client* client, int process_index) {
  static float data[kRows * kCols];
  for (int i = 0; i < kRows * kCols; ++i) data[i] = (float)i;
  TSR_Sharding* rows = MakeSharding(client, "mesh{x=4} P(x,None)");
  TSR_Sharding* cols = MakeSharding(client, "mesh{x=4} P(None,x)");
  TSR_Array* in = Put(client, data, kRows, kCols, rows);

  if (process_index == 1) {
    TSR_Guard_PushScope_Args push = {TSR_Guard_PushScope_Args_STRUCT_SIZE};
    push.client = client;
    push.direction = TSR_DIRECTION_DEVICE_TO_DEVICE;
    push.level = TSR_GUARD_DISALLOW_EXPLICIT; /* the reshard is explicit */
    CHECK_OK(api, api->TSR_Guard_PushScope(&push));
  }
  TSR_Array* out = NULL;
  CHECK_ERROR(api, Reshard(client, in, cols, &out), TSR_ERROR_INVALID_ARGUMENT,
              "Disallowed device-to-device transfer");
  CHECK(out == NULL);
  if (process_index == 1) {
    TSR_Guard_PopScope_Args pop = {TSR_Guard_PopScope_Args_STRUCT_SIZE};
    CHECK_OK(api, api->TSR_Guard_PopScope(&pop));
  }
  CHECK_OK(api, Reshard(client, in, cols, &out));
  TSR_Array_ReadyEvent_Args ready = {TSR_Array_ReadyEvent_Args_STRUCT_SIZE};
  ready.array = out;
  CHECK_OK(api, api->TSR_Array_ReadyEvent(&ready));
  Await(ready.event);
  DestroyArray(out);
  DestroyArray(in);
  DestroySharding(cols);
  DestroySharding(rows);
}

int main(void) {
  api = TSR_GetApi();
  CHECK(api != NULL && api->version.minor_version >= 2);
  TSR_Client_Create_Args c = {TSR_Client_Create_Args_STRUCT_SIZE};
  c.cpu_devices = 2;
  c.vulkan = TSR_VULKAN_OFF;
  c.distributed = TSR_DISTRIBUTED_MPI;
  CHECK_OK(api, api->TSR_Client_Create(&c));
  int process_index = -1;
  TestTopology(c.client, &process_index);
  TestReshardChain(c.client, process_index);
  TestGuardOnOneProcess(c.client, process_index);
  TSR_Client_Destroy_Args d = {TSR_Client_Destroy_Args_STRUCT_SIZE};
  d.client = c.client;
  CHECK_OK(api, api->TSR_Client_Destroy(&d));
  printf("distributed OK (process %d)\n", process_index);
  return 0;
}
