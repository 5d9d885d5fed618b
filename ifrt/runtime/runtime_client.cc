#include "ifrt/runtime/runtime_client.h"

#include <algorithm>
#include <atomic>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ifrt/runtime/plan_executor.h"
#include "sharding/planner.h"

namespace tessera::runtime {
namespace {

constexpr int64_t kHostLocation = -1;

// Runs a callback exactly once, however many copies of the holder call it.
class OnceCallback {
 public:
  explicit OnceCallback(std::function<void()> fn)
      : state_(std::make_shared<State>(std::move(fn))) {}
  void operator()() const {
    if (!state_->fn) return;
    if (!state_->called.exchange(true)) state_->fn();
  }

 private:
  struct State {
    explicit State(std::function<void()> f) : fn(std::move(f)) {}
    std::function<void()> fn;
    std::atomic<bool> called{false};
  };
  std::shared_ptr<State> state_;
};

std::vector<int> DeviceIds(const std::set<int32_t>& ids) {
  return std::vector<int>(ids.begin(), ids.end());
}

int64_t ShardBytes(const sharding::ShardLayout& layout, int slot, int64_t element_bytes) {
  return layout.slot_box(slot).num_elements() * element_bytes;
}

std::string MemoryKindOf(const std::vector<RuntimeMemory*>& memories) {
  std::set<std::string> kinds;
  for (RuntimeMemory* m : memories) kinds.insert(m->Kind().DebugString());
  return absl::StrJoin(kinds, ",");
}

std::string ActionName(absl::StatusOr<guard::Action> action) {
  if (!action.ok()) return "";
  switch (*action) {
    case guard::Action::kAllow:
      return "allow";
    case guard::Action::kLog:
      return "log";
    case guard::Action::kDisallow:
      return "disallow";
  }
  return "";
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Construction

RuntimeClient::RuntimeClient(guard::Policy policy) : guard_(policy) {}

RuntimeClient::~RuntimeClient() {
  // Drain every stream before the members that in-flight callbacks use go away.
  platforms_.clear();
}

absl::StatusOr<std::shared_ptr<RuntimeClient>> RuntimeClient::Create(
    std::vector<std::unique_ptr<Platform>> platforms, guard::Policy transfer_guard_policy,
    std::unique_ptr<ProgramCompiler> program_compiler) {
  if (platforms.empty()) return absl::InvalidArgumentError("a client needs at least one platform");
  std::shared_ptr<RuntimeClient> client(new RuntimeClient(transfer_guard_policy));
  int32_t next_memory_id = 0;
  for (std::unique_ptr<Platform>& platform : platforms) {
    for (int i = 0; i < platform->device_count(); ++i) {
      auto device = std::make_unique<RuntimeDevice>(
          client.get(), DeviceId{static_cast<int32_t>(client->devices_.size())}, platform.get(), i);
      device->CreateMemories(&next_memory_id);
      client->device_ptrs_.push_back(device.get());
      client->devices_.push_back(std::move(device));
    }
    client->platforms_.push_back(std::move(platform));
  }
  if (client->devices_.empty()) return absl::InvalidArgumentError("the platforms have no device");
  client->compiler_ = std::make_unique<RuntimeCompiler>(client.get(), std::move(program_compiler));
  return client;
}

Compiler* RuntimeClient::GetDefaultCompiler() { return compiler_.get(); }

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
  for (Device* d : devices) {
    if (d != nullptr && d->client() != this) {
      return absl::InvalidArgumentError(
          absl::StrCat("device ", d->ToString(), " belongs to another client"));
    }
  }
  return DeviceList::Create(devices);
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
// Statistics and tracing

void RuntimeClient::Record(int32_t src_device, int32_t dst_device, int64_t bytes, int64_t copies) {
  std::lock_guard<std::mutex> lock(stats_mu_);
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

// ---------------------------------------------------------------------------------------------
// Validation

absl::Status RuntimeClient::CheckSharding(const ShardingRef& sharding,
                                          std::string_view what) const {
  if (sharding == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(what), ": the sharding is null"));
  }
  for (Device* d : sharding->devices()->devices()) {
    if (d->client() != this) {
      return absl::InvalidArgumentError(absl::StrCat(std::string(what), ": device ", d->ToString(),
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
    absl::StatusOr<RuntimeMemory*> m =
        static_cast<RuntimeDevice*>(d)->ResolveMemory(sharding.memory_kind());
    if (!m.ok()) return m.status();
    out.push_back(*m);
  }
  return out;
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

namespace {

absl::Status CheckDType(DType dtype, std::string_view op) {
  if (!dtype.byte_size().has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(op), ": invalid dtype ", dtype.DebugString()));
  }
  return absl::OkStatus();
}

// Byte strides of the user's host buffer: given ones (checked), else row-major.
absl::StatusOr<Index> HostByteStrides(std::optional<absl::Span<const int64_t>> byte_strides,
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

}  // namespace

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
  const auto* a = dynamic_cast<const RuntimeArray*>(&array);
  if (a == nullptr || a->runtime_client() != this) {
    return absl::InvalidArgumentError("PlanReshard: the array belongs to another client");
  }
  if (absl::Status s = CheckSharding(spec.sharding, "PlanReshard"); !s.ok()) return s;
  absl::StatusOr<sharding::ShardLayout> layout = spec.sharding->Layout(spec.shape);
  if (!layout.ok()) return layout.status();
  absl::StatusOr<std::vector<RuntimeMemory*>> memories = ResolveMemories(*spec.sharding);
  if (!memories.ok()) return memories.status();
  // The cached plan as is: its locations are memory ids.
  return GetPlan(a->layout(), Locations(a->memories()), *layout, Locations(*memories),
                 a->element_bytes(), /*fan_out=*/false);
}

// ---------------------------------------------------------------------------------------------
// Host -> devices

absl::StatusOr<ArrayRef> RuntimeClient::MakeArrayFromHostBuffer(
    const void* data, DType dtype, Shape shape,
    std::optional<absl::Span<const int64_t>> byte_strides, ShardingRef sharding,
    HostBufferSemantics semantics, std::function<void()> on_done_with_host_buffer,
    TransferOptions options) {
  constexpr std::string_view kOp = "MakeArrayFromHostBuffer";
  // on_done runs exactly once: handed to the transfer on success, called here
  // when the call fails (the runtime then never reads the buffer again).
  OnceCallback on_done(std::move(on_done_with_host_buffer));
  struct CallOnFailure {
    OnceCallback callback;
    bool armed = true;
    ~CallOnFailure() {
      if (armed) callback();
    }
  } on_failure{on_done};
  if (absl::Status s = CheckDType(dtype, kOp); !s.ok()) return s;
  if (absl::Status s = ValidateShape(shape); !s.ok()) return s;
  if (absl::Status s = CheckSharding(sharding, kOp); !s.ok()) return s;
  const int64_t element_bytes = *dtype.byte_size();
  absl::StatusOr<Index> strides = HostByteStrides(byte_strides, shape, element_bytes, kOp);
  if (!strides.ok()) return strides.status();
  if (data == nullptr && shape.num_elements() > 0) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(kOp), ": data is null but ",
                                                   dtype.DebugString(), shape.DebugString(),
                                                   " has ", shape.num_elements(), " elements"));
  }
  absl::StatusOr<sharding::ShardLayout> layout = sharding->Layout(shape);
  if (!layout.ok()) return layout.status();
  absl::StatusOr<std::vector<RuntimeMemory*>> memories = ResolveMemories(*sharding);
  if (!memories.ok()) return memories.status();

