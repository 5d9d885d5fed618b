#ifndef TESSERA_IFRT_RUNTIME_DISTRIBUTED_DISTRIBUTED_RUNTIME_H_
#define TESSERA_IFRT_RUNTIME_DISTRIBUTED_DISTRIBUTED_RUNTIME_H_

// DistributedRuntime: the multi-process part of a RuntimeClient (multi-controller, as in JAX):
// every process runs the same program, calls the same API with the same arguments, owns its
// local devices and sees every other process's devices as non-addressable ones.
//
// - Creation (GlobalDevices): each process describes its devices; one gather gives every process
//   the same global list, process 0's devices first, numbered 0..N-1.
// - Collective calls (RunCall around ReshardArrays, CopyArrays and Execute): every process computes
//   the same plans (the planner is pure geometry over memory ids, which are global), then one
//   agreement (Transport::Agree) settles, before any byte moves, that every process accepted the
//   call (guard, arguments, allocation) with the same fingerprint of its arguments. A refusal
//   anywhere fails the call everywhere with the refusing process's message; different arguments
//   are INVALID_ARGUMENT everywhere, never a deadlock.
// - Execution (Execute): a process runs the copies of a plan whose source and destination it
//   owns on its devices' streams, sends those it is the source of and receives those it is the
//   destination of (tags from the agreement's tag base plus the copy's index), straight from and
//   into host-addressable shard buffers, staged through host memory for the others.
// - Everything else is local: uploads write the addressable shards only, downloads need a fully
//   addressable array, and copies among a process's own shards stay on its devices (LocalPart).
//
// Ownership: owned by its RuntimeClient; owns the transport. Thread-safe (calls from several
// threads are fine; collective calls must still reach every process in the same order).

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ifrt/runtime/plan_executor.h"
#include "ifrt/runtime/processes.h"
#include "ifrt/runtime/runtime_device.h"
#include "ifrt/spi/platform.h"
#include "ifrt/spi/transport.h"
#include "sharding/reshard_plan.h"
#include "sharding/shard_layout.h"

namespace tessera::runtime {

// A fingerprint of a collective call's arguments: FNV-1a over 64-bit words, the same on every
// process (absl::Hash is seeded per process, so it cannot be compared across processes).
class CallFingerprint {
 public:
  void Add(uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      h_ ^= (v >> (8 * i)) & 0xff;
      h_ *= 0x100000001b3ULL;
    }
  }
  void Add(std::string_view s) {
    Add(static_cast<uint64_t>(s.size()));
    for (char c : s) {
      h_ ^= static_cast<unsigned char>(c);
      h_ *= 0x100000001b3ULL;
    }
  }
  void Add(const sharding::ShardLayout& layout) {
    Add(static_cast<uint64_t>(layout.rank()));
    for (int64_t d : layout.global_shape()) Add(static_cast<uint64_t>(d));
    Add(static_cast<uint64_t>(layout.num_slots()));
    for (const sharding::Box& b : layout.slot_boxes()) {
      for (int64_t v : b.origin()) Add(static_cast<uint64_t>(v));
      for (int64_t v : b.shape()) Add(static_cast<uint64_t>(v));
    }
  }
  void Add(const std::vector<RuntimeMemory*>& memories) {
    Add(static_cast<uint64_t>(memories.size()));
    for (RuntimeMemory* m : memories) Add(static_cast<uint64_t>(m->Id().value));
  }
  uint64_t value() const { return h_; }

 private:
  uint64_t h_ = 0xcbf29ce484222325ULL;
};

class DistributedRuntime final : public Processes {
 public:
  explicit DistributedRuntime(std::unique_ptr<Transport> transport);
  ~DistributedRuntime() override;

  int process_index() const override { return transport_->process_index(); }
  int process_count() const override { return transport_->process_count(); }
  // The transport, also for the messages of a call agreed with AgreeOnFingerprint (the collective
  // steps of a program: runtime_executable.h).
  Transport* transport() override { return transport_.get(); }
  bool PlansItsPart() const override { return true; }

  // Every process's devices in the global order, with ids 0..N-1: this process's from
  // `platforms` (addressable), the others' described by their processes. Collective (at client
  // creation). UNAVAILABLE when the transport fails; INTERNAL for a malformed description.
  static absl::StatusOr<std::vector<std::unique_ptr<RuntimeDevice>>> GlobalDevices(
      Client* client, absl::Span<const std::unique_ptr<Platform>> platforms, Transport& transport);

  // Runs `body` as one collective call of `op`, with its frame: when the body did not reach the
  // agreement (AgreeOnCall) because it failed first, or because it had nothing to move, this
  // process takes part in it now, with the body's error: so that every process takes part in
  // exactly one agreement per call.
  absl::Status RunCall(std::string_view op,
                       absl::FunctionRef<absl::Status(CollectiveCall*)> body) override;

