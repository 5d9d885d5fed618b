#include <string>
#include "absl/status/status.h"
#include "base/string_view.h"
#include "sharding/box.h"
#include "ifrt/shape.h"