  // Each region is read from the host once and forwarded to its other replicas
  // on the devices.
  absl::StatusOr<std::shared_ptr<const sharding::ReshardPlan>> plan =
      GetPlan(sharding::ShardLayout::Replicated(shape.dims(), 1), {kHostLocation}, *layout,
              Locations(*memories), element_bytes, /*fan_out=*/true);
  if (!plan.ok()) return plan.status();
  int64_t host_bytes = 0;
  std::set<int32_t> dst_ids;
  for (const sharding::BoxCopy& c : (*plan)->copies) {
    if (!c.from_destination && c.bytes > 0) {
      host_bytes += c.bytes;
      dst_ids.insert((*memories)[c.dst_slot]->device()->Id().value);
    }
  }
  guard::TransferEvent event{
      .direction = guard::Direction::kHostToDevice,
      .is_explicit = options.is_explicit,
      .operation = std::string(kOp),
      .dtype = dtype.DebugString(),
      .shape = std::vector<int64_t>(shape.dims().begin(), shape.dims().end()),
      .bytes = host_bytes,
      .src_devices = {},
      .dst_devices = DeviceIds(dst_ids),
      .src_memory_kind = "",
      .dst_memory_kind = MemoryKindOf(*memories)};
  const std::string action = host_bytes > 0 ? ActionName(guard_.Decide(event)) : "";
  if (absl::Status s = guard_.Check(event); !s.ok()) return s;

  const int n = layout->num_slots();

