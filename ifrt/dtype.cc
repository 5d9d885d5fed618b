#include "ifrt/dtype.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/message_text.h"

namespace tessera {
namespace {

struct DTypeInfo {
  DType::Kind kind;
  const char* name;
  int size;
};

constexpr DTypeInfo kInfos[] = {
    {DType::kPred, "pred", 1}, {DType::kS8, "s8", 1},     {DType::kS16, "s16", 2},
    {DType::kS32, "s32", 4},   {DType::kS64, "s64", 8},   {DType::kU8, "u8", 1},
    {DType::kU16, "u16", 2},   {DType::kU32, "u32", 4},   {DType::kU64, "u64", 8},
    {DType::kF16, "f16", 2},   {DType::kBF16, "bf16", 2}, {DType::kF32, "f32", 4},
    {DType::kF64, "f64", 8},
};

const DTypeInfo* Find(DType::Kind kind) {
  for (const DTypeInfo& info : kInfos) {
    if (info.kind == kind) return &info;
  }
  return nullptr;
}

}  // namespace

std::optional<int> DType::byte_size() const {
  const DTypeInfo* info = Find(kind_);
  if (info == nullptr) return std::nullopt;
  return info->size;
}

std::string DType::DebugString() const {
  const DTypeInfo* info = Find(kind_);
  return info == nullptr ? "invalid" : info->name;
}

absl::StatusOr<DType> DType::Parse(std::string_view name) {
  for (const DTypeInfo& info : kInfos) {
    if (name == info.name) return DType(info.kind);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown dtype ", base::QuoteExcerpt(name),
                   "; expected one of pred, s8, s16, s32, s64, u8, u16, u32, u64, f16, "
                   "bf16, f32, f64"));
}

}  // namespace tessera
