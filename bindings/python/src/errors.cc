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

ShardingRef ShardingFromPython(const Client& client, nb::handle sharding) {
  if (nb::isinstance<PyDevice>(sharding)) {
    const PyDevice& d = nb::cast<const PyDevice&>(sharding);
    if (d.client.get() != &client) throw nb::value_error("the device belongs to another client");
    return SingleDeviceSharding::Create(d.device, MemoryKind());
  }
  std::string text;
  std::vector<int32_t> ids;
  std::string memory_kind;
  if (nb::isinstance<nb::str>(sharding)) {
    text = nb::cast<std::string>(sharding);
  } else if (nb::hasattr(sharding, "_tessera_sharding")) {
    nb::tuple t = nb::cast<nb::tuple>(sharding.attr("_tessera_sharding")());
    text = nb::cast<std::string>(t[0]);
    if (!t[1].is_none()) ids = nb::cast<std::vector<int32_t>>(t[1]);
    if (!t[2].is_none()) memory_kind = nb::cast<std::string>(t[2]);
  } else {
    throw nb::type_error(
        "a sharding is a str ('mesh{x=4} P(x,None)' or '2x1 to [0] on 2'), a tessera.Device or "
        "a tessera.NamedSharding");
  }
  return ValueOrThrow(ShardingFromText(client, text, ids, memory_kind));
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