  // Zero copy: a single compact, aligned shard in a memory the platform can use
  // in place.
  if (semantics == HostBufferSemantics::kImmutableZeroCopy && n == 1 &&
      *strides == StridedCopy::RowMajorByteStrides(shape.dims(), element_bytes) &&
      data != nullptr && reinterpret_cast<uintptr_t>(data) % 64 == 0) {
    RuntimeMemory* m = (*memories)[0];
    RuntimeDevice* d = m->device();
    absl::StatusOr<PlatformBufferRef> wrapped = d->platform()->WrapHostMemory(
        d->platform_device(), m->platform_memory(), const_cast<void*>(data),
        shape.num_elements() * element_bytes, on_done);
    if (wrapped.ok()) {
      on_failure.armed = false;  // the buffer's release calls on_done
      std::vector<Shard> shards{Shard{*std::move(wrapped), MakeReadyFuture()}};
      return ArrayRef(std::make_shared<RuntimeArray>(this, dtype, std::move(shape),
                                                     std::move(sharding), *std::move(layout),
                                                     *std::move(memories), std::move(shards)));
    }
  }

  std::vector<PlanEndpoint> dst(n);
  for (int i = 0; i < n; ++i) {
    absl::StatusOr<PlatformBufferRef> buffer =
        (*memories)[i]->Allocate(ShardBytes(*layout, i, element_bytes));
    if (!buffer.ok()) return buffer.status();
    dst[i].memory = (*memories)[i];
    dst[i].buffer = *std::move(buffer);
    dst[i].shard_shape = layout->shard_shape(i);
  }
  on_failure.armed = false;  // from here on, the transfer calls on_done
  PlanEndpoint src;
  src.host = const_cast<void*>(data);
  src.host_byte_strides = *strides;
  PlanExecution exec;
  {
    std::lock_guard<std::mutex> trace_lock(trace_mu_);
    std::lock_guard<std::mutex> lock(enqueue_mu_);
    exec = ExecutePlan(**plan, element_bytes, {src}, dst,
                       PlanContext{Recorder(), trace_, std::string(kOp), action});
  }
  std::vector<Shard> shards(n);
  for (int i = 0; i < n; ++i) shards[i] = Shard{dst[i].buffer, exec.dst_ready[i]};
  if (semantics == HostBufferSemantics::kImmutableOnlyDuringCall) {
    // The caller may reuse `data` as soon as we return: wait until every read
    // of it is done.
    exec.all_done.Await().IgnoreError();  // an error reaches the array's ready future
    on_done();
  } else {
    exec.all_done.OnReady([on_done](const absl::Status&) { on_done(); });
  }
  return ArrayRef(std::make_shared<RuntimeArray>(this, dtype, std::move(shape), std::move(sharding),
                                                 *std::move(layout), *std::move(memories),
                                                 std::move(shards)));
}

// ---------------------------------------------------------------------------------------------
// Devices -> host

Future<> RuntimeClient::CopyToHostBuffer(RuntimeArray& array, void* data,
                                         std::optional<absl::Span<const int64_t>> byte_strides,
                                         TransferOptions options) {
  constexpr std::string_view kOp = "CopyToHostBuffer";
  absl::StatusOr<std::vector<Shard>> shards = array.shards();
  if (!shards.ok()) return MakeReadyFuture(shards.status());
  const Shape& shape = array.shape();
  const int64_t element_bytes = array.element_bytes();
  absl::StatusOr<Index> strides = HostByteStrides(byte_strides, shape, element_bytes, kOp);
  if (!strides.ok()) return MakeReadyFuture(strides.status());
  if (data == nullptr && shape.num_elements() > 0) {
    return MakeReadyFuture(absl::InvalidArgumentError(
        absl::StrCat(std::string(kOp), ": data is null but ", array.dtype().DebugString(),
                     shape.DebugString(), " has ", shape.num_elements(), " elements")));
  }
  // Each region is read from one replica, spreading the reads over the
  // replicas.
  absl::StatusOr<std::shared_ptr<const sharding::ReshardPlan>> plan =
      GetPlan(array.layout(), Locations(array.memories()),
              sharding::ShardLayout::Replicated(shape.dims(), 1), {kHostLocation}, element_bytes,
              /*fan_out=*/false);
  if (!plan.ok()) return MakeReadyFuture(plan.status());
  std::set<int32_t> src_ids;
  for (const sharding::BoxCopy& c : (*plan)->copies) {
    if (c.bytes > 0) src_ids.insert(array.memories()[c.src_slot]->device()->Id().value);
  }
  guard::TransferEvent event{
      .direction = guard::Direction::kDeviceToHost,
      .is_explicit = options.is_explicit,
      .operation = std::string(kOp),
      .dtype = array.dtype().DebugString(),
      .shape = std::vector<int64_t>(shape.dims().begin(), shape.dims().end()),
      .bytes = (*plan)->cross_location_bytes,
      .src_devices = DeviceIds(src_ids),
      .dst_devices = {},
      .src_memory_kind = MemoryKindOf(array.memories()),
      .dst_memory_kind = ""};
  const std::string action = event.bytes > 0 ? ActionName(guard_.Decide(event)) : "";
  if (absl::Status s = guard_.Check(event); !s.ok()) return MakeReadyFuture(s);

  const int n = array.layout().num_slots();
  std::vector<PlanEndpoint> src(n);
  for (int i = 0; i < n; ++i) {
    src[i].memory = array.memories()[i];
    src[i].buffer = (*shards)[i].buffer;
    src[i].ready = (*shards)[i].ready;
    src[i].shard_shape = array.layout().shard_shape(i);
  }
  PlanEndpoint dst;
  dst.host = data;
  dst.host_byte_strides = *strides;
  PlanExecution exec;
  {
    std::lock_guard<std::mutex> trace_lock(trace_mu_);
    std::lock_guard<std::mutex> lock(enqueue_mu_);
    exec = ExecutePlan(**plan, element_bytes, src, {dst},
                       PlanContext{Recorder(), trace_, std::string(kOp), action});
  }
  // Report the array's own error (a poisoned input) even where no copy read the
  // failing shard.
  return JoinFutures({exec.all_done, array.GetReadyFuture()});
}

// ---------------------------------------------------------------------------------------------
// Devices -> devices

absl::StatusOr<std::vector<ArrayRef>> RuntimeClient::ReshardArrays(
    absl::Span<ArrayRef> arrays, absl::Span<const ArraySpec> specs, ArrayCopySemantics semantics,
    TransferOptions options) {
  constexpr std::string_view kOp = "ReshardArrays";
  if (arrays.size() != specs.size()) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(kOp), ": ", arrays.size(),
                                                   " arrays but ", specs.size(), " specs"));
  }
  std::vector<RuntimeArray*> inputs;
  for (size_t i = 0; i < arrays.size(); ++i) {
    absl::StatusOr<RuntimeArray*> a = CheckArray(arrays[i], kOp, i);
    if (!a.ok()) return a.status();
    const ArraySpec& spec = specs[i];
    if (spec.dtype != (*a)->dtype()) {
      return absl::InvalidArgumentError(absl::StrCat(
          std::string(kOp), ": array ", i, " has dtype ", (*a)->dtype().DebugString(),
          " but its spec asks for ", spec.dtype.DebugString(), " (a reshard does not convert)"));
    }
    if (spec.shape != (*a)->shape()) {
      return absl::InvalidArgumentError(
          absl::StrCat(std::string(kOp), ": array ", i, " has shape ", (*a)->shape().DebugString(),
                       " but its spec asks for ", spec.shape.DebugString()));
    }
    if (absl::Status s = CheckSharding(spec.sharding, kOp); !s.ok()) return s;
    inputs.push_back(*a);
  }
  return ReshardValidated(kOp, inputs, specs, semantics, options);
}

