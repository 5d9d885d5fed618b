#include "ifrt/array_spec.h"

#include "absl/strings/str_cat.h"

namespace tessera {

std::string ArraySpec::DebugString() const {
  return absl::StrCat("ArraySpec(", dtype.DebugString(), shape.DebugString(), ", ",
                      sharding == nullptr ? "no sharding" : sharding->DebugString(), ")");
}

absl::Status ValidateArraySpec(const ArraySpec& spec) {
  if (absl::Status s = ValidateShape(spec.shape, spec.dtype); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("invalid ArraySpec: ", s.message()));
  }
  if (spec.sharding == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid ArraySpec ", spec.DebugString(), ": the sharding is null"));
  }
  if (spec.sharding->devices() == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("invalid ArraySpec ", spec.dtype.DebugString(),
                                                   spec.shape.DebugString(),
                                                   ": the sharding has a null device list"));
  }
  absl::StatusOr<sharding::ShardLayout> layout = spec.sharding->Layout(spec.shape);
  if (!layout.ok()) {
    return absl::Status(
        layout.status().code(),
        absl::StrCat("invalid ArraySpec ", spec.DebugString(), ": ", layout.status().message()));
  }
  return absl::OkStatus();
}

}  // namespace tessera
