#include "ifrt/runtime/plan_executor.h"

#include <algorithm>
#include <atomic>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "ifrt/strided_copy.h"
#include "ifrt/transfer_stats.h"

namespace tessera::runtime {

absl::Status AllocationFailure(std::string_view what, const std::exception& e) {
  return absl::ResourceExhaustedError(
      absl::StrCat(std::string(what), ": out of host memory (", e.what(), ")"));
}

namespace {

// Sets `promise` to `status`, or to the allocation failure of `record` (which counts the bytes of
// a successful copy): a callback on a device thread never throws.
template <typename F>
void RecordAndSet(const Promise<>& promise, const absl::Status& status, F&& record) {
  promise.Set(CatchAllocationFailure("counting a finished copy", [&]() -> absl::Status {
    if (status.ok()) record();
    return status;
  }));
}

enum class OpKind { kHostToBuffer, kBufferToHost, kBufferToBuffer };

// The copies one platform call runs, and what it needs around it.
struct Batch {
  Platform* platform = nullptr;
  int device = 0;         // index within the platform
  int32_t device_id = 0;  // id within the client
  OpKind kind = OpKind::kBufferToBuffer;
  std::vector<HostToBufferCopy> h2b;
  std::vector<BufferToHostCopy> b2h;
  std::vector<BufferToBufferCopy> b2b;
  std::vector<Future<>> after;
  std::vector<PlatformBufferRef> keep_alive;  // buffers read through raw host pointers
  std::vector<int> dst_slots;
  // (src device, dst device) -> (bytes, copies), recorded when the batch succeeds.
  TransferTraffic traffic;
  // Traced batches hold one copy: its boxes.
  std::string src_box, dst_box;
  int64_t serial = 0;  // unique within an ExecutePlan call
};

// Untraced, one batch per (platform, device, kind) and wave; traced, one per copy (the last
// element: the copy's index in the plan).
using BatchKey = std::tuple<Platform*, int, OpKind, size_t>;

// The batches of one wave, found by key without a tree: untraced by (device id, kind) through a
// flat index, traced one per copy. Submitted in key order.
class BatchSet {
 public:
  // The batch of `key` for the device with client id `device_id`; a new one (numbered `*serial`,
  // then incremented) the first time.
  Batch& Get(const BatchKey& key, int32_t device_id, bool traced, int64_t* serial) {
    int* slot = nullptr;
    if (!traced) {
      const size_t at = static_cast<size_t>(device_id) * 3 + static_cast<size_t>(std::get<2>(key));
      if (at >= index_.size()) index_.resize(at + 1, -1);
      slot = &index_[at];
      if (*slot >= 0) return batches_[*slot];
    }
    if (slot != nullptr) *slot = static_cast<int>(batches_.size());
    keys_.push_back(key);
    Batch& b = batches_.emplace_back();
    b.serial = (*serial)++;
    // A batch gathers a device's share of a plan: a few copies, usually one per peer.
    constexpr size_t kTypicalCopies = 8;
    switch (std::get<2>(key)) {
      case OpKind::kHostToBuffer:
        b.h2b.reserve(kTypicalCopies);
        break;
      case OpKind::kBufferToHost:
        b.b2h.reserve(kTypicalCopies);
        break;
      case OpKind::kBufferToBuffer:
        b.b2b.reserve(kTypicalCopies);
        break;
    }
    b.after.reserve(kTypicalCopies);
    b.dst_slots.reserve(kTypicalCopies);
    return b;
  }
  // Calls fn(batch) in key order.
  template <typename F>
  void ForEachInOrder(F&& fn) {
    std::vector<int> order(batches_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
    std::sort(order.begin(), order.end(), [&](int a, int b) { return keys_[a] < keys_[b]; });
    for (int i : order) fn(batches_[i]);
  }

 private:
  std::deque<Batch> batches_;  // references stay valid as it grows
  std::vector<BatchKey> keys_;
  std::vector<int> index_;  // device id * 3 + kind -> index in batches_, or -1
};

int32_t DeviceIdOf(const PlanEndpoint& e) {
  return e.is_host() ? TransferStats::kHost : e.memory->device()->Id().value;
}

// The byte strides of an endpoint: the host buffer's, or a dense shard's.
Index ByteStridesOf(const PlanEndpoint& e, int64_t element_bytes) {
  return e.is_host() ? e.host_byte_strides
                     : StridedCopy::RowMajorByteStrides(e.shard_shape, element_bytes);
}

// Geometry of `box` inside an endpoint whose byte strides are `endpoint_strides`.
void Place(const Index& endpoint_strides, const sharding::Box& box, int64_t* offset,
           Index* strides) {
  *strides = endpoint_strides;
  *offset = 0;
  for (int d = 0; d < box.rank(); ++d) *offset += box.inclusive_min(d) * endpoint_strides[d];
}

Future<> Enqueue(Batch& b) {
  switch (b.kind) {
    case OpKind::kHostToBuffer:
      return b.platform->CopyHostToBuffers(b.device, std::move(b.h2b), b.after);
    case OpKind::kBufferToHost:
      return b.platform->CopyBuffersToHost(b.device, std::move(b.b2h), b.after);
    case OpKind::kBufferToBuffer:
      return b.platform->CopyBuffersToBuffers(b.device, std::move(b.b2b), b.after);
  }
  return MakeReadyFuture(absl::InternalError("unknown copy kind"));
}

// A copy between two platforms neither of which can address the other's memory: device -> host
// staging -> device, as one movement.
Future<> StagedCopy(const PlanEndpoint& s, const PlanEndpoint& d, const StridedCopy& g) {
  auto staging = std::make_shared<std::vector<uint8_t>>(g.bytes());
  StridedCopy down;
  down.element_bytes = g.element_bytes;
  down.extent = g.extent;
  down.src_offset = g.src_offset;
  down.src_byte_strides = g.src_byte_strides;
  down.dst_byte_strides = StridedCopy::RowMajorByteStrides(g.extent, g.element_bytes);
  StridedCopy up;
  up.element_bytes = g.element_bytes;
  up.extent = g.extent;
  up.src_byte_strides = down.dst_byte_strides;
  up.dst_offset = g.dst_offset;
  up.dst_byte_strides = g.dst_byte_strides;
  RuntimeDevice* sd = s.memory->device();
  RuntimeDevice* dd = d.memory->device();
  Future<> down_done = sd->platform()->CopyBuffersToHost(
      sd->platform_device(), {BufferToHostCopy{s.buffer, staging->data(), down}}, {s.ready});
  Future<> up_done;
  try {
    up_done = dd->platform()->CopyHostToBuffers(
        dd->platform_device(), {HostToBufferCopy{staging->data(), d.buffer, up}}, {down_done});
    up_done.OnReady([staging](const absl::Status&) {});  // keeps the staging buffer alive
  } catch (...) {
    // The copies already enqueued use `staging`: they finish before it goes.
    (up_done.valid() ? up_done : down_done).Await().IgnoreError();
    throw;
  }
  return up_done;
}

// When the inputs of a traced batch are ready (its earliest possible start).
struct TraceStart {
  std::shared_ptr<std::atomic<int64_t>> ns;
};

TraceStart StartTracing(const std::shared_ptr<TransferTrace>& trace,
                        const std::vector<Future<>>& after) {
  TraceStart start{std::make_shared<std::atomic<int64_t>>(trace->NowNs())};
  JoinFutures(after).OnReady([start, trace](const absl::Status&) {
    start.ns->store(trace->NowNs(), std::memory_order_relaxed);
  });
  return start;
}

const char* DirectionOf(int32_t src, int32_t dst) {
  if (src == TransferStats::kHost) return "host_to_device";
  if (dst == TransferStats::kHost) return "device_to_host";
  return src == dst ? "local" : "device_to_device";
}

using Traffic = TransferTraffic;

// Counts `traffic` through `record` when there is one.
void RecordTraffic(const TrafficRecorder& record, const Traffic& traffic) {
  if (record) record(traffic);
}

// One trace event per traffic entry of a finished batch (a traced batch holds one copy).
void AddTraceEvents(TransferTrace& trace, const std::string& op, const std::string& action,
                    int32_t exec_device, const Traffic& traffic, const std::string& src_box,
                    const std::string& dst_box, const TraceStart& start, const absl::Status& st) {
  const int64_t end = trace.NowNs();
  for (const auto& [pair, amount] : traffic) {
    TransferTraceEvent e;
    e.operation = op;
    e.device = exec_device;
    e.src_device = pair.first;
    e.dst_device = pair.second;
    e.bytes = amount.first;
    e.copies = amount.second;
    e.src_box = src_box;
    e.dst_box = dst_box;
    e.direction = DirectionOf(pair.first, pair.second);
    e.guard_action = e.direction == std::string("local") ? "" : action;
    e.start_ns = std::min(end, start.ns->load(std::memory_order_relaxed));
    e.end_ns = end;
    e.ok = st.ok();
    trace.Add(std::move(e));
  }
}

void FinishTracing(const PlanContext& context, int32_t exec_device, const Traffic& traffic,
                   std::string src_box, std::string dst_box, const TraceStart& start,
                   const Future<>& done) {
  std::shared_ptr<TransferTrace> trace = context.trace;
  done.OnReady([trace, start, traffic, exec_device, op = context.operation,
                action = context.guard_action, src_box = std::move(src_box),
                dst_box = std::move(dst_box)](const absl::Status& st) {
    // A trace that cannot grow loses the event; the copy's own future is unaffected.
    CatchAllocationFailure("tracing a copy", [&] {
      AddTraceEvents(*trace, op, action, exec_device, traffic, src_box, dst_box, start, st);
      return absl::OkStatus();
    }).IgnoreError();
  });
}

// One ExecutePlan call: the plan's copies in waves, each wave's copies in batches.
class PlanRun {
 public:
  PlanRun(const sharding::ReshardPlan& plan, int64_t element_bytes,
          absl::Span<const PlanEndpoint> sources, absl::Span<const PlanEndpoint> destinations,
          const PlanContext& context)
      : plan_(plan),
        element_bytes_(element_bytes),
        sources_(sources),
        destinations_(destinations),
        context_(context),
        traced_(context.trace != nullptr),
        slot_writes_(destinations.size()),
        dst_ready_(destinations.size()) {}