absl::StatusOr<std::vector<ArrayRef>> RuntimeClient::CopyArrays(
    absl::Span<ArrayRef> arrays, std::optional<DeviceListRef> devices,
    std::optional<MemoryKind> memory_kind, ArrayCopySemantics semantics, TransferOptions options) {
  constexpr std::string_view kOp = "CopyArrays";
  if (arrays.empty()) return std::vector<ArrayRef>();
  std::vector<RuntimeArray*> inputs;
  std::vector<ArraySpec> specs;
  for (size_t i = 0; i < arrays.size(); ++i) {
    absl::StatusOr<RuntimeArray*> a = CheckArray(arrays[i], kOp, i);
    if (!a.ok()) return a.status();
    if (i > 0) {
      const Sharding& first = inputs[0]->sharding();
      if (!SameDeviceList((*a)->sharding().devices(), first.devices())) {
        return absl::InvalidArgumentError(absl::StrCat(
            std::string(kOp), ": all arrays must have the same device list; array 0 is on ",
            first.devices()->DebugString(), " and array ", i, " on ",
            (*a)->sharding().devices()->DebugString()));
      }
      // Compare the memories the kinds resolve to: MemoryKind() and the default
      // kind's name are the same memory.
      if ((*a)->memories() != inputs[0]->memories()) {
        return absl::InvalidArgumentError(absl::StrCat(
            std::string(kOp), ": all arrays must have the same memory kind; array 0 is in ",
            first.memory_kind().DebugString(), " and array ", i, " in ",
            (*a)->sharding().memory_kind().DebugString()));
      }
    }
    if (devices.has_value() && *devices != nullptr) {
      for (Device* d : (*devices)->devices()) {
        if (d->client() != this) {
          return absl::InvalidArgumentError(absl::StrCat(
              std::string(kOp), ": device ", d->ToString(), " belongs to another client"));
        }
      }
    }
    absl::StatusOr<ShardingRef> sharding =
        (*a)->sharding().WithDeviceAssignment(devices, memory_kind);
    if (!sharding.ok()) return sharding.status();
    specs.push_back(ArraySpec{(*a)->dtype(), (*a)->shape(), *std::move(sharding)});
    inputs.push_back(*a);
  }
  return ReshardValidated(kOp, inputs, specs, semantics, options);
}

