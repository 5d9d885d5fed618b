/* Calls the C API tests share (plain C): shardings from text, uploads and downloads of 2-D f32
 * arrays, events, destruction. Every call must succeed (CHECK_OK: print and exit 1 otherwise).
 * The including test sets `api` (TSR_GetApi()) before the first call. */
#ifndef TESSERA_TESTS_BINDINGS_C_HELPERS_H_
#define TESSERA_TESTS_BINDINGS_C_HELPERS_H_

#include <stddef.h>
#include <stdint.h>

#include "bindings/c/tessera_c.h"
#include "tests/bindings/c/check.h"

static const TSR_Api* api;

/* `text` over `device_ids` (NULL: the client's first devices). */
static inline TSR_Sharding* MakeShardingOn(TSR_Client* client, const char* text,
                                           const int32_t* device_ids, size_t num_device_ids) {
  TSR_Sharding_Create_Args s = {TSR_Sharding_Create_Args_STRUCT_SIZE};
  s.client = client;
  s.text = text;
  s.device_ids = device_ids;
  s.num_device_ids = num_device_ids;
  CHECK_OK(api, api->TSR_Sharding_Create(&s));
  return s.sharding;
}

static inline TSR_Sharding* MakeSharding(TSR_Client* client, const char* text) {
  return MakeShardingOn(client, text, NULL, 0);
}

/* Awaits `event` (it must succeed) and destroys it. */
static inline void Await(TSR_Event* event) {
  TSR_Event_Await_Args a = {TSR_Event_Await_Args_STRUCT_SIZE};
  a.event = event;
  CHECK_OK(api, api->TSR_Event_Await(&a));
  TSR_Event_Destroy_Args d = {TSR_Event_Destroy_Args_STRUCT_SIZE};
  d.event = event;
  CHECK_OK(api, api->TSR_Event_Destroy(&d));
}

/* An explicit upload of the rows x cols f32 `data` with `sharding`, awaited. */
static inline TSR_Array* Put(TSR_Client* client, const float* data, int64_t rows, int64_t cols,
                             TSR_Sharding* sharding) {
  int64_t dims[2] = {rows, cols};
  TSR_Array_FromHostBuffer_Args p = {TSR_Array_FromHostBuffer_Args_STRUCT_SIZE};
  p.client = client;
  p.data = data;
  p.dtype = TSR_DTYPE_F32;
  p.dims = dims;
  p.num_dims = 2;
  p.sharding = sharding;
  p.is_explicit = true;
  CHECK_OK(api, api->TSR_Array_FromHostBuffer(&p));
  Await(p.done_with_host_buffer);
  return p.array;
}

/* An explicit download of `array` into `out` (`bytes` long), awaited. */
static inline void Fetch(TSR_Array* array, float* out, size_t bytes) {
  TSR_Array_ToHostBuffer_Args h = {TSR_Array_ToHostBuffer_Args_STRUCT_SIZE};
  h.array = array;
  h.dst = out;
  h.dst_size = bytes;
  h.is_explicit = true;
  CHECK_OK(api, api->TSR_Array_ToHostBuffer(&h));
  Await(h.event);
}

static inline void DestroyArray(TSR_Array* array) {
  TSR_Array_Destroy_Args d = {TSR_Array_Destroy_Args_STRUCT_SIZE};
  d.array = array;
  CHECK_OK(api, api->TSR_Array_Destroy(&d));
}

static inline void DestroySharding(TSR_Sharding* sharding) {
  TSR_Sharding_Destroy_Args d = {TSR_Sharding_Destroy_Args_STRUCT_SIZE};
  d.sharding = sharding;
  CHECK_OK(api, api->TSR_Sharding_Destroy(&d));
}

#endif /* TESSERA_TESTS_BINDINGS_C_HELPERS_H_ */
