#ifndef TESSERA_IFRT_RUNTIME_PLAN_CACHE_H_
#define TESSERA_IFRT_RUNTIME_PLAN_CACHE_H_

// PlanCache: reshard plans keyed by (source layout, source locations,
// destination layout, destination locations, element size, fan-out, part).
// Bounded: when full it starts over. Thread-safe.

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "ifrt/introspection.h"
#include "sharding/planner.h"
#include "sharding/shard_layout.h"

namespace tessera::runtime {

class PlanCache {
 public:
  explicit PlanCache(size_t capacity = 4096) : capacity_(capacity) {}

  // The cached plan, or a new one from sharding::PlanReshard (whose errors are
  // returned); with `part`, only the part of the plan touching those locations
  // (sharding::PlanReshardPart: a process's part in a multi-process client).
  absl::StatusOr<std::shared_ptr<const sharding::ReshardPlan>> Get(
      const sharding::ShardLayout& src, std::vector<int64_t> src_locations,
      const sharding::ShardLayout& dst, std::vector<int64_t> dst_locations, int64_t element_bytes,
      bool fan_out, std::optional<std::vector<int64_t>> part = std::nullopt);
  PlanCacheStats stats() const;

 private:
  struct Key {
    sharding::ShardLayout src;
    std::vector<int64_t> src_locations;
    sharding::ShardLayout dst;
    std::vector<int64_t> dst_locations;
    int64_t element_bytes;
    bool fan_out;
    std::optional<std::vector<int64_t>> part;
    friend bool operator==(const Key& a, const Key& b) {
      return a.element_bytes == b.element_bytes && a.fan_out == b.fan_out && a.part == b.part &&
             a.src_locations == b.src_locations && a.dst_locations == b.dst_locations &&
             a.src == b.src && a.dst == b.dst;
    }
    template <typename H>
    friend H AbslHashValue(H h, const Key& k) {
      return H::combine(std::move(h), k.src, k.src_locations, k.dst, k.dst_locations,
                        k.element_bytes, k.fan_out, k.part.has_value(),
                        k.part.value_or(std::vector<int64_t>()));
    }
  };

  const size_t capacity_;
  mutable std::mutex mu_;
  absl::flat_hash_map<Key, std::shared_ptr<const sharding::ReshardPlan>> plans_
      ABSL_GUARDED_BY(mu_);
  int64_t hits_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t misses_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace tessera::runtime

#endif  // TESSERA_IFRT_RUNTIME_PLAN_CACHE_H_