absl::StatusOr<std::vector<ArrayRef>> RuntimeClient::ReshardValidated(
    std::string_view op, absl::Span<RuntimeArray* const> arrays, absl::Span<const ArraySpec> specs,
    ArrayCopySemantics semantics, TransferOptions options) {
  struct Work {
    RuntimeArray* input;
    std::vector<Shard> src_shards;
    sharding::ShardLayout layout;
    std::vector<RuntimeMemory*> memories;
    std::shared_ptr<const sharding::ReshardPlan> plan;
    std::vector<PlanEndpoint> dst;
  };
  std::vector<Work> work;
  work.reserve(arrays.size());
  int64_t moved_bytes = 0;
  std::set<int32_t> src_ids, dst_ids;
  std::set<std::string> src_kinds, dst_kinds;
  for (size_t i = 0; i < arrays.size(); ++i) {
    RuntimeArray* a = arrays[i];
    absl::StatusOr<std::vector<Shard>> shards = a->shards();
    if (!shards.ok()) return shards.status();
    absl::StatusOr<sharding::ShardLayout> layout = specs[i].sharding->Layout(specs[i].shape);
    if (!layout.ok()) return layout.status();
    absl::StatusOr<std::vector<RuntimeMemory*>> memories = ResolveMemories(*specs[i].sharding);
    if (!memories.ok()) return memories.status();
    absl::StatusOr<std::shared_ptr<const sharding::ReshardPlan>> plan =
        GetPlan(a->layout(), Locations(a->memories()), *layout, Locations(*memories),
                a->element_bytes(), /*fan_out=*/false);
    if (!plan.ok()) return plan.status();
    for (const sharding::BoxCopy& c : (*plan)->copies) {
      if (c.kind != sharding::BoxCopy::Kind::kCrossLocation || c.bytes == 0) continue;
      const int32_t src_id = a->memories()[c.src_slot]->device()->Id().value;
      const int32_t dst_id = (*memories)[c.dst_slot]->device()->Id().value;
      // Between two memories of one device: a local copy, as transfer_stats()
      // counts it.
      if (src_id == dst_id) continue;
      moved_bytes += c.bytes;
      src_ids.insert(src_id);
      dst_ids.insert(dst_id);
      src_kinds.insert(a->memories()[c.src_slot]->Kind().DebugString());
      dst_kinds.insert((*memories)[c.dst_slot]->Kind().DebugString());
    }
    work.push_back(Work{
        a, *std::move(shards), *std::move(layout), *std::move(memories), *std::move(plan), {}});
  }

  // One guard check for the whole call, before any byte moves. Copies within a
  // device and aliases are not transfers.
  const Shape& first_shape = arrays.empty() ? Shape() : arrays[0]->shape();
  guard::TransferEvent event{
      .direction = guard::Direction::kDeviceToDevice,
      .is_explicit = options.is_explicit,
      .operation = arrays.size() == 1
                       ? std::string(op)
                       : absl::StrCat(std::string(op), " (", arrays.size(), " arrays; the first)"),
      .dtype = arrays.empty() ? "" : arrays[0]->dtype().DebugString(),
      .shape = std::vector<int64_t>(first_shape.dims().begin(), first_shape.dims().end()),
      .bytes = moved_bytes,
      .src_devices = DeviceIds(src_ids),
      .dst_devices = DeviceIds(dst_ids),
      .src_memory_kind = absl::StrJoin(src_kinds, ","),
      .dst_memory_kind = absl::StrJoin(dst_kinds, ",")};
  const std::string action = moved_bytes > 0 ? ActionName(guard_.Decide(event)) : "";
  if (absl::Status s = guard_.Check(event); !s.ok()) return s;

  // Destination buffers: shared with the source where the plan aliases a whole
  // shard (unless the caller wants copies), else new.
  const bool may_alias = semantics != ArrayCopySemantics::kAlwaysCopy;
  for (Work& w : work) {
    const int n = w.layout.num_slots();
    w.dst.resize(n);
    for (const sharding::BoxCopy& c : w.plan->copies) {
      if (may_alias && c.kind == sharding::BoxCopy::Kind::kAlias) {
        w.dst[c.dst_slot].buffer = w.src_shards[c.src_slot].buffer;
      }
    }
    for (int i = 0; i < n; ++i) {
      w.dst[i].memory = w.memories[i];
      w.dst[i].shard_shape = w.layout.shard_shape(i);
      if (w.dst[i].buffer != nullptr) continue;
      absl::StatusOr<PlatformBufferRef> buffer =
          w.memories[i]->Allocate(ShardBytes(w.layout, i, w.input->element_bytes()));
      if (!buffer.ok()) return buffer.status();
      w.dst[i].buffer = *std::move(buffer);
    }
  }

  std::vector<ArrayRef> outputs;
  outputs.reserve(work.size());
  {
    std::lock_guard<std::mutex> trace_lock(trace_mu_);
    std::lock_guard<std::mutex> lock(enqueue_mu_);
    for (size_t i = 0; i < work.size(); ++i) {
      Work& w = work[i];
      const int src_n = w.input->layout().num_slots();
      std::vector<PlanEndpoint> src(src_n);
      for (int s = 0; s < src_n; ++s) {
        src[s].memory = w.input->memories()[s];
        src[s].buffer = w.src_shards[s].buffer;
        src[s].ready = w.src_shards[s].ready;
        src[s].shard_shape = w.input->layout().shard_shape(s);
      }
      PlanExecution exec = ExecutePlan(*w.plan, w.input->element_bytes(), src, w.dst,
                                       PlanContext{Recorder(), trace_, std::string(op), action});
      std::vector<Shard> shards(w.dst.size());
      for (size_t s = 0; s < w.dst.size(); ++s) {
        shards[s] = Shard{w.dst[s].buffer, exec.dst_ready[s]};
      }
      outputs.push_back(std::make_shared<RuntimeArray>(this, w.input->dtype(), specs[i].shape,
                                                       specs[i].sharding, std::move(w.layout),
                                                       std::move(w.memories), std::move(shards)));
    }
  }
  if (semantics == ArrayCopySemantics::kDonateInput) {
    for (RuntimeArray* a : arrays) a->Delete();
  }
  return outputs;
}

