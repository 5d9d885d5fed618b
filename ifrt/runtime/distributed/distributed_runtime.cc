#include "ifrt/runtime/distributed/distributed_runtime.h"

#include <cstring>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "ifrt/strided_copy.h"

namespace tessera::runtime {
namespace {

// ---------------------------------------------------------------------------------------------
// Device descriptions: length-prefixed fields, the same bytes on every architecture we run on
// (the processes of one job share one build).

void PutInt(std::string& out, int64_t v) {
  char bytes[8];
  std::memcpy(bytes, &v, 8);
  out.append(bytes, 8);
}
void PutString(std::string& out, std::string_view s) {
  PutInt(out, static_cast<int64_t>(s.size()));
  out.append(s);
}

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  absl::StatusOr<int64_t> Int() {
    if (in_.size() < 8) return Malformed();
    int64_t v;
    std::memcpy(&v, in_.data(), 8);
    in_.remove_prefix(8);
    return v;
  }
  absl::StatusOr<std::string> String() {
    TESSERA_ASSIGN_OR_RETURN(const int64_t n, Int());
    if (n < 0 || static_cast<uint64_t>(n) > in_.size()) return Malformed();
    std::string s(in_.substr(0, n));
    in_.remove_prefix(n);
    return s;
  }

 private:
  static absl::Status Malformed() {
    return absl::InternalError("a process sent a malformed description of its devices");
  }
  std::string_view in_;
};

std::string EncodeDevices(absl::Span<const std::unique_ptr<Platform>> platforms) {
  std::string out;
  int64_t count = 0;
  for (const auto& p : platforms) count += p->device_count();
  PutInt(out, count);
  for (const auto& p : platforms) {
    for (int i = 0; i < p->device_count(); ++i) {
      const PlatformDeviceInfo& info = p->device_info(i);
      PutString(out, p->name());
      PutString(out, info.name);
      PutInt(out, info.default_memory);
      PutInt(out, static_cast<int64_t>(info.memories.size()));
      for (const PlatformMemoryInfo& m : info.memories) {
        PutString(out, m.kind);
        PutInt(out, m.host_addressable ? 1 : 0);
        PutInt(out, m.capacity_bytes);
      }
    }
  }
  return out;
}

absl::StatusOr<std::vector<PlatformDeviceInfo>> DecodeDevices(std::string_view in) {
  Reader r(in);
  TESSERA_ASSIGN_OR_RETURN(const int64_t count, r.Int());
  std::vector<PlatformDeviceInfo> out;
  for (int64_t i = 0; i < count; ++i) {
    PlatformDeviceInfo info;
    TESSERA_ASSIGN_OR_RETURN(info.kind, r.String());
    TESSERA_ASSIGN_OR_RETURN(info.name, r.String());
    TESSERA_ASSIGN_OR_RETURN(const int64_t default_memory, r.Int());
    info.default_memory = static_cast<int>(default_memory);
    TESSERA_ASSIGN_OR_RETURN(const int64_t memories, r.Int());
    for (int64_t m = 0; m < memories; ++m) {
      PlatformMemoryInfo mem;
      TESSERA_ASSIGN_OR_RETURN(mem.kind, r.String());
      TESSERA_ASSIGN_OR_RETURN(const int64_t host, r.Int());
      mem.host_addressable = host != 0;
      TESSERA_ASSIGN_OR_RETURN(mem.capacity_bytes, r.Int());
      info.memories.push_back(std::move(mem));
    }
    out.push_back(std::move(info));
  }
  return out;
}

bool IsLocal(const PlanEndpoint& e) { return e.is_host() || e.memory->device()->IsAddressable(); }

// Numbers the messages of one array of a collective call: a copy between this process and
// another is the n-th (from 0) between the two in its direction, counting in plan order. Every
// process plans its part of the same plan, in the same order, and the parts of the sending and the
// receiving process both hold every copy between them: both number a copy alike.
class MessageNumbers {
 public:
  explicit MessageNumbers(int processes) : sent_(processes, 0), received_(processes, 0) {}
  int64_t Next(int peer, bool send) { return (send ? sent_ : received_)[peer]++; }
  int64_t Max() const {
    int64_t m = 0;
    for (const auto* v : {&sent_, &received_}) {
      for (int64_t n : *v) m = std::max(m, n);
    }
    return m;
  }

