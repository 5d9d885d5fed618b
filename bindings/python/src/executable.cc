// tessera.Executable: an MLIR program compiled for a client's devices, run on sharded arrays.

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bindings/python/src/common.h"

namespace tessera::python {
namespace {

PyExecutable Compile(const PyClient& c, const std::string& mlir,
                     std::optional<std::vector<PyDevice>> devices) {
  std::vector<Device*> list;
  if (devices.has_value()) {
    for (const PyDevice& d : *devices) list.push_back(d.device);
  } else {
    list.assign(c.client->devices().begin(), c.client->devices().end());
  }
  DeviceListRef device_list = ValueOrThrow(c.client->MakeDeviceList(list));
  absl::StatusOr<LoadedExecutableRef> exe;
  {
    nb::gil_scoped_release release;
    exe = c.client->GetDefaultCompiler()->Compile(std::make_unique<MlirProgram>(mlir),
                                                  CompileOptions{.devices = device_list});
  }
  return PyExecutable{c.client, ValueOrThrow(std::move(exe))};
}

std::vector<PyArray> Execute(const PyExecutable& e, const std::vector<PyArray>& args) {
  std::vector<ArrayRef> refs;
  for (const PyArray& a : args) refs.push_back(a.array);
  absl::StatusOr<ExecuteResult> result;
  {
    nb::gil_scoped_release release;
    result = e.executable->Execute(absl::MakeSpan(refs));
  }
  ExecuteResult r = ValueOrThrow(std::move(result));
  std::vector<PyArray> out;
  for (ArrayRef& a : r.outputs) out.push_back(PyArray{e.client, a});
  return out;
}

}  // namespace

void RegisterExecutable(nb::module_& m) {
  nb::class_<PyExecutable>(m, "Executable",
                           "A compiled program (Client.compile); call execute(args).")
      .def("execute", &Execute, nb::arg("args"),
           "Runs the program SPMD on `args`; returns the outputs (their ready futures carry\n"
           "the run's errors: call block_until_ready()).")
      .def_prop_ro("name", [](const PyExecutable& e) { return e.executable->name(); })
      .def("explain", [](const PyExecutable& e) { return e.executable->Explain(); });
  nb::object client = m.attr("Client");
  client.attr("compile") = nb::cpp_function(
      &Compile, nb::is_method(), nb::arg("mlir"), nb::arg("devices") = nb::none(),
      "Compiles an MLIR program (shardings from its tessera.sharding attributes) for `devices`\n"
      "(default: all). RuntimeError (UNIMPLEMENTED) in a build without the program compiler.");
}

}  // namespace tessera::python
