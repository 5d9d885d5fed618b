#include "backends/vulkan/host_transfer.h"

#include <cstring>
#include <deque>
#include <utility>

#include "backends/vulkan/chunk_plan.h"
#include "backends/vulkan/command_recording.h"
#include "backends/vulkan/parallel_memcpy.h"
#include "backends/vulkan/vulkan_buffer.h"

namespace tessera::vulkan {

absl::Status CopyHostToBuffers(const std::vector<HostToBufferCopy>& copies, StagingRing& ring,
                               VulkanStream& stream, PlatformCounters& counters) {
  std::vector<const StridedCopy*> geoms;
  std::vector<const HostToBufferCopy*> staged;
  bool host_copied = false;
  for (const HostToBufferCopy& cp : copies) {
    if (cp.geometry.num_elements() == 0) continue;
    if (char* mapped = AsVulkanBuffer(cp.dst)->mapped(); mapped && cp.dst->host_address()) {
      if (!host_copied) {
        if (absl::Status s = stream.WaitStream(); !s.ok()) return s;
        host_copied = true;
      }
      const char* src = static_cast<const char*>(cp.src);
      std::vector<MemcpyPiece> runs;
      cp.geometry.ForEachRun([&](int64_t so, int64_t d, int64_t n) {
        runs.push_back({mapped + d, src + so, static_cast<size_t>(n)});
      });
      CopyPieces(runs);
      counters.host_memcpy_copies.fetch_add(1);
      continue;
    }
    geoms.push_back(&cp.geometry);
    staged.push_back(&cp);
  }
  const uint64_t before = stream.last_value();
  const int64_t chunk = ring.chunk_bytes;
  const int slots = ring.slots();
  PlanCursor pc = StartCursor(geoms);
  std::vector<Region> regions;
  std::vector<MemcpyPiece> pieces;
  for (int64_t i = 0; !CursorDone(pc, geoms); ++i) {
    const int slot = static_cast<int>(i % slots);
    if (absl::Status s = stream.WaitValue(stream.timeline(), ring.values[slot]); !s.ok()) return s;
    char* base = ring.mapped + slot * chunk;
    regions.clear();
    pieces.clear();
    PlanChunk(pc, geoms, chunk, nullptr, &regions,
              [&](size_t copy, int64_t src, int64_t, int64_t n, int64_t st) {
                pieces.push_back({base + st, static_cast<const char*>(staged[copy]->src) + src,
                                  static_cast<size_t>(n)});
              });
    CopyPieces(pieces);
    VkCommandBuffer cb = ring.cmds[slot];
    vkResetCommandBuffer(cb, 0);
    if (absl::Status s = BeginCmd(cb); !s.ok()) return s;
    RecordRegions(cb, regions, /*to_staging=*/false, ring.buffer, slot * chunk, [&](size_t copy) {
      VulkanBuffer* b = AsVulkanBuffer(staged[copy]->dst);
      return std::make_pair(b->vk_buffer(), b->offset());
    });
    if (absl::Status s = EndCmd(cb); !s.ok()) return s;
    auto v = stream.Submit(cb);
    if (!v.ok()) return v.status();
    ring.values[slot] = *v;
    counters.staged_chunks.fetch_add(1);
  }
  if (host_copied && stream.last_value() == before) return stream.HostSignal();
  return absl::OkStatus();
}

absl::Status CopyBuffersToHost(const std::vector<BufferToHostCopy>& copies, StagingRing& ring,
                               VulkanStream& stream, PlatformCounters& counters) {
  std::vector<const StridedCopy*> geoms;
  std::vector<const BufferToHostCopy*> staged;
  bool host_work = false;
  for (const BufferToHostCopy& cp : copies) {
    if (cp.geometry.num_elements() == 0) continue;
    if (char* mapped = AsVulkanBuffer(cp.src)->mapped(); mapped && cp.src->host_address()) {
      if (!host_work) {
        if (absl::Status s = stream.WaitStream(); !s.ok()) return s;
        host_work = true;
      }
      char* dst = static_cast<char*>(cp.dst);
      std::vector<MemcpyPiece> runs;
      cp.geometry.ForEachRun([&](int64_t so, int64_t d, int64_t n) {
        runs.push_back({dst + d, mapped + so, static_cast<size_t>(n)});
      });
      CopyPieces(runs);
      counters.host_memcpy_copies.fetch_add(1);
      continue;
    }
    geoms.push_back(&cp.geometry);
    staged.push_back(&cp);
  }
  const int64_t chunk = ring.chunk_bytes;
  const int slots = ring.slots();
  struct Pending {
    int slot;
    PlanCursor start;
    int64_t bytes;
    uint64_t value;
  };
  std::deque<Pending> pending;
  PlanCursor pc = StartCursor(geoms);
  std::vector<Region> regions;
  auto plan_submit = [&](int slot) -> absl::Status {
    // The slot may still be in use by an earlier op's upload.
    if (absl::Status s = stream.WaitValue(stream.timeline(), ring.values[slot]); !s.ok()) return s;
    PlanCursor start = pc;
    regions.clear();
    const int64_t bytes = PlanChunk(pc, geoms, chunk, &regions, nullptr, NoPiece());
    VkCommandBuffer cb = ring.cmds[slot];
    vkResetCommandBuffer(cb, 0);
    if (absl::Status s = BeginCmd(cb); !s.ok()) return s;
    RecordRegions(cb, regions, /*to_staging=*/true, ring.buffer, slot * chunk, [&](size_t copy) {
      VulkanBuffer* b = AsVulkanBuffer(staged[copy]->src);
      return std::make_pair(b->vk_buffer(), b->offset());
    });
    if (absl::Status s = EndCmd(cb); !s.ok()) return s;
    auto v = stream.Submit(cb);
    if (!v.ok()) return v.status();
    ring.values[slot] = *v;
    pending.push_back(Pending{slot, start, bytes, *v});
    counters.staged_chunks.fetch_add(1);
    return absl::OkStatus();
  };
  absl::Status status;
  for (int slot = 0; slot < slots && !CursorDone(pc, geoms) && status.ok(); ++slot) {
    status = plan_submit(slot);
  }
  while (!pending.empty()) {
    Pending p = pending.front();
    pending.pop_front();
    if (absl::Status s = stream.WaitValue(stream.timeline(), p.value); !s.ok()) return s;
    if (!status.ok()) continue;  // drain what was submitted, then report
    const char* base = ring.mapped + p.slot * chunk;
    std::vector<MemcpyPiece> pieces;
    PlanChunk(p.start, geoms, p.bytes, nullptr, nullptr,
              [&](size_t copy, int64_t, int64_t dst, int64_t n, int64_t st) {
                pieces.push_back({static_cast<char*>(staged[copy]->dst) + dst, base + st,
                                  static_cast<size_t>(n)});
              });
    CopyPieces(pieces);
    host_work = true;
    if (!CursorDone(pc, geoms)) status = plan_submit(p.slot);
  }
  if (!status.ok()) return status;
  // The last step was host work: signal this op's value from the host.
  if (host_work) return stream.HostSignal();
  return absl::OkStatus();
}

}  // namespace tessera::vulkan
