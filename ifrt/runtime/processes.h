#ifndef TESSERA_IFRT_RUNTIME_PROCESSES_H_
#define TESSERA_IFRT_RUNTIME_PROCESSES_H_

// Processes: how a client's calls span processes, chosen once when the client is created.
// LocalProcesses (below) is a single-process client: every call is local and runs as it is.
// DistributedRuntime (distributed_runtime.h) is a multi-process client (multi-controller, as in
// JAX): every process makes the same calls, and each collective call is agreed by all of them
// before any byte moves. The dispatcher (dispatcher.h) and the executables move bytes through this
// interface and never ask which one they have.
//
// A collective call is framed by RunCall, which hands the body its CollectiveCall: the body passes
// it, explicitly, to the agreement of the call (AgreeOnCall, AgreeOnFingerprint). A movement made
// outside a collective call (an upload, a download, an Execute over one process's devices) passes
// no call (nullptr) and is local.
//
// Thread-safe; collective calls must reach every process in the same order.

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ifrt/runtime/plan_executor.h"
#include "ifrt/runtime/runtime_device.h"
#include "ifrt/spi/transport.h"
#include "sharding/reshard_plan.h"
#include "sharding/shard_layout.h"

namespace tessera::runtime {

// One array of a collective call, as its agreement sees it.
struct CollectivePart {
  int dtype_kind = 0;
  int64_t element_bytes = 0;
  const sharding::ShardLayout* src_layout = nullptr;
  const std::vector<RuntimeMemory*>* src_memories = nullptr;
  const sharding::ShardLayout* dst_layout = nullptr;
  const std::vector<RuntimeMemory*>* dst_memories = nullptr;
  const sharding::ReshardPlan* plan = nullptr;
};

// The frame of one collective call in flight (RunCall): whether the body reached the call's
// agreement. Made by RunCall only; passed by reference down to the agreement.
class CollectiveCall {
 public:
  bool agreed() const { return agreed_; }
  void MarkAgreed() { agreed_ = true; }

 private:
  bool agreed_ = false;
};

class Processes {
 public:
  virtual ~Processes() = default;

  virtual int process_index() const = 0;
  virtual int process_count() const = 0;
  // The transport between the processes; null in a single-process client.
  virtual Transport* transport() = 0;
  // Whether each process plans only its part of a movement (the copies touching its memories).
  virtual bool PlansItsPart() const = 0;

  // Runs `body` as one call of `op`, with its frame (null where the call is not collective).
  // Returns what the call fails with besides the body's own result: OK, or the late agreement's
  // error when the body succeeded without reaching the agreement and another process refused.
  // The body's result is the caller's (Dispatcher::RunCall).
  virtual absl::Status RunCall(std::string_view op,
                               absl::FunctionRef<absl::Status(CollectiveCall*)> body) = 0;

  // The agreement of the collective call `call` on `parts` (after the guard, before any byte
  // moves): the call's tag base, or the call's error. `call` null: -1, the call is local.
  virtual absl::StatusOr<int64_t> AgreeOnCall(CollectiveCall* call, std::string_view op,
                                              int semantics,
                                              absl::Span<const CollectivePart> parts) = 0;
  // The agreement of a call whose arguments the caller fingerprinted itself (an Execute),
  // reserving `messages` tags; as AgreeOnCall.
  virtual absl::StatusOr<int64_t> AgreeOnFingerprint(CollectiveCall* call, std::string_view op,
                                                     uint64_t fingerprint, int64_t messages) = 0;

  // Enqueues this process's part of `plan`; `tag_base` < 0: a local call. Never throws.
  virtual PlanExecution Execute(const sharding::ReshardPlan& plan, int64_t element_bytes,
                                absl::Span<const PlanEndpoint> sources,
                                absl::Span<const PlanEndpoint> destinations,
                                const PlanContext& context, int64_t tag_base) = 0;
  // Settles this process's messages of `plan` without running it (an array of a collective call
  // that failed here after the agreement), so that no other process waits.
  virtual void Abandon(const sharding::ReshardPlan& plan, int64_t element_bytes,
                       absl::Span<const PlanEndpoint> sources,
                       absl::Span<const PlanEndpoint> destinations, const absl::Status& error,
                       int64_t tag_base) = 0;
};

// A single-process client: process 0 of 1, no transport, every call local.
class LocalProcesses final : public Processes {
 public:
  int process_index() const override { return 0; }
  int process_count() const override { return 1; }
  Transport* transport() override { return nullptr; }
  bool PlansItsPart() const override { return false; }
  absl::Status RunCall(std::string_view op,
                       absl::FunctionRef<absl::Status(CollectiveCall*)> body) override {
    body(nullptr).IgnoreError();  // the body's result is the caller's
    return absl::OkStatus();
  }
  absl::StatusOr<int64_t> AgreeOnCall(CollectiveCall*, std::string_view, int,
                                      absl::Span<const CollectivePart>) override {
    return -1;
  }
  absl::StatusOr<int64_t> AgreeOnFingerprint(CollectiveCall*, std::string_view, uint64_t,
                                             int64_t) override {
    return -1;
  }
  PlanExecution Execute(const sharding::ReshardPlan& plan, int64_t element_bytes,
                        absl::Span<const PlanEndpoint> sources,
                        absl::Span<const PlanEndpoint> destinations, const PlanContext& context,
                        int64_t tag_base) override {
    return ExecutePlan(plan, element_bytes, sources, destinations, context);
  }
  void Abandon(const sharding::ReshardPlan&, int64_t, absl::Span<const PlanEndpoint>,
               absl::Span<const PlanEndpoint>, const absl::Status&, int64_t) override {}
};

}  // namespace tessera::runtime

#endif  // TESSERA_IFRT_RUNTIME_PROCESSES_H_
