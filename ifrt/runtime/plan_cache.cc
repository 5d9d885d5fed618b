#include "ifrt/runtime/plan_cache.h"

#include "base/status_macros.h"

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

std::shared_ptr<const PlanCache::ReshardEntry> PlanCache::FindReshard(
    const Sharding* src, const Sharding* dst, absl::Span<const int64_t> dims,
    int64_t element_bytes) {
  ReshardKey key(src, dst, Index(dims.begin(), dims.end()), element_bytes);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = reshards_.find(key);
  if (it == reshards_.end()) return nullptr;
  ++hits_;
  return it->second;
}

void PlanCache::InsertReshard(absl::Span<const int64_t> dims, int64_t element_bytes,
                              std::shared_ptr<const ReshardEntry> entry) {
  ReshardKey key(entry->src.get(), entry->dst.get(), Index(dims.begin(), dims.end()),
                 element_bytes);
  std::lock_guard<std::mutex> lock(mu_);
  if (reshards_.size() >= capacity_) reshards_.clear();
  reshards_.emplace(std::move(key), std::move(entry));
}

PlanCacheStats PlanCache::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return PlanCacheStats{hits_, misses_, static_cast<int64_t>(plans_.size())};
}

}  // namespace tessera::runtime
