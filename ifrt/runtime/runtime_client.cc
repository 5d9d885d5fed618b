#include "ifrt/runtime/runtime_client.h"

#include "ifrt/array_spec.h"
#include "ifrt/strided_copy.h"

// GCC 12 reports false -Wmaybe-uninitialized inside absl::InlinedVector moves (PlanEndpoint's
// Index) when building with -fsanitize=address (make test-asan).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <algorithm>
#include <atomic>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "guard/level.h"
#include "ifrt/runtime/plan_executor.h"
#include "ifrt/transfer_stats.h"
#include "sharding/planner.h"

namespace tessera::runtime {
namespace {

// Runs a callback exactly once, however many copies of the holder call it.
class OnceCallback {
 public:
  // Takes `fn` only once its own state is allocated: if that allocation fails, `fn` is still the
  // caller's to call.
  explicit OnceCallback(std::function<void()>& fn) : state_(std::make_shared<State>()) {
    state_->fn = std::move(fn);
    fn = nullptr;
  }
  void operator()() const {
    if (!state_->fn) return;
    if (!state_->called.exchange(true)) state_->fn();
  }

 private:
  struct State {
    std::function<void()> fn;
    std::atomic<bool> called{false};
  };
  std::shared_ptr<State> state_;
};

// Calls `callback` when destroyed while still armed: a call that fails before it hands the host
// buffer to a transfer releases the buffer on every return path.
struct CallOnFailure {
  OnceCallback callback;
  bool armed = true;
  ~CallOnFailure() {
    if (armed) callback();
  }
};

std::vector<int> DeviceIds(const std::set<int32_t>& ids) {
  return std::vector<int>(ids.begin(), ids.end());
}

std::vector<int64_t> Dims(const Shape& shape) {
  return std::vector<int64_t>(shape.dims().begin(), shape.dims().end());
}

int64_t ShardBytes(const sharding::ShardLayout& layout, int slot, int64_t element_bytes) {
  return layout.slot_box(slot).num_elements() * element_bytes;
}

std::string MemoryKindOf(const std::vector<RuntimeMemory*>& memories) {
  std::set<std::string> kinds;
  for (RuntimeMemory* m : memories) kinds.insert(m->Kind().DebugString());
  return absl::StrJoin(kinds, ",");
}

absl::Status CheckDType(DType dtype, std::string_view op) {
  if (!dtype.byte_size().has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(op), ": invalid dtype ", dtype.DebugString()));
  }
  return absl::OkStatus();
}

// The byte strides given for the user's host buffer (checked), else row-major ones.
absl::StatusOr<Index> GivenByteStrides(std::optional<absl::Span<const int64_t>> byte_strides,
                                       const Shape& shape, int64_t element_bytes,
                                       std::string_view op) {
  if (!byte_strides.has_value()) {
    return StridedCopy::RowMajorByteStrides(shape.dims(), element_bytes);
  }
  if (static_cast<int>(byte_strides->size()) != shape.rank()) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(op), ": byte_strides [", absl::StrJoin(*byte_strides, ","),
                     "] has ", byte_strides->size(), " entries but the shape ", shape.DebugString(),
                     " has rank ", shape.rank()));
  }
  for (size_t i = 0; i < byte_strides->size(); ++i) {
    if ((*byte_strides)[i] < 0) {
      return absl::InvalidArgumentError(absl::StrCat(std::string(op), ": byte_strides [",
                                                     absl::StrJoin(*byte_strides, ","),
                                                     "] has a negative stride in dimension ", i));
    }
  }
  return Index(byte_strides->begin(), byte_strides->end());
}

// Byte strides of the user's host buffer at `data`: given ones (checked), else row-major; the bytes
// they span must neither overflow nor run past the end of the address space.
absl::StatusOr<Index> HostByteStrides(std::optional<absl::Span<const int64_t>> byte_strides,
                                      const Shape& shape, int64_t element_bytes,
                                      std::string_view op, const void* data) {
  TESSERA_ASSIGN_OR_RETURN(Index strides, GivenByteStrides(byte_strides, shape, element_bytes, op));
  absl::StatusOr<int64_t> span = HostSpanBytes(shape.dims(), strides, element_bytes);
  absl::Status status = span.ok() ? CheckHostRange(data, *span) : span.status();
  if (!status.ok()) {
    return absl::Status(status.code(), absl::StrCat(std::string(op), ": ", status.message()));
  }
  return strides;
}

// The user's host buffer may be null only when there is nothing to read or write.
absl::Status CheckHostData(const void* data, DType dtype, const Shape& shape, std::string_view op) {
  if (data == nullptr && shape.num_elements() > 0) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(op), ": data is null but ",
                                                   dtype.DebugString(), shape.DebugString(),
                                                   " has ", shape.num_elements(), " elements"));
  }
  return absl::OkStatus();
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

// The host-to-device movement of an upload: every byte written to a replica, whether read from
// the host or forwarded from another replica (the forwards are legs of the upload, as
// docs/transfer-guard.md says), and the devices they go to.
guard::TransferEvent UploadEvent(std::string_view op, const sharding::ReshardPlan& plan,
                                 const std::vector<RuntimeMemory*>& memories, DType dtype,
                                 const Shape& shape, TransferOptions options) {
  int64_t bytes = 0;
  std::set<int32_t> dst_ids;
  for (const sharding::BoxCopy& c : plan.copies) {
    if (c.kind != sharding::BoxCopy::Kind::kAlias && c.bytes > 0) {
      bytes += c.bytes;
      dst_ids.insert(memories[c.dst_slot]->device()->Id().value);
    }
  }
  return guard::TransferEvent{.direction = guard::Direction::kHostToDevice,
                              .is_explicit = options.is_explicit,
                              .operation = std::string(op),
                              .dtype = dtype.DebugString(),
                              .shape = Dims(shape),
                              .bytes = bytes,
                              .src_devices = {},
                              .dst_devices = DeviceIds(dst_ids),
                              .src_memory_kind = "",
                              .dst_memory_kind = MemoryKindOf(memories)};
}

// The device-to-host movement of a download.
guard::TransferEvent DownloadEvent(std::string_view op, const sharding::ReshardPlan& plan,
                                   const RuntimeArray& array, TransferOptions options) {
  std::set<int32_t> src_ids;
  for (const sharding::BoxCopy& c : plan.copies) {
    if (c.bytes > 0) src_ids.insert(array.memories()[c.src_slot]->device()->Id().value);
  }
  return guard::TransferEvent{.direction = guard::Direction::kDeviceToHost,
                              .is_explicit = options.is_explicit,
                              .operation = std::string(op),
                              .dtype = array.dtype().DebugString(),
                              .shape = Dims(array.shape()),
                              .bytes = plan.cross_location_bytes,
                              .src_devices = DeviceIds(src_ids),
                              .dst_devices = {},
                              .src_memory_kind = MemoryKindOf(array.memories()),
                              .dst_memory_kind = ""};
}

// What the plans of one reshard call move between devices.
struct DeviceTraffic {
  int64_t bytes = 0;
  std::set<int32_t> src_ids, dst_ids;
  // The memories' kinds are named once per call (ReshardEvent), not once per copy.
  std::set<const RuntimeMemory*> src_memories, dst_memories;
};

