#include <vulkan/vulkan.h>
#include "tbb/parallel_for.h"
#include "vk_mem_alloc.h"
