/* The README's round trip through the C API, compiled as C11: 4 CPU devices, a 64x64 f32 array
 * sharded by rows, resharded by columns, copied back bit-exact; then devices, events, the guard
 * (policy, scopes, counters), transfer stats, struct_size checks, and compile + execute. */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <threads.h>
#include <time.h>

#include "bindings/c/tessera_c.h"
#include "tests/bindings/c/check.h"
#include "tests/bindings/c/helpers.h"

static void OnReady(TSR_Error* error, void* user_arg) {
  CHECK(error == NULL);
  atomic_store((atomic_int*)user_arg, 1);
}

static void TestDevices(TSR_Client* client) {
  TSR_Client_Devices_Args d = {TSR_Client_Devices_Args_STRUCT_SIZE};
  d.client = client;
  CHECK_OK(api, api->TSR_Client_Devices(&d));
  CHECK(d.num_devices == 4);
  for (size_t i = 0; i < d.num_devices; ++i) {
    TSR_Device_Describe_Args a = {TSR_Device_Describe_Args_STRUCT_SIZE};
    a.device = d.devices[i];
    CHECK_OK(api, api->TSR_Device_Describe(&a));
    CHECK(a.id == (int32_t)i);
    CHECK(strcmp(a.kind, "cpu") == 0 && a.kind_size == 3);
    CHECK(strstr(a.debug_string, "kind=cpu") != NULL);
    for (size_t j = 0; j < a.num_attributes; ++j) CHECK(a.attributes[j].name_size > 0);
    CHECK(a.process_index == 0 && a.addressable); /* 1.2: one process, all devices its own */
  }
  TSR_Client_Processes_Args p = {TSR_Client_Processes_Args_STRUCT_SIZE};
  p.client = client;
  CHECK_OK(api, api->TSR_Client_Processes(&p));
  CHECK(p.process_index == 0 && p.process_count == 1);
}

/* README.md's example: rows -> columns -> host, bit-exact. */
static void TestRoundTrip(TSR_Client* client) {
  enum { N = 64 };
  static float data[N * N], back[N * N];
  for (int i = 0; i < N * N; ++i) data[i] = (float)i;
  TSR_Sharding* rows = MakeSharding(client, "mesh{x=4} P(x,None)");
  TSR_Sharding* cols = MakeSharding(client, "mesh{x=4} P(None,x)");
  TSR_Array* a = Put(client, data, N, N, rows);

  TSR_Array* b = NULL;
  TSR_Array_Reshard_Args r = {TSR_Array_Reshard_Args_STRUCT_SIZE};
  r.client = client;
  r.arrays = &a;
  r.shardings = (const TSR_Sharding* const*)&cols;
  r.num_arrays = 1;
  r.out_arrays = &b;
  r.is_explicit = true;
  CHECK_OK(api, api->TSR_Array_Reshard(&r));

  TSR_Array_ReadyEvent_Args ready = {TSR_Array_ReadyEvent_Args_STRUCT_SIZE};
  ready.array = b;
  CHECK_OK(api, api->TSR_Array_ReadyEvent(&ready));
  atomic_int called = 0;
  TSR_Event_OnReady_Args on = {TSR_Event_OnReady_Args_STRUCT_SIZE};
  on.event = ready.event;
  on.callback = OnReady;
  on.user_arg = &called;
  CHECK_OK(api, api->TSR_Event_OnReady(&on));
  Await(ready.event);
  Fetch(b, back, sizeof(back));
  CHECK(memcmp(data, back, sizeof(data)) == 0);
  /* The callback runs on the thread that set the event, maybe just after waiters wake. */
  for (int i = 0; i < 10000 && atomic_load(&called) == 0; ++i) {
    thrd_sleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
  }
  CHECK(atomic_load(&called) == 1);

  TSR_Array_Describe_Args desc = {TSR_Array_Describe_Args_STRUCT_SIZE};
  desc.array = b;
  CHECK_OK(api, api->TSR_Array_Describe(&desc));
  CHECK(desc.dtype == TSR_DTYPE_F32 && desc.num_dims == 2 && desc.dims[0] == N);
  CHECK(desc.num_devices == 4 && !desc.is_deleted);
  CHECK(strstr(desc.sharding, "P(None,x)") != NULL);

  TSR_Array_Delete_Args del = {TSR_Array_Delete_Args_STRUCT_SIZE};
  del.array = b;
  CHECK_OK(api, api->TSR_Array_Delete(&del));
  CHECK_OK(api, api->TSR_Array_Describe(&desc));
  CHECK(desc.is_deleted);
  TSR_Array_ToHostBuffer_Args h = {TSR_Array_ToHostBuffer_Args_STRUCT_SIZE};
  h.array = b;
  h.dst = back;
  h.dst_size = sizeof(back);
  CHECK_OK(api, api->TSR_Array_ToHostBuffer(&h));
  TSR_Event_Await_Args w = {TSR_Event_Await_Args_STRUCT_SIZE};
  w.event = h.event;
  CHECK_ERROR(api, api->TSR_Event_Await(&w), TSR_ERROR_FAILED_PRECONDITION, "deleted");
  TSR_Event_Destroy_Args ed = {TSR_Event_Destroy_Args_STRUCT_SIZE};
  ed.event = h.event;
  CHECK_OK(api, api->TSR_Event_Destroy(&ed));

  TSR_Client_TransferStats_Args st = {TSR_Client_TransferStats_Args_STRUCT_SIZE};
  st.client = client;
  CHECK_OK(api, api->TSR_Client_TransferStats(&st));
  CHECK(st.host_to_device_bytes == (int64_t)sizeof(data));
  CHECK(st.device_to_host_bytes == (int64_t)sizeof(data));
  CHECK(st.device_to_device_bytes == (int64_t)sizeof(data) * 3 / 4);
  DestroyArray(a);
  DestroyArray(b);
  DestroySharding(rows);
  DestroySharding(cols);
}