// Adds the copies of `plan` (from `src` memories to `dst` memories) that cross devices. Copies
// within a device and aliases are not transfers.
void AddDeviceTraffic(const sharding::ReshardPlan& plan, const std::vector<RuntimeMemory*>& src,
                      const std::vector<RuntimeMemory*>& dst, DeviceTraffic& traffic) {
  for (const sharding::BoxCopy& c : plan.copies) {
    if (c.kind != sharding::BoxCopy::Kind::kCrossLocation || c.bytes == 0) continue;
    const int32_t src_id = src[c.src_slot]->device()->Id().value;
    const int32_t dst_id = dst[c.dst_slot]->device()->Id().value;
    // Between two memories of one device: a local copy, as transfer_stats() counts it.
    if (src_id == dst_id) continue;
    traffic.bytes += c.bytes;
    traffic.src_ids.insert(src_id);
    traffic.dst_ids.insert(dst_id);
    traffic.src_memories.insert(src[c.src_slot]);
    traffic.dst_memories.insert(dst[c.dst_slot]);
  }
}

// The kinds of `memories`, sorted and each once.
std::set<std::string> KindsOf(const std::set<const RuntimeMemory*>& memories) {
  std::set<std::string> kinds;
  for (const RuntimeMemory* m : memories) kinds.insert(m->Kind().DebugString());
  return kinds;
}

// The device-to-device movement of a reshard of `arrays`, described by the first array.
guard::TransferEvent ReshardEvent(std::string_view op, absl::Span<RuntimeArray* const> arrays,
                                  const DeviceTraffic& traffic, TransferOptions options) {
  const Shape& first_shape = arrays.empty() ? Shape() : arrays[0]->shape();
  return guard::TransferEvent{
      .direction = guard::Direction::kDeviceToDevice,
      .is_explicit = options.is_explicit,
      .operation = arrays.size() == 1
                       ? std::string(op)
                       : absl::StrCat(std::string(op), " (", arrays.size(), " arrays; the first)"),
      .dtype = arrays.empty() ? "" : arrays[0]->dtype().DebugString(),
      .shape = Dims(first_shape),
      .bytes = traffic.bytes,
      .src_devices = DeviceIds(traffic.src_ids),
      .dst_devices = DeviceIds(traffic.dst_ids),
      .src_memory_kind = absl::StrJoin(KindsOf(traffic.src_memories), ","),
      .dst_memory_kind = absl::StrJoin(KindsOf(traffic.dst_memories), ",")};
}

// Zero copy: a single compact, aligned shard in a memory the platform can use in place. nullopt
// when the buffer does not qualify or the platform cannot wrap it: the caller then copies.
std::optional<Shard> WrapHostBuffer(const void* data, const Shape& shape, int64_t element_bytes,
                                    const Index& strides, const sharding::ShardLayout& layout,
                                    const std::vector<RuntimeMemory*>& memories,
                                    const OnceCallback& on_done) {
  if (layout.num_slots() != 1 ||
      strides != StridedCopy::RowMajorByteStrides(shape.dims(), element_bytes) || data == nullptr ||
      reinterpret_cast<uintptr_t>(data) % 64 != 0) {
    return std::nullopt;
  }
  RuntimeMemory* m = memories[0];
  RuntimeDevice* d = m->device();
  absl::StatusOr<PlatformBufferRef> wrapped = d->platform()->WrapHostMemory(
      d->platform_device(), m->platform_memory(), const_cast<void*>(data),
      shape.num_elements() * element_bytes, on_done);
  if (!wrapped.ok()) return std::nullopt;  // not an error: the buffer is copied instead
  return Shard{*std::move(wrapped), MakeReadyFuture()};
}

// Calls `on_done` once the copies of an upload no longer read the host buffer.
void ReleaseHostBufferWhenRead(HostBufferSemantics semantics, const Future<>& all_done,
                               const OnceCallback& on_done) {
  if (semantics == HostBufferSemantics::kImmutableOnlyDuringCall) {
    // The caller may reuse `data` as soon as we return: wait until every read of it is done.
    all_done.Await().IgnoreError();  // an error reaches the array's ready future
    on_done();
  } else {
    all_done.OnReady([on_done](const absl::Status&) { on_done(); });
  }
}

// The checks of AssembleArrayFromSingleDeviceArrays on its part `i`.
absl::Status CheckAssemblyPart(const RuntimeArray& a, int i, DType dtype, const Sharding& sharding,
                               const sharding::ShardLayout& layout, RuntimeMemory* memory,
                               std::string_view op) {
  if (a.dtype() != dtype) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(op), ": array ", i, " has dtype ",
                                                   a.dtype().DebugString(), ", expected ",
                                                   dtype.DebugString()));
  }
  if (a.sharding().devices()->size() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(op), ": array ", i, " is on ",
                                                   a.sharding().devices()->DebugString(),
                                                   ", not on a single device"));
  }
  const Shape expected(layout.shard_shape(i));
  if (a.shape() != expected) {
    return absl::InvalidArgumentError(absl::StrCat(
        std::string(op), ": array ", i, " has shape ", a.shape().DebugString(), " but shard ", i,
        " of ", sharding.DebugString(), " has shape ", expected.DebugString()));
  }
  if (a.memories()[0] != memory) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(op), ": array ", i, " is in ", a.memories()[0]->DebugString(),
                     " but the sharding puts shard ", i, " in ", memory->DebugString()));
  }
  return absl::OkStatus();
}

// The checks of RemapArrays on the call as a whole.
absl::Status CheckRemapCall(const RemapPlan& plan, size_t num_arrays, ArrayCopySemantics semantics,
                            std::string_view op) {
  TESSERA_RETURN_IF_ERROR(plan.Validate());
  if (num_arrays != plan.input_specs.size()) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(op), ": the plan has ",
                                                   plan.input_specs.size(), " inputs but ",
                                                   num_arrays, " arrays were given"));
  }
  if (semantics != ArrayCopySemantics::kDonateInput) {
    return absl::InvalidArgumentError(absl::StrCat(
        std::string(op), ": kDonateInput is required (got ", ArrayCopySemanticsName(semantics),
        "): remapping moves shards between arrays without copying"));
  }
  return absl::OkStatus();
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Construction

RuntimeClient::RuntimeClient(guard::Policy policy) : guard_(policy) {}

RuntimeClient::~RuntimeClient() {
  // Drain every stream of every platform before any platform goes away: an operation of one
  // platform may use another's buffers (a GPU copying through a CPU buffer's host address), and
  // in-flight callbacks use the members below. Each stream is in order, so a no-op on it finishes
  // after everything enqueued before it.
  std::vector<Future<>> drained;
  for (const std::unique_ptr<Platform>& p : platforms_) {
    for (int d = 0; d < p->device_count(); ++d) {
      drained.push_back(p->EnqueueHostCallback(d, [] { return absl::OkStatus(); }, {}));
    }
  }
  for (const Future<>& f : drained) f.Await().IgnoreError();  // a lost device drains at once
  distributed_.reset();  // waits for its sends and receives in flight
  // Compiled programs hold their kernels, and a kernel holds its platform's device objects (a
  // Vulkan pipeline, its device): they go before the platforms that own those devices.
  compiler_.reset();
  platforms_.clear();
}

