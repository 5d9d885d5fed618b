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
#include "ifrt/runtime/distributed/distributed_runtime.h"
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

// Zero copy: a single compact shard, 16-byte aligned (the alignment of every element type, and
// what malloc and numpy give a large array), in a memory the platform can use in place. nullopt
// when the buffer does not qualify or the platform cannot wrap it (a platform with a stricter
// alignment of its own refuses): the caller then copies.
constexpr uintptr_t kWrapAlignment = 16;
std::optional<Shard> WrapHostBuffer(const void* data, const Shape& shape, int64_t element_bytes,
                                    const Index& strides, const sharding::ShardLayout& layout,
                                    const std::vector<RuntimeMemory*>& memories,
                                    const OnceCallback& on_done) {
  if (layout.num_slots() != 1 ||
      strides != StridedCopy::RowMajorByteStrides(shape.dims(), element_bytes) || data == nullptr ||
      reinterpret_cast<uintptr_t>(data) % kWrapAlignment != 0) {
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
  if (dispatcher_ != nullptr) dispatcher_->StopProcesses();   // waits for sends and receives
  // Compiled programs hold their kernels, and a kernel holds its platform's device objects (a
  // Vulkan pipeline, its device): they go before the platforms that own those devices.
  compiler_.reset();
  platforms_.clear();
}

absl::StatusOr<std::shared_ptr<RuntimeClient>> RuntimeClient::Create(
    std::vector<std::unique_ptr<Platform>> platforms, guard::Policy transfer_guard_policy,
    std::unique_ptr<ProgramCompiler> program_compiler, std::unique_ptr<Transport> transport) {
  if (platforms.empty()) return absl::InvalidArgumentError("a client needs at least one platform");
  std::shared_ptr<RuntimeClient> client(new RuntimeClient());
  // How calls span processes, chosen once: one process, or every process of the transport.
  std::unique_ptr<Processes> processes = std::make_unique<LocalProcesses>();
  if (transport != nullptr) {
    // Every process's devices, in one global order
    // (ifrt/runtime/distributed/distributed_runtime.h).
    TESSERA_ASSIGN_OR_RETURN(
        client->devices_, DistributedRuntime::GlobalDevices(client.get(), platforms, *transport));
    processes = std::make_unique<DistributedRuntime>(std::move(transport));
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
  std::vector<int64_t> local_memory_ids;
  for (std::unique_ptr<RuntimeDevice>& device : client->devices_) {
    device->CreateMemories(&next_memory_id);
    client->device_ptrs_.push_back(device.get());
    if (!device->IsAddressable()) continue;
    client->addressable_ptrs_.push_back(device.get());
    for (Memory* m : device->Memories()) local_memory_ids.push_back(m->Id().value);
  }
  client->dispatcher_ = std::make_unique<Dispatcher>(transfer_guard_policy, std::move(processes),
                                                     std::move(local_memory_ids));
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

int RuntimeClient::process_index() const { return dispatcher_->process_index(); }

int RuntimeClient::process_count() const { return dispatcher_->process_count(); }

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
                      ", transfer_guard=", dispatcher_->guard().policy().ToString(), ")");
}

// ---------------------------------------------------------------------------------------------
// Statistics and tracing

TransferStats RuntimeClient::transfer_stats() const { return dispatcher_->transfer_stats(); }

void RuntimeClient::SetTransferTrace(std::shared_ptr<TransferTrace> trace) {
  dispatcher_->SetTransferTrace(std::move(trace));
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
                                 Dispatcher::ResolveMemories(*spec.sharding));
        // The cached plan as is: its locations are memory ids.
        return dispatcher_->GetPlan(a->layout(), Dispatcher::Locations(a->memories()), layout,
                                    Dispatcher::Locations(memories), a->element_bytes(),
                                    /*fan_out=*/false);
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
  TESSERA_ASSIGN_OR_RETURN(Dispatcher::Upload upload,
                           dispatcher_->PlanUpload(kOp, dtype, shape, sharding, options));
  const Placement& placement = upload.placement;

  if (semantics == HostBufferSemantics::kImmutableZeroCopy && upload.addressable) {
    std::optional<Shard> wrapped = WrapHostBuffer(data, shape, element_bytes, strides,
                                                  *placement.layout, *placement.memories, on_done);
    if (wrapped.has_value()) {
      on_failure.armed = false;  // the buffer's release calls on_done
      return ArrayRef(std::make_shared<RuntimeArray>(
          this, dtype, std::move(shape), std::move(sharding), std::move(upload.placement),
          std::vector<Shard>{*std::move(wrapped)}));
    }
  }

  PlanEndpoint src;
  src.host = const_cast<void*>(data);
  src.host_byte_strides = std::move(strides);
  TESSERA_ASSIGN_OR_RETURN(Dispatcher::UploadRun run,
                           dispatcher_->RunUpload(kOp, upload, std::move(src), element_bytes));
  on_failure.armed = false;  // from here on, the transfer calls on_done
  ReleaseHostBufferWhenRead(semantics, run.exec.all_done, on_done);
  TESSERA_RETURN_IF_ERROR(run.exec.status);
  return ArrayRef(std::make_shared<RuntimeArray>(this, dtype, std::move(shape), std::move(sharding),
                                                 std::move(upload.placement),
                                                 std::move(run.shards)));
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
  PlanEndpoint dst;
  dst.host = data;
  dst.host_byte_strides = std::move(strides);
  return dispatcher_->Download(kOp, array, shards, std::move(dst), options);
}

