#include "backends/vulkan/host_transfer.h"

#include <algorithm>
#include <cstdint>
#include <deque>
#include <utility>

#include "backends/common/parallel_memcpy.h"
#include "backends/vulkan/chunk_plan.h"
#include "backends/vulkan/command_recording.h"
#include "backends/vulkan/host_memory_import.h"
#include "backends/vulkan/vulkan_buffer.h"
#include "base/status_macros.h"

namespace tessera::vulkan {
namespace {

using backends::CopyPieces;
using backends::MemcpyPiece;

// The copies of an op that go through the staging ring, with their geometries (for chunk_plan.h).
template <typename Copy>
struct StagedCopies {
  std::vector<const StridedCopy*> geoms;
  std::vector<const Copy*> copies;
};

// The mapping of a pinned_host buffer, which host copies use directly; nullptr for a buffer whose
// host copies are staged.
char* PinnedHostMapping(const PlatformBufferRef& buffer) {
  char* mapped = AsVulkanBuffer(buffer)->mapped();
  return mapped != nullptr && buffer->host_address() != nullptr ? mapped : nullptr;
}

// Copies into or out of pinned_host buffers with a host memcpy in stream order: the first one waits
// for the stream's previous work (*host_copied then becomes true). Collects the other copies, which
// are staged, in `staged`.
template <typename Copy, typename BufferOf, typename HostCopy>
absl::Status MemcpyPinnedHostCopies(const std::vector<Copy>& copies, VulkanStream& stream,
                                    PlatformCounters& counters, BufferOf buffer_of,
                                    HostCopy host_copy, StagedCopies<Copy>* staged,
                                    bool* host_copied) {
  for (const Copy& cp : copies) {
    if (cp.geometry.num_elements() == 0) continue;
    char* mapped = PinnedHostMapping(buffer_of(cp));
    if (mapped == nullptr) {
      staged->geoms.push_back(&cp.geometry);
      staged->copies.push_back(&cp);
      continue;
    }
    if (!*host_copied) {
      TESSERA_RETURN_IF_ERROR(stream.WaitStream());
      *host_copied = true;
    }
    host_copy(cp, mapped);
    counters.host_memcpy_copies.fetch_add(1);
  }
  return absl::OkStatus();
}

// Records the chunk of `regions` between slot `slot` of the ring and the staged buffers
// (`to_staging`: buffer -> slot) and submits it; the slot's value becomes the submission's.
template <typename Copy, typename BufferOf>
absl::StatusOr<uint64_t> SubmitChunk(StagingRing& ring, int slot,
                                     const std::vector<Region>& regions, bool to_staging,
                                     const StagedCopies<Copy>& staged, BufferOf buffer_of,
                                     VulkanStream& stream, PlatformCounters& counters) {
  VkCommandBuffer cb = ring.cmds[slot];
  vkResetCommandBuffer(cb, 0);
  TESSERA_RETURN_IF_ERROR(BeginCmd(cb));
  RecordRegions(cb, regions, to_staging, ring.buffer, slot * ring.chunk_bytes, [&](size_t copy) {
    VulkanBuffer* b = AsVulkanBuffer(buffer_of(*staged.copies[copy]));
    return std::make_pair(b->vk_buffer(), b->offset());
  });
  TESSERA_RETURN_IF_ERROR(EndCmd(cb));
  TESSERA_ASSIGN_OR_RETURN(const uint64_t value, stream.Submit(cb));
  ring.values[slot] = value;
  counters.staged_chunks.fetch_add(1);
  return value;
}

const PlatformBufferRef& DstOf(const HostToBufferCopy& cp) { return cp.dst; }
const PlatformBufferRef& SrcOf(const BufferToHostCopy& cp) { return cp.src; }

// Host -> device through the ring: the host packs chunk i into slot i % slots (after the slot's
// previous upload finished) while the GPU uploads the chunks before it.
absl::Status UploadStaged(const StagedCopies<HostToBufferCopy>& staged, StagingRing& ring,
                          VulkanStream& stream, PlatformCounters& counters) {
  const std::vector<const StridedCopy*>& geoms = staged.geoms;
  PlanCursor pc = StartCursor(geoms);
  std::vector<Region> regions;
  std::vector<MemcpyPiece> pieces;
  for (int64_t i = 0; !CursorDone(pc, geoms); ++i) {
    const int slot = static_cast<int>(i % ring.slots());
    TESSERA_RETURN_IF_ERROR(stream.WaitValue(stream.timeline(), ring.values[slot]));
    char* base = ring.mapped + slot * ring.chunk_bytes;
    regions.clear();
    pieces.clear();
    PlanChunk(
        pc, geoms, ring.chunk_bytes, nullptr, &regions,
        [&](size_t copy, int64_t src, int64_t, int64_t n, int64_t st) {
          pieces.push_back({base + st, static_cast<const char*>(staged.copies[copy]->src) + src,
                            static_cast<size_t>(n)});
        });
    CopyPieces(pieces);
    TESSERA_RETURN_IF_ERROR(
        SubmitChunk(ring, slot, regions, /*to_staging=*/false, staged, DstOf, stream, counters)
            .status());
  }
  return absl::OkStatus();
}

// Device -> host through the ring: the GPU copies up to `slots` chunks ahead; the host unpacks each
// chunk as soon as its value is reached and refills the slot with the next chunk.
class StagedDownload {
 public:
  StagedDownload(const StagedCopies<BufferToHostCopy>& staged, StagingRing& ring,
                 VulkanStream& stream, PlatformCounters& counters)
      : staged_(staged),
        ring_(ring),
        stream_(stream),
        counters_(counters),
        pc_(StartCursor(staged.geoms)) {}

