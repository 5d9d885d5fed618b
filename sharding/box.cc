#include "sharding/box.h"

#include <algorithm>
#include <cassert>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/checked_math.h"

namespace tessera::sharding {

Box::Box(Index origin, Index shape) : origin_(std::move(origin)), shape_(std::move(shape)) {
  assert(origin_.size() == shape_.size());
  assert(std::all_of(shape_.begin(), shape_.end(), [](int64_t s) { return s >= 0; }));
}

absl::StatusOr<Box> Box::Create(Index origin, Index shape) {
  if (origin.size() != shape.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("Box origin has rank ", origin.size(), " but shape has rank ", shape.size()));
  }
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("Box shape has negative size ", shape[d], " in dimension ", d));
    }
    if (!base::CheckedAdd(origin[d], shape[d]).has_value()) {
      return absl::InvalidArgumentError(absl::StrCat("Box exclusive_max ", origin[d], " + ",
                                                     shape[d], " in dimension ", d,
                                                     " overflows int64"));
    }
  }
  if (!base::CheckedProduct(shape).has_value()) {
    return absl::InvalidArgumentError(absl::StrCat("Box shape [", absl::StrJoin(shape, ","),
                                                   "] has an element count that overflows int64"));
  }
  return Box(std::move(origin), std::move(shape));
}

Box Box::FromShape(absl::Span<const int64_t> shape) {
  return Box(Index(shape.size(), 0), Index(shape.begin(), shape.end()));
}

int64_t Box::num_elements() const { return base::CheckedProduct(shape_).value_or(-1); }

bool Box::is_empty() const {
  return std::any_of(shape_.begin(), shape_.end(), [](int64_t s) { return s == 0; });
}

std::string Box::ToString() const {
  std::string out = "[";
  for (int d = 0; d < rank(); ++d) {
    // An unchecked box (the public constructor) may end past int64_t: print its size instead.
    int64_t end = 0;
    if (__builtin_add_overflow(origin_[d], shape_[d], &end)) {
      absl::StrAppend(&out, d == 0 ? "" : ", ", origin_[d], ":", origin_[d], "+", shape_[d]);
    } else {
      absl::StrAppend(&out, d == 0 ? "" : ", ", origin_[d], ":", end);
    }
  }
  out += "]";
  return out;
}

Box Intersect(const Box& a, const Box& b) {
  assert(a.rank() == b.rank());
  Index origin(a.rank()), shape(a.rank());
  for (int d = 0; d < a.rank(); ++d) {
    origin[d] = std::max(a.inclusive_min(d), b.inclusive_min(d));
    int64_t hi = std::min(a.exclusive_max(d), b.exclusive_max(d));
    shape[d] = std::max<int64_t>(0, hi - origin[d]);
  }
  return Box(std::move(origin), std::move(shape));
}

bool Contains(const Box& outer, const Box& inner) {
  assert(outer.rank() == inner.rank());
  if (inner.is_empty()) return true;
  for (int d = 0; d < outer.rank(); ++d) {
    if (inner.inclusive_min(d) < outer.inclusive_min(d) ||
        inner.exclusive_max(d) > outer.exclusive_max(d)) {
      return false;
    }
  }
  return true;
}

Box ShiftOrigin(const Box& box, absl::Span<const int64_t> new_origin_of_frame) {
  assert(static_cast<int>(new_origin_of_frame.size()) == box.rank());
  Index origin(box.rank());
  for (int d = 0; d < box.rank(); ++d) {
    origin[d] = box.inclusive_min(d) - new_origin_of_frame[d];
  }
  return Box(std::move(origin), box.shape());
}

int64_t RowMajorOffset(absl::Span<const int64_t> shape, absl::Span<const int64_t> index) {
  assert(shape.size() == index.size());
  int64_t offset = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    offset = offset * shape[d] + index[d];
  }
  return offset;
}

void ForEachContiguousRun(absl::Span<const int64_t> array_shape, const Box& box,
                          absl::FunctionRef<void(int64_t, int64_t)> fn) {
  const int rank = box.rank();
  assert(static_cast<int>(array_shape.size()) == rank);
  if (box.is_empty()) return;
  if (rank == 0) {
    fn(0, 1);
    return;
  }
  // Innermost dim `k` of the run: dims after k are covered fully.
  int k = rank - 1;
  while (k > 0 && box.inclusive_min(k) == 0 && box.size(k) == array_shape[k]) {
    --k;
  }
  int64_t run = 1;
  for (int d = k; d < rank; ++d) run *= box.size(d);
  // Odometer over dims [0, k).
  Index index(box.origin().begin(), box.origin().end());
  while (true) {
    fn(RowMajorOffset(array_shape, index), run);
    int d = k - 1;
    for (; d >= 0; --d) {
      if (++index[d] < box.exclusive_max(d)) break;
      index[d] = box.inclusive_min(d);
    }
    if (d < 0) return;
  }
}

}  // namespace tessera::sharding