absl::StatusOr<std::shared_ptr<RuntimeClient>> RuntimeClient::Create(
    std::vector<std::unique_ptr<Platform>> platforms, guard::Policy transfer_guard_policy,
    std::unique_ptr<ProgramCompiler> program_compiler, std::unique_ptr<Transport> transport) {
  if (platforms.empty()) return absl::InvalidArgumentError("a client needs at least one platform");
  std::shared_ptr<RuntimeClient> client(new RuntimeClient(transfer_guard_policy));
  if (transport != nullptr) {
    // Every process's devices, in one global order (ifrt/runtime/distributed_runtime.h).
    TESSERA_ASSIGN_OR_RETURN(
        client->devices_, DistributedRuntime::GlobalDevices(client.get(), platforms, *transport));
    client->distributed_ = std::make_unique<DistributedRuntime>(std::move(transport));
  } else {
    for (std::unique_ptr<Platform>& platform : platforms) {
      for (int i = 0; i < platform->device_count(); ++i) {
        client->devices_.push_back(std::make_unique<RuntimeDevice>(
            client.get(), DeviceId{static_cast<int32_t>(client->devices_.size())}, platform.get(),
            i));
      }
    }
  }
  int32_t next_memory_id = 0;
  for (std::unique_ptr<RuntimeDevice>& device : client->devices_) {
    device->CreateMemories(&next_memory_id);
    client->device_ptrs_.push_back(device.get());
    if (device->IsAddressable()) client->addressable_ptrs_.push_back(device.get());
  }
  for (std::unique_ptr<Platform>& platform : platforms) {
    client->platforms_.push_back(std::move(platform));
  }
  if (client->addressable_ptrs_.empty()) {
    return absl::InvalidArgumentError("the platforms have no device");
  }
  client->compiler_ = std::make_unique<RuntimeCompiler>(client.get(), std::move(program_compiler));
  return client;
}

Compiler* RuntimeClient::GetDefaultCompiler() { return compiler_.get(); }

int RuntimeClient::process_index() const {
  return distributed_ != nullptr ? distributed_->process_index() : 0;
}

int RuntimeClient::process_count() const {
  return distributed_ != nullptr ? distributed_->process_count() : 1;
}

PlanCacheStats RuntimeClient::program_cache_stats() const { return compiler_->cache_stats(); }

// ---------------------------------------------------------------------------------------------
// Devices

absl::StatusOr<Device*> RuntimeClient::LookupDevice(DeviceId id) const {
  if (id.value < 0 || id.value >= static_cast<int32_t>(devices_.size())) {
    return absl::NotFoundError(absl::StrCat("no device with id ", id.value, " (this client has ",
                                            devices_.size(), " devices, ids 0..",
                                            devices_.size() - 1, ")"));
  }
  return devices_[id.value].get();
}

absl::StatusOr<DeviceListRef> RuntimeClient::MakeDeviceList(
    absl::Span<Device* const> devices) const {
  return CatchAllocationFailure("MakeDeviceList", [&]() -> absl::StatusOr<DeviceListRef> {
    for (Device* d : devices) {
      if (d != nullptr && d->client() != this) {
        return absl::InvalidArgumentError(
            absl::StrCat("device ", d->ToString(), " belongs to another client"));
      }
    }
    return DeviceList::Create(devices);  // INVALID_ARGUMENT "device list entry <i> is null"
  });
}

std::vector<std::string> RuntimeClient::platform_names() const {
  std::vector<std::string> names;
  for (const auto& p : platforms_) names.emplace_back(p->name());
  return names;
}

std::string RuntimeClient::DebugString() const {
  return absl::StrCat("RuntimeClient(platforms=[", absl::StrJoin(platform_names(), ","),
                      "], devices=", devices_.size(),
                      ", transfer_guard=", guard_.policy().ToString(), ")");
}

// ---------------------------------------------------------------------------------------------
// The guard, statistics and tracing

absl::StatusOr<std::string> RuntimeClient::GuardTransfer(const guard::TransferEvent& event) {
  guard::TransferGuard::Decision decision = guard_.Enforce(event);
  TESSERA_RETURN_IF_ERROR(decision.status);
  // A call that moves no bytes is not a transfer: its copies (local ones, if any) carry no action.
  if (event.bytes == 0) return std::string();
  return std::string(guard::ActionName(decision.action));
}

void RuntimeClient::Record(int32_t src_device, int32_t dst_device, int64_t bytes, int64_t copies) {
  std::lock_guard<std::mutex> lock(stats_mu_);
  RecordLocked(src_device, dst_device, bytes, copies);
}

void RuntimeClient::RecordTraffic(const TransferTraffic& traffic) {
  std::lock_guard<std::mutex> lock(stats_mu_);
  for (const auto& [pair, amount] : traffic) {
    RecordLocked(pair.first, pair.second, amount.first, amount.second);
  }
}

void RuntimeClient::RecordLocked(int32_t src_device, int32_t dst_device, int64_t bytes,
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

TransferRecorder RuntimeClient::Recorder() {
  return
      [this](int32_t s, int32_t d, int64_t bytes, int64_t copies) { Record(s, d, bytes, copies); };
}

TransferStats RuntimeClient::transfer_stats() const {
  std::lock_guard<std::mutex> lock(stats_mu_);
  return stats_;
}

void RuntimeClient::SetTransferTrace(std::shared_ptr<TransferTrace> trace) {
  std::lock_guard<std::mutex> lock(trace_mu_);
  trace_ = std::move(trace);
}

PlanContext RuntimeClient::Context(std::string_view op, std::string guard_action,
                                   bool forwards_are_host_to_device) {
  return PlanContext{Recorder(),
                     [this](const TransferTraffic& traffic) { RecordTraffic(traffic); },
                     trace_,
                     std::string(op),
                     std::move(guard_action),
                     forwards_are_host_to_device};
}

PlanExecution RuntimeClient::ExecuteLocked(const sharding::ReshardPlan& plan, int64_t element_bytes,
                                           absl::Span<const PlanEndpoint> sources,
                                           absl::Span<const PlanEndpoint> destinations,
                                           std::string_view op, std::string guard_action,
                                           bool forwards_are_host_to_device) {
  std::lock_guard<std::mutex> trace_lock(trace_mu_);
  std::lock_guard<std::mutex> lock(enqueue_mu_);
  if (distributed_ != nullptr) {  // this process's copies only
    return distributed_->Execute(plan, element_bytes, sources, destinations,
                                 Context(op, std::move(guard_action), forwards_are_host_to_device),
                                 /*tag_base=*/-1);
  }
  return ExecutePlan(plan, element_bytes, sources, destinations,
                     Context(op, std::move(guard_action), forwards_are_host_to_device));
}

// ---------------------------------------------------------------------------------------------
// Validation

absl::Status RuntimeClient::CheckSharding(const ShardingRef& sharding, std::string_view op,
                                          std::string_view argument) const {
  if (sharding == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(op), ": ", std::string(argument), " is null"));
  }
  if (sharding->devices() == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(op), ": ", std::string(argument), " has a null device list"));
  }
  for (Device* d : sharding->devices()->devices()) {
    if (d == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat(std::string(op), ": ", std::string(argument), " has a null device"));
    }
    if (d->client() != this) {
      return absl::InvalidArgumentError(absl::StrCat(std::string(op), ": device ", d->ToString(),
                                                     " of ", sharding->DebugString(),
                                                     " belongs to another client"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<RuntimeMemory*>> RuntimeClient::ResolveMemories(
    const Sharding& sharding) const {
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

absl::StatusOr<RuntimeClient::Placement> RuntimeClient::ResolvePlacement(const Sharding& sharding,
                                                                         const Shape& shape) const {
  TESSERA_ASSIGN_OR_RETURN(sharding::ShardLayout layout, sharding.Layout(shape));
  TESSERA_ASSIGN_OR_RETURN(std::vector<RuntimeMemory*> memories, ResolveMemories(sharding));
  return Placement{std::move(layout), std::move(memories)};
}

absl::StatusOr<RuntimeArray*> RuntimeClient::CheckArray(const ArrayRef& array, std::string_view op,
                                                        size_t index) const {
  if (array == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(op), ": array ", index, " is null"));
  }
  auto* runtime_array = dynamic_cast<RuntimeArray*>(array.get());
  if (runtime_array == nullptr || runtime_array->runtime_client() != this) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(op), ": array ", index, " belongs to another client"));
  }
  if (absl::Status s = runtime_array->CheckNotDeleted(); !s.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat(std::string(op), ": array ", index, ": ", s.message()));
  }
  return runtime_array;
}

