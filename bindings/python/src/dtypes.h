// The Python package's one dtype table: for each DType it exchanges, its DLPack type (the
// protocol numpy, nanobind's ndarray and from_dlpack speak) and numpy's name for it.
//
//   std::optional<DType> d = DTypeFromDLPack(dlpack::kDLFloat, 32, 1);  // DType(kF32)
//   DLPackTypeOf(DType(DType::kBF16));  // {kDLBfloat, 16, 1}
//   NumpyName(DType(DType::kBF16));     // nullptr: numpy has no bfloat16
//
// Free functions over a constant table; thread-safe.
#ifndef TESSERA_BINDINGS_PYTHON_SRC_DTYPES_H_
#define TESSERA_BINDINGS_PYTHON_SRC_DTYPES_H_

#include <cstdint>
#include <optional>

#include "bindings/python/src/dlpack.h"
#include "ifrt/dtype.h"

namespace tessera::python {

// The DType of a DLPack (code, bits, lanes), or nullopt when Tessera has none (complex, vectors).
std::optional<DType> DTypeFromDLPack(uint8_t code, uint8_t bits, uint16_t lanes);
// The DLPack type of `dtype` (one of the table's; kInvalid gives {kDLFloat, 0, 1}).
dlpack::DLDataType DLPackTypeOf(DType dtype);
// numpy's name ("float32"), or nullptr where numpy has none (bfloat16) or `dtype` is invalid.
const char* NumpyName(DType dtype);

}  // namespace tessera::python

#endif  // TESSERA_BINDINGS_PYTHON_SRC_DTYPES_H_
