// tessera._tessera: the compiled part of the `tessera` package (see tessera/__init__.py).

#include <nanobind/nanobind.h>

#include "bindings/python/src/common.h"

NB_MODULE(_tessera, m) {
  using namespace tessera::python;
  m.doc() = "Tessera's runtime: clients, devices, sharded arrays, the transfer guard, DLPack.";
  RegisterErrors(m);
  RegisterDevice(m);
  RegisterArray(m);
  RegisterClient(m);
  RegisterDlpack(m);
  RegisterGuard(m);
  RegisterExecutable(m);
  RegisterTiming(m);
}
