// Status -> Python exceptions, the shared conversions (shardings, dtypes) and waiting.

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "bindings/python/src/common.h"
#include "bindings/python/src/dtypes.h"
#include "ifrt/sharding_from_text.h"

namespace tessera::python {
namespace {

PyObject* transfer_guard_error = nullptr;

}  // namespace

void Raise(const absl::Status& status) {
  std::string message = status.ToString();
  PyObject* type = PyExc_RuntimeError;
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
      type = absl::StrContains(status.message(), "Disallowed ") ? transfer_guard_error
                                                                : PyExc_ValueError;
      break;
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kOutOfRange:
      type = PyExc_ValueError;
      break;
    case absl::StatusCode::kResourceExhausted:
      type = PyExc_MemoryError;
      break;
    default:
      break;
  }
  PyErr_SetString(type, message.c_str());
  throw nb::python_error();
}

void AwaitReleasingGil(const Future<>& future) {
  absl::Status status;
  {
    nb::gil_scoped_release release;
    status = future.Await();
  }
  ThrowIfError(status);
}

nb::object NumpyDType(DType dtype) {
  const char* name = NumpyName(dtype);
  if (name == nullptr) return nb::str(dtype.DebugString().c_str());
  return nb::module_::import_("numpy").attr("dtype")(name);
}

void RegisterErrors(nb::module_& m) {
  nb::object bases = nb::make_tuple(nb::handle(PyExc_ValueError), nb::handle(PyExc_RuntimeError));
  transfer_guard_error =
      PyErr_NewExceptionWithDoc("tessera._tessera.TransferGuardError",
                                "A transfer the transfer guard refused (INVALID_ARGUMENT: "
                                "Disallowed ... transfer: ...). Both a ValueError and a "
                                "RuntimeError.",
                                bases.ptr(), nullptr);
  m.attr("TransferGuardError") = nb::handle(transfer_guard_error);
}

}  // namespace tessera::python
