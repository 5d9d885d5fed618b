// tessera.Client: devices, put (host -> devices), batched reshard, stats, the guard's policy.

#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bindings/python/src/common.h"
#include "bindings/python/src/dtypes.h"
#include "ifrt/strided_copy.h"

namespace tessera::python {
namespace {

using HostArray = nb::ndarray<nb::ro, nb::device::cpu>;

VulkanMode ParseVulkanMode(const std::string& mode) {
  if (mode == "if_available") return VulkanMode::kIfAvailable;
  if (mode == "off") return VulkanMode::kOff;
  if (mode == "required") return VulkanMode::kRequired;
  throw nb::value_error(
      absl::StrCat("vulkan must be 'if_available', 'off' or 'required', not '", mode, "'").c_str());
}

Distributed ParseDistributed(const std::string& mode) {
  if (mode == "none") return Distributed::kNone;
  if (mode == "mpi") return Distributed::kMpi;
  throw nb::value_error(
      absl::StrCat("distributed must be 'none' or 'mpi', not '", mode, "'").c_str());
}

PyClient MakeClient(int cpu_devices, const std::string& vulkan,
                    std::optional<std::string> transfer_guard, int cpu_threads_per_device,
                    const std::string& distributed) {
  ClientOptions options;
  options.cpu_devices = cpu_devices;
  options.cpu_threads_per_device = cpu_threads_per_device;
  options.vulkan = ParseVulkanMode(vulkan);
  options.distributed = ParseDistributed(distributed);
  if (transfer_guard.has_value()) {
    options.transfer_guard = ValueOrThrow(guard::Policy::Parse(*transfer_guard));
  }
  absl::StatusOr<std::shared_ptr<Client>> client;
  {
    nb::gil_scoped_release release;
    client = CreateClient(options);
  }
  return PyClient{ValueOrThrow(std::move(client))};
}

DType DTypeOf(nb::dlpack::dtype t) {
  std::optional<DType> dtype = DTypeFromDLPack(t.code, t.bits, t.lanes);
  if (dtype.has_value()) return *dtype;
  throw nb::type_error(absl::StrCat("unsupported dtype (DLPack code ", t.code, ", ", t.bits,
                                    " bits, ", t.lanes, " lanes)")
                           .c_str());
}

}  // namespace

std::optional<std::vector<uint8_t>> DenseCopyIfReversed(const void* data, int64_t element_bytes,
                                                        absl::Span<const int64_t> dims,
                                                        absl::Span<const int64_t> byte_strides) {
  bool reversed = false, empty = false;
  for (size_t i = 0; i < dims.size(); ++i) {
    reversed = reversed || byte_strides[i] < 0;
    empty = empty || dims[i] == 0;
  }
  if (!reversed) return std::nullopt;
  StridedCopy copy;
  copy.element_bytes = element_bytes;
  copy.extent.assign(dims.begin(), dims.end());
  copy.src_byte_strides.assign(byte_strides.begin(), byte_strides.end());
  copy.dst_byte_strides = StridedCopy::RowMajorByteStrides(dims, element_bytes);
  std::vector<uint8_t> dense(empty ? 0 : copy.bytes());
  const auto* src = static_cast<const uint8_t*>(data);
  if (!empty) {
    copy.ForEachRun([&](int64_t from, int64_t to, int64_t n) {
      std::memcpy(dense.data() + to, src + from, n);
    });
  }
  return dense;
}

namespace {

// A host array of any strides (a negative one copied densely first, DenseCopyIfReversed), put
// with `sharding`: one host-to-device transfer, guarded as any.
// `data` (of `dtype`'s element size) onto the devices of `sharding`.
PyArray PutAs(const PyClient& c, const HostArray& data, DType dtype, nb::handle sharding,
              bool is_explicit) {
  ShardingRef s = ShardingFromPython(c.client, sharding);
  const int64_t item = *dtype.byte_size();
  std::vector<int64_t> dims(data.ndim()), strides(data.ndim());
  for (size_t i = 0; i < data.ndim(); ++i) {
    dims[i] = static_cast<int64_t>(data.shape(i));
    strides[i] = data.stride(i) * item;
  }
  absl::StatusOr<ArrayRef> array;
  {
    nb::gil_scoped_release release;
    const std::optional<std::vector<uint8_t>> dense =
        DenseCopyIfReversed(data.data(), item, dims, strides);
    array = c.client->MakeArrayFromHostBuffer(
        dense.has_value() ? dense->data() : data.data(), dtype, Shape(dims),
        dense.has_value() ? std::nullopt
                          : std::optional<absl::Span<const int64_t>>(absl::MakeConstSpan(strides)),
        std::move(s), HostBufferSemantics::kImmutableOnlyDuringCall, nullptr,
        TransferOptions{is_explicit});
  }
  return PyArray{c.client, ValueOrThrow(std::move(array))};
}

PyArray Put(const PyClient& c, HostArray data, nb::handle sharding, bool is_explicit) {
  return PutAs(c, data, DTypeOf(data.dtype()), sharding, is_explicit);
}

// What Put's array conversion does not take: numpy arrays of ml_dtypes' bfloat16 (how JAX hands
// bf16 to numpy), put as their bits.
PyArray PutOther(const PyClient& c, nb::object x, nb::handle sharding, bool is_explicit) {
  nb::object dtype = nb::getattr(x, "dtype", nb::none());
  if (dtype.is_none() || nb::cast<std::string>(nb::str(dtype)) != "bfloat16") {
    throw nb::type_error(
        absl::StrCat("put takes a numpy array (or a CPU array with __dlpack__ or the buffer "
                     "protocol), not ",
                     nb::cast<std::string>(nb::str(x.type())))
            .c_str());
  }
  nb::object bits = x.attr("view")(nb::module_::import_("numpy").attr("uint16"));
  return PutAs(c, nb::cast<HostArray>(bits), DType(DType::kBF16), sharding, is_explicit);
}

std::vector<PyArray> Reshard(const PyClient& c, const std::vector<PyArray>& arrays,
                             nb::sequence shardings, bool donate, bool is_explicit) {
  if (nb::len(shardings) != arrays.size()) {
    throw nb::value_error(
        absl::StrCat("reshard: ", arrays.size(), " arrays but ", nb::len(shardings), " shardings")
            .c_str());
  }
  std::vector<ArrayRef> refs;
  std::vector<ArraySpec> specs;
  for (size_t i = 0; i < arrays.size(); ++i) {
    const ArrayRef& a = arrays[i].array;
    refs.push_back(a);
    specs.push_back(ArraySpec{a->dtype(), a->shape(), ShardingFromPython(c.client, shardings[i])});
  }
  absl::StatusOr<std::vector<ArrayRef>> out;
  {
    nb::gil_scoped_release release;
    out = c.client->ReshardArrays(
        absl::MakeSpan(refs), specs,
        donate ? ArrayCopySemantics::kDonateInput : ArrayCopySemantics::kReuseInput,
        TransferOptions{is_explicit});
  }
  std::vector<PyArray> result;
  for (ArrayRef& a : ValueOrThrow(std::move(out))) result.push_back(PyArray{c.client, a});
  return result;
}

nb::dict Counter(const TransferStats::Counter& c) {
  nb::dict d;
  d["bytes"] = c.bytes;
  d["copies"] = c.copies;
  return d;
}

nb::dict Stats(const PyClient& c) {
  TransferStats s = c.client->transfer_stats();
  nb::dict d;
  d["host_to_device"] = Counter(s.host_to_device);
  d["device_to_device"] = Counter(s.device_to_device);
  d["device_to_host"] = Counter(s.device_to_host);
  d["local"] = Counter(s.local);
  return d;
}

nb::dict GuardCounters(const PyClient& c, const std::string& direction) {
  guard::Direction dir;
  if (direction == "h2d" || direction == "host_to_device") {
    dir = guard::Direction::kHostToDevice;
  } else if (direction == "d2d" || direction == "device_to_device") {
    dir = guard::Direction::kDeviceToDevice;
  } else if (direction == "d2h" || direction == "device_to_host") {
    dir = guard::Direction::kDeviceToHost;
  } else {
    throw nb::value_error(
        absl::StrCat("direction must be 'h2d', 'd2d' or 'd2h', not '", direction, "'").c_str());
  }
  guard::TransferGuard::DirectionCounters k = c.client->transfer_guard().counters(dir);
  nb::dict d;
  d["allowed_events"] = k.allowed_events;
  d["logged_events"] = k.logged_events;
  d["refused_events"] = k.refused_events;
  d["allowed_bytes"] = k.allowed_bytes;
  d["logged_bytes"] = k.logged_bytes;
  d["refused_bytes"] = k.refused_bytes;
  return d;
}

std::vector<PyDevice> Devices(const PyClient& c) {
  std::vector<PyDevice> out;
  for (Device* d : c.client->devices()) out.push_back(PyDevice{c.client, d});
  return out;
}

std::vector<PyDevice> AddressableDevices(const PyClient& c) {
  std::vector<PyDevice> out;
  for (Device* d : c.client->addressable_devices()) out.push_back(PyDevice{c.client, d});
  return out;
}

}  // namespace

void RegisterClient(nb::module_& m) {
  nb::class_<PyClient>(
      m, "Client",
      "A Tessera client: its devices, and arrays sharded over them.\n\n"
      "Client(cpu_devices=4, vulkan='if_available', transfer_guard=None,\n"
      "       cpu_threads_per_device=0, distributed='none')\n"
      "vulkan: 'if_available', 'off' or 'required'. transfer_guard: a policy\n"
      "such as 'h2d=log,d2d=disallow' (None: $TESSERA_TRANSFER_GUARD, else allow).\n"
      "distributed='mpi': one client over every process of an mpirun job (creation and\n"
      "reshards are collective; cpu_devices and vulkan count this process's devices).")
      .def(nb::new_(&MakeClient), nb::arg("cpu_devices") = 4, nb::arg("vulkan") = "if_available",
           nb::arg("transfer_guard") = nb::none(), nb::arg("cpu_threads_per_device") = 0,
           nb::arg("distributed") = "none")
      .def_prop_ro("devices", &Devices,
                   "Every process's devices, in id order (process 0's first; on one process,\n"
                   "CPU devices first).")
      .def_prop_ro("addressable_devices", &AddressableDevices,
                   "This process's devices (all of them, for a client of one process).")
      .def_prop_ro(
          "process_index", [](const PyClient& c) { return c.client->process_index(); },
          "This process's index among the client's processes (0 for one process).")
      .def_prop_ro(
          "process_count", [](const PyClient& c) { return c.client->process_count(); },
          "The number of processes the client spans (1 unless distributed='mpi').")
      .def_prop_ro(
          "platforms", [](const PyClient& c) { return c.client->platform_names(); },
          "The platforms this client runs on: 'cpu', 'vulkan'.")
      .def("put", &Put, nb::arg("x"), nb::arg("sharding"), nb::kw_only(),
           nb::arg("is_explicit") = true,
           "Copies the host array `x` (numpy, or any buffer/DLPack array on the CPU) onto the\n"
           "devices of `sharding`: a str ('mesh{x=4} P(x,None)', '2x1 to [0] on 2'), a Device or\n"
           "a tessera.NamedSharding. A host-to-device transfer the guard checks.")
      .def("put", &PutOther, nb::arg("x"), nb::arg("sharding"), nb::kw_only(),
           nb::arg("is_explicit") = true,
           "Puts a numpy array of ml_dtypes' bfloat16 (JAX's bf16 on the host) as bf16.")
      .def("reshard", &Reshard, nb::arg("arrays"), nb::arg("shardings"), nb::kw_only(),
           nb::arg("donate") = false, nb::arg("is_explicit") = true,
           "Reshards arrays[i] to shardings[i], all in one call (one plan per array, copies run\n"
           "in parallel). donate=True deletes the inputs when the call succeeds.")
      .def("transfer_stats", &Stats,
           "Bytes and copies moved since the client was created, per direction: a dict of\n"
           "{'host_to_device', 'device_to_device', 'device_to_host', 'local'} ->\n"
           "{'bytes', 'copies'}.")
      .def_prop_rw(
          "transfer_guard_policy",
          [](const PyClient& c) { return c.client->transfer_guard().policy().ToString(); },
          [](PyClient& c, const std::string& text) {
            c.client->transfer_guard().SetPolicy(ValueOrThrow(guard::Policy::Parse(text)));
          },
          "The client's transfer guard policy in its text form ('h2d=log,d2d=disallow').")
      .def("transfer_guard_counters", &GuardCounters, nb::arg("direction"),
           "What the guard decided so far in 'h2d', 'd2d' or 'd2h': allowed/logged/refused\n"
           "events and bytes.")
      .def("__repr__", [](const PyClient& c) { return c.client->DebugString(); });
}

}  // namespace tessera::python
