#ifndef TESSERA_BACKENDS_CPU_CPU_KERNELS_H_
#define TESSERA_BACKENDS_CPU_CPU_KERNELS_H_

// Compiled kernels on the CPU platform: LoadCpuPlatformKernel turns a KernelArtifact into a loaded
// kernel (JIT-compiled by the kernel loader, backends/cpu/kernel_loader.h, in a build with the
// compiler; UNIMPLEMENTED in one without), and RunCpuPlatformKernel runs one launch of it on the
// host addresses of the launch's buffers. CMake compiles one of two sources for these.
//
// Thread-safe: a loaded kernel may run on several devices at once.

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ifrt/spi/kernel.h"
#include "ifrt/spi/program_plan.h"

namespace tessera::cpu {

absl::StatusOr<PlatformKernelRef> LoadCpuPlatformKernel(const KernelArtifact& artifact);

// `launch.kernel` comes from LoadCpuPlatformKernel; its buffers are host-addressable.
absl::Status RunCpuPlatformKernel(const KernelLaunch& launch);

}  // namespace tessera::cpu

#endif  // TESSERA_BACKENDS_CPU_CPU_KERNELS_H_
