#ifndef TESSERA_IFRT_RUNTIME_PLAN_EXECUTOR_H_
#define TESSERA_IFRT_RUNTIME_PLAN_EXECUTOR_H_

// ExecutePlan: enqueues the box copies of a sharding::ReshardPlan on the
// devices' streams.
//
// Each side of a plan is a list of endpoints, one per slot: a shard (a platform
// buffer in a memory of a device, holding its box densely row-major, with the
// future of its writes) or host memory (the whole array at `host`, with byte
// strides). Copies are batched per executing device: a copy between shards of
// one platform runs on the destination device's stream; a copy from the host on
// the destination's; a copy to the host on the source's; a copy across
// platforms goes through whichever side is host-addressable (else through a
// host staging buffer). Each batch starts once the shards it reads are ready.
// Copies the plan marks as aliases are skipped when the destination endpoint
// already shares the source's buffer (else they run as local copies). Copies
// that forward from a destination slot (fan-out) wait for the copies that
// filled it.
//
// The caller allocates destination buffers before calling and must hold the
// client's enqueue lock (so that concurrent calls enqueue in one global order
// and never wait on each other in a cycle).

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

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
  Future<> ready;     // set once the buffer holds its data (sources; fan-out
                      // destinations)
  Index shard_shape;  // dense row-major
  // Host memory: memory == nullptr.
  void* host = nullptr;
  Index host_byte_strides;

  bool is_host() const { return memory == nullptr; }
};

struct PlanExecution {
  std::vector<Future<>> dst_ready;  // per destination slot
  Future<> all_done;                // every copy of the plan finished (all reads of sources done)
};

// Called once per batch that succeeded: (source device id, destination device
// id, bytes, copies), with -1 for the host side.
using TransferRecorder = std::function<void(int32_t, int32_t, int64_t, int64_t)>;

// What a call tells the executor besides the plan.
struct PlanContext {
  TransferRecorder record;               // may be empty
  std::shared_ptr<TransferTrace> trace;  // null: nothing is traced and no time is taken
  std::string operation;                 // for the trace
  std::string guard_action;              // the guard's action for the call, for the trace
};

PlanExecution ExecutePlan(const sharding::ReshardPlan& plan, int64_t element_bytes,
                          absl::Span<const PlanEndpoint> sources,
                          absl::Span<const PlanEndpoint> destinations, const PlanContext& context);

}  // namespace tessera::runtime

#endif  // TESSERA_IFRT_RUNTIME_PLAN_EXECUTOR_H_
