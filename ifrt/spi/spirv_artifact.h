#ifndef TESSERA_IFRT_SPI_SPIRV_ARTIFACT_H_
#define TESSERA_IFRT_SPI_SPIRV_ARTIFACT_H_

// The payload of a "spirv" kernel artifact (KernelArtifact::payload, ifrt/spi/program_plan.h): the
// compute dispatches the Vulkan code generator (compiler/targets/spirv/) makes and the Vulkan
// platform (backends/vulkan/) runs. The generic plan knows only the format tag and an opaque
// payload; this header is the contract between the two ends of this one format.
//
//   SpirvPayload& out = MutableSpirvPayload(artifact);   // producer: created on first use
//   out.dispatches.push_back(dispatch);
//   const SpirvPayload* in = GetSpirvPayload(artifact);   // consumer: null for another payload
//
// Value types; thread-compatible.

#include <any>
#include <cstdint>
#include <string>
#include <vector>

#include "ifrt/spi/program_plan.h"

namespace tessera {

// `ranges` empty: one run, each binding its whole buffer. Otherwise the dispatch runs once per
// entry (in any order, without barriers between runs: they touch disjoint elements), binding i
// then being bytes [offsets[i], offsets[i] + sizes[i]) of its buffer. The Vulkan code generator
// splits this way an elementwise kernel (every buffer indexed by the same linear element index)
// whose buffers exceed the target's max_storage_buffer_range: a module compiled for chunks of C
// elements run over each whole chunk, then one compiled for the remainder; offsets are multiples
// of the target's min_storage_buffer_offset_alignment, sizes at most its range.
struct SpirvBufferRanges {
  std::vector<int64_t> offsets;
  std::vector<int64_t> sizes;
};

// One compute dispatch: a SPIR-V binary module with one entry point, run with `workgroup_count`
// work-groups of `workgroup_size` invocations (x, y, z), its descriptor set 0 binding i = the
// artifact's buffer `bindings[i]`: an index below the kernel's argument count is that argument
// (inputs, then outputs), an index n at or above it is the scratch buffer n - arguments
// (KernelArtifact::scratch_bytes).
struct SpirvDispatch {
  std::string code;  // SPIR-V words, little-endian bytes
  std::string entry;
  std::vector<int64_t> workgroup_size;
  std::vector<int64_t> workgroup_count;
  std::vector<int> bindings;
  std::vector<SpirvBufferRanges> ranges;
};

// The dispatches of a "spirv" artifact, run in order on one stream, each after the previous one's
// writes (none: a kernel with nothing to run, e.g. over an empty array). Every "spirv" artifact
// has one, except one made of position variants (each of which has its own).
struct SpirvPayload {
  std::vector<SpirvDispatch> dispatches;
};

// The SPIR-V payload of `artifact`, made (empty) when it has none; replaces another payload.
inline SpirvPayload& MutableSpirvPayload(KernelArtifact& artifact) {
  if (SpirvPayload* payload = std::any_cast<SpirvPayload>(&artifact.payload)) return *payload;
  return artifact.payload.emplace<SpirvPayload>();
}

// The SPIR-V payload of `artifact`, or null when its payload is another (or none).
inline const SpirvPayload* GetSpirvPayload(const KernelArtifact& artifact) {
  return std::any_cast<SpirvPayload>(&artifact.payload);
}

}  // namespace tessera

#endif  // TESSERA_IFRT_SPI_SPIRV_ARTIFACT_H_
