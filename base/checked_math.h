// base/checked_math.h: overflow-checked int64_t arithmetic for sizes, counts and offsets.
//
// Every size, element count, byte count and offset Tessera derives from user input goes through
// these helpers where it is formed, so a wrapped value never reaches a copy engine:
//
//   std::optional<int64_t> n = CheckedProduct(shape);            // nullopt: does not fit
//   std::optional<int64_t> end = CheckedAdd(origin[d], size[d]);
//   if (!n.has_value()) return absl::InvalidArgumentError("... overflows int64");
//
// Free functions over values; no state, thread-safe. Header-only.
#ifndef TESSERA_BASE_CHECKED_MATH_H_
#define TESSERA_BASE_CHECKED_MATH_H_

#include <cstdint>
#include <optional>

#include "absl/types/span.h"

namespace tessera::base {

// a * b, or nullopt when it does not fit in int64_t.
constexpr std::optional<int64_t> CheckedMul(int64_t a, int64_t b) {
  int64_t out = 0;
  if (__builtin_mul_overflow(a, b, &out)) return std::nullopt;
  return out;
}

// a + b, or nullopt when it does not fit in int64_t.
constexpr std::optional<int64_t> CheckedAdd(int64_t a, int64_t b) {
  int64_t out = 0;
  if (__builtin_add_overflow(a, b, &out)) return std::nullopt;
  return out;
}

// The product of `dims` times `factor` (`factor` for no dims, 0 when a dimension is 0), or nullopt
// when the product of `factor` and the non-zero dimensions does not fit in int64_t. A zero
// dimension does not excuse the others: the dense strides and offsets of [0, 2^62, 2^62] overflow
// although it holds no element. Negative dimensions are multiplied as they are (callers reject them
// first).
constexpr std::optional<int64_t> CheckedProduct(absl::Span<const int64_t> dims,
                                                int64_t factor = 1) {
  int64_t nonzero = factor;
  bool has_zero = false;
  for (int64_t d : dims) {
    if (d == 0) {
      has_zero = true;
      continue;
    }
    if (__builtin_mul_overflow(nonzero, d, &nonzero)) return std::nullopt;
  }
  return has_zero ? 0 : nonzero;
}

// The byte count of a dense array of `dims` with `element_bytes` per element:
// CheckedProduct(dims, element_bytes), with the same rule for zero dimensions.
constexpr std::optional<int64_t> CheckedByteCount(absl::Span<const int64_t> dims,
                                                  int64_t element_bytes) {
  return CheckedProduct(dims, element_bytes);
}

// ceil(n / k) for n >= 0 and k >= 1 (precondition), without forming n + k - 1.
constexpr int64_t CeilDiv(int64_t n, int64_t k) { return n / k + (n % k != 0 ? 1 : 0); }

}  // namespace tessera::base

#endif  // TESSERA_BASE_CHECKED_MATH_H_
