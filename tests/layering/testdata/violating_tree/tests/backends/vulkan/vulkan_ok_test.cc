#include <vulkan/vulkan.h>
#include "backends/vulkan/vulkan_platform.h"
#include <oneapi/tbb/task_arena.h>
