#ifndef TESSERA_BINDINGS_PYTHON_SRC_DLPACK_H_
#define TESSERA_BINDINGS_PYTHON_SRC_DLPACK_H_

// The structs of DLPack 1.0 (dlpack/dlpack.h, an ABI-stable C header), declared here so that the
// binding depends on no particular copy of it. Plain data; see https://dmlc.github.io/dlpack.

#include <cstdint>

namespace tessera::python::dlpack {

inline constexpr int32_t kDLCPU = 1;
inline constexpr uint8_t kDLInt = 0, kDLUInt = 1, kDLFloat = 2, kDLBfloat = 4, kDLBool = 6;
inline constexpr uint64_t kFlagReadOnly = 1;

struct DLDevice {
  int32_t device_type;
  int32_t device_id;
};
struct DLDataType {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
};
struct DLTensor {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;  // in elements; null: row-major
  uint64_t byte_offset;
};
struct DLManagedTensor {  // capsule "dltensor"
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor* self);
};
struct DLPackVersion {
  uint32_t major;
  uint32_t minor;
};
struct DLManagedTensorVersioned {  // capsule "dltensor_versioned"
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(DLManagedTensorVersioned* self);
  uint64_t flags;
  DLTensor dl_tensor;
};

}  // namespace tessera::python::dlpack

#endif  // TESSERA_BINDINGS_PYTHON_SRC_DLPACK_H_
