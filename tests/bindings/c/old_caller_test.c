/* A caller compiled against the version 1.0 header (v1_0/tessera_c.h: smaller argument structs,
 * a shorter table) runs the README's round trip against the current library, which must read
 * only what the caller's struct_size covers and give the 1.1 fields their defaults. */
#include <stdint.h>

#include "tests/bindings/c/check.h"
#include "tests/bindings/c/v1_0/tessera_c.h"

/* Each struct is followed by zero bytes: a library that read a 1.1 field past struct_size would
 * see is_explicit == false (an implicit transfer, refused below) or 0 threads. */
typedef struct {
  TSR_Array_FromHostBuffer_Args args;
  char zeros[64];
} PaddedFromHostBuffer;
typedef struct {
  TSR_Array_Reshard_Args args;
  char zeros[64];
} PaddedReshard;
typedef struct {
  TSR_Array_ToHostBuffer_Args args;
  char zeros[64];
} PaddedToHostBuffer;

static const TSR_Api* api;

static void Await(TSR_Event* event) {
  TSR_Event_Await_Args a = {TSR_Event_Await_Args_STRUCT_SIZE};
  a.event = event;
  CHECK_OK(api, api->TSR_Event_Await(&a));
  TSR_Event_Destroy_Args d = {TSR_Event_Destroy_Args_STRUCT_SIZE};
  d.event = event;
  CHECK_OK(api, api->TSR_Event_Destroy(&d));
}

static TSR_Sharding* MakeSharding(TSR_Client* client, const char* text) {
  TSR_Sharding_Create_Args s = {TSR_Sharding_Create_Args_STRUCT_SIZE};
  s.client = client;
  s.text = text;
  CHECK_OK(api, api->TSR_Sharding_Create(&s));
  return s.sharding;
}

int main(void) {
  api = TSR_GetApi();
  CHECK(api->version.major_version == TSR_API_MAJOR);
  CHECK(api->version.minor_version >= TSR_API_MINOR);
  CHECK(api->struct_size >= TSR_Api_STRUCT_SIZE); /* every 1.0 entry is there */

  /* Every transfer an old caller makes is explicit; the policy refuses only implicit ones. */
  TSR_Client_Create_Args c = {TSR_Client_Create_Args_STRUCT_SIZE};
  c.cpu_devices = 4;
  c.vulkan = TSR_VULKAN_OFF;
  c.transfer_guard = "disallow";
  CHECK_OK(api, api->TSR_Client_Create(&c));

  enum { N = 64 };
  static float data[N * N], back[N * N];
  for (int i = 0; i < N * N; ++i) data[i] = (float)(i * 3);
  int64_t dims[2] = {N, N};
  TSR_Sharding* rows = MakeSharding(c.client, "mesh{x=4} P(x,None)");
  TSR_Sharding* cols = MakeSharding(c.client, "mesh{x=2,y=2} P(y,x)");

  PaddedFromHostBuffer p = {{TSR_Array_FromHostBuffer_Args_STRUCT_SIZE}};
  p.args.client = c.client;
  p.args.data = data;
  p.args.dtype = TSR_DTYPE_F32;
  p.args.dims = dims;
  p.args.num_dims = 2;
  p.args.sharding = rows;
  CHECK_OK(api, api->TSR_Array_FromHostBuffer(&p.args));
  Await(p.args.done_with_host_buffer);

  TSR_Array* resharded = NULL;
  PaddedReshard r = {{TSR_Array_Reshard_Args_STRUCT_SIZE}};
  r.args.client = c.client;
  r.args.arrays = &p.args.array;
  r.args.shardings = (const TSR_Sharding* const*)&cols;
  r.args.num_arrays = 1;
  r.args.out_arrays = &resharded;
  CHECK_OK(api, api->TSR_Array_Reshard(&r.args));

  PaddedToHostBuffer h = {{TSR_Array_ToHostBuffer_Args_STRUCT_SIZE}};
  h.args.array = resharded;
  h.args.dst = back;
  h.args.dst_size = sizeof(back);
  CHECK_OK(api, api->TSR_Array_ToHostBuffer(&h.args));
  Await(h.args.event);
  CHECK(memcmp(data, back, sizeof(data)) == 0);

  TSR_Guard_Counters_Args g = {TSR_Guard_Counters_Args_STRUCT_SIZE};
  g.client = c.client;
  g.direction = TSR_DIRECTION_HOST_TO_DEVICE;
  CHECK_OK(api, api->TSR_Guard_Counters(&g));
  CHECK(g.allowed_events == 1 && g.refused_events == 0);

  TSR_Array_Destroy_Args ad = {TSR_Array_Destroy_Args_STRUCT_SIZE};
  ad.array = p.args.array;
  CHECK_OK(api, api->TSR_Array_Destroy(&ad));
  ad.array = resharded;
  CHECK_OK(api, api->TSR_Array_Destroy(&ad));
  TSR_Sharding_Destroy_Args sd = {TSR_Sharding_Destroy_Args_STRUCT_SIZE};
  sd.sharding = rows;
  CHECK_OK(api, api->TSR_Sharding_Destroy(&sd));
  sd.sharding = cols;
  CHECK_OK(api, api->TSR_Sharding_Destroy(&sd));
  TSR_Client_Destroy_Args d = {TSR_Client_Destroy_Args_STRUCT_SIZE};
  d.client = c.client;
  CHECK_OK(api, api->TSR_Client_Destroy(&d));
  printf("a version 1.0 caller ran against version %d.%d\n", api->version.major_version,
         api->version.minor_version);
  return 0;
}
