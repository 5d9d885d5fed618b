// sharding/index.h: the index vector type shared by all of sharding/.
//
// An `Index` holds one int64_t per array dimension (an origin, a shape, a tile index). Rank is the
// vector's size; rank 0 is a scalar.
#ifndef TESSERA_SHARDING_INDEX_H_
#define TESSERA_SHARDING_INDEX_H_

#include <cstdint>

#include "absl/container/inlined_vector.h"

namespace tessera::sharding {

using Index = absl::InlinedVector<int64_t, 6>;

}  // namespace tessera::sharding

#endif  // TESSERA_SHARDING_INDEX_H_
