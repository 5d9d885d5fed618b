#ifndef TESSERA_IFRT_RUNTIME_PLAN_CACHE_H_
#define TESSERA_IFRT_RUNTIME_PLAN_CACHE_H_

// PlanCache: reshard plans keyed by (source layout, source locations,
// destination layout, destination locations, element size, fan-out, part). Bounded: when full it
// starts over. Thread-safe. A part (a set of locations) keeps only the copies whose source or
// destination is one of them (sharding::PlanReshardPart): a multi-process client's share.
//
// In front of it, a cache by identity: (source Sharding object, destination Sharding object,
// shape, element size) -> the destination's placement and the plan; for uploads the source is the
// host (null), for downloads the destination (null, no placement). A hit costs one small hash and
// no geometry at all (no layout computed, hashed or compared). Shardings are immutable, and each
// entry holds references to its shardings, so that their addresses cannot be reused by other
// shardings while the entry lives. Hits of either layer count as hits in stats().

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <tuple>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "ifrt/introspection.h"
#include "ifrt/runtime/placement.h"
#include "ifrt/runtime/runtime_device.h"
#include "ifrt/sharding.h"
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

  // What a reshard to a sharding (an upload, a download) needs besides its source.
  struct ReshardEntry {
    ShardingRef src, dst;     // keep the keys' addresses from being reused; null: the host
    Placement dst_placement;  // shared with the arrays the entry places
    std::shared_ptr<const sharding::ReshardPlan> plan;
    // Uploads whose replicas share buffers: Dispatcher::Upload's leader_of and written (empty
    // and unset otherwise).
    std::vector<int> leader_of;
    Placement written;
  };
  // The entry of a movement from an array with sharding `src` (null: the host) to `dst` (null:
  // the host), or null.
  std::shared_ptr<const ReshardEntry> FindReshard(const Sharding* src, const Sharding* dst,
                                                  absl::Span<const int64_t> dims,
                                                  int64_t element_bytes);
  void InsertReshard(absl::Span<const int64_t> dims, int64_t element_bytes,
                     std::shared_ptr<const ReshardEntry> entry);

 private:
  using ReshardKey = std::tuple<const Sharding*, const Sharding*, Index, int64_t>;

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
  absl::flat_hash_map<ReshardKey, std::shared_ptr<const ReshardEntry>> reshards_
      ABSL_GUARDED_BY(mu_);
  int64_t hits_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t misses_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace tessera::runtime

#endif  // TESSERA_IFRT_RUNTIME_PLAN_CACHE_H_