static void GuardCounters(TSR_Client* client, TSR_Direction d, TSR_Guard_Counters_Args* c) {
  *c = (TSR_Guard_Counters_Args){TSR_Guard_Counters_Args_STRUCT_SIZE};
  c->client = client;
  c->direction = d;
  CHECK_OK(api, api->TSR_Guard_Counters(c));
}

/* A scope refuses an implicit upload; popping it lets the same upload through. */
static void TestGuard(TSR_Client* client) {
  float data[8] = {0};
  int64_t dims[1] = {8};
  TSR_Sharding* one = MakeSharding(client, "1 to [0] on 1");
  TSR_Array_FromHostBuffer_Args p = {TSR_Array_FromHostBuffer_Args_STRUCT_SIZE};
  p.client = client;
  p.data = data;
  p.dtype = TSR_DTYPE_F32;
  p.dims = dims;
  p.num_dims = 1;
  p.sharding = one;
  p.is_explicit = false;

  TSR_Guard_PushScope_Args push = {TSR_Guard_PushScope_Args_STRUCT_SIZE};
  push.client = client;
  push.direction = TSR_DIRECTION_HOST_TO_DEVICE;
  push.level = TSR_GUARD_DISALLOW;
  CHECK_OK(api, api->TSR_Guard_PushScope(&push));
  CHECK_ERROR(api, api->TSR_Array_FromHostBuffer(&p), TSR_ERROR_INVALID_ARGUMENT,
              "Disallowed host-to-device transfer");
  TSR_Guard_Counters_Args c;
  GuardCounters(client, TSR_DIRECTION_HOST_TO_DEVICE, &c);
  CHECK(c.refused_events == 1 && c.refused_bytes == 32);

  TSR_Guard_PopScope_Args pop = {TSR_Guard_PopScope_Args_STRUCT_SIZE};
  CHECK_OK(api, api->TSR_Guard_PopScope(&pop));
  CHECK_ERROR(api, api->TSR_Guard_PopScope(&pop), TSR_ERROR_FAILED_PRECONDITION, "no transfer");
  CHECK_OK(api, api->TSR_Array_FromHostBuffer(&p));
  Await(p.done_with_host_buffer);
  DestroyArray(p.array);

  /* The client's policy (h2d=log from TSR_Client_Create) logs it; now refuse it. */
  TSR_Guard_SetPolicy_Args sp = {TSR_Guard_SetPolicy_Args_STRUCT_SIZE};
  sp.client = client;
  sp.policy = "h2d=disallow";
  CHECK_OK(api, api->TSR_Guard_SetPolicy(&sp));
  CHECK_ERROR(api, api->TSR_Array_FromHostBuffer(&p), TSR_ERROR_INVALID_ARGUMENT,
              "Disallowed host-to-device transfer");
  GuardCounters(client, TSR_DIRECTION_HOST_TO_DEVICE, &c);
  CHECK(c.refused_events == 2 && c.logged_events == 1);
  sp.policy = "h2d=nonsense";
  CHECK_ERROR(api, api->TSR_Guard_SetPolicy(&sp), TSR_ERROR_INVALID_ARGUMENT, "nonsense");
  sp.policy = "allow";
  CHECK_OK(api, api->TSR_Guard_SetPolicy(&sp));
  DestroySharding(one);
}