// ---------------------------------------------------------------------------------------------
// Planning

std::vector<int64_t> RuntimeClient::Locations(const std::vector<RuntimeMemory*>& memories) {
  std::vector<int64_t> out;
  out.reserve(memories.size());
  for (RuntimeMemory* m : memories) out.push_back(m->Id().value);
  return out;
}

absl::StatusOr<std::shared_ptr<const sharding::ReshardPlan>> RuntimeClient::GetPlan(
    const sharding::ShardLayout& src, std::vector<int64_t> src_locations,
    const sharding::ShardLayout& dst, std::vector<int64_t> dst_locations, int64_t element_bytes,
    bool fan_out) {
  return plan_cache_.Get(src, std::move(src_locations), dst, std::move(dst_locations),
                         element_bytes, fan_out);
}

absl::StatusOr<std::shared_ptr<const sharding::ReshardPlan>> RuntimeClient::PlanReshard(
    const Array& array, const ArraySpec& spec) {
  return CatchAllocationFailure(
      "PlanReshard", [&]() -> absl::StatusOr<std::shared_ptr<const sharding::ReshardPlan>> {
        const auto* a = dynamic_cast<const RuntimeArray*>(&array);
        if (a == nullptr || a->runtime_client() != this) {
          return absl::InvalidArgumentError("PlanReshard: the array belongs to another client");
        }
        TESSERA_RETURN_IF_ERROR(CheckSharding(spec.sharding, "PlanReshard", "spec.sharding"));
        TESSERA_RETURN_IF_ERROR(ValidateArraySpec(spec));
        TESSERA_ASSIGN_OR_RETURN(sharding::ShardLayout layout, spec.sharding->Layout(spec.shape));
        TESSERA_ASSIGN_OR_RETURN(std::vector<RuntimeMemory*> memories,
                                 ResolveMemories(*spec.sharding));
        // The cached plan as is: its locations are memory ids.
        return GetPlan(a->layout(), Locations(a->memories()), layout, Locations(memories),
                       a->element_bytes(), /*fan_out=*/false);
      });
}

// ---------------------------------------------------------------------------------------------
// Host -> devices

absl::StatusOr<ArrayRef> RuntimeClient::MakeArrayFromHostBuffer(
    const void* data, DType dtype, Shape shape,
    std::optional<absl::Span<const int64_t>> byte_strides, ShardingRef sharding,
    HostBufferSemantics semantics, std::function<void()> on_done_with_host_buffer,
    TransferOptions options) {
  absl::StatusOr<ArrayRef> result = CatchAllocationFailure("MakeArrayFromHostBuffer", [&] {
    return MakeArrayImpl(data, dtype, std::move(shape), byte_strides, std::move(sharding),
                         semantics, on_done_with_host_buffer, options);
  });
  // Out of memory before the callback was taken over: it is still ours to call, once.
  if (on_done_with_host_buffer) on_done_with_host_buffer();
  return result;
}

absl::StatusOr<ArrayRef> RuntimeClient::MakeArrayImpl(
    const void* data, DType dtype, Shape shape,
    std::optional<absl::Span<const int64_t>> byte_strides, ShardingRef sharding,
    HostBufferSemantics semantics, std::function<void()>& on_done_with_host_buffer,
    TransferOptions options) {
  constexpr std::string_view kOp = "MakeArrayFromHostBuffer";
  // on_done runs exactly once: handed to the transfer on success, called here when the call fails
  // (the runtime then never reads the buffer again). Taking it empties on_done_with_host_buffer.
  OnceCallback on_done(on_done_with_host_buffer);
  CallOnFailure on_failure{on_done};
  TESSERA_RETURN_IF_ERROR(CheckDType(dtype, kOp));
  TESSERA_RETURN_IF_ERROR(ValidateShape(shape, dtype));
  TESSERA_RETURN_IF_ERROR(CheckSharding(sharding, kOp, "argument 4 (sharding)"));
  const int64_t element_bytes = *dtype.byte_size();
  TESSERA_ASSIGN_OR_RETURN(Index strides,
                           HostByteStrides(byte_strides, shape, element_bytes, kOp, data));
  TESSERA_RETURN_IF_ERROR(CheckHostData(data, dtype, shape, kOp));
  TESSERA_ASSIGN_OR_RETURN(Placement placement, ResolvePlacement(*sharding, shape));

  // Each region is read from the host once and forwarded to its other replicas on the devices.
  // Across processes, each process writes its own shards from its own copy of the data.
  const bool addressable = DistributedRuntime::AllAddressable(placement.memories);
  TESSERA_ASSIGN_OR_RETURN(
      std::shared_ptr<const sharding::ReshardPlan> plan,
      GetPlan(sharding::ShardLayout::Replicated(shape.dims(), 1), {TransferStats::kHost},
              placement.layout, Locations(placement.memories), element_bytes,
              /*fan_out=*/addressable));
  if (!addressable) {
    plan = DistributedRuntime::LocalPart(*plan, nullptr, placement.memories);
  }
  TESSERA_ASSIGN_OR_RETURN(
      std::string action,
      GuardTransfer(UploadEvent(kOp, *plan, placement.memories, dtype, shape, options)));

  if (semantics == HostBufferSemantics::kImmutableZeroCopy && addressable) {
    std::optional<Shard> wrapped = WrapHostBuffer(data, shape, element_bytes, strides,
                                                  placement.layout, placement.memories, on_done);
    if (wrapped.has_value()) {
      on_failure.armed = false;  // the buffer's release calls on_done
      return ArrayRef(std::make_shared<RuntimeArray>(
          this, dtype, std::move(shape), std::move(sharding), std::move(placement.layout),
          std::move(placement.memories), std::vector<Shard>{*std::move(wrapped)}));
    }
  }

  std::vector<PlanEndpoint> dst;
  TESSERA_RETURN_IF_ERROR(
      CompleteDestinations(placement.layout, placement.memories, element_bytes, dst));
  PlanEndpoint src;
  src.host = const_cast<void*>(data);
  src.host_byte_strides = std::move(strides);
  // The forwards between replicas are legs of this host-to-device transfer.
  PlanExecution exec = ExecuteLocked(*plan, element_bytes, {src}, dst, kOp, std::move(action),
                                     /*forwards_are_host_to_device=*/true);
  on_failure.armed = false;  // from here on, the transfer calls on_done
  ReleaseHostBufferWhenRead(semantics, exec.all_done, on_done);
  TESSERA_RETURN_IF_ERROR(exec.status);
  return ArrayRef(std::make_shared<RuntimeArray>(
      this, dtype, std::move(shape), std::move(sharding), std::move(placement.layout),
      std::move(placement.memories), OutputShards(dst, exec)));
}

