#include "ifrt/runtime/placement.h"

#include <utility>

namespace tessera::runtime {

Placement Placement::Of(sharding::ShardLayout layout, std::vector<RuntimeMemory*> memories) {
  struct Both {
    sharding::ShardLayout layout;
    std::vector<RuntimeMemory*> memories;
  };
  auto both = std::make_shared<const Both>(Both{std::move(layout), std::move(memories)});
  return Placement{std::shared_ptr<const sharding::ShardLayout>(both, &both->layout),
                   std::shared_ptr<const std::vector<RuntimeMemory*>>(both, &both->memories)};
}

}  // namespace tessera::runtime
