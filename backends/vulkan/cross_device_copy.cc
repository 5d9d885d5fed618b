#include "backends/vulkan/cross_device_copy.h"

#include <vulkan/vulkan.h>

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <utility>
#include <vector>

#include "backends/common/parallel_memcpy.h"
#include "backends/vulkan/chunk_plan.h"
#include "backends/vulkan/command_recording.h"
#include "backends/vulkan/host_memory_import.h"
#include "backends/vulkan/vulkan_buffer.h"
#include "backends/vulkan/vulkan_device.h"
#include "backends/vulkan/vulkan_status.h"

namespace tessera::vulkan {
namespace {

// A chunk the source device has copied into a staging buffer.
struct ExportedChunk {
  uint64_t value = 0;  // on the source stream's export timeline
  int64_t bytes = 0;
  std::vector<Region> dst_regions;  // where this chunk goes in the destination
};

// The source device copies the next chunk (at most `cap` bytes) of `geoms` into `staging` at
// `offset`, recorded in `cb`, and signals its export timeline.
absl::StatusOr<ExportedChunk> ExportChunk(VulkanStream& src_stream, VkCommandBuffer cb,
                                          VulkanBuffer* src, VkBuffer staging, int64_t offset,
                                          int64_t cap, PlanCursor& pc,
                                          const std::vector<const StridedCopy*>& geoms) {
  std::vector<Region> src_regions;
  ExportedChunk chunk;
  chunk.bytes = PlanChunk(pc, geoms, cap, &src_regions, &chunk.dst_regions, NoPiece());
  vkResetCommandBuffer(cb, 0);
  if (absl::Status st = BeginCmd(cb); !st.ok()) return st;
  RecordRegions(cb, src_regions, /*to_staging=*/true, staging, offset,
                [&](size_t) { return std::make_pair(src->vk_buffer(), src->offset()); });
  if (absl::Status st = EndCmd(cb); !st.ok()) return st;
  absl::StatusOr<uint64_t> value = src_stream.SubmitExport(cb);
  if (!value.ok()) return value.status();
  chunk.value = *value;
  return chunk;
}

// This device copies a staged chunk from `staging` at `offset` into `dst`, recorded in `cb`;
// returns the value on its timeline.
absl::StatusOr<uint64_t> UploadChunk(VulkanStream& stream, VkCommandBuffer cb,
                                     const std::vector<Region>& regions, VkBuffer staging,
                                     int64_t offset, VulkanBuffer* dst) {
  vkResetCommandBuffer(cb, 0);
  if (absl::Status st = BeginCmd(cb); !st.ok()) return st;
  RecordRegions(cb, regions, /*to_staging=*/false, staging, offset,
                [&](size_t) { return std::make_pair(dst->vk_buffer(), dst->offset()); });
  if (absl::Status st = EndCmd(cb); !st.ok()) return st;
  return stream.Submit(cb);
}

}  // namespace

// A host staging ring imported into two VkDevices (VK_EXT_external_memory_host): the source device
// copies a chunk into it, the destination device copies it out. No host memcpy.
struct CrossDeviceCopier::SharedStaging {
  VulkanDevice* src = nullptr;
  VulkanDevice* dst = nullptr;
  void* host = nullptr;
  int64_t bytes = 0;
  VkDeviceMemory src_memory = VK_NULL_HANDLE, dst_memory = VK_NULL_HANDLE;
  VkBuffer src_buffer = VK_NULL_HANDLE, dst_buffer = VK_NULL_HANDLE;
  ~SharedStaging() {
    if (src_buffer) vkDestroyBuffer(src->vk_device(), src_buffer, nullptr);
    if (src_memory) vkFreeMemory(src->vk_device(), src_memory, nullptr);
    if (dst_buffer) vkDestroyBuffer(dst->vk_device(), dst_buffer, nullptr);
    if (dst_memory) vkFreeMemory(dst->vk_device(), dst_memory, nullptr);
    std::free(host);
  }
};

CrossDeviceCopier::CrossDeviceCopier(VulkanDevice* dst) : dst_(dst) {}

CrossDeviceCopier::~CrossDeviceCopier() = default;

void CrossDeviceCopier::ReleaseSharedStaging() { shared_.clear(); }

absl::Status CrossDeviceCopier::Copy(const BufferToBufferCopy& cp) {
  VulkanDevice* src = AsVulkanBuffer(cp.src)->dev();
  SharedStaging* shared = nullptr;
  if (dst_->options().cross_device_shared_staging && dst_->host_import() && src->host_import()) {
    auto b = GetSharedStaging(src);
    if (b.ok()) shared = *b;  // else: fall back to the host memcpy path
  }
  if (absl::Status s = shared ? CopyThroughSharedStaging(cp, *shared) : CopyThroughHost(cp);
      !s.ok()) {
    return s;
  }
  if (shared) dst_->counters().shared_staging_copies.fetch_add(1);
  dst_->counters().cross_device_copies.fetch_add(1);
  return absl::OkStatus();
}

// Source device S copies chunks into its export ring (up to `slots` ahead); the host copies each
// into this device's staging ring; this device uploads it. All on this device's worker.
CrossDeviceCopier::Legs CrossDeviceCopier::LegsOf(const BufferToBufferCopy& copy) const {
  VulkanBuffer* src = AsVulkanBuffer(copy.src);
  VulkanDevice* source = src->dev();
  return Legs{src,
              AsVulkanBuffer(copy.dst),
              source,
              dst_->stream(),
              source->stream(),
              dst_->staging_ring(),
              source->export_ring(),
              {&copy.geometry},
              dst_->options().staging_chunk_bytes};
}

absl::Status CrossDeviceCopier::CopyThroughHost(const BufferToBufferCopy& copy) {
  Legs legs = LegsOf(copy);
  auto& [src, dst, s, stream, src_stream, staging, exported, geoms, chunk] = legs;
  std::lock_guard<std::mutex> export_lock(s->export_mu());
  const int64_t src_chunk = s->options().staging_chunk_bytes;
  const int64_t cap = std::min(chunk, src_chunk);
  const int src_slots = exported.slots();
  const int dst_slots = staging.slots();
  struct Pending {
    int slot;
    int64_t bytes;
    uint64_t value;
    std::vector<Region> dst_regions;
  };
  std::deque<Pending> pending;
  PlanCursor pc = StartCursor(geoms);
  auto export_chunk = [&](int slot) -> absl::Status {
    absl::StatusOr<ExportedChunk> c = ExportChunk(
        src_stream, exported.cmds[slot], src, exported.buffer, slot * src_chunk, cap, pc, geoms);
    if (!c.ok()) return c.status();
    pending.push_back(Pending{slot, c->bytes, c->value, std::move(c->dst_regions)});
    return absl::OkStatus();
  };
  absl::Status status;
  for (int slot = 0; slot < src_slots && !CursorDone(pc, geoms) && status.ok(); ++slot) {
    status = export_chunk(slot);
  }
  int64_t j = 0;
  while (!pending.empty()) {
    Pending p = std::move(pending.front());
    pending.pop_front();
    if (absl::Status st = src_stream.WaitValue(src_stream.export_timeline(), p.value); !st.ok())
      return st;
    if (!status.ok()) continue;
    const int slot = static_cast<int>(j++ % dst_slots);
    if (absl::Status st = stream.WaitValue(stream.timeline(), staging.values[slot]); !st.ok())
      return st;
    backends::CopyPieces({{staging.mapped + slot * chunk, exported.mapped + p.slot * src_chunk,
                           static_cast<size_t>(p.bytes)}});
    if (!CursorDone(pc, geoms)) status = export_chunk(p.slot);
    absl::StatusOr<uint64_t> v =
        UploadChunk(stream, staging.cmds[slot], p.dst_regions, staging.buffer, slot * chunk, dst);
    if (!v.ok()) {
      status = v.status();
      continue;
    }
    staging.values[slot] = *v;
    dst_->counters().staged_chunks.fetch_add(1);
  }
  return status;
}

absl::StatusOr<CrossDeviceCopier::SharedStaging*> CrossDeviceCopier::GetSharedStaging(
    VulkanDevice* src) {
  auto it = shared_.find(src);
  if (it != shared_.end()) {
    if (!it->second) return absl::UnimplementedError("no shared staging for this pair");
    return it->second.get();
  }
  auto b = std::make_unique<SharedStaging>();
  b->src = src;
  b->dst = dst_;
  const int64_t align = std::max(dst_->host_import_alignment(), src->host_import_alignment());
  b->bytes = RoundUp(
      dst_->options().staging_chunk_bytes * static_cast<int64_t>(dst_->staging_ring().slots()),
      align);
  b->host = std::aligned_alloc(static_cast<size_t>(align), static_cast<size_t>(b->bytes));
  absl::Status s = b->host ? absl::OkStatus() : absl::ResourceExhaustedError("aligned_alloc");
  if (s.ok()) {
    s = ImportHostMemory(src->vk_device(), src->host_pointer_properties(), b->host, b->bytes,
                         VK_BUFFER_USAGE_TRANSFER_DST_BIT, &b->src_buffer, &b->src_memory);
  }
  if (s.ok()) {
    s = ImportHostMemory(dst_->vk_device(), dst_->host_pointer_properties(), b->host, b->bytes,
                         VK_BUFFER_USAGE_TRANSFER_SRC_BIT, &b->dst_buffer, &b->dst_memory);
  }
  if (!s.ok()) {
    shared_[src] = nullptr;  // remember: use the memcpy path for this pair
    return s;
  }
  SharedStaging* raw = b.get();
  shared_[src] = std::move(b);
  return raw;
}

// The source device copies chunk i into shared slot i % K (up to K ahead, on its export semaphore);
// once the host sees it done, this device copies the slot into the destination.
absl::Status CrossDeviceCopier::CopyThroughSharedStaging(const BufferToBufferCopy& copy,
                                                         SharedStaging& shared) {
  Legs legs = LegsOf(copy);
  auto& [src, dst, s, stream, src_stream, staging, exported, geoms, chunk] = legs;
  std::lock_guard<std::mutex> export_lock(s->export_mu());
  const int slots = std::min(staging.slots(), exported.slots());
  struct Pending {
    int slot;
    uint64_t value;
    std::vector<Region> dst_regions;
  };
  std::deque<Pending> pending;
  PlanCursor pc = StartCursor(geoms);
  auto export_chunk = [&](int slot) -> absl::Status {
    // The slot's previous reader is this device's upload recorded in staging.cmds[slot].
    if (absl::Status st = stream.WaitValue(stream.timeline(), staging.values[slot]); !st.ok())
      return st;
    absl::StatusOr<ExportedChunk> c = ExportChunk(
        src_stream, exported.cmds[slot], src, shared.src_buffer, slot * chunk, chunk, pc, geoms);
    if (!c.ok()) return c.status();
    pending.push_back(Pending{slot, c->value, std::move(c->dst_regions)});
    return absl::OkStatus();
  };
  absl::Status status;
  for (int slot = 0; slot < slots && !CursorDone(pc, geoms) && status.ok(); ++slot) {
    status = export_chunk(slot);
  }
  while (!pending.empty()) {
    Pending p = std::move(pending.front());
    pending.pop_front();
    if (absl::Status st = src_stream.WaitValue(src_stream.export_timeline(), p.value); !st.ok())
      return st;
    if (!status.ok()) continue;
    if (absl::Status st = stream.WaitValue(stream.timeline(), staging.values[p.slot]); !st.ok())
      return st;
    absl::StatusOr<uint64_t> v = UploadChunk(stream, staging.cmds[p.slot], p.dst_regions,
                                             shared.dst_buffer, p.slot * chunk, dst);
    if (!v.ok()) {
      status = v.status();
      continue;
    }
    staging.values[p.slot] = *v;
    dst_->counters().staged_chunks.fetch_add(1);
    if (!CursorDone(pc, geoms)) status = export_chunk(p.slot);
  }
  return status;
}

}  // namespace tessera::vulkan
