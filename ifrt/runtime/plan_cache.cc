#include "ifrt/runtime/plan_cache.h"

#include "ifrt/status_macros.h"

namespace tessera::runtime {

absl::StatusOr<std::shared_ptr<const sharding::ReshardPlan>> PlanCache::Get(
    const sharding::ShardLayout& src, std::vector<int64_t> src_locations,
    const sharding::ShardLayout& dst, std::vector<int64_t> dst_locations, int64_t element_bytes,
    bool fan_out, std::optional<std::vector<int64_t>> part) {
  Key key{src,     std::move(src_locations), dst, std::move(dst_locations), element_bytes,
          fan_out, std::move(part)};
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = plans_.find(key);
    if (it != plans_.end()) {
      ++hits_;
      return it->second;
    }
    ++misses_;
  }
  // Plan outside the lock: planning large meshes takes a while and other keys
  // need not wait.
  const sharding::PlanOptions options{.fan_out = fan_out};
  TESSERA_ASSIGN_OR_RETURN(
      sharding::ReshardPlan plan,
      key.part.has_value()
          ? sharding::PlanReshardPart(key.src, key.src_locations, key.dst, key.dst_locations,
                                      element_bytes, *key.part, options)
          : sharding::PlanReshard(key.src, key.src_locations, key.dst, key.dst_locations,
                                  element_bytes, options));
  auto shared = std::make_shared<const sharding::ReshardPlan>(std::move(plan));
  std::lock_guard<std::mutex> lock(mu_);
  if (plans_.size() >= capacity_) plans_.clear();
  plans_.emplace(std::move(key), shared);
  return shared;
}

PlanCacheStats PlanCache::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return PlanCacheStats{hits_, misses_, static_cast<int64_t>(plans_.size())};
}

}  // namespace tessera::runtime
