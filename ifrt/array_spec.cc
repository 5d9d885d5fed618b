#include "ifrt/array_spec.h"

#include "absl/strings/str_cat.h"

namespace tessera {

std::string ArraySpec::DebugString() const {
  return absl::StrCat("ArraySpec(", dtype.DebugString(), shape.DebugString(), ", ",
                      sharding == nullptr ? "no sharding" : sharding->DebugString(), ")");
}

}  // namespace tessera
