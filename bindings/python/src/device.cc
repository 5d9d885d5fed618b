// tessera.Device: one device of a client.

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <string>
#include <type_traits>
#include <variant>

#include "bindings/python/src/common.h"

namespace tessera::python {
namespace {

nb::dict Attributes(const PyDevice& d) {
  nb::dict out;
  for (const auto& [name, value] : d.device->Attributes().map()) {
    out[name.c_str()] = std::visit(
        [](const auto& x) -> nb::object {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
            nb::list l;
            for (int64_t v : x) l.append(v);
            return l;
          } else {
            return nb::cast(x);
          }
        },
        value);
  }
  return out;
}

}  // namespace

void RegisterDevice(nb::module_& m) {
  nb::class_<PyDevice>(m, "Device", "A device of a Client: a CPU device or a Vulkan GPU.")
      .def_prop_ro(
          "id", [](const PyDevice& d) { return d.device->Id().value; },
          "The device's id within its client (0..N-1).")
      .def_prop_ro(
          "platform", [](const PyDevice& d) { return std::string(d.device->Kind()); },
          "'cpu' or 'vulkan'.")
      .def_prop_ro(
          "process_index", [](const PyDevice& d) { return d.device->ProcessIndex(); },
          "The process that owns the device (0 for a client of one process).")
      .def_prop_ro(
          "is_addressable", [](const PyDevice& d) { return d.device->IsAddressable(); },
          "Whether this process owns the device (only then do its shards hold data here).")
      .def_prop_ro("attributes", &Attributes,
                   "The platform's attributes (name, vendor, memory sizes, ...) as a dict.")
      .def("__repr__", [](const PyDevice& d) { return d.device->DebugString(); })
      .def("__str__", [](const PyDevice& d) { return d.device->ToString(); })
      .def("__eq__",
           [](const PyDevice& a, nb::handle b) {
             return nb::isinstance<PyDevice>(b) && nb::cast<const PyDevice&>(b).device == a.device;
           })
      .def("__hash__", [](const PyDevice& d) { return std::hash<const void*>()(d.device); });
}

}  // namespace tessera::python
