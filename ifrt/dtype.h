#ifndef TESSERA_IFRT_DTYPE_H_
#define TESSERA_IFRT_DTYPE_H_

// DType: the element type of an array.
//
//   tessera::DType f32(tessera::DType::kF32);
//   f32.byte_size();      // 4
//   f32.DebugString();    // "f32"
//
// A value type: cheap to copy, comparable, hashable. Thread-compatible.

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace tessera {

class DType {
 public:
  enum Kind {
    kInvalid = 0,
    kPred,
    kS8,
    kS16,
    kS32,
    kS64,
    kU8,
    kU16,
    kU32,
    kU64,
    kF16,
    kBF16,
    kF32,
    kF64,
  };

  explicit constexpr DType(Kind kind) : kind_(kind) {}
  constexpr Kind kind() const { return kind_; }

  // Size of one element in bytes; nullopt for kInvalid.
  std::optional<int> byte_size() const;
  // Short lower-case name as XLA prints it: "pred", "s32", "bf16", "f32", ...
  std::string DebugString() const;

  // Parses DebugString()'s form. INVALID_ARGUMENT naming the text otherwise (quoted, escaped and
  // shortened: base::QuoteExcerpt).
  static absl::StatusOr<DType> Parse(std::string_view name);

  friend constexpr bool operator==(DType a, DType b) { return a.kind_ == b.kind_; }
  friend constexpr bool operator!=(DType a, DType b) { return a.kind_ != b.kind_; }
  template <typename H>
  friend H AbslHashValue(H h, DType d) {
    return H::combine(std::move(h), static_cast<int>(d.kind_));
  }

 private:
  Kind kind_;
};

}  // namespace tessera

#endif  // TESSERA_IFRT_DTYPE_H_