// ---------------------------------------------------------------------------------------------
// Assembly, disassembly, remapping

absl::StatusOr<Shard> RuntimeClient::CopyShardLocally(const Shard& shard, RuntimeMemory* memory) {
  const int64_t bytes = shard.buffer->size_bytes();
  absl::StatusOr<PlatformBufferRef> buffer = memory->Allocate(bytes);
  if (!buffer.ok()) return buffer.status();
  StridedCopy whole;
  whole.element_bytes = 1;
  whole.extent = {bytes};
  whole.src_byte_strides = {1};
  whole.dst_byte_strides = {1};
  RuntimeDevice* d = memory->device();
  const int32_t id = d->Id().value;
  Future<> done;
  {
    std::lock_guard<std::mutex> lock(enqueue_mu_);
    done = d->platform()->CopyBuffersToBuffers(
        d->platform_device(), {BufferToBufferCopy{shard.buffer, *buffer, whole}}, {shard.ready});
  }
  // The shard's future is set only once the bytes are counted (see
  // ExecutePlan).
  Promise<> counted;
  done.OnReady([this, id, bytes, counted](const absl::Status& s) {
    if (s.ok() && bytes > 0) Record(id, id, bytes, 1);
    counted.Set(s);
  });
  return Shard{*std::move(buffer), counted.future()};
}

