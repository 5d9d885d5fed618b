#ifndef TESSERA_IFRT_RUNTIME_PROGRAM_RUNTIME_EXECUTABLE_H_
#define TESSERA_IFRT_RUNTIME_PROGRAM_RUNTIME_EXECUTABLE_H_

// CompiledProgram and RuntimeExecutable: the generic runtime's LoadedExecutable. A CompiledProgram
// is a ProgramPlan (ifrt/spi/program_plan.h) bound to devices: each kernel loaded on each device's
// platform, the parameter and result shardings, the bytes its communication moves per run. It is
// shared by every executable the compile cache hands out for the same fingerprint; each
// RuntimeExecutable adds its own deleted state.
//
// Execute: validates the arguments, asks the guard once for the program's communication (explicit
// device-to-device), reshards mismatched arguments (implicit device-to-device, through
// ReshardArrays), then enqueues, under the client's enqueue lock, every step on every device: a
// kernel on the device's stream after its inputs; a collective as a stream operation of each member
// after the group's inputs, reading its peers' buffers from the host. A slot whose memory is not
// host-addressable (a Vulkan device's) copies its collective's input into its device's
// host-addressable memory first, and the result back, on its own stream.
//
// Devices of several processes (multi-controller, as in JAX: every process compiles the same
// program and calls Execute with the same arguments): Execute is a collective call. One agreement
// (Dispatcher::RunCall and Processes::AgreeOnFingerprint) settles, before any kernel runs or
// byte moves, every process's argument checks and guard verdict and a fingerprint of the
// executable and its arguments' specs: a refusal anywhere fails Execute everywhere with the
// refusing process's message, different arguments are INVALID_ARGUMENT everywhere. Each process
// then runs the kernels of its own devices; a collective step sends its members' data to the
// processes of their peers and receives the remote peers' data into host staging
// (program_messages.h), tags from the agreement's tag base. A failed source sends an empty
// message, so that a failure on one process fails its peers' Execute rather than hang them.
// Outputs' shards on other processes' devices are not addressable here.
//
// Thread-safe.

#include <atomic>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "ifrt/executable.h"
#include "ifrt/runtime/processes.h"
#include "ifrt/runtime/program/collectives.h"
#include "ifrt/runtime/runtime_array.h"
#include "ifrt/runtime/runtime_device.h"
#include "ifrt/spi/kernel.h"
#include "ifrt/spi/program_plan.h"

namespace tessera::runtime {

class Dispatcher;
class RuntimeClient;
// Host staging that a collective step received from another process (runtime_executable.cc).
struct ReceivedBytes;

// One slot's part in a collective step: its group, its peers' device ids, and the bytes it reads
// from each peer (BytesFromEachPeer).
struct CollectiveMember {
  CollectiveGroup group;
  std::vector<int32_t> peer_ids;
  int64_t bytes_from_each_peer = 0;
};

struct CompiledProgram {
  ProgramPlan plan;
  std::string fingerprint;
  DeviceListRef devices;
  std::vector<RuntimeDevice*> slot_devices;          // by grid position
  std::vector<std::vector<int64_t>> slot_positions;  // grid coordinates per slot
  // Where each slot's values live: its device's default memory (host-addressable where the program
  // communicates).
  std::vector<RuntimeMemory*> slot_memories;
  // Where each slot's collectives read and write: its slot memory when host-addressable, else a
  // host-addressable memory of its device (Vulkan's pinned_host), staged to and from on its stream.
  std::vector<RuntimeMemory*> host_memories;
  // The shardings the kernels take and give, slot i on the executable's device i.
  std::vector<ShardingRef> parameter_shardings;
  std::vector<ShardingRef> result_shardings;
  // The parameters' shardings as the program declares them to callers: parameter_shardings[i],
  // or where the program's mesh lists its devices in another order (ProgramSharding's
  // device_order), that mesh on those devices; an argument in it is moved into the kernels' order
  // first, as any other argument in another sharding.
  std::vector<ShardingRef> declared_parameter_shardings;
  // [result][slot]; shared with the result arrays of every call.
  std::vector<std::shared_ptr<const std::vector<RuntimeMemory*>>> result_memories;
  // [result], for the global shape; shared with the result arrays of every call.
  std::vector<std::shared_ptr<const sharding::ShardLayout>> result_layouts;
  std::vector<std::vector<PlatformKernelRef>> kernels;  // [step][slot]; empty for collectives
  std::vector<std::vector<CollectiveMember>> members;   // [step][slot]; empty for kernels
  std::vector<int> donated_parameters;
  int64_t communication_bytes = 0;  // bytes the collectives read from peers, per run
  // Devices of several processes: Execute is collective, and each collective step's first message
  // tag (from the Execute's tag base) is tag_offsets[step] (program_messages.h), tag_count in all.
  bool spans_processes = false;
  std::vector<int64_t> tag_offsets;
  int64_t tag_count = 0;
  std::string explain;
};

class RuntimeExecutable final : public LoadedExecutable {
 public:
  RuntimeExecutable(RuntimeClient* client, std::shared_ptr<const CompiledProgram> program);

