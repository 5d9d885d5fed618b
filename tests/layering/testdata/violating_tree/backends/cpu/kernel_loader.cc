#include "llvm/IR/Module.h"
#include "mlir/IR/MLIRContext.h"
#include <oneapi/tbb/task_arena.h>
