#include "backends/vulkan/host_transfer.h"

#include <cstdint>
#include <deque>
#include <utility>

#include "backends/common/parallel_memcpy.h"
#include "backends/vulkan/chunk_plan.h"
#include "backends/vulkan/command_recording.h"
#include "backends/vulkan/vulkan_buffer.h"
#include "ifrt/status_macros.h"

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

}  // namespace

absl::Status CopyHostToBuffers(const std::vector<HostToBufferCopy>& copies, StagingRing& ring,
                               VulkanStream& stream, PlatformCounters& counters) {
  StagedCopies<HostToBufferCopy> staged;
  bool host_copied = false;
  TESSERA_RETURN_IF_ERROR(MemcpyPinnedHostCopies(
      copies, stream, counters, DstOf,
      [](const HostToBufferCopy& cp, char* mapped) {
        backends::StridedMemcpy(cp.src, mapped, cp.geometry);
      },
      &staged, &host_copied));
  const uint64_t before = stream.last_value();
  TESSERA_RETURN_IF_ERROR(UploadStaged(staged, ring, stream, counters));
  // Only host work: signal this op's value from the host.
  if (host_copied && stream.last_value() == before) return stream.HostSignal();
  return absl::OkStatus();
}

absl::Status CopyBuffersToHost(const std::vector<BufferToHostCopy>& copies, StagingRing& ring,
                               VulkanStream& stream, PlatformCounters& counters) {
  StagedCopies<BufferToHostCopy> staged;
  bool host_work = false;
  TESSERA_RETURN_IF_ERROR(MemcpyPinnedHostCopies(
      copies, stream, counters, SrcOf,
      [](const BufferToHostCopy& cp, char* mapped) {
        backends::StridedMemcpy(mapped, cp.dst, cp.geometry);
      },
      &staged, &host_work));
  TESSERA_RETURN_IF_ERROR(StagedDownload(staged, ring, stream, counters).Run(&host_work));
  // The last step was host work: signal this op's value from the host.
  if (host_work) return stream.HostSignal();
  return absl::OkStatus();
}

}  // namespace tessera::vulkan
