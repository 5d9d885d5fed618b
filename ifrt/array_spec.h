#ifndef TESSERA_IFRT_ARRAY_SPEC_H_
#define TESSERA_IFRT_ARRAY_SPEC_H_

// ArraySpec: the dtype, shape and sharding of an array, without its data: what
// Client::ReshardArrays turns an array into.
//
// A thread-compatible value type; its sharding is shared and immutable. Nothing is checked on
// construction: every call that takes an ArraySpec checks it with ValidateArraySpec.

#include <string>

#include "absl/status/status.h"
#include "ifrt/dtype.h"
#include "ifrt/shape.h"
#include "ifrt/sharding.h"

namespace tessera {

struct ArraySpec {
  DType dtype = DType(DType::kInvalid);
  Shape shape;
  ShardingRef sharding;

  std::string DebugString() const;
};

// OK when `spec` describes an array that can exist: its dtype has a size, its shape passes
// ValidateShape(shape, dtype) (no negative dimension, no element or byte count overflowing int64),
// its sharding is not null and lays the shape out (Sharding::Layout). INVALID_ARGUMENT naming the
// problem otherwise (UNIMPLEMENTED for an OpaqueSharding, which has no layout).
absl::Status ValidateArraySpec(const ArraySpec& spec);

}  // namespace tessera

#endif  // TESSERA_IFRT_ARRAY_SPEC_H_
