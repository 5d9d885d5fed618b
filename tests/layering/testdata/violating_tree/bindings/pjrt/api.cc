#include "xla/pjrt/c/pjrt_c_api.h"
#include "ifrt/runtime/runtime_client.h"
#include "bindings/python/src/common.h"