  PlanExecution Run();
  // What Run returns when enqueueing failed with `status` part way: every future is set once the
  // copies already enqueued have finished, with their error or `status`.
  PlanExecution Abandon(absl::Status status);

 private:
  // The wave of each copy: 0 for copies from sources, 1 + the wave of what filled its source slot
  // for forwards. A wave starts once the destinations it reads from have been written.
  std::vector<int> Waves() const;
  void RunWave(const std::vector<int>& wave_of, int wave);
  // Adds copy `i` to its batch, or starts it at once when it needs host staging.
  void PlaceCopy(size_t i, BatchSet& batches);
  Batch& BatchFor(BatchSet& batches, RuntimeDevice* device, OpKind kind, size_t copy_index);
  void StartStagedCopy(const sharding::BoxCopy& c, const PlanEndpoint& s, const PlanEndpoint& d,
                       const StridedCopy& g, std::pair<int32_t, int32_t> pair);
  void SubmitBatch(Batch& b);
  // A future set once `enqueued` is and its traffic is counted; holds `keep_alive` until then.
  Future<> CountWhenDone(const Future<>& enqueued, Traffic traffic,
                         std::vector<PlatformBufferRef> keep_alive);

  const sharding::ReshardPlan& plan_;
  const int64_t element_bytes_;
  const absl::Span<const PlanEndpoint> sources_;
  const absl::Span<const PlanEndpoint> destinations_;
  const PlanContext& context_;
  const bool traced_;
  // Per source and destination slot: the endpoint's byte strides (computed once, not per copy).
  std::vector<Index> src_strides_, dst_strides_;
  // Per destination slot: the futures of the copies that write it.
  std::vector<std::vector<Future<>>> slot_writes_;
  // Per destination slot: written, as far as the waves so far go.
  std::vector<Future<>> dst_ready_;
  std::vector<Future<>> all_;
  // Per input (source slot i, or destination slot j forwarded from as sources_.size() + j): the
  // serial of the last batch that waits for it, so that a batch waits for each input once.
  std::vector<int64_t> input_waited_by_;
  int64_t next_serial_ = 0;
};

PlanExecution PlanRun::Run() {
  // One entry per batch or staged copy, at most one per copy: push_back never allocates below.
  all_.reserve(plan_.copies.size());
  input_waited_by_.assign(sources_.size() + destinations_.size(), -1);
  src_strides_.reserve(sources_.size());
  for (const PlanEndpoint& e : sources_) src_strides_.push_back(ByteStridesOf(e, element_bytes_));
  dst_strides_.reserve(destinations_.size());
  for (const PlanEndpoint& e : destinations_) {
    dst_strides_.push_back(ByteStridesOf(e, element_bytes_));
  }
  const std::vector<int> wave_of = Waves();
  const int max_wave = wave_of.empty() ? 0 : *std::max_element(wave_of.begin(), wave_of.end());
  for (int wave = 0; wave <= max_wave; ++wave) RunWave(wave_of, wave);
  PlanExecution out;
  out.dst_ready = std::move(dst_ready_);
  for (Future<>& ready : out.dst_ready) {
    if (!ready.valid()) ready = MakeReadyFuture();
  }
  out.all_done = JoinFutures(all_);
  return out;
}

PlanExecution PlanRun::Abandon(absl::Status status) {
  // Wait for what was enqueued: those copies may read or write through raw pointers into buffers
  // the caller frees once it has the error. They wait only for operations enqueued before them
  // (the caller holds the enqueue lock), so this cannot wait on itself.
  for (const Future<>& f : all_) f.Await().IgnoreError();
  PlanExecution out;
  out.status = status;
  out.all_done = MakeReadyFuture(status);
  out.dst_ready.assign(destinations_.size(), out.all_done);
  return out;
}

std::vector<int> PlanRun::Waves() const {
  std::vector<int> slot_wave(destinations_.size(), -1);
  std::vector<int> wave_of(plan_.copies.size(), 0);
  for (size_t i = 0; i < plan_.copies.size(); ++i) {
    const sharding::BoxCopy& c = plan_.copies[i];
    wave_of[i] = c.from_destination ? slot_wave[c.src_slot] + 1 : 0;
    slot_wave[c.dst_slot] = std::max(slot_wave[c.dst_slot], wave_of[i]);
  }
  return wave_of;
}

void PlanRun::RunWave(const std::vector<int>& wave_of, int wave) {
  BatchSet batches;
  for (size_t i = 0; i < plan_.copies.size(); ++i) {
    if (wave_of[i] == wave) PlaceCopy(i, batches);
  }
  batches.ForEachInOrder([this](Batch& b) { SubmitBatch(b); });
  for (size_t slot = 0; slot < destinations_.size(); ++slot) {
    dst_ready_[slot] = JoinFutures(slot_writes_[slot]);
  }
}

Batch& PlanRun::BatchFor(BatchSet& batches, RuntimeDevice* device, OpKind kind, size_t copy_index) {
  Batch& b = batches.Get(
      BatchKey(device->platform(), device->platform_device(), kind, traced_ ? copy_index : 0),
      device->Id().value, traced_, &next_serial_);
  b.platform = device->platform();
  b.device = device->platform_device();
  b.device_id = device->Id().value;
  b.kind = kind;
  return b;
}

void PlanRun::PlaceCopy(size_t i, BatchSet& batches) {
  const sharding::BoxCopy& c = plan_.copies[i];
  const PlanEndpoint& d = destinations_[c.dst_slot];
  const PlanEndpoint& s = c.from_destination ? destinations_[c.src_slot] : sources_[c.src_slot];
  // A forward reads what the waves before wrote into its source slot.
  const Future<>& s_ready = c.from_destination ? dst_ready_[c.src_slot] : s.ready;
  if (c.bytes == 0) return;
  if (c.kind == sharding::BoxCopy::Kind::kAlias && s.buffer != nullptr && s.buffer == d.buffer) {
    slot_writes_[c.dst_slot].push_back(s_ready);
    return;
  }
  StridedCopy g;
  g.element_bytes = element_bytes_;
  g.extent.assign(c.src_box.shape().begin(), c.src_box.shape().end());
  Place(c.from_destination ? dst_strides_[c.src_slot] : src_strides_[c.src_slot], c.src_box,
        &g.src_offset, &g.src_byte_strides);
  Place(dst_strides_[c.dst_slot], c.dst_box, &g.dst_offset, &g.dst_byte_strides);
  // Who the bytes count as coming from: the source, except for an upload's forwards, which are
  // legs of its host-to-device transfer (PlanContext::forwards_are_host_to_device).
  const int32_t counted_src = c.from_destination && context_.forwards_are_host_to_device
                                  ? TransferStats::kHost
                                  : DeviceIdOf(s);
  const auto pair = std::make_pair(counted_src, DeviceIdOf(d));

  // The executing device and the kind of platform call, as the header's table says.
  Batch* b = nullptr;
  if (s.is_host()) {
    b = &BatchFor(batches, d.memory->device(), OpKind::kHostToBuffer, i);
    b->h2b.push_back(HostToBufferCopy{s.host, d.buffer, std::move(g)});
  } else if (d.is_host()) {
    b = &BatchFor(batches, s.memory->device(), OpKind::kBufferToHost, i);
    b->b2h.push_back(BufferToHostCopy{s.buffer, d.host, std::move(g)});
  } else {
    RuntimeDevice* sd = s.memory->device();
    RuntimeDevice* dd = d.memory->device();
    if (sd->platform() == dd->platform()) {
      b = &BatchFor(batches, dd, OpKind::kBufferToBuffer, i);
      b->b2b.push_back(BufferToBufferCopy{s.buffer, d.buffer, std::move(g)});
    } else if (void* src_host = s.buffer->host_address(); src_host != nullptr) {
      b = &BatchFor(batches, dd, OpKind::kHostToBuffer, i);
      b->h2b.push_back(HostToBufferCopy{src_host, d.buffer, g});
      b->keep_alive.push_back(s.buffer);
    } else if (void* dst_host = d.buffer->host_address(); dst_host != nullptr) {
      b = &BatchFor(batches, sd, OpKind::kBufferToHost, i);
      b->b2h.push_back(BufferToHostCopy{s.buffer, dst_host, g});
      b->keep_alive.push_back(d.buffer);
    } else {
      PlanEndpoint staged_source = s;
      staged_source.ready = s_ready;
      StartStagedCopy(c, staged_source, d, g, pair);
      return;
    }
  }
  const size_t input = c.from_destination ? sources_.size() + c.src_slot : c.src_slot;
  if (!s.is_host() && input_waited_by_[input] != b->serial) {
    input_waited_by_[input] = b->serial;
    b->after.push_back(s_ready);
  }
  b->dst_slots.push_back(c.dst_slot);
  AddTraffic(b->traffic, pair, c.bytes);
  if (traced_) {
    b->src_box = c.src_box.ToString();
    b->dst_box = c.dst_box.ToString();
  }
}

void PlanRun::StartStagedCopy(const sharding::BoxCopy& c, const PlanEndpoint& s,
                              const PlanEndpoint& d, const StridedCopy& g,
                              std::pair<int32_t, int32_t> pair) {
  // The copy's future is exposed only once its bytes are counted, so that a caller who awaits an
  // array and then reads the client's statistics sees them.
  Promise<> counted;
  const int64_t bytes = c.bytes;
  Future<> staged = StagedCopy(s, d, g);
  all_.push_back(staged);  // replaced by `counted` below; Abandon waits for it meanwhile
  if (traced_) {           // on two streams, neither in the trace's order
    FinishTracing(context_, DeviceIdOf(d), {{pair, {bytes, 1}}}, c.src_box.ToString(),
                  c.dst_box.ToString(), StartTracing(context_.trace, {s.ready}), staged);
  }
  staged.OnReady([record = context_.record, pair, bytes, counted](const absl::Status& st) {
    RecordAndSet(counted, st, [&] { RecordTraffic(record, Traffic{{pair, {bytes, 1}}}); });
  });
  Future<> f = counted.future();
  slot_writes_[c.dst_slot].push_back(f);
  all_.back() = f;
}

void PlanRun::SubmitBatch(Batch& b) {
  auto traffic = std::move(b.traffic);
  auto keep_alive = std::move(b.keep_alive);
  std::vector<int> dst_slots = std::move(b.dst_slots);
  const int32_t exec_device = b.device_id;
  TraceStart trace_start;
  std::optional<Promise<>> traced_done;  // set when the copy finishes
  if (traced_) {
    traced_done.emplace();
    // A copy starts once its inputs are ready and the copy before it on the stream has finished
    // (taken before enqueueing: it may run at once).
    std::vector<Future<>> start_after = b.after;
    Future<> previous = context_.trace->ExchangeLastCopy(exec_device, traced_done->future());
    if (previous.valid()) start_after.push_back(std::move(previous));
    trace_start = StartTracing(context_.trace, start_after);
  }
  Future<> enqueued = Enqueue(b);
  all_.push_back(enqueued);  // replaced by `counted` below; Abandon waits for it meanwhile
  if (traced_) {
    FinishTracing(context_, exec_device, traffic, std::move(b.src_box), std::move(b.dst_box),
                  trace_start, enqueued);
    enqueued.OnReady([done = *std::move(traced_done)](const absl::Status& st) { done.Set(st); });
  }
  Future<> f;
  if (enqueued.IsReady() && !traced_) {
    // Ran inline (the platform did the copies on this thread): count them now, no promise.
    keep_alive.clear();
    const absl::Status& status = enqueued.Await();
    f = status.ok() && context_.record
            ? MakeReadyFuture(CatchAllocationFailure("counting a finished copy",
                                                     [&]() -> absl::Status {
                                                       RecordTraffic(context_.record, traffic);
                                                       return absl::OkStatus();
                                                     }))
            : enqueued;
  } else {
    f = CountWhenDone(enqueued, std::move(traffic), std::move(keep_alive));
  }
  std::sort(dst_slots.begin(), dst_slots.end());
  dst_slots.erase(std::unique(dst_slots.begin(), dst_slots.end()), dst_slots.end());
  for (int slot : dst_slots) slot_writes_[slot].push_back(f);
  all_.back() = f;
}

Future<> PlanRun::CountWhenDone(const Future<>& enqueued, Traffic traffic,
                                std::vector<PlatformBufferRef> keep_alive) {
  // The batch's future is exposed only once its bytes are counted (Future::Set wakes waiters
  // before it runs callbacks), so that a caller who awaits an array and then reads the client's
  // statistics sees them.
  Promise<> counted;
  enqueued.OnReady([record = context_.record, counted, traffic = std::move(traffic),
                    keep_alive = std::move(keep_alive)](const absl::Status& st) mutable {
    // The copy is over: release the buffers it read or wrote through raw pointers before anyone
    // learns so. A waiter woken below may destroy the client, and with it the platforms that own
    // those buffers, while this callback is still on its way out.
    keep_alive.clear();
    RecordAndSet(counted, st, [&] { RecordTraffic(record, traffic); });
  });
  return counted.future();
}

}  // namespace

PlanExecution ExecutePlan(const sharding::ReshardPlan& plan, int64_t element_bytes,
                          absl::Span<const PlanEndpoint> sources,
                          absl::Span<const PlanEndpoint> destinations, const PlanContext& context) {
  PlanRun run(plan, element_bytes, sources, destinations, context);
  absl::Status failure;
  try {
    return run.Run();
  } catch (const std::bad_alloc& e) {
    failure = AllocationFailure(context.operation, e);
  } catch (const std::length_error& e) {
    failure = AllocationFailure(context.operation, e);
  }
  return run.Abandon(std::move(failure));
}

}  // namespace tessera::runtime
