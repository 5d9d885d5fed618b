#include <mpi.h>
#include "ifrt/spi/platform.h"