// ---------------------------------------------------------------------------------------------
// Devices -> host

Future<> RuntimeClient::CopyToHostBuffer(RuntimeArray& array, void* data,
                                         std::optional<absl::Span<const int64_t>> byte_strides,
                                         TransferOptions options) {
  absl::StatusOr<Future<>> done = EnqueueCopyToHost(array, data, byte_strides, options);
  if (!done.ok()) return MakeReadyFuture(done.status());  // the error travels on the future
  return *std::move(done);
}

absl::StatusOr<Future<>> RuntimeClient::EnqueueCopyToHost(
    RuntimeArray& array, void* data, std::optional<absl::Span<const int64_t>> byte_strides,
    TransferOptions options) {
  constexpr std::string_view kOp = "CopyToHostBuffer";
  TESSERA_ASSIGN_OR_RETURN(std::vector<Shard> shards, array.shards());
  TESSERA_RETURN_IF_ERROR(DistributedRuntime::CheckFullyAddressable(array.memories(), kOp));
  const Shape& shape = array.shape();
  const int64_t element_bytes = array.element_bytes();
  TESSERA_ASSIGN_OR_RETURN(Index strides,
                           HostByteStrides(byte_strides, shape, element_bytes, kOp, data));
  TESSERA_RETURN_IF_ERROR(CheckHostData(data, array.dtype(), shape, kOp));
  // Each region is read from one replica, spreading the reads over the replicas.
  TESSERA_ASSIGN_OR_RETURN(std::shared_ptr<const sharding::ReshardPlan> plan,
                           GetPlan(array.layout(), Locations(array.memories()),
                                   sharding::ShardLayout::Replicated(shape.dims(), 1),
                                   {TransferStats::kHost}, element_bytes, /*fan_out=*/false));
  TESSERA_ASSIGN_OR_RETURN(std::string action,
                           GuardTransfer(DownloadEvent(kOp, *plan, array, options)));

  PlanEndpoint dst;
  dst.host = data;
  dst.host_byte_strides = std::move(strides);
  PlanExecution exec = ExecuteLocked(*plan, element_bytes, SourceEndpoints(array, shards), {dst},
                                     kOp, std::move(action));
  // An allocation failure part way: all_done carries it, once the copies into `data` are over.
  if (!exec.status.ok()) return exec.all_done;
  // Report the array's own error (a poisoned input) even where no copy read the failing shard.
  return JoinFutures({exec.all_done, array.GetReadyFuture()});
}

// ---------------------------------------------------------------------------------------------
// Devices -> devices

absl::StatusOr<std::vector<ArrayRef>> RuntimeClient::ReshardArrays(
    absl::Span<ArrayRef> arrays, absl::Span<const ArraySpec> specs, ArrayCopySemantics semantics,
    TransferOptions options) {
  auto body = [&] {
    return CatchAllocationFailure("ReshardArrays",
                                  [&] { return ReshardImpl(arrays, specs, semantics, options); });
  };
  if (distributed_ != nullptr) return distributed_->RunCollective("ReshardArrays", body);
  return body();
}

absl::StatusOr<std::vector<ArrayRef>> RuntimeClient::ReshardImpl(absl::Span<ArrayRef> arrays,
                                                                 absl::Span<const ArraySpec> specs,
                                                                 ArrayCopySemantics semantics,
                                                                 TransferOptions options) {
  constexpr std::string_view kOp = "ReshardArrays";
  if (arrays.size() != specs.size()) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(kOp), ": ", arrays.size(),
                                                   " arrays but ", specs.size(), " specs"));
  }
  std::vector<RuntimeArray*> inputs;
  for (size_t i = 0; i < arrays.size(); ++i) {
    TESSERA_ASSIGN_OR_RETURN(RuntimeArray* const a, CheckArray(arrays[i], kOp, i));
    const ArraySpec& spec = specs[i];
    if (spec.dtype != a->dtype()) {
      return absl::InvalidArgumentError(absl::StrCat(
          std::string(kOp), ": array ", i, " has dtype ", a->dtype().DebugString(),
          " but its spec asks for ", spec.dtype.DebugString(), " (a reshard does not convert)"));
    }
    if (spec.shape != a->shape()) {
      return absl::InvalidArgumentError(
          absl::StrCat(std::string(kOp), ": array ", i, " has shape ", a->shape().DebugString(),
                       " but its spec asks for ", spec.shape.DebugString()));
    }
    TESSERA_RETURN_IF_ERROR(
        CheckSharding(spec.sharding, kOp, absl::StrCat("specs[", i, "].sharding")));
    inputs.push_back(a);
  }
  return ReshardValidated(kOp, inputs, specs, semantics, options);
}

absl::StatusOr<std::vector<ArrayRef>> RuntimeClient::CopyArrays(
    absl::Span<ArrayRef> arrays, std::optional<DeviceListRef> devices,
    std::optional<MemoryKind> memory_kind, ArrayCopySemantics semantics, TransferOptions options) {
  auto body = [&] {
    return CatchAllocationFailure("CopyArrays", [&] {
      return CopyArraysImpl(arrays, std::move(devices), std::move(memory_kind), semantics, options);
    });
  };
  if (distributed_ != nullptr) return distributed_->RunCollective("CopyArrays", body);
  return body();
}