// ---------------------------------------------------------------------------------------------
// Devices -> devices

absl::StatusOr<std::vector<ArrayRef>> RuntimeClient::ReshardArrays(
    absl::Span<ArrayRef> arrays, absl::Span<const ArraySpec> specs, ArrayCopySemantics semantics,
    TransferOptions options) {
  return dispatcher_->RunCall("ReshardArrays", [&](CollectiveCall* call) {
    return CatchAllocationFailure(
        "ReshardArrays", [&] { return ReshardImpl(call, arrays, specs, semantics, options); });
  });
}

absl::StatusOr<std::vector<ArrayRef>> RuntimeClient::ReshardImpl(CollectiveCall* call,
                                                                 absl::Span<ArrayRef> arrays,
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
  return ReshardValidated(call, kOp, inputs, specs, semantics, options);
}

absl::StatusOr<std::vector<ArrayRef>> RuntimeClient::CopyArrays(
    absl::Span<ArrayRef> arrays, std::optional<DeviceListRef> devices,
    std::optional<MemoryKind> memory_kind, ArrayCopySemantics semantics, TransferOptions options) {
  return dispatcher_->RunCall("CopyArrays", [&](CollectiveCall* call) {
    return CatchAllocationFailure("CopyArrays", [&] {
      return CopyArraysImpl(call, arrays, std::move(devices), std::move(memory_kind), semantics,
                            options);
    });
  });
}

absl::StatusOr<std::vector<ArrayRef>> RuntimeClient::CopyArraysImpl(
    CollectiveCall* call, absl::Span<ArrayRef> arrays, std::optional<DeviceListRef> devices,
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
  return ReshardValidated(call, kOp, inputs, specs, semantics, options);
}

absl::StatusOr<std::vector<ArrayRef>> RuntimeClient::ReshardValidated(
    CollectiveCall* call, std::string_view op, absl::Span<RuntimeArray* const> arrays,
    absl::Span<const ArraySpec> specs, ArrayCopySemantics semantics, TransferOptions options) {
  TESSERA_ASSIGN_OR_RETURN(std::vector<MovedShards> moved,
                           dispatcher_->Reshard(call, op, arrays, specs, semantics, options));
  std::vector<ArrayRef> outputs;
  outputs.reserve(moved.size());
  for (size_t i = 0; i < moved.size(); ++i) {
    outputs.push_back(
        std::make_shared<RuntimeArray>(this, arrays[i]->dtype(), specs[i].shape, specs[i].sharding,
                                       std::move(moved[i].placement), std::move(moved[i].shards)));
  }
  if (semantics == ArrayCopySemantics::kDonateInput) {
    for (RuntimeArray* a : arrays) static_cast<void>(a->Delete());  // donated
  }
  return outputs;
}

