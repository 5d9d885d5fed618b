// The transfer guard's thread-local scopes, for tessera.transfer_guard(...) and its
// per-direction variants (tessera/__init__.py): a stack of ScopedTransferGuards per thread.

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bindings/python/src/common.h"

namespace tessera::python {
namespace {

thread_local std::vector<std::unique_ptr<guard::ScopedTransferGuard>> scopes;

guard::Direction ParseDirection(const std::string& d) {
  if (d == "h2d" || d == "host_to_device") return guard::Direction::kHostToDevice;
  if (d == "d2d" || d == "device_to_device") return guard::Direction::kDeviceToDevice;
  if (d == "d2h" || d == "device_to_host") return guard::Direction::kDeviceToHost;
  throw nb::value_error(
      absl::StrCat("direction must be 'h2d', 'd2d' or 'd2h', not '", d, "'").c_str());
}

void Push(const std::string& level, std::optional<std::string> direction) {
  guard::Level l = ValueOrThrow(guard::ParseLevel(level));
  scopes.push_back(direction.has_value()
                       ? std::make_unique<guard::ScopedTransferGuard>(ParseDirection(*direction), l)
                       : std::make_unique<guard::ScopedTransferGuard>(l));
}

void Pop() {
  if (scopes.empty()) throw std::runtime_error("no transfer guard scope to leave on this thread");
  scopes.pop_back();
}

}  // namespace

void RegisterGuard(nb::module_& m) {
  m.def("_push_transfer_guard", &Push, nb::arg("level"), nb::arg("direction") = nb::none(),
        "Enters a thread-local guard scope (every client); use tessera.transfer_guard().");
  m.def("_pop_transfer_guard", &Pop, "Leaves the innermost scope _push_transfer_guard entered.");
}

}  // namespace tessera::python
