#include <vector>
#include "absl/status/status.h"
#include "base/checked_math.h"
#include "guard/level.h"