  absl::StatusOr<ExecuteResult> Execute(
      absl::Span<ArrayRef> args, const ExecuteOptions& options = {},
      std::optional<DeviceListRef> devices = std::nullopt) override;
  std::string name() const override { return program_->plan.name; }
  std::string Fingerprint() const override { return program_->fingerprint; }
  std::vector<ShardingRef> GetParameterShardings() const override {
    return program_->declared_parameter_shardings;
  }
  std::vector<ShardingRef> GetOutputShardings() const override {
    return program_->result_shardings;
  }
  std::vector<ArraySpec> GetParameterSpecs() const override;
  std::vector<ArraySpec> GetOutputSpecs() const override;
  DeviceListRef devices() const override { return program_->devices; }
  Future<> Delete() override;
  bool IsDeleted() const override { return deleted_.load(); }
  std::string Explain() const override { return program_->explain; }

 private:
  // Execute, with allocation failures (std::bad_alloc) as RESOURCE_EXHAUSTED by Execute.
  // `call`: the collective call's frame when the program spans processes, else null.
  absl::StatusOr<ExecuteResult> ExecuteImpl(CollectiveCall* call, absl::Span<ArrayRef> args,
                                            const ExecuteOptions& options,
                                            std::optional<DeviceListRef> devices);
  // Per value, one shard per slot.
  using ValueShards = std::vector<std::vector<Shard>>;
  // A call's arguments checked and resharded where needed; inline: a call allocates no list.
  using CheckedArguments = absl::InlinedVector<RuntimeArray*, 8>;
  using MatchedArguments = absl::InlinedVector<ArrayRef, 8>;
  // The futures of a call's steps' work.
  using StepFutures = absl::InlinedVector<Future<>, 8>;
  // Multi-process: one Execute's messages, and the (step, phase) pairs whose messages are posted.
  struct Exchange {
    int64_t tag_base = -1;  // -1: a single-process executable
    std::set<std::pair<size_t, int>> posted;
  };
  // Data a collective step received from other processes, by (sending slot, reducing slot or -1).
  using ReceivedMap = std::map<std::pair<int, int>, std::shared_ptr<ReceivedBytes>>;

  // ExecuteImpl after the checks (and, multi-process, the agreement). On failure after the
  // agreement, the caller settles the messages of the steps not posted yet (Abandon).
  absl::StatusOr<ExecuteResult> ExecuteChecked(absl::Span<ArrayRef> args,
                                               absl::Span<RuntimeArray* const> checked,
                                               const ExecuteOptions& options, Exchange& exchange);

