#include "sharding/box.h"
#include <vulkan/vulkan.h>
#include "backends/cpu/cpu_platform.h"
#include "compiler/pipeline.h"
#include "mlir/IR/Builders.h"
#include "tests/ifrt/test_util.h"