 private:
  std::vector<int64_t> sent_, received_;
};

// The strided box `box` of the dense row-major shard of `shape` at `base`.
HostRegion ShardRegion(void* base, const Index& shape, const sharding::Box& box,
                       int64_t element_bytes) {
  HostRegion r;
  r.base = base;
  r.element_bytes = element_bytes;
  r.byte_strides = StridedCopy::RowMajorByteStrides(shape, element_bytes);
  r.extent.assign(box.shape().begin(), box.shape().end());
  for (int d = 0; d < box.rank(); ++d) r.offset += box.inclusive_min(d) * r.byte_strides[d];
  return r;
}

}  // namespace

DistributedRuntime::DistributedRuntime(std::unique_ptr<Transport> transport)
    : transport_(std::move(transport)) {}

DistributedRuntime::~DistributedRuntime() = default;

absl::Status DistributedRuntime::RunCall(std::string_view op,
                                         absl::FunctionRef<absl::Status(CollectiveCall*)> body) {
  CollectiveCall call;
  const absl::Status status = body(&call);
  if (call.agreed()) return absl::OkStatus();
  // The body failed (or had nothing to move) before the agreement: take part in it now.
  absl::Status agreed = AgreeLate(op, status);
  if (status.ok() && !agreed.ok()) return agreed;
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::unique_ptr<RuntimeDevice>>> DistributedRuntime::GlobalDevices(
    Client* client, absl::Span<const std::unique_ptr<Platform>> platforms, Transport& transport) {
  TESSERA_ASSIGN_OR_RETURN(std::vector<std::string> all,
                           transport.AllGather(EncodeDevices(platforms)));
  std::vector<std::unique_ptr<RuntimeDevice>> devices;
  auto next_id = [&] { return DeviceId{static_cast<int32_t>(devices.size())}; };
  for (int p = 0; p < static_cast<int>(all.size()); ++p) {
    if (p == transport.process_index()) {
      for (const auto& platform : platforms) {
        for (int i = 0; i < platform->device_count(); ++i) {
          devices.push_back(std::make_unique<RuntimeDevice>(client, next_id(), platform.get(), i));
          devices.back()->set_process_index(p);
        }
      }
      continue;
    }
    TESSERA_ASSIGN_OR_RETURN(std::vector<PlatformDeviceInfo> infos, DecodeDevices(all[p]));
    for (PlatformDeviceInfo& info : infos) {
      devices.push_back(std::make_unique<RuntimeDevice>(client, next_id(), std::move(info), p));
    }
  }
  return devices;
}

absl::StatusOr<int64_t> DistributedRuntime::AgreeOnCall(CollectiveCall* call, std::string_view op,
                                                        int semantics,
                                                        absl::Span<const CollectivePart> parts) {
  if (call == nullptr) return -1;
  call->MarkAgreed();
  // The specs of the call (not its plan: each process plans only its part), which every process
  // holds whole.
  CallFingerprint f;
  f.Add(op);
  f.Add(static_cast<uint64_t>(semantics));
  int64_t messages = 0;
  absl::Status local;
  for (const CollectivePart& p : parts) {
    f.Add(static_cast<uint64_t>(p.dtype_kind));
    f.Add(static_cast<uint64_t>(p.element_bytes));
    f.Add(*p.src_layout);
    f.Add(*p.src_memories);
    f.Add(*p.dst_layout);
    f.Add(*p.dst_memories);
    const int64_t window = MessageWindow(*p.src_layout, *p.dst_layout);
    if (const int64_t n = CountMessages(*p.plan, *p.src_memories, *p.dst_memories);
        n > window && local.ok()) {
      local = absl::ResourceExhaustedError(absl::StrCat(
          std::string(op), ": ", n, " copies between this process and another, more than the ",
          window, " messages a reshard from ", p.src_layout->num_slots(), " to ",
          p.dst_layout->num_slots(), " slots may use (one per pair of slots)"));
    }
    messages += window;
  }
  f.Add(static_cast<uint64_t>(messages));
  return transport_->Agree(op, f.value(), messages, local);
}

int64_t DistributedRuntime::MessageWindow(const sharding::ShardLayout& src,
                                          const sharding::ShardLayout& dst) {
  return std::max<int64_t>(1, int64_t{src.num_slots()} * dst.num_slots());
}

int64_t DistributedRuntime::CountMessages(const sharding::ReshardPlan& plan,
                                          const std::vector<RuntimeMemory*>& src_memories,
                                          const std::vector<RuntimeMemory*>& dst_memories) const {
  MessageNumbers numbers(process_count());
  for (const sharding::BoxCopy& c : plan.copies) {
    if (c.from_destination || c.bytes == 0) continue;
    RuntimeDevice* s = src_memories[c.src_slot]->device();
    RuntimeDevice* d = dst_memories[c.dst_slot]->device();
    if (s->IsAddressable() == d->IsAddressable()) continue;
    numbers.Next(s->IsAddressable() ? d->ProcessIndex() : s->ProcessIndex(), s->IsAddressable());
  }
  return numbers.Max();
}

absl::StatusOr<int64_t> DistributedRuntime::AgreeOnFingerprint(CollectiveCall* call,
                                                               std::string_view op,
                                                               uint64_t fingerprint,
                                                               int64_t messages) {
  if (call == nullptr) return -1;
  call->MarkAgreed();
  return transport_->Agree(op, fingerprint, messages, absl::OkStatus());
}

absl::Status DistributedRuntime::AgreeLate(std::string_view op, const absl::Status& status) {
  CallFingerprint f;
  f.Add(op);
  f.Add(std::string_view("nothing to move"));
  return transport_->Agree(op, f.value(), 0, status).status();
}

std::shared_ptr<const sharding::ReshardPlan> DistributedRuntime::LocalPart(
    const sharding::ReshardPlan& plan, const std::vector<RuntimeMemory*>* src_memories,
    const std::vector<RuntimeMemory*>& dst_memories) {
  auto local = [](RuntimeMemory* m) { return m->device()->IsAddressable(); };
  bool all = true;
  auto part = std::make_shared<sharding::ReshardPlan>();
  part->fan_out = plan.fan_out;
  for (const sharding::BoxCopy& c : plan.copies) {
    const bool src_local = c.from_destination
                               ? local(dst_memories[c.src_slot])
                               : src_memories == nullptr || local((*src_memories)[c.src_slot]);
    if (src_local && local(dst_memories[c.dst_slot])) {
      part->copies.push_back(c);
      switch (c.kind) {
        case sharding::BoxCopy::Kind::kAlias:
          part->aliased_bytes += c.bytes;
          break;
        case sharding::BoxCopy::Kind::kLocal:
          part->local_bytes += c.bytes;
          break;
        case sharding::BoxCopy::Kind::kCrossLocation:
          part->cross_location_bytes += c.bytes;
          break;
      }
    } else {
      all = false;
    }
  }
  if (all) return nullptr;
  part->lower_bound_bytes = part->cross_location_bytes;
  return part;
}

bool DistributedRuntime::AllAddressable(const std::vector<RuntimeMemory*>& memories) {
  for (RuntimeMemory* m : memories) {
    if (!m->device()->IsAddressable()) return false;
  }
  return true;
}

absl::Status DistributedRuntime::CheckFullyAddressable(const std::vector<RuntimeMemory*>& memories,
                                                       std::string_view op) {
  std::set<int32_t> ids;
  std::vector<std::string> names;
  for (RuntimeMemory* m : memories) {
    RuntimeDevice* d = m->device();
    if (d->IsAddressable() || !ids.insert(d->Id().value).second) continue;
    names.push_back(absl::StrCat(d->ToString(), " (process ", d->ProcessIndex(), ")"));
  }
  if (names.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      std::string(op), ": the array is not fully addressable: this process cannot read devices ",
      absl::StrJoin(names, ", "),
      "; reshard it onto this process's devices first, or read its addressable shards"));
}

