#include <vulkan/vulkan.h>
#include "ifrt/runtime/runtime_client.h"
#include "backends/cpu/cpu_platform.h"
