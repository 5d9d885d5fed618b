#include "ifrt/shape.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tessera {

int64_t Shape::num_elements() const {
  int64_t n = 1;
  for (int64_t d : dims_) n *= d;
  return n;
}

std::string Shape::DebugString() const { return absl::StrCat("[", absl::StrJoin(dims_, ","), "]"); }

absl::Status ValidateShape(const Shape& shape) {
  for (int i = 0; i < shape.rank(); ++i) {
    if (shape.dims()[i] < 0) {
      return absl::InvalidArgumentError(absl::StrCat("shape ", shape.DebugString(),
                                                     " has a negative dimension ", i, " (",
                                                     shape.dims()[i], ")"));
    }
  }
  return absl::OkStatus();
}

std::string IndexDomain::DebugString() const {
  return absl::StrCat("IndexDomain(origin=[", absl::StrJoin(origin_, ","),
                      "],shape=", shape_.DebugString(), ")");
}

}  // namespace tessera