PlanExecution DistributedRuntime::Execute(const sharding::ReshardPlan& plan, int64_t element_bytes,
                                          absl::Span<const PlanEndpoint> sources,
                                          absl::Span<const PlanEndpoint> destinations,
                                          const PlanContext& context, int64_t tag_base) {
  sharding::ReshardPlan local;
  local.fan_out = plan.fan_out;
  std::vector<std::vector<Future<>>> received(destinations.size());
  std::vector<Future<>> moved;
  bool all_local = true;
  MessageNumbers numbers(process_count());
  for (size_t i = 0; i < plan.copies.size(); ++i) {
    const sharding::BoxCopy& c = plan.copies[i];
    const PlanEndpoint& s = c.from_destination ? destinations[c.src_slot] : sources[c.src_slot];
    const PlanEndpoint& d = destinations[c.dst_slot];
    const bool src_local = IsLocal(s), dst_local = IsLocal(d);
    if (src_local && dst_local) {
      local.copies.push_back(c);
      continue;
    }
    all_local = false;
    if ((!src_local && !dst_local) || c.bytes == 0) continue;  // other processes' business
    if (tag_base < 0 || c.from_destination || s.is_host() || d.is_host()) {
      Future<> failed = MakeReadyFuture(absl::FailedPreconditionError(
          absl::StrCat(context.operation, ": a copy between processes outside a collective call")));
      if (dst_local) received[c.dst_slot].push_back(failed);
      moved.push_back(std::move(failed));
      continue;
    }
    const int peer = (src_local ? d : s).memory->device()->ProcessIndex();
    const int64_t tag = tag_base + numbers.Next(peer, src_local);
    const int64_t posted_ns = context.trace != nullptr ? context.trace->NowNs() : 0;
    Future<> f = src_local ? SendPart(c, s, d, element_bytes, tag)
                           : ReceivePart(c, s, d, element_bytes, tag, context);
    if (context.trace != nullptr) TraceMessagePart(context, c, s, d, peer, src_local, posted_ns, f);
    if (!src_local) received[c.dst_slot].push_back(f);
    moved.push_back(std::move(f));
  }
  if (all_local) return ExecutePlan(plan, element_bytes, sources, destinations, context);
  PlanExecution exec = ExecutePlan(local, element_bytes, sources, destinations, context);
  for (size_t slot = 0; slot < destinations.size(); ++slot) {
    if (received[slot].empty()) continue;
    received[slot].push_back(exec.dst_ready[slot]);
    exec.dst_ready[slot] = JoinFutures(received[slot]);
  }
  moved.push_back(exec.all_done);
  exec.all_done = JoinFutures(moved);
  return exec;
}