/* Bad struct sizes and bad input come back as errors naming what was wrong. */
static void TestBadInput(TSR_Client* client) {
  TSR_Client_Create_Args small = {3};
  CHECK_ERROR(api, api->TSR_Client_Create(&small), TSR_ERROR_INVALID_ARGUMENT,
              "TSR_Client_Create_Args: struct_size 3 is smaller than its version 1.0 size");
  TSR_Sharding_Create_Args garbage = {0xdeadbeef};
  CHECK_ERROR(api, api->TSR_Sharding_Create(&garbage), TSR_ERROR_INVALID_ARGUMENT,
              "struct_size 3735928559 is not a struct size");
  CHECK_ERROR(api, api->TSR_Array_Describe(NULL), TSR_ERROR_INVALID_ARGUMENT,
              "TSR_Array_Describe_Args is NULL");
  TSR_Sharding_Create_Args s = {TSR_Sharding_Create_Args_STRUCT_SIZE};
  s.client = client;
  s.text = "mesh{x=4} Q(x)";
  CHECK_ERROR(api, api->TSR_Sharding_Create(&s), TSR_ERROR_INVALID_ARGUMENT,
              "invalid sharding \"mesh{x=4} Q(x)\": in the PartitionSpec");
  s.text = "mesh{x=8} P(x)";
  CHECK_ERROR(api, api->TSR_Sharding_Create(&s), TSR_ERROR_INVALID_ARGUMENT,
              "needs 8 devices but the client has 4");
  int32_t ids[2] = {0, 9};
  s.text = "mesh{x=2} P(x)";
  s.device_ids = ids;
  s.num_device_ids = 2;
  CHECK_ERROR(api, api->TSR_Sharding_Create(&s), TSR_ERROR_NOT_FOUND, "9");
  TSR_Client_Create_Args c = {TSR_Client_Create_Args_STRUCT_SIZE};
  c.cpu_devices = 1;
  c.vulkan = TSR_VULKAN_OFF;
  c.transfer_guard = "h2d=sometimes";
  CHECK_ERROR(api, api->TSR_Client_Create(&c), TSR_ERROR_INVALID_ARGUMENT, "sometimes");
  c.transfer_guard = NULL;
  c.vulkan = (TSR_VulkanMode)9;
  CHECK_ERROR(api, api->TSR_Client_Create(&c), TSR_ERROR_INVALID_ARGUMENT, "unknown vulkan mode 9");
  c.vulkan = TSR_VULKAN_OFF;
  c.distributed = (TSR_Distributed)7;
  CHECK_ERROR(api, api->TSR_Client_Create(&c), TSR_ERROR_INVALID_ARGUMENT,
              "unknown distributed mode 7 (expected TSR_DISTRIBUTED_NONE or TSR_DISTRIBUTED_MPI)");
  TSR_Client_Processes_Args p = {TSR_Client_Processes_Args_STRUCT_SIZE};
  CHECK_ERROR(api, api->TSR_Client_Processes(&p), TSR_ERROR_INVALID_ARGUMENT, "client is NULL");
}

/* ToHostBuffer with byte_strides: dst_size bounds the bytes the strides reach (one past the last
 * element), overflow-checked; too small is INVALID_ARGUMENT with nothing written. */
static void TestStridedDestinationSize(TSR_Client* client) {
  enum { N = 4 };
  float data[N * N];
  for (int i = 0; i < N * N; ++i) data[i] = (float)i;
  TSR_Sharding* rows = MakeSharding(client, "mesh{x=4} P(x,None)");
  TSR_Array* a = Put(client, data, N, N, rows);
  float out[N * N + 4];
  for (int i = 0; i < N * N + 4; ++i) out[i] = -1.0f;
  int64_t column_major[2] = {4, 16}; /* reaches 3*4 + 3*16 + 4 = 64 bytes */
  TSR_Array_ToHostBuffer_Args h = {TSR_Array_ToHostBuffer_Args_STRUCT_SIZE};
  h.array = a;
  h.dst = out;
  h.dst_size = 63;
  h.byte_strides = column_major;
  h.is_explicit = true;
  CHECK_ERROR(api, api->TSR_Array_ToHostBuffer(&h), TSR_ERROR_INVALID_ARGUMENT,
              "dst_size 63 is smaller than the 64 bytes byte_strides [4,16] span");
  CHECK(h.event == NULL);
  for (int i = 0; i < N * N + 4; ++i) CHECK(out[i] == -1.0f); /* nothing written */
  h.dst_size = 64;
  CHECK_OK(api, api->TSR_Array_ToHostBuffer(&h));
  Await(h.event);
  for (int r = 0; r < N; ++r) {
    for (int c = 0; c < N; ++c) CHECK(out[c * N + r] == data[r * N + c]);
  }
  for (int i = N * N; i < N * N + 4; ++i) CHECK(out[i] == -1.0f);
  int64_t padded[2] = {32, 4}; /* rows of 8 floats: 3*32 + 3*4 + 4 = 112 bytes */
  h.byte_strides = padded;
  h.dst_size = sizeof(out); /* 80 */
  h.event = NULL;
  CHECK_ERROR(api, api->TSR_Array_ToHostBuffer(&h), TSR_ERROR_INVALID_ARGUMENT,
              "smaller than the 112 bytes");
  int64_t huge[2] = {INT64_MAX / 2, 4};
  h.byte_strides = huge;
  h.dst_size = SIZE_MAX;
  CHECK_ERROR(api, api->TSR_Array_ToHostBuffer(&h), TSR_ERROR_INVALID_ARGUMENT, "overflows");
  int64_t negative[2] = {-16, 4};
  h.byte_strides = negative;
  CHECK_ERROR(api, api->TSR_Array_ToHostBuffer(&h), TSR_ERROR_INVALID_ARGUMENT, "negative");
  DestroyArray(a);
  DestroySharding(rows);
}

