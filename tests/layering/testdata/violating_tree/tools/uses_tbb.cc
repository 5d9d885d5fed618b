#include "backends/client_factory.h"
#include "oneapi/tbb/parallel_for.h"
