// tessera.Executable: an MLIR program compiled for a client's devices, run on sharded arrays.

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bindings/python/src/common.h"

namespace tessera::python {
namespace {

// The text of a program given as str, or the StableHLO of a jax.stages.Lowered (its compiler IR
// printed in generic form, with the source locations JAX recorded).
std::string ProgramText(nb::handle program) {
  if (nb::isinstance<nb::str>(program)) return nb::cast<std::string>(program);
  if (nb::hasattr(program, "compiler_ir")) {
    nb::object module = program.attr("compiler_ir")("stablehlo");
    nb::object text = module.attr("operation")
                          .attr("get_asm")(nb::arg("print_generic_op_form") = true,
                                           nb::arg("enable_debug_info") = true);
    return nb::cast<std::string>(text);
  }
  throw nb::type_error(
      absl::StrCat("compile: expected a program's text (str) or a jax.stages.Lowered, got ",
                   nb::cast<std::string>(nb::str(program.type())))
          .c_str());
}

PyExecutable Compile(const PyClient& c, nb::handle program,
                     std::optional<std::vector<PyDevice>> devices) {
  std::string text = ProgramText(program);
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
    exe = c.client->GetDefaultCompiler()->Compile(ProgramFromText(std::move(text)),
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
      &Compile, nb::is_method(), nb::arg("program"), nb::arg("devices") = nb::none(),
      "Compiles a program for `devices` (default: all): linalg MLIR text (shardings from its\n"
      "tessera.sharding attributes), StableHLO text in generic form, or a jax.stages.Lowered\n"
      "(`jax.jit(f, in_shardings=..., out_shardings=...).lower(*args)`; shardings from its\n"
      "Shardy attributes, none: replicated). RuntimeError (UNIMPLEMENTED) in a build without\n"
      "the program compiler; TypeError for anything else.");
}

}  // namespace tessera::python