absl::StatusOr<std::vector<ArrayRef>> RuntimeClient::CopyArraysImpl(
    absl::Span<ArrayRef> arrays, std::optional<DeviceListRef> devices,
    std::optional<MemoryKind> memory_kind, ArrayCopySemantics semantics, TransferOptions options) {
  constexpr std::string_view kOp = "CopyArrays";
  if (devices.has_value() && *devices == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(kOp),
                     ": argument 1 (devices) is null; pass std::nullopt to keep each "
                     "array's devices"));
  }
  if (arrays.empty()) return std::vector<ArrayRef>();
  std::vector<RuntimeArray*> inputs;
  std::vector<ArraySpec> specs;
  for (size_t i = 0; i < arrays.size(); ++i) {
    TESSERA_ASSIGN_OR_RETURN(RuntimeArray* const a, CheckArray(arrays[i], kOp, i));
    if (i > 0) {
      const Sharding& first = inputs[0]->sharding();
      if (!SameDeviceList(a->sharding().devices(), first.devices())) {
        return absl::InvalidArgumentError(absl::StrCat(
            std::string(kOp), ": all arrays must have the same device list; array 0 is on ",
            first.devices()->DebugString(), " and array ", i, " on ",
            a->sharding().devices()->DebugString()));
      }
      // Compare the memories the kinds resolve to: MemoryKind() and the default kind's name are
      // the same memory.
      if (a->memories() != inputs[0]->memories()) {
        return absl::InvalidArgumentError(absl::StrCat(
            std::string(kOp), ": all arrays must have the same memory kind; array 0 is in ",
            first.memory_kind().DebugString(), " and array ", i, " in ",
            a->sharding().memory_kind().DebugString()));
      }
    }
    if (devices.has_value()) {
      for (Device* d : (*devices)->devices()) {
        if (d->client() != this) {
          return absl::InvalidArgumentError(absl::StrCat(
              std::string(kOp), ": device ", d->ToString(), " belongs to another client"));
        }
      }
    }
    TESSERA_ASSIGN_OR_RETURN(ShardingRef sharding,
                             a->sharding().WithDeviceAssignment(devices, memory_kind));
    specs.push_back(ArraySpec{a->dtype(), a->shape(), std::move(sharding)});
    inputs.push_back(a);
  }
  return ReshardValidated(kOp, inputs, specs, semantics, options);
}

// One array of a reshard call: the input, its shards, where the output goes, the plan and the
// output's endpoints.
struct RuntimeClient::ReshardWork {
  RuntimeArray* input;
  std::vector<Shard> src_shards;
  Placement placement;
  std::shared_ptr<const sharding::ReshardPlan> plan;
  std::vector<PlanEndpoint> dst;
  int64_t tag_base = -1;  // multi-process clients: the plan's first message tag
};

absl::StatusOr<std::vector<ArrayRef>> RuntimeClient::ReshardValidated(
    std::string_view op, absl::Span<RuntimeArray* const> arrays, absl::Span<const ArraySpec> specs,
    ArrayCopySemantics semantics, TransferOptions options) {
  std::vector<ReshardWork> work;
  work.reserve(arrays.size());
  DeviceTraffic traffic;
  for (size_t i = 0; i < arrays.size(); ++i) {
    TESSERA_ASSIGN_OR_RETURN(ReshardWork w, PlanOneReshard(arrays[i], specs[i]));
    AddDeviceTraffic(*w.plan, w.input->memories(), w.placement.memories, traffic);
    work.push_back(std::move(w));
  }

  // One guard check for the whole call, before any byte moves.
  TESSERA_ASSIGN_OR_RETURN(std::string action,
                           GuardTransfer(ReshardEvent(op, arrays, traffic, options)));

  // Destination buffers: shared with the source where the plan aliases a whole shard (unless the
  // caller wants copies), else new.
  const bool may_alias = semantics != ArrayCopySemantics::kAlwaysCopy;
  for (ReshardWork& w : work) TESSERA_RETURN_IF_ERROR(PrepareDestinations(w, may_alias));
  if (distributed_ != nullptr) TESSERA_RETURN_IF_ERROR(AgreeOnReshard(op, work, semantics));

  TESSERA_ASSIGN_OR_RETURN(std::vector<ArrayRef> outputs, EnqueueReshards(op, action, work, specs));
  if (semantics == ArrayCopySemantics::kDonateInput) {
    for (RuntimeArray* a : arrays) a->Delete();
  }
  return outputs;
}

absl::Status RuntimeClient::AgreeOnReshard(std::string_view op, std::vector<ReshardWork>& work,
                                           ArrayCopySemantics semantics) {
  std::vector<CollectivePart> parts;
  for (const ReshardWork& w : work) {
    parts.push_back(CollectivePart{
        static_cast<int>(w.input->dtype().kind()), w.input->element_bytes(), &w.input->layout(),
        &w.input->memories(), &w.placement.layout, &w.placement.memories, w.plan.get()});
  }
  TESSERA_ASSIGN_OR_RETURN(int64_t tag,
                           distributed_->AgreeOnCall(op, static_cast<int>(semantics), parts));
  for (ReshardWork& w : work) {
    w.tag_base = tag;
    if (tag >= 0) tag += DistributedRuntime::MessageWindow(w.input->layout(), w.placement.layout);
  }
  return absl::OkStatus();
}

absl::StatusOr<RuntimeClient::ReshardWork> RuntimeClient::PlanOneReshard(RuntimeArray* array,
                                                                         const ArraySpec& spec) {
  TESSERA_ASSIGN_OR_RETURN(std::vector<Shard> shards, array->shards());
  // By the shardings' identity first: no layout computed or hashed on a hit.
  ShardingRef src_sharding = array->shared_ptr_sharding();
  if (std::shared_ptr<const PlanCache::ReshardEntry> hit = plan_cache_.FindReshard(
          src_sharding.get(), spec.sharding.get(), spec.shape.dims(), array->element_bytes())) {
    return ReshardWork{
        array, std::move(shards), Placement{hit->dst_layout, hit->dst_memories}, hit->plan, {}};
  }
  TESSERA_ASSIGN_OR_RETURN(Placement placement, ResolvePlacement(*spec.sharding, spec.shape));
  // Multi-process: only this process's part of the plan, the copies touching its memories.
  std::optional<std::vector<int64_t>> part;
  if (distributed_ != nullptr) {
    part.emplace();
    for (Device* d : addressable_devices()) {
      for (Memory* m : d->Memories()) part->push_back(m->Id().value);
    }
  }
  TESSERA_ASSIGN_OR_RETURN(
      std::shared_ptr<const sharding::ReshardPlan> plan,
      plan_cache_.Get(array->layout(), Locations(array->memories()), placement.layout,
                      Locations(placement.memories), array->element_bytes(), /*fan_out=*/false,
                      std::move(part)));
  // The identity cache is per client, and so is the part (this process's memories): a hit stays
  // this process's part.
  plan_cache_.InsertReshard(
      spec.shape.dims(), array->element_bytes(),
      std::make_shared<const PlanCache::ReshardEntry>(PlanCache::ReshardEntry{
          std::move(src_sharding), spec.sharding, placement.layout, placement.memories, plan}));
  return ReshardWork{array, std::move(shards), std::move(placement), std::move(plan), {}};
}

absl::Status RuntimeClient::PrepareDestinations(ReshardWork& w, bool may_alias) {
  w.dst.resize(w.placement.layout.num_slots());
  if (may_alias) {
    for (const sharding::BoxCopy& c : w.plan->copies) {
      if (c.kind == sharding::BoxCopy::Kind::kAlias) {
        w.dst[c.dst_slot].buffer = w.src_shards[c.src_slot].buffer;
      }
    }
  }
  return CompleteDestinations(w.placement.layout, w.placement.memories, w.input->element_bytes(),
                              w.dst);
}

