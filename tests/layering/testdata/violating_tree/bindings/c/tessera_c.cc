#include <nanobind/nanobind.h>
#include "ifrt/spi/platform.h"
#include "tessera.h"
#include <mpi.h>
