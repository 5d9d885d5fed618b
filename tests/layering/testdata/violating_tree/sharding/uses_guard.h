#include <vector>
#include "absl/status/status.h"
#include "guard/level.h"