  // Runs the download; *host_work becomes true when the host unpacked a chunk.
  absl::Status Run(bool* host_work) {
    absl::Status status;
    for (int slot = 0; slot < ring_.slots() && !done() && status.ok(); ++slot) {
      status = SubmitNext(slot);
    }
    while (!pending_.empty()) {
      const Pending p = pending_.front();
      pending_.pop_front();
      TESSERA_RETURN_IF_ERROR(stream_.WaitValue(stream_.timeline(), p.value));
      if (!status.ok()) continue;  // drain what was submitted, then report
      Unpack(p);
      *host_work = true;
      if (!done()) status = SubmitNext(p.slot);
    }
    return status;
  }

 private:
  // A chunk submitted into `slot`: its runs start at `start`.
  struct Pending {
    int slot;
    PlanCursor start;
    int64_t bytes;
    uint64_t value;
  };

  bool done() const { return CursorDone(pc_, staged_.geoms); }

  // Plans the next chunk and submits its copy into `slot`.
  absl::Status SubmitNext(int slot) {
    // The slot may still be in use by an earlier op's upload.
    TESSERA_RETURN_IF_ERROR(stream_.WaitValue(stream_.timeline(), ring_.values[slot]));
    const PlanCursor start = pc_;
    regions_.clear();
    const int64_t bytes =
        PlanChunk(pc_, staged_.geoms, ring_.chunk_bytes, &regions_, nullptr, NoPiece());
    TESSERA_ASSIGN_OR_RETURN(const uint64_t value,
                             SubmitChunk(ring_, slot, regions_, /*to_staging=*/true, staged_, SrcOf,
                                         stream_, counters_));
    pending_.push_back(Pending{slot, start, bytes, value});
    return absl::OkStatus();
  }

  // Copies a completed chunk out of its slot into the users' buffers.
  void Unpack(const Pending& p) {
    const char* base = ring_.mapped + p.slot * ring_.chunk_bytes;
    PlanCursor cursor = p.start;
    pieces_.clear();
    PlanChunk(cursor, staged_.geoms, p.bytes, nullptr, nullptr,
              [&](size_t copy, int64_t, int64_t dst, int64_t n, int64_t st) {
                pieces_.push_back({static_cast<char*>(staged_.copies[copy]->dst) + dst, base + st,
                                   static_cast<size_t>(n)});
              });
    CopyPieces(pieces_);
  }

