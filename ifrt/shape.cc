#include "ifrt/shape.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/checked_math.h"

namespace tessera {

int64_t Shape::num_elements() const { return base::CheckedProduct(dims_).value_or(-1); }

std::string Shape::DebugString() const { return absl::StrCat("[", absl::StrJoin(dims_, ","), "]"); }

absl::Status ValidateShape(const Shape& shape) {
  for (int i = 0; i < shape.rank(); ++i) {
    if (shape.dims()[i] < 0) {
      return absl::InvalidArgumentError(absl::StrCat("shape ", shape.DebugString(),
                                                     " has a negative dimension ", i, " (",
                                                     shape.dims()[i], ")"));
    }
  }
  if (!base::CheckedProduct(shape.dims()).has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat("shape ", shape.DebugString(), " has an element count that overflows int64"));
  }
  return absl::OkStatus();
}

absl::Status ValidateShape(const Shape& shape, DType dtype) {
  if (!dtype.byte_size().has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat("dtype ", dtype.DebugString(), " has no element size"));
  }
  if (absl::Status s = ValidateShape(shape); !s.ok()) return s;
  // Counted over the non-zero dimensions, like the element count.
  if (!base::CheckedByteCount(shape.dims(), *dtype.byte_size()).has_value()) {
    return absl::InvalidArgumentError(absl::StrCat(dtype.DebugString(), shape.DebugString(),
                                                   " has a byte count that overflows int64"));
  }
  return absl::OkStatus();
}

std::string IndexDomain::DebugString() const {
  return absl::StrCat("IndexDomain(origin=[", absl::StrJoin(origin_, ","),
                      "],shape=", shape_.DebugString(), ")");
}

}  // namespace tessera
