#ifndef TESSERA_IFRT_SPI_KERNEL_H_
#define TESSERA_IFRT_SPI_KERNEL_H_

// PlatformKernel and KernelLaunch: a compiled kernel loaded by a platform (Platform::LoadKernel)
// and one launch of it on a device's stream (Platform::LaunchKernel). A kernel comes from a
// KernelArtifact (ifrt/spi/program_plan.h) and takes, in order: its input buffers, its output
// buffers, then the launching device's grid coordinates when the artifact asks for them.
//
// A loaded kernel is immutable and may be launched on several devices of its platform at once.
// Released when the last reference goes away (launches in flight hold one).

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "ifrt/shape.h"

namespace tessera {

class PlatformBuffer;  // ifrt/spi/platform.h
using PlatformBufferRef = std::shared_ptr<PlatformBuffer>;

class PlatformKernel {
 public:
  virtual ~PlatformKernel() = default;
};
using PlatformKernelRef = std::shared_ptr<const PlatformKernel>;

struct KernelLaunch {
  PlatformKernelRef kernel;
  // Inputs then outputs, each on the launching device, holding a dense row-major array of the
  // matching entry of `shapes`.
  // Inline for the common few buffers: a launch allocates no lists.
  absl::InlinedVector<PlatformBufferRef, 6> buffers;
  absl::InlinedVector<Index, 6> shapes;
  // The launching device's coordinate per grid axis (empty when the kernel takes none).
  std::vector<int64_t> device_position;
};

}  // namespace tessera

#endif  // TESSERA_IFRT_SPI_KERNEL_H_
