#ifndef TESSERA_IFRT_RUNTIME_PLAN_EXECUTOR_H_
#define TESSERA_IFRT_RUNTIME_PLAN_EXECUTOR_H_

// ExecutePlan: enqueues the box copies of a sharding::ReshardPlan on the devices' streams.
//
// Each side of a plan is a list of endpoints, one per slot: a shard (a platform buffer in a memory
// of a device, holding its box densely row-major, with the future of its writes) or host memory
// (the whole array at `host`, with byte strides). Copies are batched per executing device, which
// is, for a copy
//
//   between shards of one platform   the destination device (a buffer-to-buffer copy);
//   from the host                    the destination device;
//   to the host                      the source device;
//   across platforms                 the side whose buffer is host-addressable (the other side
//                                    reads or writes it through its host address); when neither
//                                    is, the copy goes device -> host staging -> device, on both.
//
// Each batch starts once the shards it reads are ready. Copies the plan marks as aliases are
// skipped when the destination endpoint already shares the source's buffer (else they run as local
// copies). Copies that forward from a destination slot (fan-out) wait for the copies that filled
// it.
//
// The caller allocates destination buffers before calling and must hold the client's enqueue lock
// (so that concurrent calls enqueue in one global order and never wait on each other in a cycle):
// calls are serialized by that lock, not by ExecutePlan. Endpoint buffers are shared references;
// the copies in flight keep the buffers and staging memory they use alive until they finish.
//
// Allocation failure: the callbacks ExecutePlan leaves on the streams (counting, tracing) turn a
// std::bad_alloc into RESOURCE_EXHAUSTED on the future they set, never into an exception on a
// device thread. CatchAllocationFailure does the same for a whole entry point of the runtime.

#include <cstdint>
#include <functional>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/types/span.h"
#include "ifrt/future.h"
#include "ifrt/runtime/runtime_device.h"
#include "ifrt/spi/platform.h"
#include "ifrt/transfer_trace.h"
#include "sharding/reshard_plan.h"

namespace tessera::runtime {

struct PlanEndpoint {
  // A shard: memory != nullptr.
  RuntimeMemory* memory = nullptr;
  PlatformBufferRef buffer;
  // Set once the buffer holds its data (sources; fan-out destinations).
  Future<> ready;
  Index shard_shape;  // dense row-major
  // Host memory: memory == nullptr.
  void* host = nullptr;
  Index host_byte_strides;

  bool is_host() const { return memory == nullptr; }
};

struct PlanExecution {
  // OK, or RESOURCE_EXHAUSTED when enqueueing ran out of memory part way (ExecutePlan then waited
  // for the copies it had enqueued; the futures below carry the error).
  absl::Status status;
  std::vector<Future<>> dst_ready;  // per destination slot
  Future<> all_done;                // every copy of the plan finished (all reads of sources done)
};

// What one batch moved: entries ((source device id, destination device id), (bytes, copies)),
// with TransferStats::kHost (ifrt/transfer_stats.h) for the host side. A pair may appear in
// several entries (consumers add them up); AddTraffic merges a copy into the last entry when it
// is the same pair. Flat and inline: a batch's few pairs cost no allocation and no tree.
using TransferTraffic =
    absl::InlinedVector<std::pair<std::pair<int32_t, int32_t>, std::pair<int64_t, int64_t>>, 8>;
// Adds one copy of `bytes` between `pair` to `traffic`.
inline void AddTraffic(TransferTraffic& traffic, std::pair<int32_t, int32_t> pair, int64_t bytes) {
  if (!traffic.empty() && traffic.back().first == pair) {
    traffic.back().second.first += bytes;
    traffic.back().second.second += 1;
  } else {
    traffic.push_back({pair, {bytes, 1}});
  }
}
// Called once per batch (or single copy) that succeeded, with what it moved: a whole batch at once
// (one lock instead of one per device pair).
using TrafficRecorder = std::function<void(const TransferTraffic&)>;

// What a call tells the executor besides the plan.
struct PlanContext {
  TrafficRecorder record;                // may be empty: nothing is counted
  std::shared_ptr<TransferTrace> trace;  // null: nothing is traced and no time is taken
  std::string operation;                 // for the trace
  std::string guard_action;              // the guard's action for the call, for the trace
  // An upload's forwards (fan-out copies from one destination replica to the next) are legs of
  // the host-to-device transfer: counted and traced as from the host (TransferStats::kHost),
  // with direction host_to_device. Otherwise a forward is the device-to-device copy it is.
  bool forwards_are_host_to_device = false;
};

// Never throws: an allocation failure while enqueueing is PlanExecution::status (naming
// context.operation), and an error on the futures.
PlanExecution ExecutePlan(const sharding::ReshardPlan& plan, int64_t element_bytes,
                          absl::Span<const PlanEndpoint> sources,
                          absl::Span<const PlanEndpoint> destinations, const PlanContext& context);

// RESOURCE_EXHAUSTED naming `what` (an entry point, a callback) for an allocation that failed.
absl::Status AllocationFailure(std::string_view what, const std::exception& e);

// Runs `fn` and returns its result, or RESOURCE_EXHAUSTED naming `what` when it throws
// std::bad_alloc (memory ran out) or std::length_error (a container sized from input grew past
// its limit): what an entry point of the runtime returns instead of throwing. `fn` returns
// absl::Status, absl::StatusOr<T> or Future<> (then the error travels on a ready future). Nothing
// is rolled back: the entry points delete donated inputs only after everything else succeeded,
// and copies already enqueued when an allocation failed finish into buffers that are then freed.
template <typename F>
auto CatchAllocationFailure(std::string_view what, F&& fn) -> std::invoke_result_t<F> {
  using Result = std::invoke_result_t<F>;
  absl::Status failure;
  try {
    return std::forward<F>(fn)();
  } catch (const std::bad_alloc& e) {
    failure = AllocationFailure(what, e);
  } catch (const std::length_error& e) {
    failure = AllocationFailure(what, e);
  }
  if constexpr (std::is_same_v<Result, Future<>>) {
    return MakeReadyFuture(std::move(failure));
  } else {
    return Result(std::move(failure));
  }
}

}  // namespace tessera::runtime

#endif  // TESSERA_IFRT_RUNTIME_PLAN_EXECUTOR_H_