  absl::StatusOr<CheckedArguments> CheckArguments(absl::Span<ArrayRef> args,
                                                  const ExecuteOptions& options,
                                                  std::optional<DeviceListRef> devices);
  // INVALID_ARGUMENT naming both indices when an argument donated to this call (donated and not
  // in options.non_donatable_input_indices) is also passed as another argument.
  absl::Status CheckDonations(absl::Span<const ArrayRef> args, const ExecuteOptions& options) const;
  absl::Status GuardCommunication();
  // Multi-process: the Execute's agreement (module comment); its tag base.
  absl::StatusOr<int64_t> AgreeOnExecute(CollectiveCall* call,
                                         absl::Span<RuntimeArray* const> checked,
                                         const ExecuteOptions& options);
  // The arguments as the kernels want them (resharded where they differ): an implicit transfer
  // for an argument in another sharding than the declared one, an explicit one (the program's
  // own) for an argument in a declared sharding whose devices are in another order.
  absl::StatusOr<MatchedArguments> MatchShardings(absl::Span<ArrayRef> args,
                                                  absl::Span<RuntimeArray* const> checked);
  absl::Status RunSteps(ValueShards& values, StepFutures& done, Exchange& exchange);
  absl::Status LaunchKernelStep(size_t step, ValueShards& values, StepFutures& done);
  // An all-reduce as a reduce-scatter and an all-gather: each member reduces its range of every
  // member's input, reading 2 * bytes / group_size from each peer instead of every peer's whole
  // input. In one process each member writes its reduced range into every member's output (one
  // phase: the outputs are ready when the group's reductions are); across processes the ranges
  // travel in a second phase (GatherReducedRanges).
  absl::Status RunAllReduce(size_t index, ValueShards& values, StepFutures& done,
                            Exchange& exchange);
  // Phase 2 of RunAllReduce: each member copies every peer's reduced range (from `outputs` here,
  // from `reduced` for other processes' members) into its own output.
  absl::Status GatherReducedRanges(size_t index, const std::vector<Shard>& outputs,
                                   const ReceivedMap& reduced, ValueShards& values,
                                   StepFutures& done);
  absl::Status RunCollectiveStep(size_t index, ValueShards& values, StepFutures& done,
                                 Exchange& exchange);
  // Posts this process's messages of `phase` (a StepMessage::Phase) of collective step `index`:
  // sends from the host-addressable `sources` (by slot, after their futures), receives into new
  // host staging. The sends' futures join `done`.
  ReceivedMap PostMessages(size_t index, int phase, const std::vector<Shard>& sources,
                           Exchange& exchange, StepFutures& done);
  // This process's messages not posted yet (`exchange.posted`), settled without data: empty sends
  // (their receivers fail rather than wait), receives taken and dropped.
  void Abandon(const Exchange& exchange, const absl::Status& error);
  // The shards of `value` in host-addressable memory: each as it is where its slot memory is
  // host-addressable, else a copy into the slot's host memory.
  absl::StatusOr<std::vector<Shard>> StageToHost(const std::vector<Shard>& shards, int64_t bytes);
  // A collective's output of slot `s`, computed in its host memory, in its slot memory.
  absl::StatusOr<Shard> StageToDevice(size_t s, Shard host, int64_t bytes);
  std::vector<ArrayRef> MakeOutputs(ValueShards& values);  // moves the results' shards out
  // Counts, once a collective has run on `slot`, the bytes it read from each peer.
  static void RecordPeerReads(Dispatcher& dispatcher, const CompiledProgram& program, size_t step,
                              size_t slot);

  // The client validates the arguments and reshards them (an argument in another sharding is an
  // implicit ReshardArrays); the dispatcher guards, orders, counts and carries the program's own
  // movements (staging, collectives, messages between processes).
  RuntimeClient* client_;
  Dispatcher* dispatcher_;
  std::shared_ptr<const CompiledProgram> program_;
  std::atomic<bool> deleted_{false};
};

}  // namespace tessera::runtime

#endif  // TESSERA_IFRT_RUNTIME_PROGRAM_RUNTIME_EXECUTABLE_H_
