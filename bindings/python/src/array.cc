// tessera.Array and tessera.Shard: a sharded array, its shards, and copies to the host.

#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bindings/python/src/common.h"
#include "bindings/python/src/dtypes.h"

namespace tessera::python {
namespace {

nb::tuple Shape(const Array& a) {
  nb::list dims;
  for (int64_t d : a.shape().dims()) dims.append(d);
  return nb::tuple(dims);
}

// A new numpy array with the whole array's data (one device-to-host transfer).
nb::object ToNumpy(const PyArray& a, bool is_explicit) {
  const Array& array = *a.array;
  // numpy has no bfloat16: ml_dtypes' (JAX's dependency) holds it, over the bits as uint16.
  const bool bf16 = array.dtype().kind() == DType::kBF16;
  nb::object bfloat16;
  if (bf16) {
    try {
      bfloat16 = nb::module_::import_("ml_dtypes").attr("bfloat16");
    } catch (nb::python_error&) {
      throw nb::type_error(
          "numpy has no bfloat16: install ml_dtypes (JAX's dependency) to read bf16 arrays, or "
          "use np.from_dlpack on a single-device array");
    }
  }
  // The result is allocated by numpy itself, as np.empty: its allocator asks for huge pages for
  // large arrays (a 64 MiB read faults 33 times instead of 16,385 with 4 KiB pages).
  const DType host_dtype = bf16 ? DType(DType::kU16) : array.dtype();
  const char* numpy_dtype = NumpyName(host_dtype);
  if (numpy_dtype == nullptr) {
    throw nb::type_error(
        absl::StrCat("numpy has no dtype for ", array.dtype().DebugString()).c_str());
  }
  nb::object out = nb::module_::import_("numpy").attr("empty")(Shape(array), numpy_dtype);
  auto* data = reinterpret_cast<void*>(
      nb::cast<uintptr_t>(out.attr("__array_interface__")["data"][nb::int_(0)]));
  AwaitReleasingGil(a.array->CopyToHostBuffer(data, std::nullopt, ArrayCopySemantics::kAlwaysCopy,
                                              TransferOptions{is_explicit}));
  return bf16 ? out.attr("view")(bfloat16) : out;
}

// numpy's __array__(dtype=None, copy=None): an implicit device-to-host transfer, as in JAX.
nb::object DunderArray(const PyArray& a, nb::handle dtype, nb::handle copy) {
  if (copy.is(Py_False)) {
    throw nb::value_error(
        "a tessera.Array is always copied to the host by __array__ (copy=False is impossible); "
        "np.from_dlpack gives a zero-copy view of a single-device CPU array");
  }
  nb::object out = ToNumpy(a, /*is_explicit=*/false);
  if (!dtype.is_none()) out = out.attr("astype")(dtype);
  return out;
}

std::vector<PyShard> AddressableShards(const PyArray& a) {
  const Array& array = *a.array;
  std::vector<IndexDomain> domains = ValueOrThrow(array.sharding().IndexDomains(array.shape()));
  absl::StatusOr<std::vector<ArrayRef>> parts;
  {
    nb::gil_scoped_release release;
    parts = a.array->DisassembleIntoSingleDeviceArrays(ArrayCopySemantics::kReuseInput);
  }
  std::vector<ArrayRef> shards = ValueOrThrow(std::move(parts));
  absl::Span<Device* const> devices = array.sharding().devices()->devices();
  // The shards are the addressable devices' (this process's), in device-list order.
  std::vector<size_t> addressable;
  for (size_t i = 0; i < devices.size(); ++i) {
    if (devices[i]->IsAddressable()) addressable.push_back(i);
  }
  if (addressable.size() != shards.size()) {
    throw std::runtime_error(absl::StrCat("addressable_shards: ", shards.size(), " shards for ",
                                          addressable.size(), " addressable devices"));
  }
  std::vector<PyShard> out;
  for (size_t k = 0; k < shards.size(); ++k) {
    const size_t i = addressable[k];
    nb::list index;
    const IndexDomain& d = domains[i];
    for (size_t j = 0; j < d.origin().size(); ++j) {
      index.append(
          nb::steal(PySlice_New(nb::int_(d.origin()[j]).ptr(),
                                nb::int_(d.origin()[j] + d.shape().dims()[j]).ptr(), nullptr)));
    }
    out.push_back(
        PyShard{PyDevice{a.client, devices[i]}, nb::tuple(index), PyArray{a.client, shards[k]}});
  }
  return out;
}

PyArray ReshardOne(const PyArray& a, nb::handle sharding, bool donate) {
  ArraySpec spec{a.array->dtype(), a.array->shape(), ShardingFromPython(a.client, sharding)};
  std::vector<ArrayRef> in = {a.array};
  absl::StatusOr<std::vector<ArrayRef>> out;
  {
    nb::gil_scoped_release release;
    out = a.client->ReshardArrays(
        absl::MakeSpan(in), {spec},
        donate ? ArrayCopySemantics::kDonateInput : ArrayCopySemantics::kReuseInput);
  }
  return PyArray{a.client, ValueOrThrow(std::move(out))[0]};
}

std::vector<PyDevice> ArrayDevices(const PyArray& a) {
  std::vector<PyDevice> out;
  for (Device* d : a.array->sharding().devices()->devices()) out.push_back({a.client, d});
  return out;
}

}  // namespace

void RegisterArray(nb::module_& m) {
  nb::class_<PyArray> cls(
      m, "Array",
      "An immutable array sharded over devices (made by Client.put, reshard or\n"
      "from_dlpack). np.asarray(a) copies it to the host (an implicit transfer).");
  cls.def_prop_ro("shape", [](const PyArray& a) { return Shape(*a.array); })
      .def_prop_ro("dtype", [](const PyArray& a) { return NumpyDType(a.array->dtype()); })
      .def_prop_ro("ndim", [](const PyArray& a) { return a.array->shape().dims().size(); })
      .def_prop_ro("size", [](const PyArray& a) { return a.array->shape().num_elements(); })
      .def_prop_ro("nbytes",
                   [](const PyArray& a) {
                     return a.array->shape().num_elements() * *a.array->dtype().byte_size();
                   })
      .def_prop_ro(
          "sharding", [](const PyArray& a) { return a.array->sharding().DebugString(); },
          "The sharding's description.")
      .def("devices", &ArrayDevices, "The devices of the sharding, in slot order.")
      .def_prop_ro("addressable_shards", &AddressableShards,
                   "One Shard per device: .device, .index (a tuple of slices), .data (a\n"
                   "single-device Array sharing the shard's buffer).")
      .def("__array__", &DunderArray, nb::arg("dtype") = nb::none(), nb::arg("copy") = nb::none())
      .def(
          "to_numpy", [](const PyArray& a) { return ToNumpy(a, /*is_explicit=*/true); },
          "Copies the array to a new numpy array: an explicit device-to-host transfer.")
      .def(
          "block_until_ready",
          [](nb::handle self) {
            AwaitReleasingGil(nb::cast<const PyArray&>(self).array->GetReadyFuture());
            return nb::borrow(self);
          },
          "Waits until every shard is in place; raises the error that prevented it.")
      .def("is_ready", [](const PyArray& a) { return a.array->GetReadyFuture().IsReady(); })
      .def("reshard", &ReshardOne, nb::arg("sharding"), nb::kw_only(), nb::arg("donate") = false,
           "A new array with this one's data sharded as `sharding` (an explicit transfer).")
      .def(
          "delete",
          // Pending writes still complete (they hold the buffers); delete() does not wait.
          [](PyArray& a) { static_cast<void>(a.array->Delete()); },
          "Releases the shards now; later uses raise RuntimeError (FAILED_PRECONDITION).")
      .def("is_deleted", [](const PyArray& a) { return a.array->IsDeleted(); })
      .def("__repr__", [](const PyArray& a) { return a.array->DebugString(); });
  RegisterArrayDlpack(cls);

  nb::class_<PyShard>(m, "Shard", "A shard of an Array, as jax.Shard.")
      .def_prop_ro("device", [](const PyShard& s) { return s.device; })
      .def_prop_ro("index", [](const PyShard& s) { return s.index; })
      .def_prop_ro("data", [](const PyShard& s) { return s.data; })
      .def("__repr__", [](const PyShard& s) {
        return absl::StrCat("Shard(device=", s.device.device->ToString(),
                            ", index=", nb::cast<std::string>(nb::repr(s.index)), ")");
      });
}

}  // namespace tessera::python
