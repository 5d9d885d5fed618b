#ifndef TESSERA_IFRT_SHAPE_H_
#define TESSERA_IFRT_SHAPE_H_

// Shape, Index and IndexDomain: the extent of an array and boxes inside it.
//
//   tessera::Shape shape({8192, 8192});
//   shape.num_elements();                  // 67108864
//   tessera::IndexDomain tile(tessera::Index{0, 4096}, tessera::Shape({8192, 4096}));
//
// Value types; thread-compatible. Shape's constructor does not validate: a Shape with a negative
// dimension, or one whose element or byte count overflows int64_t, is rejected by every API that
// receives one (INVALID_ARGUMENT), see ValidateShape(). Code that sizes memory from a Shape relies
// on ValidateShape(shape, dtype) having passed.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/types/span.h"
#include "ifrt/dtype.h"

namespace tessera {

using Index = absl::InlinedVector<int64_t, 6>;

class Shape {
 public:
  Shape() = default;  // rank 0: a scalar
  explicit Shape(absl::Span<const int64_t> dims) : dims_(dims.begin(), dims.end()) {}
  Shape(std::initializer_list<int64_t> dims) : dims_(dims) {}

  absl::Span<const int64_t> dims() const { return dims_; }
  int rank() const { return static_cast<int>(dims_.size()); }
  // Product of the dimensions (1 for a scalar, 0 if any dimension is 0). Meaningful once
  // ValidateShape(*this) is OK; -1 (never a wrapped value) when the product of the non-zero
  // dimensions overflows int64_t.
  int64_t num_elements() const;
  // "[8192,8192]"
  std::string DebugString() const;

  friend bool operator==(const Shape& a, const Shape& b) { return a.dims_ == b.dims_; }
  friend bool operator!=(const Shape& a, const Shape& b) { return !(a == b); }
  template <typename H>
  friend H AbslHashValue(H h, const Shape& s) {
    return H::combine(std::move(h), s.dims_);
  }

 private:
  Index dims_;
};

// OK if every dimension is >= 0 and the element count fits in int64_t (counting the non-zero
// dimensions: dense strides of [0, 2^62, 2^62] would overflow although it is empty);
// INVALID_ARGUMENT naming the problem otherwise.
absl::Status ValidateShape(const Shape& shape);
// ValidateShape(shape), and `dtype` has a size, and the byte count (element count times the
// element size, again over the non-zero dimensions) fits in int64_t. Every API call that sizes or
// copies memory for an array of `shape` checks this first.
absl::Status ValidateShape(const Shape& shape, DType dtype);

// A box inside an array: `origin` (inclusive) and `shape` (size per dimension).
class IndexDomain {
 public:
  IndexDomain() = default;
  explicit IndexDomain(Shape shape) : origin_(shape.rank(), 0), shape_(std::move(shape)) {}
  IndexDomain(Index origin, Shape shape) : origin_(std::move(origin)), shape_(std::move(shape)) {}

  const Index& origin() const { return origin_; }
  const Shape& shape() const { return shape_; }
  // "IndexDomain(origin=[0,4096],shape=[8192,4096])"
  std::string DebugString() const;

  friend bool operator==(const IndexDomain& a, const IndexDomain& b) {
    return a.origin_ == b.origin_ && a.shape_ == b.shape_;
  }
  friend bool operator!=(const IndexDomain& a, const IndexDomain& b) { return !(a == b); }
  template <typename H>
  friend H AbslHashValue(H h, const IndexDomain& d) {
    return H::combine(std::move(h), d.origin_, d.shape_);
  }

 private:
  Index origin_;
  Shape shape_;
};

}  // namespace tessera

#endif  // TESSERA_IFRT_SHAPE_H_