  // The agreement of `call` on `parts` (after the guard, before any byte moves). Returns the
  // call's tag base, or the call's error (module comment). `call` null (a movement outside a
  // collective call): -1, the call is local. The fingerprint covers the
  // call's specs (op, semantics, and per array dtype, element size, layouts and memories), which
  // every process holds whole, not the plans (each process plans only its part); each array
  // reserves MessageWindow tags, and a part with more messages to or from one process than that
  // refuses the call (RESOURCE_EXHAUSTED, on every process through the agreement).
  absl::StatusOr<int64_t> AgreeOnCall(CollectiveCall* call, std::string_view op, int semantics,
                                      absl::Span<const CollectivePart> parts) override;

  // The agreement of a call whose arguments the caller fingerprinted itself (an Execute: the
  // executable and its arguments' specs), reserving `messages` tags. Returns the call's tag base,
  // or the call's error (as AgreeOnCall); `call` null: -1.
  absl::StatusOr<int64_t> AgreeOnFingerprint(CollectiveCall* call, std::string_view op,
                                             uint64_t fingerprint, int64_t messages) override;

  // The tags one array of a collective call reserves: one per (source slot, destination slot)
  // pair, the most messages one process can exchange with another when each pair of slots has at
  // most one copy (every plan over source boxes that form a grid: every ShardingParam layout).
  static int64_t MessageWindow(const sharding::ShardLayout& src, const sharding::ShardLayout& dst);

  // Enqueues this process's part of `plan` (the whole plan, or PlanReshardPart's part for this
  // process's memories: the same copies run either way). A copy to or from process q is the
  // message tagged tag_base + n when it is the n-th copy between the two processes in its
  // direction, in plan order. `tag_base` < 0: a local
  // call, in which copies between processes are FAILED_PRECONDITION on the futures (callers
  // check before). Never throws (like ExecutePlan).
  PlanExecution Execute(const sharding::ReshardPlan& plan, int64_t element_bytes,
                        absl::Span<const PlanEndpoint> sources,
                        absl::Span<const PlanEndpoint> destinations, const PlanContext& context,
                        int64_t tag_base) override;

  // Settles this process's messages of `plan` without running it, for an array of a collective
  // call that failed on this process after the agreement (ran out of memory enqueueing an
  // earlier array): each message it would send goes empty (the receiving process's array fails
  // with the transport's error, rather than wait), each message it would receive is taken into
  // the destination shard (or host staging) and dropped, so that no sender waits either.
  // `error` is why; `tag_base` < 0: nothing to settle.
  void Abandon(const sharding::ReshardPlan& plan, int64_t element_bytes,
               absl::Span<const PlanEndpoint> sources, absl::Span<const PlanEndpoint> destinations,
               const absl::Status& error, int64_t tag_base) override;

  // The copies of `plan` whose both ends this process owns (host ends count as local), or
  // nullptr when that is all of them. `src_memories` null: the source is the host.
  static std::shared_ptr<const sharding::ReshardPlan> LocalPart(
      const sharding::ReshardPlan& plan, const std::vector<RuntimeMemory*>* src_memories,
      const std::vector<RuntimeMemory*>& dst_memories);

  // FAILED_PRECONDITION naming the devices of `memories` this process cannot read, for `op`.
  static absl::Status CheckFullyAddressable(const std::vector<RuntimeMemory*>& memories,
                                            std::string_view op);
  static bool AllAddressable(const std::vector<RuntimeMemory*>& memories);

 private:
  // The most copies between this process and one other process in one direction in `plan`.
  int64_t CountMessages(const sharding::ReshardPlan& plan,
                        const std::vector<RuntimeMemory*>& src_memories,
                        const std::vector<RuntimeMemory*>& dst_memories) const;

  // The agreement of a call that failed (or moved nothing) before reaching AgreeOnCall.
  absl::Status AgreeLate(std::string_view op, const absl::Status& status);

  // Adds this process's side of one part exchanged with process `peer` (`sent`: this process
  // sends it) to context.trace once `done`: from `posted_ns` to then.
  static void TraceMessagePart(const PlanContext& context, const sharding::BoxCopy& c,
                               const PlanEndpoint& s, const PlanEndpoint& d, int peer, bool sent,
                               int64_t posted_ns, const Future<>& done);
  Future<> SendPart(const sharding::BoxCopy& c, const PlanEndpoint& s, const PlanEndpoint& d,
                    int64_t element_bytes, int64_t tag);
  Future<> ReceivePart(const sharding::BoxCopy& c, const PlanEndpoint& s, const PlanEndpoint& d,
                       int64_t element_bytes, int64_t tag, const PlanContext& context);

  std::unique_ptr<Transport> transport_;
};

}  // namespace tessera::runtime

#endif  // TESSERA_IFRT_RUNTIME_DISTRIBUTED_DISTRIBUTED_RUNTIME_H_
