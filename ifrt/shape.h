#ifndef TESSERA_IFRT_SHAPE_H_
#define TESSERA_IFRT_SHAPE_H_

// Shape, Index and IndexDomain: the extent of an array and boxes inside it.
//
//   tessera::Shape shape({8192, 8192});
//   shape.num_elements();                  // 67108864
//   tessera::IndexDomain tile(tessera::Index{0, 4096}, tessera::Shape({8192, 4096}));
//
// Value types; thread-compatible. Shape's constructor does not validate: a Shape with a negative
// dimension is rejected by every API that receives one (INVALID_ARGUMENT), see ValidateShape().

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/types/span.h"

namespace tessera {

using Index = absl::InlinedVector<int64_t, 6>;

class Shape {
 public:
  Shape() = default;  // rank 0: a scalar
  explicit Shape(absl::Span<const int64_t> dims) : dims_(dims.begin(), dims.end()) {}
  Shape(std::initializer_list<int64_t> dims) : dims_(dims) {}

  absl::Span<const int64_t> dims() const { return dims_; }
  int rank() const { return static_cast<int>(dims_.size()); }
  // Product of the dimensions (1 for a scalar, 0 if any dimension is 0).
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

// OK if every dimension is >= 0; INVALID_ARGUMENT naming the dimension otherwise.
absl::Status ValidateShape(const Shape& shape);

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