// ---------------------------------------------------------------------------------------------
// Assembly, disassembly, remapping

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
  TESSERA_ASSIGN_OR_RETURN(Placement placement, Dispatcher::ResolvePlacement(*sharding, shape));
  // One array per addressable device of the sharding (all of them in a single-process client);
  // the other processes hold the other shards.
  std::vector<int> slots;
  for (int i = 0; i < placement.layout->num_slots(); ++i) {
    if ((*placement.memories)[i]->device()->IsAddressable()) slots.push_back(i);
  }
  const int n = static_cast<int>(slots.size());
  if (static_cast<int>(arrays.size()) != n) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(kOp), ": the sharding has ", n,
                     n == placement.layout->num_slots() ? "" : " addressable", " devices but ",
                     arrays.size(), " arrays were given"));
  }
  std::vector<RuntimeArray*> inputs;
  std::vector<Shard> shards(placement.layout->num_slots(), Shard{nullptr, MakeReadyFuture()});
  for (int k = 0; k < n; ++k) {
    const int i = slots[k];
    TESSERA_ASSIGN_OR_RETURN(RuntimeArray* const a, CheckArray(arrays[k], kOp, k));
    TESSERA_RETURN_IF_ERROR(CheckAssemblyPart(*a, i, dtype, *sharding, *placement.layout,
                                              (*placement.memories)[i], kOp));
    TESSERA_ASSIGN_OR_RETURN(std::vector<Shard> part, a->shards());
    shards[i] = part[0];
    inputs.push_back(a);
  }
  if (semantics == ArrayCopySemantics::kAlwaysCopy) {
    TESSERA_ASSIGN_OR_RETURN(
        shards, dispatcher_->CopyShardsLocally(kOp, *placement.layout, *placement.memories, shards,
                                               *dtype.byte_size()));
  }
  ArrayRef out = std::make_shared<RuntimeArray>(this, dtype, std::move(shape), std::move(sharding),
                                                std::move(placement), std::move(shards));
  if (semantics == ArrayCopySemantics::kDonateInput) {
    for (RuntimeArray* a : inputs) static_cast<void>(a->Delete());  // donated
  }
  return out;
}

ArrayRef RuntimeClient::ShardAsArray(const RuntimeArray& array, int slot, Shard shard) {
  const Sharding& sharding = array.sharding();
  const Shape shape(array.layout().shard_shape(slot));
  return std::make_shared<RuntimeArray>(
      this, array.dtype(), shape,
      SingleDeviceSharding::Create(sharding.devices()->devices()[slot], sharding.memory_kind()),
      Placement::Of(sharding::ShardLayout::Replicated(shape.dims(), 1),
                    std::vector<RuntimeMemory*>{array.memories()[slot]}),
      std::vector<Shard>{std::move(shard)});
}

absl::StatusOr<std::vector<ArrayRef>> RuntimeClient::Disassemble(RuntimeArray& array,
                                                                 ArrayCopySemantics semantics) {
  constexpr std::string_view kOp = "DisassembleIntoSingleDeviceArrays";
  TESSERA_ASSIGN_OR_RETURN(std::vector<Shard> shards, array.shards());
  if (semantics == ArrayCopySemantics::kAlwaysCopy) {
    TESSERA_ASSIGN_OR_RETURN(
        shards, dispatcher_->CopyShardsLocally(kOp, array.layout(), array.memories(), shards,
                                               array.element_bytes()));
  }
  std::vector<ArrayRef> out;
  out.reserve(shards.size());
  for (size_t i = 0; i < shards.size(); ++i) {
    // The addressable shards only (all of them in a single-process client).
    if (!array.memories()[i]->device()->IsAddressable()) continue;
    out.push_back(ShardAsArray(array, static_cast<int>(i), std::move(shards[i])));
  }
  if (semantics == ArrayCopySemantics::kDonateInput) static_cast<void>(array.Delete());
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
        first, dispatcher_->CopyShardsLocally(kOp, one, {array.memories()[slot]}, first,
                                              array.element_bytes()));
  }
  ArrayRef out = ShardAsArray(array, slot, std::move(first[0]));
  if (semantics == ArrayCopySemantics::kDonateInput) static_cast<void>(array.Delete());
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
    TESSERA_ASSIGN_OR_RETURN(Placement placement,
                             Dispatcher::ResolvePlacement(*spec.sharding, spec.shape));
    placements.push_back(std::move(placement));
  }
  TESSERA_ASSIGN_OR_RETURN(std::vector<std::vector<Shard>> out_shards,
                           RemapShards(plan, inputs, in_shards, placements, kOp));
  std::vector<ArrayRef> outputs;
  for (size_t o = 0; o < plan.output_specs.size(); ++o) {
    const ArraySpec& spec = plan.output_specs[o];
    outputs.push_back(std::make_shared<RuntimeArray>(this, spec.dtype, spec.shape, spec.sharding,
                                                     std::move(placements[o]),
                                                     std::move(out_shards[o])));
  }
  for (RuntimeArray* a : inputs) static_cast<void>(a->Delete());  // donated
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
    absl::StatusOr<std::vector<RuntimeMemory*>> memories =
        Dispatcher::ResolveMemories(*spec.sharding);
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
    out_shards[o].resize(outputs[o].layout->num_slots());
  }
  for (const RemapPlan::Mapping& m : plan.mappings) {
    const std::vector<RuntimeMemory*>& from_memories = inputs[m.in_array]->memories();
    const std::vector<RuntimeMemory*>& to_memories = *outputs[m.out_array].memories;
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
