// A build with the compiler: kernels are "mlir-llvm" artifacts JIT-compiled by the kernel loader.
#include <memory>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "backends/cpu/cpu_kernels.h"
#include "backends/cpu/kernel_loader.h"
#include "ifrt/spi/platform.h"

namespace tessera::cpu {
namespace {

class LoadedCpuKernel final : public PlatformKernel {
 public:
  explicit LoadedCpuKernel(std::shared_ptr<CpuKernel> kernel) : kernel_(std::move(kernel)) {}
  const CpuKernel& kernel() const { return *kernel_; }

 private:
  std::shared_ptr<CpuKernel> kernel_;
};

}  // namespace

absl::StatusOr<PlatformKernelRef> LoadCpuPlatformKernel(const KernelArtifact& artifact) {
  absl::StatusOr<std::shared_ptr<CpuKernel>> kernel = LoadCpuKernel(artifact);
  if (!kernel.ok()) return kernel.status();
  return PlatformKernelRef(std::make_shared<LoadedCpuKernel>(*std::move(kernel)));
}

absl::Status RunCpuPlatformKernel(const KernelLaunch& launch) {
  const auto* loaded = dynamic_cast<const LoadedCpuKernel*>(launch.kernel.get());
  if (loaded == nullptr) {
    return absl::InvalidArgumentError("the kernel was not loaded by the CPU platform");
  }
  // On the stack for a few buffers: a tiny kernel's launch allocates nothing here.
  absl::InlinedVector<void*, 8> buffers;
  absl::InlinedVector<Shape, 8> shapes;
  for (size_t i = 0; i < launch.buffers.size(); ++i) {
    buffers.push_back(launch.buffers[i]->host_address());
    shapes.push_back(Shape(launch.shapes[i]));
  }
  absl::Status status = loaded->kernel().Run(buffers, shapes, launch.device_position);
  if (!status.ok()) {
    return absl::Status(status.code(),
                        absl::StrCat("kernel ", loaded->kernel().entry(), ": ", status.message()));
  }
  return absl::OkStatus();
}

}  // namespace tessera::cpu
