#include <Python.h>
#include <nanobind/nanobind.h>
#include "backends/client_factory.h"
#include "ifrt/runtime/runtime_client.h"
#include "backends/vulkan/vulkan_platform.h"
#include "tools/cli.h"
#include "bindings/c/internal.h"
#include "bindings/python/src/common.h"
