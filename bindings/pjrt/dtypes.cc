// PJRT element types and Tessera dtypes: the same names for the types both have.

#include <string>

#include "bindings/pjrt/internal.h"

namespace tessera::pjrt {
namespace {

struct TypePair {
  PJRT_Buffer_Type type;
  tessera::DType::Kind kind;
  const char* name;
};

constexpr TypePair kTypes[] = {
    {PJRT_Buffer_Type_PRED, tessera::DType::kPred, "pred"},
    {PJRT_Buffer_Type_S8, tessera::DType::kS8, "s8"},
    {PJRT_Buffer_Type_S16, tessera::DType::kS16, "s16"},
    {PJRT_Buffer_Type_S32, tessera::DType::kS32, "s32"},
    {PJRT_Buffer_Type_S64, tessera::DType::kS64, "s64"},
    {PJRT_Buffer_Type_U8, tessera::DType::kU8, "u8"},
    {PJRT_Buffer_Type_U16, tessera::DType::kU16, "u16"},
    {PJRT_Buffer_Type_U32, tessera::DType::kU32, "u32"},
    {PJRT_Buffer_Type_U64, tessera::DType::kU64, "u64"},
    {PJRT_Buffer_Type_F16, tessera::DType::kF16, "f16"},
    {PJRT_Buffer_Type_BF16, tessera::DType::kBF16, "bf16"},
    {PJRT_Buffer_Type_F32, tessera::DType::kF32, "f32"},
    {PJRT_Buffer_Type_F64, tessera::DType::kF64, "f64"},
};

}  // namespace

tessera::DType ToDType(PJRT_Buffer_Type type) {
  for (const TypePair& pair : kTypes) {
    if (pair.type == type) return tessera::DType(pair.kind);
  }
  return tessera::DType(tessera::DType::kInvalid);
}

PJRT_Buffer_Type ToBufferType(tessera::DType dtype) {
  for (const TypePair& pair : kTypes) {
    if (pair.kind == dtype.kind()) return pair.type;
  }
  return PJRT_Buffer_Type_INVALID;
}

std::string BufferTypeName(PJRT_Buffer_Type type) {
  for (const TypePair& pair : kTypes) {
    if (pair.type == type) return pair.name;
  }
  return "PJRT_Buffer_Type " + std::to_string(static_cast<int>(type));
}

}  // namespace tessera::pjrt
