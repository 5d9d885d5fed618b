// A build without the compiler (TESSERA_ENABLE_COMPILER=OFF): the CPU platform runs no kernels.
#include "backends/cpu/cpu_kernels.h"

namespace tessera::cpu {

absl::StatusOr<PlatformKernelRef> LoadCpuPlatformKernel(const KernelArtifact& artifact) {
  return absl::UnimplementedError("this build of Tessera has no CPU kernel loader");
}

absl::Status RunCpuPlatformKernel(const KernelLaunch& launch) {
  return absl::UnimplementedError("this build of Tessera has no CPU kernel loader");
}

}  // namespace tessera::cpu