absl::StatusOr<std::vector<ArrayRef>> RuntimeClient::EnqueueReshards(
    std::string_view op, const std::string& action, std::vector<ReshardWork>& work,
    absl::Span<const ArraySpec> specs) {
  std::vector<ArrayRef> outputs;
  outputs.reserve(work.size());
  // The locks are held across the call's arrays: its copies enqueue in one global order.
  std::lock_guard<std::mutex> trace_lock(trace_mu_);
  std::lock_guard<std::mutex> lock(enqueue_mu_);
  for (size_t i = 0; i < work.size(); ++i) {
    ReshardWork& w = work[i];
    PlanExecution exec =
        distributed_ != nullptr
            ? distributed_->Execute(*w.plan, w.input->element_bytes(),
                                    SourceEndpoints(*w.input, w.src_shards), w.dst,
                                    Context(op, action), w.tag_base)
            : ExecutePlan(*w.plan, w.input->element_bytes(),
                          SourceEndpoints(*w.input, w.src_shards), w.dst, Context(op, action));
    // Ran out of memory part way: the call fails (the arrays enqueued before are dropped); the
    // other processes' messages of the arrays not enqueued are settled, so that none waits.
    if (!exec.status.ok()) {
      for (size_t j = i + 1; distributed_ != nullptr && j < work.size(); ++j) {
        distributed_->Abandon(*work[j].plan, work[j].input->element_bytes(),
                              SourceEndpoints(*work[j].input, work[j].src_shards), work[j].dst,
                              exec.status, work[j].tag_base);
      }
      return exec.status;
    }
    outputs.push_back(std::make_shared<RuntimeArray>(
        this, w.input->dtype(), specs[i].shape, specs[i].sharding, std::move(w.placement.layout),
        std::move(w.placement.memories), OutputShards(w.dst, exec)));
  }
  return outputs;
}

// ---------------------------------------------------------------------------------------------
// Assembly, disassembly, remapping

absl::StatusOr<std::vector<Shard>> RuntimeClient::CopyShardsLocally(
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
  PlanExecution exec = ExecuteLocked(*plan, element_bytes, src, dst, op, /*guard_action=*/"");
  TESSERA_RETURN_IF_ERROR(exec.status);
  return OutputShards(dst, exec);
}

absl::StatusOr<ArrayRef> RuntimeClient::AssembleArrayFromSingleDeviceArrays(
    DType dtype, Shape shape, ShardingRef sharding, absl::Span<ArrayRef> arrays,
    ArrayCopySemantics semantics) {
  return CatchAllocationFailure("AssembleArrayFromSingleDeviceArrays", [&] {
    return AssembleImpl(dtype, std::move(shape), std::move(sharding), arrays, semantics);
  });
}

absl::StatusOr<ArrayRef> RuntimeClient::AssembleImpl(DType dtype, Shape shape, ShardingRef sharding,
                                                     absl::Span<ArrayRef> arrays,
                                                     ArrayCopySemantics semantics) {
  constexpr std::string_view kOp = "AssembleArrayFromSingleDeviceArrays";
  TESSERA_RETURN_IF_ERROR(CheckDType(dtype, kOp));
  TESSERA_RETURN_IF_ERROR(ValidateShape(shape, dtype));
  TESSERA_RETURN_IF_ERROR(CheckSharding(sharding, kOp, "argument 2 (sharding)"));
  TESSERA_ASSIGN_OR_RETURN(Placement placement, ResolvePlacement(*sharding, shape));
  // One array per addressable device of the sharding (all of them in a single-process client);
  // the other processes hold the other shards.
  std::vector<int> slots;
  for (int i = 0; i < placement.layout.num_slots(); ++i) {
    if (placement.memories[i]->device()->IsAddressable()) slots.push_back(i);
  }
  const int n = static_cast<int>(slots.size());
  if (static_cast<int>(arrays.size()) != n) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(kOp), ": the sharding has ", n,
                     n == placement.layout.num_slots() ? "" : " addressable", " devices but ",
                     arrays.size(), " arrays were given"));
  }
  std::vector<RuntimeArray*> inputs;
  std::vector<Shard> shards(placement.layout.num_slots(), Shard{nullptr, MakeReadyFuture()});
  for (int k = 0; k < n; ++k) {
    const int i = slots[k];
    TESSERA_ASSIGN_OR_RETURN(RuntimeArray* const a, CheckArray(arrays[k], kOp, k));
    TESSERA_RETURN_IF_ERROR(
        CheckAssemblyPart(*a, i, dtype, *sharding, placement.layout, placement.memories[i], kOp));
    TESSERA_ASSIGN_OR_RETURN(std::vector<Shard> part, a->shards());
    shards[i] = part[0];
    inputs.push_back(a);
  }
  if (semantics == ArrayCopySemantics::kAlwaysCopy) {
    TESSERA_ASSIGN_OR_RETURN(shards, CopyShardsLocally(kOp, placement.layout, placement.memories,
                                                       shards, *dtype.byte_size()));
  }
  ArrayRef out = std::make_shared<RuntimeArray>(this, dtype, std::move(shape), std::move(sharding),
                                                std::move(placement.layout),
                                                std::move(placement.memories), std::move(shards));
  if (semantics == ArrayCopySemantics::kDonateInput) {
    for (RuntimeArray* a : inputs) a->Delete();
  }
  return out;
}

ArrayRef RuntimeClient::ShardAsArray(const RuntimeArray& array, int slot, Shard shard) {
  const Sharding& sharding = array.sharding();
  const Shape shape(array.layout().shard_shape(slot));
  return std::make_shared<RuntimeArray>(
      this, array.dtype(), shape,
      SingleDeviceSharding::Create(sharding.devices()->devices()[slot], sharding.memory_kind()),
      sharding::ShardLayout::Replicated(shape.dims(), 1),
      std::vector<RuntimeMemory*>{array.memories()[slot]}, std::vector<Shard>{std::move(shard)});
}

absl::StatusOr<std::vector<ArrayRef>> RuntimeClient::Disassemble(RuntimeArray& array,
                                                                 ArrayCopySemantics semantics) {
  constexpr std::string_view kOp = "DisassembleIntoSingleDeviceArrays";
  TESSERA_ASSIGN_OR_RETURN(std::vector<Shard> shards, array.shards());
  if (semantics == ArrayCopySemantics::kAlwaysCopy) {
    TESSERA_ASSIGN_OR_RETURN(shards, CopyShardsLocally(kOp, array.layout(), array.memories(),
                                                       shards, array.element_bytes()));
  }
  std::vector<ArrayRef> out;
  out.reserve(shards.size());
  for (size_t i = 0; i < shards.size(); ++i) {
    // The addressable shards only (all of them in a single-process client).
    if (!array.memories()[i]->device()->IsAddressable()) continue;
    out.push_back(ShardAsArray(array, static_cast<int>(i), std::move(shards[i])));
  }
  if (semantics == ArrayCopySemantics::kDonateInput) array.Delete();
  return out;
}

