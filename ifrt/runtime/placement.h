#ifndef TESSERA_IFRT_RUNTIME_PLACEMENT_H_
#define TESSERA_IFRT_RUNTIME_PLACEMENT_H_

// Placement: where an array's shards live, its layout and, per slot, the memory.
//
// Both are immutable and shared: the plan cache's reshard entries, an executable's results and the
// arrays placed by them hold the same ones, so placing an array (a cached reshard, a call's
// outputs) copies no layout and allocates nothing for it.
//
//   Placement p = Placement::Of(std::move(layout), std::move(memories));  // one allocation
//   p.layout->num_slots(); (*p.memories)[slot];
//
// A value type; thread-safe to share (what it points to is never written).

#include <memory>
#include <vector>

#include "ifrt/runtime/runtime_device.h"
#include "sharding/shard_layout.h"

namespace tessera::runtime {

struct Placement {
  // Both in one allocation, which each pointer shares.
  static Placement Of(sharding::ShardLayout layout, std::vector<RuntimeMemory*> memories);

  std::shared_ptr<const sharding::ShardLayout> layout;          // never null once made
  std::shared_ptr<const std::vector<RuntimeMemory*>> memories;  // one per slot; never null
};

}  // namespace tessera::runtime

#endif  // TESSERA_IFRT_RUNTIME_PLACEMENT_H_
