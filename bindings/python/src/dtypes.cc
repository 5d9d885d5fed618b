#include "bindings/python/src/dtypes.h"

namespace tessera::python {
namespace {

using namespace dlpack;  // NOLINT: the DLPack vocabulary

struct DTypeRow {
  DType::Kind kind;
  uint8_t dlpack_code;
  uint8_t bits;
  const char* numpy_name;  // nullptr: numpy has none
};

constexpr DTypeRow kTable[] = {
    {DType::kPred, kDLBool, 8, "bool"},     {DType::kS8, kDLInt, 8, "int8"},
    {DType::kS16, kDLInt, 16, "int16"},     {DType::kS32, kDLInt, 32, "int32"},
    {DType::kS64, kDLInt, 64, "int64"},     {DType::kU8, kDLUInt, 8, "uint8"},
    {DType::kU16, kDLUInt, 16, "uint16"},   {DType::kU32, kDLUInt, 32, "uint32"},
    {DType::kU64, kDLUInt, 64, "uint64"},   {DType::kF16, kDLFloat, 16, "float16"},
    {DType::kBF16, kDLBfloat, 16, nullptr}, {DType::kF32, kDLFloat, 32, "float32"},
    {DType::kF64, kDLFloat, 64, "float64"},
};

const DTypeRow* RowOf(DType dtype) {
  for (const DTypeRow& row : kTable) {
    if (row.kind == dtype.kind()) return &row;
  }
  return nullptr;
}

}  // namespace

std::optional<DType> DTypeFromDLPack(uint8_t code, uint8_t bits, uint16_t lanes) {
  if (lanes != 1) return std::nullopt;
  for (const DTypeRow& row : kTable) {
    if (row.dlpack_code == code && row.bits == bits) return DType(row.kind);
  }
  return std::nullopt;
}

DLDataType DLPackTypeOf(DType dtype) {
  const DTypeRow* row = RowOf(dtype);
  if (row == nullptr) return {kDLFloat, 0, 1};
  return {row->dlpack_code, row->bits, 1};
}

const char* NumpyName(DType dtype) {
  const DTypeRow* row = RowOf(dtype);
  return row == nullptr ? nullptr : row->numpy_name;
}

}  // namespace tessera::python