absl::StatusOr<ArrayRef> RuntimeClient::FullyReplicatedShard(RuntimeArray& array,
                                                             ArrayCopySemantics semantics) {
  constexpr std::string_view kOp = "FullyReplicatedShard";
  TESSERA_ASSIGN_OR_RETURN(std::vector<Shard> shards, array.shards());
  if (!array.layout().IsFullyReplicated()) {
    return absl::InvalidArgumentError(absl::StrCat(
        std::string(kOp), ": the array is not fully replicated: ", array.sharding().DebugString()));
  }
  // The first addressable replica, copied alone where a copy is asked for.
  int slot = 0;
  while (slot < array.layout().num_slots() && !array.memories()[slot]->device()->IsAddressable()) {
    ++slot;
  }
  if (slot == array.layout().num_slots()) {
    return absl::FailedPreconditionError(
        absl::StrCat(std::string(kOp), ": no replica of the array is on this process's devices: ",
                     array.sharding().DebugString()));
  }
  std::vector<Shard> first = {std::move(shards[slot])};
  if (semantics == ArrayCopySemantics::kAlwaysCopy) {
    const sharding::ShardLayout one =
        sharding::ShardLayout::Replicated(array.layout().shard_shape(slot), 1);
    TESSERA_ASSIGN_OR_RETURN(
        first, CopyShardsLocally(kOp, one, {array.memories()[slot]}, first, array.element_bytes()));
  }
  ArrayRef out = ShardAsArray(array, slot, std::move(first[0]));
  if (semantics == ArrayCopySemantics::kDonateInput) array.Delete();
  return out;
}

absl::StatusOr<std::vector<ArrayRef>> RuntimeClient::RemapArrays(const RemapPlan& plan,
                                                                 absl::Span<ArrayRef> arrays,
                                                                 ArrayCopySemantics semantics) {
  return CatchAllocationFailure("RemapArrays", [&] { return RemapImpl(plan, arrays, semantics); });
}

absl::StatusOr<std::vector<ArrayRef>> RuntimeClient::RemapImpl(const RemapPlan& plan,
                                                               absl::Span<ArrayRef> arrays,
                                                               ArrayCopySemantics semantics) {
  constexpr std::string_view kOp = "RemapArrays";
  TESSERA_RETURN_IF_ERROR(CheckRemapCall(plan, arrays.size(), semantics, kOp));
  std::vector<RuntimeArray*> inputs;
  std::vector<std::vector<Shard>> in_shards;
  for (size_t i = 0; i < arrays.size(); ++i) {
    TESSERA_ASSIGN_OR_RETURN(RuntimeArray* const a, CheckArray(arrays[i], kOp, i));
    TESSERA_RETURN_IF_ERROR(CheckRemapInput(*a, plan.input_specs[i], i, kOp));
    TESSERA_ASSIGN_OR_RETURN(std::vector<Shard> shards, a->shards());
    inputs.push_back(a);
    in_shards.push_back(std::move(shards));
  }
  std::vector<Placement> placements;
  for (size_t o = 0; o < plan.output_specs.size(); ++o) {
    const ArraySpec& spec = plan.output_specs[o];
    TESSERA_RETURN_IF_ERROR(
        CheckSharding(spec.sharding, kOp, absl::StrCat("plan.output_specs[", o, "].sharding")));
    TESSERA_ASSIGN_OR_RETURN(Placement placement, ResolvePlacement(*spec.sharding, spec.shape));
    placements.push_back(std::move(placement));
  }
  TESSERA_ASSIGN_OR_RETURN(std::vector<std::vector<Shard>> out_shards,
                           RemapShards(plan, inputs, in_shards, placements, kOp));
  std::vector<ArrayRef> outputs;
  for (size_t o = 0; o < plan.output_specs.size(); ++o) {
    const ArraySpec& spec = plan.output_specs[o];
    outputs.push_back(std::make_shared<RuntimeArray>(
        this, spec.dtype, spec.shape, spec.sharding, std::move(placements[o].layout),
        std::move(placements[o].memories), std::move(out_shards[o])));
  }
  for (RuntimeArray* a : inputs) a->Delete();
  return outputs;
}

absl::Status RuntimeClient::CheckRemapInput(const RuntimeArray& a, const ArraySpec& spec, size_t i,
                                            std::string_view op) const {
  // The same sharding, with memory kinds compared by the memories they resolve to (MemoryKind() is
  // the default memory, however it is named).
  bool matches = a.dtype() == spec.dtype && a.shape() == spec.shape && spec.sharding != nullptr &&
                 SameDeviceList(a.sharding().devices(), spec.sharding->devices()) &&
                 a.sharding().HasSamePartitioning(*spec.sharding);
  if (matches) {
    absl::StatusOr<std::vector<RuntimeMemory*>> memories = ResolveMemories(*spec.sharding);
    matches = memories.ok() && *memories == a.memories();
  }
  if (!matches) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(op), ": array ", i, " (", a.dtype().DebugString(),
                     a.shape().DebugString(), ", ", a.sharding().DebugString(),
                     ") does not match input spec ", i, " (", spec.DebugString(), ")"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::vector<Shard>>> RuntimeClient::RemapShards(
    const RemapPlan& plan, const std::vector<RuntimeArray*>& inputs,
    const std::vector<std::vector<Shard>>& in_shards, const std::vector<Placement>& outputs,
    std::string_view op) {
  std::vector<std::vector<Shard>> out_shards(outputs.size());
  for (size_t o = 0; o < outputs.size(); ++o) {
    out_shards[o].resize(outputs[o].layout.num_slots());
  }
  for (const RemapPlan::Mapping& m : plan.mappings) {
    const std::vector<RuntimeMemory*>& from_memories = inputs[m.in_array]->memories();
    const std::vector<RuntimeMemory*>& to_memories = outputs[m.out_array].memories;
    for (size_t k = 0; k < m.from.size(); ++k) {
      for (int j = 0; j < m.from[k].size(); ++j) {
        const int from = m.from[k].start + j * m.from[k].step;
        const int to = m.to[k].start + j * m.to[k].step;
        if (from_memories[from] != to_memories[to]) {
          return absl::InvalidArgumentError(
              absl::StrCat(std::string(op), ": shard ", from, " of input ", m.in_array, " is in ",
                           from_memories[from]->DebugString(), " but output ", m.out_array,
                           " wants shard ", to, " in ", to_memories[to]->DebugString()));
        }
        out_shards[m.out_array][to] = in_shards[m.in_array][from];
      }
    }
  }
  return out_shards;
}

Future<> RuntimeClient::GetReadyFuture(absl::Span<const ArrayRef> arrays) {
  return CatchAllocationFailure("GetReadyFuture", [&] { return GetReadyFutureImpl(arrays); });
}

Future<> RuntimeClient::GetReadyFutureImpl(absl::Span<const ArrayRef> arrays) {
  std::vector<Future<>> futures;
  futures.reserve(arrays.size());
  for (size_t i = 0; i < arrays.size(); ++i) {
    if (arrays[i] == nullptr) {
      return MakeReadyFuture(
          absl::InvalidArgumentError(absl::StrCat("GetReadyFuture: array ", i, " is null")));
    }
    futures.push_back(arrays[i]->GetReadyFuture());
  }
  return JoinFutures(futures);
}

}  // namespace tessera::runtime
