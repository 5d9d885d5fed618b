// The C API's one dtype table: TSR_DType <-> DType.

#include <cstddef>
#include <iterator>

#include "bindings/c/internal.h"

namespace tessera::c_api {
namespace {

struct DTypeRow {
  TSR_DType c;
  DType::Kind kind;
};

constexpr DTypeRow kTable[] = {
    {TSR_DTYPE_PRED, DType::kPred}, {TSR_DTYPE_S8, DType::kS8},     {TSR_DTYPE_S16, DType::kS16},
    {TSR_DTYPE_S32, DType::kS32},   {TSR_DTYPE_S64, DType::kS64},   {TSR_DTYPE_U8, DType::kU8},
    {TSR_DTYPE_U16, DType::kU16},   {TSR_DTYPE_U32, DType::kU32},   {TSR_DTYPE_U64, DType::kU64},
    {TSR_DTYPE_F16, DType::kF16},   {TSR_DTYPE_BF16, DType::kBF16}, {TSR_DTYPE_F32, DType::kF32},
    {TSR_DTYPE_F64, DType::kF64},
};
static_assert(std::size(kTable) == static_cast<size_t>(TSR_DTYPE_F64),
              "one row per TSR_DType but TSR_DTYPE_INVALID");

}  // namespace

DType ToDType(TSR_DType dtype) {
  for (const DTypeRow& row : kTable) {
    if (row.c == dtype) return DType(row.kind);
  }
  return DType(DType::kInvalid);
}

TSR_DType FromDType(DType dtype) {
  for (const DTypeRow& row : kTable) {
    if (row.kind == dtype.kind()) return row.c;
  }
  return TSR_DTYPE_INVALID;
}

}  // namespace tessera::c_api