  const StagedCopies<BufferToHostCopy>& staged_;
  StagingRing& ring_;
  VulkanStream& stream_;
  PlatformCounters& counters_;
  PlanCursor pc_;
  std::deque<Pending> pending_;
  std::vector<Region> regions_;
  std::vector<MemcpyPiece> pieces_;
};

// Direct copies need runs this long on average.
constexpr int64_t kMinDirectRunBytes = 64 << 10;

// User host memory imported for one op: a VkBuffer aliasing [base, base + bytes).
struct ImportedRange {
  char* base = nullptr;
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
};

// Direct copies between user host memory and device buffers: see host_transfer.h. Returns false
// (nothing done, nothing enqueued) where the op is to be staged instead.
template <typename Copy>
class DirectCopy {
 public:
  DirectCopy(const StagedCopies<Copy>& staged, const HostImport& import, bool host_is_src)
      : staged_(staged), import_(import), host_is_src_(host_is_src) {}
  ~DirectCopy() {
    for (const ImportedRange& r : ranges_) {
      if (r.buffer != VK_NULL_HANDLE) vkDestroyBuffer(import_.device, r.buffer, nullptr);
      if (r.memory != VK_NULL_HANDLE) vkFreeMemory(import_.device, r.memory, nullptr);
    }
  }

  absl::StatusOr<bool> Run(StagingRing& ring, VulkanStream& stream, PlatformCounters& counters) {
    int64_t bytes = 0;
    for (const StridedCopy* g : staged_.geoms) bytes += g->bytes();
    if (import_.props == nullptr || bytes < import_.min_bytes) return false;
    for (size_t i = 0; i < staged_.copies.size(); ++i) {
      if (!Import(i)) return false;
    }

    // The ring's first slot lends its command buffer, once its last use is over.
    TESSERA_RETURN_IF_ERROR(stream.WaitValue(stream.timeline(), ring.values[0]));
    VkCommandBuffer cb = ring.cmds[0];
    vkResetCommandBuffer(cb, 0);
    TESSERA_RETURN_IF_ERROR(BeginCmd(cb));
    for (size_t i = 0; i < staged_.copies.size(); ++i) {
      if (regions_[i].empty()) continue;
      VulkanBuffer* b = AsVulkanBuffer(BufferOf(*staged_.copies[i]));
      const VkBuffer host = ranges_[i].buffer;
      vkCmdCopyBuffer(cb, host_is_src_ ? host : b->vk_buffer(),
                      host_is_src_ ? b->vk_buffer() : host,
                      static_cast<uint32_t>(regions_[i].size()), regions_[i].data());
    }
    TESSERA_RETURN_IF_ERROR(EndCmd(cb));
    TESSERA_ASSIGN_OR_RETURN(const uint64_t value, stream.Submit(cb));
    ring.values[0] = value;
    // The imports go when the copy is over (the destructor), so wait for it here.
    TESSERA_RETURN_IF_ERROR(stream.WaitValue(stream.timeline(), value));
    return true;
  }

 private:
  static const PlatformBufferRef& BufferOf(const HostToBufferCopy& cp) { return cp.dst; }
  static const PlatformBufferRef& BufferOf(const BufferToHostCopy& cp) { return cp.src; }
  static char* HostOf(const HostToBufferCopy& cp) {
    return static_cast<char*>(const_cast<void*>(cp.src));
  }
  static char* HostOf(const BufferToHostCopy& cp) { return static_cast<char*>(cp.dst); }

