// DLPack: Array.__dlpack__ / __dlpack_device__ (zero-copy export of a single-device CPU array)
// and tessera.from_dlpack (zero-copy import where the memory can be used in place, else a copy).

#include "bindings/python/src/dlpack.h"

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bindings/python/src/common.h"
#include "bindings/python/src/dtypes.h"

namespace tessera::python {
namespace {

using namespace dlpack;  // NOLINT: the DLPack vocabulary

// What an exported tensor holds: the buffer (through the external reference), the client that
// owns its platform, and the shape.
struct ExportContext {
  std::shared_ptr<Client> client;
  std::shared_ptr<void> buffer;
  std::vector<int64_t> shape;
  DLManagedTensor legacy;
  DLManagedTensorVersioned versioned;
};

DType DTypeOfDL(DLDataType t) {
  std::optional<DType> dtype = DTypeFromDLPack(t.code, t.bits, t.lanes);
  if (dtype.has_value()) return *dtype;
  throw nb::type_error(absl::StrCat("from_dlpack: unsupported DLPack dtype (code ", t.code, ", ",
                                    t.bits, " bits, ", t.lanes, " lanes)")
                           .c_str());
}

void CheckCpuSingleDevice(const PyArray& a) {
  if (a.array->sharding().devices()->size() != 1 ||
      a.array->sharding().devices()->devices()[0]->Kind() != "cpu") {
    throw nb::buffer_error(absl::StrCat("__dlpack__: only a single-device array on a CPU device "
                                        "exports without a copy; this one is on ",
                                        a.array->sharding().devices()->DebugString(),
                                        " (use addressable_shards[i].data, or np.asarray)")
                               .c_str());
  }
}

void CapsuleDestructor(PyObject* capsule) {
  // Consumers rename a capsule they took ("used_dltensor"); an untaken one is ours to free.
  if (PyCapsule_IsValid(capsule, "dltensor")) {
    auto* t = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
    t->deleter(t);
  } else if (PyCapsule_IsValid(capsule, "dltensor_versioned")) {
    auto* t =
        static_cast<DLManagedTensorVersioned*>(PyCapsule_GetPointer(capsule, "dltensor_versioned"));
    t->deleter(t);
  }
}

nb::object Export(const PyArray& a, nb::handle stream, nb::handle max_version, nb::handle dl_device,
                  nb::handle copy) {
  CheckCpuSingleDevice(a);
  if (copy.is(Py_True)) throw nb::buffer_error("__dlpack__: copy=True is not supported");
  if (!dl_device.is_none() && nb::cast<int>(dl_device[0]) != kDLCPU) {
    throw nb::buffer_error("__dlpack__: the array is on the CPU (kDLCPU) only");
  }
  AwaitReleasingGil(a.array->GetReadyFuture());
  auto* ctx = new ExportContext{a.client, nullptr, {}, {}, {}};
  absl::StatusOr<std::shared_ptr<void>> ref = a.array->AcquireExternalReference();
  if (!ref.ok()) {
    delete ctx;
    Raise(ref.status());
  }
  ctx->buffer = *std::move(ref);
  ctx->shape.assign(a.array->shape().dims().begin(), a.array->shape().dims().end());
  DLTensor t{ctx->buffer.get(),
             {kDLCPU, 0},
             static_cast<int32_t>(ctx->shape.size()),
             DLPackTypeOf(a.array->dtype()),
             ctx->shape.data(),
             nullptr,
             0};
  const bool versioned =
      !max_version.is_none() && nb::cast<int>(nb::cast<nb::tuple>(max_version)[0]) >= 1;
  if (versioned) {
    ctx->versioned = {{1, 0},
                      ctx,
                      [](DLManagedTensorVersioned* self) {
                        delete static_cast<ExportContext*>(self->manager_ctx);
                      },
                      kFlagReadOnly,
                      t};
    return nb::steal(PyCapsule_New(&ctx->versioned, "dltensor_versioned", CapsuleDestructor));
  }
  ctx->legacy = {
      t, ctx, [](DLManagedTensor* self) { delete static_cast<ExportContext*>(self->manager_ctx); }};
  return nb::steal(PyCapsule_New(&ctx->legacy, "dltensor", CapsuleDestructor));
}

// The producer's tensor taken from its capsule; `release` gives it back to the producer.
struct Imported {
  DLTensor* tensor = nullptr;
  std::function<void()> release;
};

Imported TakeCapsule(nb::handle capsule) {
  Imported out;
  PyObject* c = capsule.ptr();
  if (PyCapsule_IsValid(c, "dltensor_versioned")) {
    auto* t = static_cast<DLManagedTensorVersioned*>(PyCapsule_GetPointer(c, "dltensor_versioned"));
    if (t->version.major > 1) {
      throw nb::buffer_error("from_dlpack: DLPack major version above 1 is not supported");
    }
    PyCapsule_SetName(c, "used_dltensor_versioned");
    out.tensor = &t->dl_tensor;
    out.release = [t] {
      if (t->deleter != nullptr) t->deleter(t);
    };
  } else if (PyCapsule_IsValid(c, "dltensor")) {
    auto* t = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(c, "dltensor"));
    PyCapsule_SetName(c, "used_dltensor");
    out.tensor = &t->dl_tensor;
    out.release = [t] {
      if (t->deleter != nullptr) t->deleter(t);
    };
  } else {
    throw nb::type_error("from_dlpack: __dlpack__ returned no (unused) DLPack capsule");
  }
  return out;
}

nb::object CapsuleOf(nb::handle x) {
  if (!nb::hasattr(x, "__dlpack__")) {
    throw nb::type_error("from_dlpack: the object has no __dlpack__ method");
  }
  try {
    return x.attr("__dlpack__")(nb::arg("max_version") = nb::make_tuple(1, 0));
  } catch (nb::python_error& e) {
    if (!e.matches(PyExc_TypeError)) throw;
    return x.attr("__dlpack__")();  // a producer older than DLPack 1.0
  }
}

PyArray FromDlpack(nb::handle x, const PyDevice& device) {
  nb::object capsule = CapsuleOf(x);
  Imported in = TakeCapsule(capsule);
  const DLTensor& t = *in.tensor;
  if (t.device.device_type != kDLCPU) {
    in.release();
    throw nb::value_error(absl::StrCat("from_dlpack: only host memory (kDLCPU) can be imported; "
                                       "the tensor is on DLPack device type ",
                                       t.device.device_type)
                              .c_str());
  }
  DType dtype = DType(DType::kInvalid);
  try {
    dtype = DTypeOfDL(t.dtype);
  } catch (...) {
    in.release();
    throw;
  }
  std::vector<int64_t> dims(t.shape, t.shape + t.ndim);
  std::vector<int64_t> strides;
  if (t.strides != nullptr) {
    for (int i = 0; i < t.ndim; ++i) strides.push_back(t.strides[i] * *dtype.byte_size());
  }
  const void* data = static_cast<const char*>(t.data) + t.byte_offset;
  ShardingRef sharding = SingleDeviceSharding::Create(device.device, MemoryKind());
  absl::StatusOr<ArrayRef> array;
  {
    nb::gil_scoped_release release;
    // Negative strides: a dense copy first (the producer's tensor released at once), then put.
    const std::optional<std::vector<uint8_t>> dense =
        strides.empty() ? std::nullopt
                        : DenseCopyIfReversed(data, *dtype.byte_size(), dims, strides);
    if (dense.has_value()) {
      in.release();
      array = device.client->MakeArrayFromHostBuffer(
          dense->data(), dtype, Shape(dims), std::nullopt, std::move(sharding),
          HostBufferSemantics::kImmutableOnlyDuringCall, nullptr);
    } else {
      // The producer's memory is used in place where the runtime can (a CPU device, 64-byte
      // aligned, row-major); else it is copied (a host-to-device transfer) and released at once.
      array = device.client->MakeArrayFromHostBuffer(
          data, dtype, Shape(dims),
          strides.empty() ? std::nullopt : std::optional<absl::Span<const int64_t>>(strides),
          std::move(sharding), HostBufferSemantics::kImmutableZeroCopy, std::move(in.release));
    }
  }
  return PyArray{device.client, ValueOrThrow(std::move(array))};
}

}  // namespace

void RegisterArrayDlpack(nb::class_<PyArray>& cls) {
  cls.def("__dlpack__", &Export, nb::kw_only(), nb::arg("stream") = nb::none(),
          nb::arg("max_version") = nb::none(), nb::arg("dl_device") = nb::none(),
          nb::arg("copy") = nb::none(),
          "A DLPack capsule over this single-device CPU array's buffer, without a copy; the\n"
          "buffer stays alive while the capsule (or the consumer's array) is held. Read-only.")
      .def(
          "__dlpack_device__",
          [](const PyArray& a) {
            CheckCpuSingleDevice(a);
            return nb::make_tuple(kDLCPU, 0);
          },
          "(kDLCPU, 0) for an array on one CPU device.");
}

void RegisterDlpack(nb::module_& m) {
  m.def("from_dlpack", &FromDlpack, nb::arg("x"), nb::arg("device"),
        "An Array on `device` from any object with __dlpack__ in host memory (numpy, PyTorch CPU\n"
        "tensors, JAX CPU arrays): zero-copy where the memory can be used in place (a CPU\n"
        "device, 64-byte aligned, row-major), else a copy (a host-to-device transfer the guard\n"
        "checks).");
}

}  // namespace tessera::python
