#ifndef TESSERA_IFRT_ARRAY_SPEC_H_
#define TESSERA_IFRT_ARRAY_SPEC_H_

// ArraySpec: the dtype, shape and sharding of an array, without its data: what
// Client::ReshardArrays turns an array into.
//
// A thread-compatible value type; its sharding is shared and immutable.

#include <string>

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

}  // namespace tessera

#endif  // TESSERA_IFRT_ARRAY_SPEC_H_