void DistributedRuntime::Abandon(const sharding::ReshardPlan& plan, int64_t element_bytes,
                                 absl::Span<const PlanEndpoint> sources,
                                 absl::Span<const PlanEndpoint> destinations,
                                 const absl::Status& error, int64_t tag_base) {
  if (tag_base < 0) return;
  MessageNumbers numbers(process_count());
  const Future<> failed = MakeReadyFuture(error);
  for (const sharding::BoxCopy& c : plan.copies) {
    // The messages Execute would exchange, numbered alike.
    if (c.from_destination || c.bytes == 0) continue;
    const PlanEndpoint& s = sources[c.src_slot];
    const PlanEndpoint& d = destinations[c.dst_slot];
    if (s.is_host() || d.is_host()) continue;
    const bool src_local = IsLocal(s), dst_local = IsLocal(d);
    if (src_local == dst_local) continue;
    const int peer = (src_local ? d : s).memory->device()->ProcessIndex();
    const int64_t tag = tag_base + numbers.Next(peer, src_local);
    const Index extent(c.src_box.shape().begin(), c.src_box.shape().end());
    // Only the peers need these messages: their futures (and errors) are not this call's.
    if (src_local) {  // an empty message: the region is not read
      static_cast<void>(transport_->Send(
          peer, tag, HostRegion::Dense(nullptr, extent, element_bytes), failed, nullptr));
    } else if (void* host = d.buffer->host_address(); host != nullptr) {
      static_cast<void>(transport_->Receive(
          peer, tag, ShardRegion(host, d.shard_shape, c.dst_box, element_bytes), d.buffer));
    } else {
      auto staging = std::make_shared<std::vector<uint8_t>>(c.bytes);
      static_cast<void>(transport_->Receive(
          peer, tag, HostRegion::Dense(staging->data(), extent, element_bytes), staging));
    }
  }
}

