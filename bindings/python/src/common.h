#ifndef TESSERA_BINDINGS_PYTHON_SRC_COMMON_H_
#define TESSERA_BINDINGS_PYTHON_SRC_COMMON_H_

// The Python objects of the `tessera` package (module `tessera._tessera`) and the helpers the
// binding files share.
//
// Ownership: every object holds the client's shared_ptr, so a Client lives while any of its
// devices, arrays or executables is reachable from Python. Thread-safety: the objects are
// immutable wrappers over thread-safe C++ objects; calls release the GIL while the runtime works.

#include <nanobind/nanobind.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "tessera.h"

namespace tessera::python {

namespace nb = nanobind;

struct PyClient {
  std::shared_ptr<Client> client;
};

struct PyDevice {
  std::shared_ptr<Client> client;
  Device* device;
};

struct PyArray {
  std::shared_ptr<Client> client;
  ArrayRef array;
};

struct PyShard {
  PyDevice device;
  nb::tuple index;  // a tuple of slices
  PyArray data;
};

struct PyExecutable {
  std::shared_ptr<Client> client;
  LoadedExecutableRef executable;
};

// Raises the Python exception for a non-OK status: TransferGuardError (a ValueError and a
// RuntimeError) for a guard refusal; ValueError for INVALID_ARGUMENT, NOT_FOUND, OUT_OF_RANGE;
// MemoryError for RESOURCE_EXHAUSTED; RuntimeError otherwise. The message is the status's.
[[noreturn]] void Raise(const absl::Status& status);
inline void ThrowIfError(const absl::Status& status) {
  if (!status.ok()) Raise(status);
}
template <typename T>
T ValueOrThrow(absl::StatusOr<T> value) {
  if (!value.ok()) Raise(value.status());
  return *std::move(value);
}

// A sharding from a Python object: a str in either text notation (over the client's first
// devices), a Device (the whole array on it), or an object with `_tessera_sharding()` returning
// (text, device ids or None, memory kind or None) — tessera.NamedSharding. The same meaning gives
// the same Sharding object each time (shardings.cc), so that the runtime's caches find its plans.
ShardingRef ShardingFromPython(const std::shared_ptr<Client>& client, nb::handle sharding);

// numpy's dtype for `dtype` (a string for bfloat16, which numpy lacks).
nb::object NumpyDType(DType dtype);

// A dense row-major copy of the `dims` elements of `element_bytes` at `data`, laid out with
// `byte_strides` of any sign (element 0 at `data`), when a stride is negative (numpy's x[::-1]):
// the runtime's host-buffer calls take non-negative strides only. nullopt when no stride is
// negative (the memory can be used as it is). Call it without the GIL: it copies every byte.
std::optional<std::vector<uint8_t>> DenseCopyIfReversed(const void* data, int64_t element_bytes,
                                                        absl::Span<const int64_t> dims,
                                                        absl::Span<const int64_t> byte_strides);

// Waits for `future` with the GIL released; raises its error.
void AwaitReleasingGil(const Future<>& future);

// The registration of each part of the module.
void RegisterErrors(nb::module_& m);
void RegisterDevice(nb::module_& m);
void RegisterClient(nb::module_& m);
void RegisterArray(nb::module_& m);
void RegisterArrayDlpack(nb::class_<PyArray>& cls);  // __dlpack__, __dlpack_device__
void RegisterDlpack(nb::module_& m);                 // from_dlpack
void RegisterGuard(nb::module_& m);
void RegisterExecutable(nb::module_& m);
void RegisterTiming(nb::module_& m);

}  // namespace tessera::python

#endif  // TESSERA_BINDINGS_PYTHON_SRC_COMMON_H_
