#include "sharding/box.h"
#include <vulkan/vulkan.h>
#include "backends/cpu/cpu_platform.h"
