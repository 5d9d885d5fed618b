#include <oneapi/tbb/task_arena.h>
#include "mlir/IR/MLIRContext.h"
#include <mpi.h>
#include <vulkan/vulkan.h>
#include "compiler/pipeline.h"
#include "tessera.h"
#include "tools/cli.h"
