#include "ifrt/runtime/dispatcher.h"

// GCC 12 reports false -Wmaybe-uninitialized inside absl::InlinedVector moves (PlanEndpoint's
// Index) when building with -fsanitize=address (make test-asan).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <optional>
#include <utility>

#include "base/status_macros.h"
#include "guard/level.h"
#include "ifrt/runtime/distributed/distributed_runtime.h"
#include "ifrt/runtime/transfer_events.h"

namespace tessera::runtime {
namespace {

int64_t ShardBytes(const sharding::ShardLayout& layout, int slot, int64_t element_bytes) {
  return layout.slot_box(slot).num_elements() * element_bytes;
}

// The endpoints of an array's shards, as a plan's sources.
std::vector<PlanEndpoint> SourceEndpoints(const RuntimeArray& array,
                                          const std::vector<Shard>& shards) {
  const int n = array.layout().num_slots();
  std::vector<PlanEndpoint> src(n);
  for (int i = 0; i < n; ++i) {
    src[i].memory = array.memories()[i];
    src[i].buffer = shards[i].buffer;
    src[i].ready = shards[i].ready;
    src[i].shard_shape = array.layout().shard_shape(i);
  }
  return src;
}

// Completes the destination endpoints of `layout` in `memories`: each slot's memory and shape, and
// a new buffer where the slot has none yet (an aliased slot already shares its source's).
absl::Status CompleteDestinations(const sharding::ShardLayout& layout,
                                  const std::vector<RuntimeMemory*>& memories,
                                  int64_t element_bytes, std::vector<PlanEndpoint>& dst) {
  const int n = layout.num_slots();
  dst.resize(n);
  for (int i = 0; i < n; ++i) {
    dst[i].memory = memories[i];
    dst[i].shard_shape = layout.shard_shape(i);
    if (dst[i].buffer != nullptr) continue;
    if (!memories[i]->device()->IsAddressable()) continue;  // another process's shard
    TESSERA_ASSIGN_OR_RETURN(dst[i].buffer,
                             memories[i]->Allocate(ShardBytes(layout, i, element_bytes)));
  }
  return absl::OkStatus();
}

// The shards of a plan's output: the destination buffers, each ready once its copies are done.
std::vector<Shard> OutputShards(const std::vector<PlanEndpoint>& dst, const PlanExecution& exec) {
  std::vector<Shard> shards(dst.size());
  for (size_t i = 0; i < dst.size(); ++i) shards[i] = Shard{dst[i].buffer, exec.dst_ready[i]};
  return shards;
}

// Whether a buffer of memory `a` may also be slot memory `b`'s: both of this process, in host
// memory of one platform whose host buffers serve every device (Platform::
// HostBuffersServeEveryDevice), of the same kind and platform memory.
bool MayShareBuffer(const RuntimeMemory& a, const RuntimeMemory& b) {
  const Platform* platform = a.device()->platform();
  return platform != nullptr && platform->HostBuffersServeEveryDevice() &&
         b.device()->platform() == platform && a.host_addressable() && b.host_addressable() &&
         a.Kind() == b.Kind() && a.platform_memory() == b.platform_memory();
}

// For each slot of `placement`, the first slot of its replica group whose buffer it may take
// (MayShareBuffer): itself where none may serve it.
std::vector<int> SharedReplicaLeaders(const Placement& placement) {
  const std::vector<RuntimeMemory*>& memories = *placement.memories;
  std::vector<int> leader_of(memories.size());
  for (const std::vector<int>& group : placement.layout->replica_groups()) {
    std::vector<int> leaders;
    for (int s : group) {
      leader_of[s] = s;
      for (int l : leaders) {
        if (MayShareBuffer(*memories[l], *memories[s])) {
          leader_of[s] = l;
          break;
        }
      }
      if (leader_of[s] == s) leaders.push_back(s);
    }
  }
  return leader_of;
}

}  // namespace

Dispatcher::Dispatcher(guard::Policy policy, std::unique_ptr<Processes> processes,
                       std::vector<int64_t> local_memory_ids)
    : guard_(policy),
      processes_(processes != nullptr ? std::move(processes) : std::make_unique<LocalProcesses>()),
      local_memory_ids_(std::move(local_memory_ids)) {}

Dispatcher::~Dispatcher() = default;

// ---------------------------------------------------------------------------------------------
// Where bytes live

absl::StatusOr<std::vector<RuntimeMemory*>> Dispatcher::ResolveMemories(const Sharding& sharding) {
  std::vector<RuntimeMemory*> out;
  out.reserve(sharding.devices()->size());
  for (Device* d : sharding.devices()->devices()) {
    auto* device = static_cast<RuntimeDevice*>(d);
    TESSERA_ASSIGN_OR_RETURN(RuntimeMemory* const memory,
                             device->ResolveMemory(sharding.memory_kind()));
    out.push_back(memory);
  }
  return out;
}

absl::StatusOr<Placement> Dispatcher::ResolvePlacement(const Sharding& sharding,
                                                       const Shape& shape) {
  TESSERA_ASSIGN_OR_RETURN(sharding::ShardLayout layout, sharding.Layout(shape));
  TESSERA_ASSIGN_OR_RETURN(std::vector<RuntimeMemory*> memories, ResolveMemories(sharding));
  return Placement::Of(std::move(layout), std::move(memories));
}

std::vector<int64_t> Dispatcher::Locations(const std::vector<RuntimeMemory*>& memories) {
  std::vector<int64_t> out;
  out.reserve(memories.size());
  for (RuntimeMemory* m : memories) out.push_back(m->Id().value);
  return out;
}

// ---------------------------------------------------------------------------------------------
// The guard, plans, statistics and tracing

absl::StatusOr<std::string> Dispatcher::GuardTransfer(const guard::TransferEvent& event) {
  guard::TransferGuard::Decision decision = guard_.Enforce(event);
  TESSERA_RETURN_IF_ERROR(decision.status);
  // A call that moves no bytes is not a transfer: its copies (local ones, if any) carry no action.
  if (event.bytes == 0) return std::string();
  return std::string(guard::ActionName(decision.action));
}

absl::StatusOr<std::shared_ptr<const sharding::ReshardPlan>> Dispatcher::GetPlan(
    const sharding::ShardLayout& src, std::vector<int64_t> src_locations,
    const sharding::ShardLayout& dst, std::vector<int64_t> dst_locations, int64_t element_bytes,
    bool fan_out) {
  return plan_cache_.Get(src, std::move(src_locations), dst, std::move(dst_locations),
                         element_bytes, fan_out);
}

void Dispatcher::Record(int32_t src_device, int32_t dst_device, int64_t bytes, int64_t copies) {
  std::lock_guard<std::mutex> lock(stats_mu_);
  RecordLocked(src_device, dst_device, bytes, copies);
}

void Dispatcher::RecordTraffic(const TransferTraffic& traffic) {
  std::lock_guard<std::mutex> lock(stats_mu_);
  for (const auto& [pair, amount] : traffic) {
    RecordLocked(pair.first, pair.second, amount.first, amount.second);
  }
}

void Dispatcher::RecordLocked(int32_t src_device, int32_t dst_device, int64_t bytes,
                              int64_t copies) {
  TransferStats::Counter* c;
  if (src_device == TransferStats::kHost) {
    c = &stats_.host_to_device;
  } else if (dst_device == TransferStats::kHost) {
    c = &stats_.device_to_host;
  } else if (src_device == dst_device) {
    c = &stats_.local;
  } else {
    c = &stats_.device_to_device;
  }
  c->bytes += bytes;
  c->copies += copies;
  auto& pair = stats_.per_device_pair[{src_device, dst_device}];
  pair.bytes += bytes;
  pair.copies += copies;
}

TransferStats Dispatcher::transfer_stats() const {
  std::lock_guard<std::mutex> lock(stats_mu_);
  return stats_;
}

void Dispatcher::SetTransferTrace(std::shared_ptr<TransferTrace> trace) {
  std::lock_guard<std::mutex> lock(trace_mu_);
  trace_ = std::move(trace);
}

PlanContext Dispatcher::Context(std::string_view op, std::string guard_action,
                                bool forwards_are_host_to_device) {
  return PlanContext{[this](const TransferTraffic& traffic) { RecordTraffic(traffic); }, trace_,
                     std::string(op), std::move(guard_action), forwards_are_host_to_device};
}

PlanExecution Dispatcher::ExecuteLocked(const sharding::ReshardPlan& plan, int64_t element_bytes,
                                        absl::Span<const PlanEndpoint> sources,
                                        absl::Span<const PlanEndpoint> destinations,
                                        const PlanContext& context, int64_t tag_base) {
  return processes_->Execute(plan, element_bytes, sources, destinations, context, tag_base);
}

PlanExecution Dispatcher::Execute(const sharding::ReshardPlan& plan, int64_t element_bytes,
                                  absl::Span<const PlanEndpoint> sources,
                                  absl::Span<const PlanEndpoint> destinations, std::string_view op,
                                  std::string guard_action, bool forwards_are_host_to_device) {
  std::lock_guard<std::mutex> trace_lock(trace_mu_);
  std::lock_guard<std::mutex> lock(enqueue_mu_);
  return ExecuteLocked(plan, element_bytes, sources, destinations,
                       Context(op, std::move(guard_action), forwards_are_host_to_device),
                       /*tag_base=*/-1);
}

// ---------------------------------------------------------------------------------------------
// Host -> devices, devices -> host

absl::StatusOr<Dispatcher::Upload> Dispatcher::PlanUpload(std::string_view op, DType dtype,
                                                          const Shape& shape,
                                                          const ShardingRef& sharding,
                                                          TransferOptions options) {
  const int64_t element_bytes = *dtype.byte_size();
  Upload upload;
  if (std::shared_ptr<const PlanCache::ReshardEntry> hit =
          plan_cache_.FindReshard(nullptr, sharding.get(), shape.dims(), element_bytes)) {
    upload.placement = hit->dst_placement;
    upload.plan = hit->plan;
    upload.addressable = DistributedRuntime::AllAddressable(*upload.placement.memories);
    upload.leader_of = hit->leader_of;
    upload.written = hit->written;
  } else {
    TESSERA_ASSIGN_OR_RETURN(upload.placement, ResolvePlacement(*sharding, shape));
    upload.addressable = DistributedRuntime::AllAddressable(*upload.placement.memories);
    TESSERA_RETURN_IF_ERROR(ShareReplicas(upload));
  }
  const Placement& written = upload.Written();
  if (upload.plan == nullptr) {
    const std::vector<RuntimeMemory*>& memories = *written.memories;
    TESSERA_ASSIGN_OR_RETURN(
        upload.plan,
        GetPlan(sharding::ShardLayout::Replicated(shape.dims(), 1), {TransferStats::kHost},
                *written.layout, Locations(memories), element_bytes,
                /*fan_out=*/upload.addressable));
    if (!upload.addressable) {
      upload.plan = DistributedRuntime::LocalPart(*upload.plan, nullptr, memories);
    }
    plan_cache_.InsertReshard(
        shape.dims(), element_bytes,
        std::make_shared<const PlanCache::ReshardEntry>(PlanCache::ReshardEntry{
            nullptr, sharding, upload.placement, upload.plan, upload.leader_of, upload.written}));
  }
  // The devices that take a written buffer are named too (an empty region moves no bytes).
  std::vector<RuntimeMemory*> sharing;
  for (size_t s = 0; s < upload.leader_of.size(); ++s) {
    const int leader = upload.leader_of[s];
    if (leader != static_cast<int>(s) &&
        upload.placement.layout->slot_box(leader).num_elements() > 0) {
      sharing.push_back((*upload.placement.memories)[s]);
    }
  }
  TESSERA_ASSIGN_OR_RETURN(upload.guard_action,
                           GuardTransfer(UploadEvent(op, *upload.plan, *written.memories, dtype,
                                                     shape, options, sharing)));
  return upload;
}

absl::Status Dispatcher::ShareReplicas(Upload& upload) {
  upload.leader_of.clear();
  // Each process writes its own shards; and where no two slots hold one region, none is shared.
  const sharding::ShardLayout& placed = *upload.placement.layout;
  if (!upload.addressable ||
      placed.replica_groups().size() == static_cast<size_t>(placed.num_slots())) {
    return absl::OkStatus();
  }
  std::vector<int> leader_of = SharedReplicaLeaders(upload.placement);
  std::vector<sharding::Box> boxes;
  std::vector<RuntimeMemory*> memories;
  for (size_t s = 0; s < leader_of.size(); ++s) {
    if (leader_of[s] != static_cast<int>(s)) continue;
    boxes.push_back(placed.slot_box(static_cast<int>(s)));
    memories.push_back((*upload.placement.memories)[s]);
  }
  if (memories.size() == leader_of.size()) return absl::OkStatus();  // nothing shared
  TESSERA_ASSIGN_OR_RETURN(
      sharding::ShardLayout layout,
      sharding::ShardLayout::FromBoxes(placed.global_shape(), std::move(boxes)));
  upload.leader_of = std::move(leader_of);
  upload.written = Placement::Of(std::move(layout), std::move(memories));
  return absl::OkStatus();
}

absl::StatusOr<Dispatcher::UploadRun> Dispatcher::RunUpload(std::string_view op,
                                                            const Upload& upload,
                                                            PlanEndpoint source,
                                                            int64_t element_bytes) {
  std::vector<PlanEndpoint> dst;
  TESSERA_RETURN_IF_ERROR(CompleteDestinations(*upload.Written().layout, *upload.Written().memories,
                                               element_bytes, dst));
  UploadRun run;
  // The forwards between replicas are legs of this host-to-device transfer.
  run.exec = Execute(*upload.plan, element_bytes, {std::move(source)}, dst, op, upload.guard_action,
                     /*forwards_are_host_to_device=*/true);
  if (!run.exec.status.ok()) return run;
  run.shards = OutputShards(dst, run.exec);
  if (upload.leader_of.empty()) return run;
  // Each slot takes its leader's shard; the written slots are the leaders in slot order.
  std::vector<int> written_index(upload.leader_of.size(), -1);
  std::vector<Shard> shards(upload.leader_of.size());
  for (size_t s = 0, next = 0; s < shards.size(); ++s) {
    if (upload.leader_of[s] == static_cast<int>(s)) written_index[s] = static_cast<int>(next++);
    shards[s] = run.shards[written_index[upload.leader_of[s]]];
  }
  run.shards = std::move(shards);
  return run;
}

absl::StatusOr<Future<>> Dispatcher::Download(std::string_view op, const RuntimeArray& array,
                                              const std::vector<Shard>& shards,
                                              PlanEndpoint destination, TransferOptions options) {
  const Shape& shape = array.shape();
  const int64_t element_bytes = array.element_bytes();
  // Each region is read from one replica, spreading the reads over the replicas. An array's
  // layout and memories follow from its sharding and shape: the plan is cached by the sharding.
  const ShardingRef sharding = array.shared_ptr_sharding();
  std::shared_ptr<const sharding::ReshardPlan> plan;
  if (std::shared_ptr<const PlanCache::ReshardEntry> hit =
          plan_cache_.FindReshard(sharding.get(), nullptr, shape.dims(), element_bytes)) {
    plan = hit->plan;
  } else {
    TESSERA_ASSIGN_OR_RETURN(plan, GetPlan(array.layout(), Locations(array.memories()),
                                           sharding::ShardLayout::Replicated(shape.dims(), 1),
                                           {TransferStats::kHost}, element_bytes,
                                           /*fan_out=*/false));
    plan_cache_.InsertReshard(shape.dims(), element_bytes,
                              std::make_shared<const PlanCache::ReshardEntry>(
                                  PlanCache::ReshardEntry{sharding, nullptr, Placement{}, plan}));
  }
  TESSERA_ASSIGN_OR_RETURN(std::string action,
                           GuardTransfer(DownloadEvent(op, *plan, array, options)));
  PlanExecution exec = Execute(*plan, element_bytes, SourceEndpoints(array, shards),
                               {std::move(destination)}, op, std::move(action));
  // An allocation failure part way: all_done carries it, once the copies into the host are over.
  if (!exec.status.ok()) return exec.all_done;
  // Report the array's own error (a poisoned input) even where no copy read the failing shard.
  return JoinFutures({exec.all_done, array.GetReadyFuture()});
}

// ---------------------------------------------------------------------------------------------
// Devices -> devices

// One array of a reshard call: the input, its shards, where the output goes, the plan and the
// output's endpoints.
struct Dispatcher::ReshardWork {
  RuntimeArray* input;
  std::vector<Shard> src_shards;
  Placement placement;
  std::shared_ptr<const sharding::ReshardPlan> plan;
  std::vector<PlanEndpoint> dst;
  int64_t tag_base = -1;  // multi-process clients: the plan's first message tag
};

absl::StatusOr<std::vector<MovedShards>> Dispatcher::Reshard(
    CollectiveCall* call, std::string_view op, absl::Span<RuntimeArray* const> arrays,
    absl::Span<const ArraySpec> specs, ArrayCopySemantics semantics, TransferOptions options) {
  std::vector<ReshardWork> work;
  work.reserve(arrays.size());
  DeviceTraffic traffic;
  for (size_t i = 0; i < arrays.size(); ++i) {
    TESSERA_ASSIGN_OR_RETURN(ReshardWork w, PlanOneReshard(arrays[i], specs[i]));
    AddDeviceTraffic(*w.plan, w.input->memories(), *w.placement.memories, traffic);
    work.push_back(std::move(w));
  }

  // One guard check for the whole call, before any byte moves.
  TESSERA_ASSIGN_OR_RETURN(std::string action,
                           GuardTransfer(ReshardEvent(op, arrays, traffic, options)));

  // Destination buffers: shared with the source where the plan aliases a whole shard (unless the
  // caller wants copies), else new.
  const bool may_alias = semantics != ArrayCopySemantics::kAlwaysCopy;
  for (ReshardWork& w : work) TESSERA_RETURN_IF_ERROR(PrepareDestinations(w, may_alias));
  TESSERA_RETURN_IF_ERROR(AgreeOnReshard(call, op, work, semantics));
  return EnqueueReshards(op, action, work);
}

absl::Status Dispatcher::AgreeOnReshard(CollectiveCall* call, std::string_view op,
                                        std::vector<ReshardWork>& work,
                                        ArrayCopySemantics semantics) {
  // Outside a collective call (every call of a single-process client) the tags stay -1: nothing
  // to agree on, and no parts to build on this per-call path.
  if (call == nullptr) return absl::OkStatus();
  std::vector<CollectivePart> parts;
  for (const ReshardWork& w : work) {
    parts.push_back(CollectivePart{
        static_cast<int>(w.input->dtype().kind()), w.input->element_bytes(), &w.input->layout(),
        &w.input->memories(), w.placement.layout.get(), w.placement.memories.get(), w.plan.get()});
  }
  TESSERA_ASSIGN_OR_RETURN(int64_t tag,
                           processes_->AgreeOnCall(call, op, static_cast<int>(semantics), parts));
  for (ReshardWork& w : work) {
    w.tag_base = tag;
    if (tag >= 0) tag += DistributedRuntime::MessageWindow(w.input->layout(), *w.placement.layout);
  }
  return absl::OkStatus();
}

absl::StatusOr<Dispatcher::ReshardWork> Dispatcher::PlanOneReshard(RuntimeArray* array,
                                                                   const ArraySpec& spec) {
  TESSERA_ASSIGN_OR_RETURN(std::vector<Shard> shards, array->shards());
  // By the shardings' identity first: no layout computed or hashed on a hit.
  ShardingRef src_sharding = array->shared_ptr_sharding();
  if (std::shared_ptr<const PlanCache::ReshardEntry> hit = plan_cache_.FindReshard(
          src_sharding.get(), spec.sharding.get(), spec.shape.dims(), array->element_bytes())) {
    return ReshardWork{array, std::move(shards), hit->dst_placement, hit->plan, {}};
  }
  TESSERA_ASSIGN_OR_RETURN(Placement placement, ResolvePlacement(*spec.sharding, spec.shape));
  // Multi-process: only this process's part of the plan, the copies touching its memories.
  std::optional<std::vector<int64_t>> part;
  if (processes_->PlansItsPart()) part = local_memory_ids_;
  TESSERA_ASSIGN_OR_RETURN(
      std::shared_ptr<const sharding::ReshardPlan> plan,
      plan_cache_.Get(array->layout(), Locations(array->memories()), *placement.layout,
                      Locations(*placement.memories), array->element_bytes(), /*fan_out=*/false,
                      std::move(part)));
  // The identity cache is per client, and so is the part (this process's memories): a hit stays
  // this process's part.
  plan_cache_.InsertReshard(spec.shape.dims(), array->element_bytes(),
                            std::make_shared<const PlanCache::ReshardEntry>(PlanCache::ReshardEntry{
                                std::move(src_sharding), spec.sharding, placement, plan}));
  return ReshardWork{array, std::move(shards), std::move(placement), std::move(plan), {}};
}

absl::Status Dispatcher::PrepareDestinations(ReshardWork& w, bool may_alias) {
  w.dst.resize(w.placement.layout->num_slots());
  if (may_alias) {
    for (const sharding::BoxCopy& c : w.plan->copies) {
      if (c.kind == sharding::BoxCopy::Kind::kAlias) {
        w.dst[c.dst_slot].buffer = w.src_shards[c.src_slot].buffer;
      }
    }
  }
  return CompleteDestinations(*w.placement.layout, *w.placement.memories, w.input->element_bytes(),
                              w.dst);
}

absl::StatusOr<std::vector<MovedShards>> Dispatcher::EnqueueReshards(
    std::string_view op, const std::string& action, std::vector<ReshardWork>& work) {
  std::vector<MovedShards> outputs;
  outputs.reserve(work.size());
  // The locks are held across the call's arrays: its copies enqueue in one global order.
  std::lock_guard<std::mutex> trace_lock(trace_mu_);
  std::lock_guard<std::mutex> lock(enqueue_mu_);
  for (size_t i = 0; i < work.size(); ++i) {
    ReshardWork& w = work[i];
    PlanExecution exec =
        ExecuteLocked(*w.plan, w.input->element_bytes(), SourceEndpoints(*w.input, w.src_shards),
                      w.dst, Context(op, action), w.tag_base);
    // Ran out of memory part way: the call fails (the arrays enqueued before are dropped); the
    // other processes' messages of the arrays not enqueued are settled, so that none waits.
    if (!exec.status.ok()) {
      for (size_t j = i + 1; j < work.size(); ++j) {
        processes_->Abandon(*work[j].plan, work[j].input->element_bytes(),
                            SourceEndpoints(*work[j].input, work[j].src_shards), work[j].dst,
                            exec.status, work[j].tag_base);
      }
      return exec.status;
    }
    outputs.push_back(MovedShards{std::move(w.placement), OutputShards(w.dst, exec)});
  }
  return outputs;
}

// ---------------------------------------------------------------------------------------------
// Local copies

Future<> Dispatcher::CopyWithinDevice(RuntimeDevice* device, PlatformBufferRef src,
                                      PlatformBufferRef dst, int64_t bytes, const Future<>& after) {
  std::vector<BufferToBufferCopy> copies;
  copies.push_back(
      BufferToBufferCopy{std::move(src), std::move(dst),
                         StridedCopy::BetweenDenseArrays(1, {bytes}, {0}, {bytes}, {0}, {bytes})});
  Future<> done = device->platform()->CopyBuffersToBuffers(
      device->platform_device(), std::move(copies), absl::MakeConstSpan(&after, 1));
  const int32_t id = device->Id().value;
  done.OnReady([this, id, bytes](const absl::Status& status) {
    if (status.ok()) Record(id, id, bytes, 1);
  });
  return done;
}

absl::StatusOr<std::vector<Shard>> Dispatcher::CopyShardsLocally(
    std::string_view op, const sharding::ShardLayout& layout,
    const std::vector<RuntimeMemory*>& memories, const std::vector<Shard>& shards,
    int64_t element_bytes) {
  // The plan from the layout to itself aliases every shard; with new destination buffers the
  // executor runs each alias as a copy within its memory: local, traced, never a transfer.
  TESSERA_ASSIGN_OR_RETURN(std::shared_ptr<const sharding::ReshardPlan> plan,
                           GetPlan(layout, Locations(memories), layout, Locations(memories),
                                   element_bytes, /*fan_out=*/false));
  std::vector<PlanEndpoint> src(shards.size());
  for (size_t i = 0; i < shards.size(); ++i) {
    src[i].memory = memories[i];
    src[i].buffer = shards[i].buffer;
    src[i].ready = shards[i].ready;
    src[i].shard_shape = layout.shard_shape(i);
  }
  // Every buffer first: a failed allocation releases the others before any copy starts.
  std::vector<PlanEndpoint> dst;
  TESSERA_RETURN_IF_ERROR(CompleteDestinations(layout, memories, element_bytes, dst));
  PlanExecution exec = Execute(*plan, element_bytes, src, dst, op, /*guard_action=*/"");
  TESSERA_RETURN_IF_ERROR(exec.status);
  return OutputShards(dst, exec);
}

}  // namespace tessera::runtime