/* y = x + x over 4 devices, when this build has the program compiler. */
static void TestCompileAndExecute(TSR_Client* client) {
  const char* program =
      "func.func @main(%x: tensor<8x4xf32> {tessera.sharding = \"mesh{x=4} P(x,None)\"})\n"
      "    -> (tensor<8x4xf32> {tessera.sharding = \"mesh{x=4} P(x,None)\"}) {\n"
      "  %y = arith.addf %x, %x : tensor<8x4xf32>\n"
      "  return %y : tensor<8x4xf32>\n"
      "}\n";
  TSR_Executable_Compile_Args c = {TSR_Executable_Compile_Args_STRUCT_SIZE};
  c.client = client;
  c.mlir = program;
  TSR_Error* e = api->TSR_Executable_Compile(&c);
  if (e != NULL) {
    TSR_Error_GetCode_Args g = {TSR_Error_GetCode_Args_STRUCT_SIZE};
    g.error = e;
    CHECK_OK(api, api->TSR_Error_GetCode(&g));
    CHECK(g.code == TSR_ERROR_UNIMPLEMENTED); /* a build without the compiler */
    TSR_Error_Destroy_Args d = {TSR_Error_Destroy_Args_STRUCT_SIZE};
    d.error = e;
    api->TSR_Error_Destroy(&d);
    printf("compile + execute skipped: no program compiler in this build\n");
    return;
  }
  CHECK(c.num_outputs == 1);
  float x[32], y[32];
  for (int i = 0; i < 32; ++i) x[i] = (float)i;
  TSR_Sharding* rows = MakeSharding(client, "mesh{x=4} P(x,None)");
  TSR_Array* in = Put(client, x, 8, 4, rows);
  TSR_Array* out = NULL;
  TSR_Executable_Execute_Args ex = {TSR_Executable_Execute_Args_STRUCT_SIZE};
  ex.executable = c.executable;
  ex.args = &in;
  ex.num_args = 1;
  ex.outputs = &out;
  ex.num_outputs = 1;
  CHECK_OK(api, api->TSR_Executable_Execute(&ex));
  Await(ex.event);
  Fetch(out, y, sizeof(y));
  for (int i = 0; i < 32; ++i) CHECK(y[i] == 2.0f * (float)i);
  ex.num_outputs = 2;
  CHECK_ERROR(api, api->TSR_Executable_Execute(&ex), TSR_ERROR_INVALID_ARGUMENT,
              "num_outputs is 2");
  DestroyArray(in);
  DestroyArray(out);
  DestroySharding(rows);
  TSR_Executable_Destroy_Args d = {TSR_Executable_Destroy_Args_STRUCT_SIZE};
  d.executable = c.executable;
  CHECK_OK(api, api->TSR_Executable_Destroy(&d));
}

int main(void) {
  api = TSR_GetApi();
  CHECK(api != NULL && api->struct_size == TSR_Api_STRUCT_SIZE);
  CHECK(api->version.major_version == TSR_API_MAJOR);
  CHECK(api->version.minor_version == TSR_API_MINOR);

  TSR_Client_Create_Args c = {TSR_Client_Create_Args_STRUCT_SIZE};
  c.cpu_devices = 4;
  c.vulkan = TSR_VULKAN_OFF;
  c.transfer_guard = "h2d=log,d2d=disallow";
  CHECK_OK(api, api->TSR_Client_Create(&c));
  TestDevices(c.client);
  TestRoundTrip(c.client);
  TestGuard(c.client);
  TestBadInput(c.client);
  TestStridedDestinationSize(c.client);
  TestCompileAndExecute(c.client);
  TSR_Client_Destroy_Args d = {TSR_Client_Destroy_Args_STRUCT_SIZE};
  d.client = c.client;
  CHECK_OK(api, api->TSR_Client_Destroy(&d));
  printf("round trip OK\n");
  return 0;
}