void DistributedRuntime::TraceMessagePart(const PlanContext& context, const sharding::BoxCopy& c,
                                          const PlanEndpoint& s, const PlanEndpoint& d, int peer,
                                          bool sent, int64_t posted_ns, const Future<>& done) {
  TransferTraceEvent e;
  e.operation = context.operation;
  e.src_device = s.memory->device()->Id().value;
  e.dst_device = d.memory->device()->Id().value;
  e.device = sent ? e.src_device : e.dst_device;
  e.bytes = c.bytes;
  e.copies = 1;
  e.src_box = c.src_box.ToString();
  e.dst_box = c.dst_box.ToString();
  e.direction = "device_to_device";
  e.guard_action = context.guard_action;
  e.start_ns = posted_ns;
  e.peer_process = peer;
  done.OnReady([trace = context.trace, e = std::move(e)](const absl::Status& st) mutable {
    // A trace that cannot grow loses the event; the part's own future is unaffected.
    CatchAllocationFailure("tracing a message part", [&] {
      e.end_ns = trace->NowNs();
      e.ok = st.ok();
      trace->Add(std::move(e));
      return absl::OkStatus();
    }).IgnoreError();
  });
}

Future<> DistributedRuntime::SendPart(const sharding::BoxCopy& c, const PlanEndpoint& s,
                                      const PlanEndpoint& d, int64_t element_bytes, int64_t tag) {
  const int peer = d.memory->device()->ProcessIndex();
  if (void* host = s.buffer->host_address(); host != nullptr) {
    return transport_->Send(peer, tag, ShardRegion(host, s.shard_shape, c.src_box, element_bytes),
                            s.ready, s.buffer);
  }
  // Device memory: the box goes to dense host staging on the source's stream first.
  const HostRegion box = ShardRegion(nullptr, s.shard_shape, c.src_box, element_bytes);
  auto staging = std::make_shared<std::vector<uint8_t>>(box.bytes());
  StridedCopy g;
  g.element_bytes = element_bytes;
  g.extent = box.extent;
  g.src_offset = box.offset;
  g.src_byte_strides = box.byte_strides;
  g.dst_byte_strides = StridedCopy::RowMajorByteStrides(box.extent, element_bytes);
  RuntimeDevice* sd = s.memory->device();
  Future<> staged = sd->platform()->CopyBuffersToHost(
      sd->platform_device(), {BufferToHostCopy{s.buffer, staging->data(), g}}, {s.ready});
  return transport_->Send(peer, tag, HostRegion::Dense(staging->data(), box.extent, element_bytes),
                          staged, staging);
}

Future<> DistributedRuntime::ReceivePart(const sharding::BoxCopy& c, const PlanEndpoint& s,
                                         const PlanEndpoint& d, int64_t element_bytes, int64_t tag,
                                         const PlanContext& context) {
  const int peer = s.memory->device()->ProcessIndex();
  Future<> done;
  if (void* host = d.buffer->host_address(); host != nullptr) {
    done = transport_->Receive(
        peer, tag, ShardRegion(host, d.shard_shape, c.dst_box, element_bytes), d.buffer);
  } else {
    // Device memory: into dense host staging, then onto the destination's stream.
    const HostRegion box = ShardRegion(nullptr, d.shard_shape, c.dst_box, element_bytes);
    auto staging = std::make_shared<std::vector<uint8_t>>(box.bytes());
    Future<> received = transport_->Receive(
        peer, tag, HostRegion::Dense(staging->data(), box.extent, element_bytes), staging);
    StridedCopy g;
    g.element_bytes = element_bytes;
    g.extent = box.extent;
    g.src_byte_strides = StridedCopy::RowMajorByteStrides(box.extent, element_bytes);
    g.dst_offset = box.offset;
    g.dst_byte_strides = box.byte_strides;
    RuntimeDevice* dd = d.memory->device();
    done = dd->platform()->CopyHostToBuffers(
        dd->platform_device(), {HostToBufferCopy{staging->data(), d.buffer, g}}, {received});
    done.OnReady([staging](const absl::Status&) {});  // keeps the staging alive until then
  }
  // Exposed once counted, so that a caller who awaits the array sees the bytes in the stats.
  Promise<> counted;
  done.OnReady([record = context.record, counted, src = s.memory->device()->Id().value,
                dst = d.memory->device()->Id().value, bytes = c.bytes](const absl::Status& st) {
    counted.Set(CatchAllocationFailure("counting a received copy", [&]() -> absl::Status {
      if (st.ok() && record) record(TransferTraffic{{{src, dst}, {bytes, 1}}});
      return st;
    }));
  });
  return counted.future();
}

}  // namespace tessera::runtime
