#include "ifrt/runtime/transfer_events.h"

#include <algorithm>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ifrt/runtime/program/collectives.h"
#include "ifrt/runtime/program/runtime_executable.h"

namespace tessera::runtime {
namespace {

std::vector<int> DeviceIds(const std::set<int32_t>& ids) {
  return std::vector<int>(ids.begin(), ids.end());
}

// `items` sorted, each once.
template <typename T>
std::vector<T> SortedUnique(std::vector<T> items) {
  std::sort(items.begin(), items.end());
  items.erase(std::unique(items.begin(), items.end()), items.end());
  return items;
}

std::vector<int64_t> Dims(const Shape& shape) {
  return std::vector<int64_t>(shape.dims().begin(), shape.dims().end());
}

// The kinds of `memories`, sorted, each once, joined by ",".
template <typename Memories>
std::string KindsOf(const Memories& memories) {
  std::set<std::string> kinds;
  for (const RuntimeMemory* m : memories) kinds.insert(m->Kind().DebugString());
  return absl::StrJoin(kinds, ",");
}

}  // namespace

guard::TransferEvent UploadEvent(std::string_view op, const sharding::ReshardPlan& plan,
                                 const std::vector<RuntimeMemory*>& memories, DType dtype,
                                 const Shape& shape, TransferOptions options,
                                 absl::Span<RuntimeMemory* const> sharing) {
  int64_t bytes = 0;
  std::set<int32_t> dst_ids;
  for (const sharding::BoxCopy& c : plan.copies) {
    if (c.kind != sharding::BoxCopy::Kind::kAlias && c.bytes > 0) {
      bytes += c.bytes;
      dst_ids.insert(memories[c.dst_slot]->device()->Id().value);
    }
  }
  for (const RuntimeMemory* m : sharing) dst_ids.insert(m->device()->Id().value);
  return guard::TransferEvent{.direction = guard::Direction::kHostToDevice,
                              .is_explicit = options.is_explicit,
                              .operation = std::string(op),
                              .dtype = dtype.DebugString(),
                              .shape = Dims(shape),
                              .bytes = bytes,
                              .src_devices = {},
                              .dst_devices = DeviceIds(dst_ids),
                              .src_memory_kind = "",
                              .dst_memory_kind = KindsOf(memories)};
}

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
                              .src_memory_kind = KindsOf(array.memories()),
                              .dst_memory_kind = ""};
}

void AddDeviceTraffic(const sharding::ReshardPlan& plan, const std::vector<RuntimeMemory*>& src,
                      const std::vector<RuntimeMemory*>& dst, DeviceTraffic& traffic) {
  for (const sharding::BoxCopy& c : plan.copies) {
    if (c.kind != sharding::BoxCopy::Kind::kCrossLocation || c.bytes == 0) continue;
    const int32_t src_id = src[c.src_slot]->device()->Id().value;
    const int32_t dst_id = dst[c.dst_slot]->device()->Id().value;
    // Between two memories of one device: a local copy, as transfer_stats() counts it.
    if (src_id == dst_id) continue;
    traffic.bytes += c.bytes;
    traffic.src_ids.push_back(src_id);
    traffic.dst_ids.push_back(dst_id);
    traffic.src_memories.push_back(src[c.src_slot]);
    traffic.dst_memories.push_back(dst[c.dst_slot]);
  }
}

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
      .src_devices = SortedUnique(traffic.src_ids),
      .dst_devices = SortedUnique(traffic.dst_ids),
      .src_memory_kind = KindsOf(SortedUnique(traffic.src_memories)),
      .dst_memory_kind = KindsOf(SortedUnique(traffic.dst_memories))};
}

guard::TransferEvent ProgramCommunicationEvent(const CompiledProgram& program) {
  std::vector<std::string> kinds;
  for (const ProgramStep& step : program.plan.steps) {
    if (step.kind != ProgramStep::Kind::kCollective) continue;
    kinds.push_back(CollectiveName(step.collective.kind));
  }
  guard::TransferEvent event;
  event.direction = guard::Direction::kDeviceToDevice;
  event.is_explicit = true;
  event.operation = absl::StrCat("Execute of '", program.plan.name,
                                 "' (communication: ", absl::StrJoin(kinds, ", "), ")");
  event.bytes = program.communication_bytes;
  for (RuntimeDevice* d : program.slot_devices) {
    event.src_devices.push_back(d->Id().value);
    event.dst_devices.push_back(d->Id().value);
  }
  return event;
}

}  // namespace tessera::runtime