absl::StatusOr<ArrayRef> RuntimeClient::AssembleArrayFromSingleDeviceArrays(
    DType dtype, Shape shape, ShardingRef sharding, absl::Span<ArrayRef> arrays,
    ArrayCopySemantics semantics) {
  constexpr std::string_view kOp = "AssembleArrayFromSingleDeviceArrays";
  if (absl::Status s = CheckDType(dtype, kOp); !s.ok()) return s;
  if (absl::Status s = ValidateShape(shape); !s.ok()) return s;
  if (absl::Status s = CheckSharding(sharding, kOp); !s.ok()) return s;
  absl::StatusOr<sharding::ShardLayout> layout = sharding->Layout(shape);
  if (!layout.ok()) return layout.status();
  absl::StatusOr<std::vector<RuntimeMemory*>> memories = ResolveMemories(*sharding);
  if (!memories.ok()) return memories.status();
  const int n = layout->num_slots();
  if (static_cast<int>(arrays.size()) != n) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(kOp), ": the sharding has ", n,
                                                   " devices but ", arrays.size(),
                                                   " arrays were given"));
  }
  std::vector<RuntimeArray*> inputs;
  std::vector<Shard> shards;
  for (int i = 0; i < n; ++i) {
    absl::StatusOr<RuntimeArray*> a = CheckArray(arrays[i], kOp, i);
    if (!a.ok()) return a.status();
    if ((*a)->dtype() != dtype) {
      return absl::InvalidArgumentError(absl::StrCat(std::string(kOp), ": array ", i, " has dtype ",
                                                     (*a)->dtype().DebugString(), ", expected ",
                                                     dtype.DebugString()));
    }
    if ((*a)->sharding().devices()->size() != 1) {
      return absl::InvalidArgumentError(absl::StrCat(std::string(kOp), ": array ", i, " is on ",
                                                     (*a)->sharding().devices()->DebugString(),
                                                     ", not on a single device"));
    }
    const Shape expected(layout->shard_shape(i));
    if ((*a)->shape() != expected) {
      return absl::InvalidArgumentError(absl::StrCat(std::string(kOp), ": array ", i, " has shape ",
                                                     (*a)->shape().DebugString(), " but shard ", i,
                                                     " of ", sharding->DebugString(), " has shape ",
                                                     expected.DebugString()));
    }
    if ((*a)->memories()[0] != (*memories)[i]) {
      return absl::InvalidArgumentError(absl::StrCat(
          std::string(kOp), ": array ", i, " is in ", (*a)->memories()[0]->DebugString(),
          " but the sharding puts shard ", i, " in ", (*memories)[i]->DebugString()));
    }
    absl::StatusOr<std::vector<Shard>> s = (*a)->shards();
    if (!s.ok()) return s.status();
    shards.push_back((*s)[0]);
    inputs.push_back(*a);
  }
  if (semantics == ArrayCopySemantics::kAlwaysCopy) {
    for (int i = 0; i < n; ++i) {
      absl::StatusOr<Shard> copy = CopyShardLocally(shards[i], (*memories)[i]);
      if (!copy.ok()) return copy.status();
      shards[i] = *std::move(copy);
    }
  }
  ArrayRef out =
      std::make_shared<RuntimeArray>(this, dtype, std::move(shape), std::move(sharding),
                                     *std::move(layout), *std::move(memories), std::move(shards));
  if (semantics == ArrayCopySemantics::kDonateInput) {
    for (RuntimeArray* a : inputs) a->Delete();
  }
  return out;
}

absl::StatusOr<std::vector<ArrayRef>> RuntimeClient::Disassemble(RuntimeArray& array,
                                                                 ArrayCopySemantics semantics) {
  absl::StatusOr<std::vector<Shard>> shards = array.shards();
  if (!shards.ok()) return shards.status();
  const Sharding& sharding = array.sharding();
  std::vector<ArrayRef> out;
  for (int i = 0; i < array.layout().num_slots(); ++i) {
    Shard shard = (*shards)[i];
    RuntimeMemory* memory = array.memories()[i];
    if (semantics == ArrayCopySemantics::kAlwaysCopy) {
      absl::StatusOr<Shard> copy = CopyShardLocally(shard, memory);
      if (!copy.ok()) return copy.status();
      shard = *std::move(copy);
    }
    const Shape shape(array.layout().shard_shape(i));
    out.push_back(std::make_shared<RuntimeArray>(
        this, array.dtype(), shape,
        SingleDeviceSharding::Create(sharding.devices()->devices()[i], sharding.memory_kind()),
        sharding::ShardLayout::Replicated(shape.dims(), 1), std::vector<RuntimeMemory*>{memory},
        std::vector<Shard>{shard}));
  }
  if (semantics == ArrayCopySemantics::kDonateInput) array.Delete();
  return out;
}

absl::StatusOr<ArrayRef> RuntimeClient::FullyReplicatedShard(RuntimeArray& array,
                                                             ArrayCopySemantics semantics) {
  if (absl::Status s = array.CheckNotDeleted(); !s.ok()) return s;
  if (!array.layout().IsFullyReplicated()) {
    return absl::InvalidArgumentError(
        absl::StrCat("FullyReplicatedShard: the array is not fully replicated: ",
                     array.sharding().DebugString()));
  }
  absl::StatusOr<std::vector<ArrayRef>> parts = Disassemble(array, semantics);
  if (!parts.ok()) return parts.status();
  return (*parts)[0];
}