  // Imports the pages copy `i` touches on the host and lists its regions; false when it cannot.
  bool Import(size_t i) {
    const Copy& cp = *staged_.copies[i];
    const int64_t buffer_base = AsVulkanBuffer(BufferOf(cp))->offset();
    std::vector<VkBufferCopy> regions;
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (RunCursor run(*staged_.geoms[i]); !run.done(); run.Advance(run.remaining())) {
      if (regions.size() >= kMaxRegionsPerChunk) return false;
      const int64_t host = host_is_src_ ? run.src() : run.dst();
      const int64_t device = (host_is_src_ ? run.dst() : run.src()) + buffer_base;
      lo = std::min(lo, host);
      hi = std::max(hi, host + run.remaining());
      VkBufferCopy c;
      c.srcOffset = static_cast<VkDeviceSize>(host_is_src_ ? host : device);
      c.dstOffset = static_cast<VkDeviceSize>(host_is_src_ ? device : host);
      c.size = static_cast<VkDeviceSize>(run.remaining());
      regions.push_back(c);
    }
    // Drivers pay per region (lavapipe about as much as for 64 KiB of copying): copies of many
    // short runs are packed through staging instead, where the device side coalesces.
    if (static_cast<int64_t>(regions.size()) * kMinDirectRunBytes > staged_.geoms[i]->bytes()) {
      return false;
    }
    ImportedRange& range = ranges_.emplace_back();
    regions_.push_back(std::move(regions));
    if (regions_.back().empty()) return true;
    const uintptr_t align = static_cast<uintptr_t>(import_.alignment);
    const uintptr_t first = reinterpret_cast<uintptr_t>(HostOf(cp) + lo) / align * align;
    const uintptr_t end =
        (reinterpret_cast<uintptr_t>(HostOf(cp) + hi) + align - 1) / align * align;
    range.base = reinterpret_cast<char*>(first);
    if (!ImportHostMemory(import_.device, import_.props, range.base,
                          static_cast<int64_t>(end - first),
                          VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                          &range.buffer, &range.memory)
             .ok()) {
      return false;
    }
    // Host offsets were relative to the copy's pointer; make them relative to the import.
    const int64_t shift = HostOf(cp) - range.base;
    for (VkBufferCopy& c : regions_.back()) {
      (host_is_src_ ? c.srcOffset : c.dstOffset) += static_cast<VkDeviceSize>(shift);
    }
    return true;
  }

  const StagedCopies<Copy>& staged_;
  const HostImport& import_;
  const bool host_is_src_;
  std::vector<ImportedRange> ranges_;               // per copy
  std::vector<std::vector<VkBufferCopy>> regions_;  // per copy
};

}  // namespace

absl::Status CopyHostToBuffers(const std::vector<HostToBufferCopy>& copies, StagingRing& ring,
                               VulkanStream& stream, PlatformCounters& counters,
                               const HostImport* import) {
  StagedCopies<HostToBufferCopy> staged;
  bool host_copied = false;
  TESSERA_RETURN_IF_ERROR(MemcpyPinnedHostCopies(
      copies, stream, counters, DstOf,
      [](const HostToBufferCopy& cp, char* mapped) {
        backends::StridedMemcpy(cp.src, mapped, cp.geometry);
      },
      &staged, &host_copied));
  const uint64_t before = stream.last_value();
  bool direct = false;
  if (import != nullptr) {
    TESSERA_ASSIGN_OR_RETURN(
        direct, DirectCopy<HostToBufferCopy>(staged, *import, true).Run(ring, stream, counters));
  }
  if (!direct) TESSERA_RETURN_IF_ERROR(UploadStaged(staged, ring, stream, counters));
  // Only host work: signal this op's value from the host.
  if (host_copied && stream.last_value() == before) return stream.HostSignal();
  return absl::OkStatus();
}

absl::Status CopyBuffersToHost(const std::vector<BufferToHostCopy>& copies, StagingRing& ring,
                               VulkanStream& stream, PlatformCounters& counters,
                               const HostImport* import) {
  StagedCopies<BufferToHostCopy> staged;
  bool host_work = false;
  TESSERA_RETURN_IF_ERROR(MemcpyPinnedHostCopies(
      copies, stream, counters, SrcOf,
      [](const BufferToHostCopy& cp, char* mapped) {
        backends::StridedMemcpy(mapped, cp.dst, cp.geometry);
      },
      &staged, &host_work));
  bool direct = false;
  if (import != nullptr) {
    TESSERA_ASSIGN_OR_RETURN(
        direct, DirectCopy<BufferToHostCopy>(staged, *import, false).Run(ring, stream, counters));
  }
  if (!direct) {
    TESSERA_RETURN_IF_ERROR(StagedDownload(staged, ring, stream, counters).Run(&host_work));
  }
  // The last step was host work: signal this op's value from the host.
  if (host_work) return stream.HostSignal();
  return absl::OkStatus();
}

}  // namespace tessera::vulkan
