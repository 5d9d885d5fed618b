#include "guard/policy.h"
#include "ifrt/array.h"