absl::StatusOr<std::vector<ArrayRef>> RuntimeClient::RemapArrays(const RemapPlan& plan,
                                                                 absl::Span<ArrayRef> arrays,
                                                                 ArrayCopySemantics semantics) {
  constexpr std::string_view kOp = "RemapArrays";
  if (absl::Status s = plan.Validate(); !s.ok()) return s;
  if (arrays.size() != plan.input_specs.size()) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(kOp), ": the plan has ",
                                                   plan.input_specs.size(), " inputs but ",
                                                   arrays.size(), " arrays were given"));
  }
  if (semantics != ArrayCopySemantics::kDonateInput) {
    return absl::InvalidArgumentError(absl::StrCat(
        std::string(kOp), ": kDonateInput is required (got ", ArrayCopySemanticsName(semantics),
        "): remapping moves shards between arrays without copying"));
  }
  std::vector<RuntimeArray*> inputs;
  std::vector<std::vector<Shard>> in_shards;
  for (size_t i = 0; i < arrays.size(); ++i) {
    absl::StatusOr<RuntimeArray*> a = CheckArray(arrays[i], kOp, i);
    if (!a.ok()) return a.status();
    const ArraySpec& spec = plan.input_specs[i];
    // The same sharding, with memory kinds compared by the memories they
    // resolve to (MemoryKind() is the default memory, however it is named).
    bool matches = (*a)->dtype() == spec.dtype && (*a)->shape() == spec.shape &&
                   spec.sharding != nullptr &&
                   SameDeviceList((*a)->sharding().devices(), spec.sharding->devices()) &&
                   (*a)->sharding().HasSamePartitioning(*spec.sharding);
    if (matches) {
      absl::StatusOr<std::vector<RuntimeMemory*>> memories = ResolveMemories(*spec.sharding);
      matches = memories.ok() && *memories == (*a)->memories();
    }
    if (!matches) {
      return absl::InvalidArgumentError(
          absl::StrCat(std::string(kOp), ": array ", i, " (", (*a)->dtype().DebugString(),
                       (*a)->shape().DebugString(), ", ", (*a)->sharding().DebugString(),
                       ") does not match input spec ", i, " (", spec.DebugString(), ")"));
    }
    absl::StatusOr<std::vector<Shard>> s = (*a)->shards();
    if (!s.ok()) return s.status();
    inputs.push_back(*a);
    in_shards.push_back(*std::move(s));
  }
  std::vector<std::vector<Shard>> out_shards(plan.output_specs.size());
  std::vector<std::vector<RuntimeMemory*>> out_memories(plan.output_specs.size());
  std::vector<sharding::ShardLayout> out_layouts;
  for (size_t o = 0; o < plan.output_specs.size(); ++o) {
    const ArraySpec& spec = plan.output_specs[o];
    if (absl::Status s = CheckSharding(spec.sharding, kOp); !s.ok()) return s;
    absl::StatusOr<sharding::ShardLayout> layout = spec.sharding->Layout(spec.shape);
    if (!layout.ok()) return layout.status();
    absl::StatusOr<std::vector<RuntimeMemory*>> memories = ResolveMemories(*spec.sharding);
    if (!memories.ok()) return memories.status();
    out_shards[o].resize(layout->num_slots());
    out_memories[o] = *std::move(memories);
    out_layouts.push_back(*std::move(layout));
  }
  for (const RemapPlan::Mapping& m : plan.mappings) {
    for (size_t k = 0; k < m.from.size(); ++k) {
      for (int j = 0; j < m.from[k].size(); ++j) {
        const int from = m.from[k].start + j * m.from[k].step;
        const int to = m.to[k].start + j * m.to[k].step;
        if (inputs[m.in_array]->memories()[from] != out_memories[m.out_array][to]) {
          return absl::InvalidArgumentError(absl::StrCat(
              std::string(kOp), ": shard ", from, " of input ", m.in_array, " is in ",
              inputs[m.in_array]->memories()[from]->DebugString(), " but output ", m.out_array,
              " wants shard ", to, " in ", out_memories[m.out_array][to]->DebugString()));
        }
        out_shards[m.out_array][to] = in_shards[m.in_array][from];
      }
    }
  }
  std::vector<ArrayRef> outputs;
  for (size_t o = 0; o < plan.output_specs.size(); ++o) {
    const ArraySpec& spec = plan.output_specs[o];
    outputs.push_back(std::make_shared<RuntimeArray>(
        this, spec.dtype, spec.shape, spec.sharding, std::move(out_layouts[o]),
        std::move(out_memories[o]), std::move(out_shards[o])));
  }
  for (RuntimeArray* a : inputs) a->Delete();
  return outputs;
}

Future<> RuntimeClient::GetReadyFuture(absl::Span<const ArrayRef> arrays) {
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
