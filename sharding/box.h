// sharding/box.h: half-open boxes of array indices and free geometry functions.
//
// A `Box` is the index domain of an array or of one shard: per dimension the half-open interval
// [inclusive_min, exclusive_max) = [origin, origin + size).
//
//   Box b({0, 2}, {4, 4});              // rows 0..3, columns 2..5
//   b.ToString() == "[0:4, 2:6]";
//   Intersect(b, Box::FromShape({2, 3})) == Box({0, 2}, {2, 1});
//   ShiftOrigin(b, {0, 2}) == Box({0, 0}, {4, 4});   // global -> shard-local
//
// Overflow: all coordinates are int64_t. Box::Create rejects a box whose exclusive_max or element
// count does not fit (INVALID_ARGUMENT); the other functions assume that every inclusive_min,
// exclusive_max and num_elements() fits and do not check (callers validate shapes at the API
// boundary, see sharding/checked_math.h).
#ifndef TESSERA_SHARDING_BOX_H_
#define TESSERA_SHARDING_BOX_H_

#include <cstdint>
#include <string>
#include <utility>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "sharding/index.h"

namespace tessera::sharding {

// Box: an owning, immutable-by-convention value type (origin + shape). Copyable and movable;
// thread-compatible (const methods may be called concurrently). A box with some size 0 is empty;
// empty boxes keep their origin, so two empty boxes with different origins compare unequal.
class Box {
 public:
  // Rank 0: the domain of a scalar, holding exactly one element.
  Box() = default;
  // Unchecked. Precondition (asserted in debug builds): origin.size() == shape.size() and every
  // shape entry >= 0.
  Box(Index origin, Index shape);
  // Checked constructor. INVALID_ARGUMENT on rank mismatch, a negative size, an exclusive_max
  // (origin + size) or an element count that overflows int64_t.
  static absl::StatusOr<Box> Create(Index origin, Index shape);
  // The box [0, shape). Precondition: every entry >= 0.
  static Box FromShape(absl::Span<const int64_t> shape);

  int rank() const { return static_cast<int>(shape_.size()); }
  const Index& origin() const { return origin_; }
  const Index& shape() const { return shape_; }
  int64_t inclusive_min(int d) const { return origin_[d]; }
  int64_t exclusive_max(int d) const { return origin_[d] + shape_[d]; }
  int64_t size(int d) const { return shape_[d]; }

  // Product of the sizes; 1 for rank 0; -1 (never a wrapped value) when the product of the non-zero
  // sizes overflows int64_t (see base::CheckedProduct).
  int64_t num_elements() const;
  // True iff some size is 0 (never for rank 0).
  bool is_empty() const;

  // "[min0:max0, min1:max1, ...]" with exclusive maxima; "[]" for rank 0. A maximum that would
  // overflow int64_t prints as "min+size".
  std::string ToString() const;

  friend bool operator==(const Box& a, const Box& b) {
    return a.origin_ == b.origin_ && a.shape_ == b.shape_;
  }
  friend bool operator!=(const Box& a, const Box& b) { return !(a == b); }
  template <typename H>
  friend H AbslHashValue(H h, const Box& b) {
    return H::combine(std::move(h), b.origin_, b.shape_);
  }

 private:
  Index origin_;
  Index shape_;
};

// The intersection of two boxes of the same rank (precondition). When they are disjoint the result
// is empty: its origin is the per-dim max of the minima and the sizes of the disjoint dims are 0.
Box Intersect(const Box& a, const Box& b);

// True iff every element of `inner` is in `outer` (same rank, precondition). An empty `inner` is
// contained in every box.
bool Contains(const Box& outer, const Box& inner);

// `box` expressed in a frame whose origin is `new_origin_of_frame` (the subtraction box.origin -
// new_origin_of_frame): global -> shard-local coordinates. Precondition: same rank.
Box ShiftOrigin(const Box& box, absl::Span<const int64_t> new_origin_of_frame);

// Row-major element offset of `index` in a dense array of `shape`. Precondition: same rank, 0 <=
// index[d] < shape[d] (an index equal to the shape is allowed and gives the one-past-the-end offset
// along that dim).
int64_t RowMajorOffset(absl::Span<const int64_t> shape, absl::Span<const int64_t> index);

// Calls fn(element_offset, run_length_in_elements) for each maximal contiguous run of `box` inside
// a dense row-major array of `array_shape`, in row-major order. Trailing dims the box covers fully
// are merged into one run. No call for an empty box; one call (0, 1) for rank 0. Precondition:
// `box` lies in [0, array_shape). `fn` is borrowed only for the duration of the call.
void ForEachContiguousRun(absl::Span<const int64_t> array_shape, const Box& box,
                          absl::FunctionRef<void(int64_t, int64_t)> fn);

}  // namespace tessera::sharding

#endif  // TESSERA_SHARDING_BOX_H_
