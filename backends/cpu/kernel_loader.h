#ifndef TESSERA_BACKENDS_CPU_KERNEL_LOADER_H_
#define TESSERA_BACKENDS_CPU_KERNEL_LOADER_H_

// The CPU kernel loader: JIT-compiles a "mlir-llvm" KernelArtifact (ifrt/spi/program_plan.h; made
// by compiler/) for the host CPU with MLIR's ExecutionEngine (LLVM -O3, the host's CPU features)
// and runs it on host buffers. This header names no MLIR or LLVM type.
//
// Calling convention (what compiler/targets/llvm_cpu/cpu_codegen.cc emits): the entry takes, in
// order, each input buffer, each output buffer, then one int64 per grid axis when the kernel takes
// the device position. Each buffer is a contiguous row-major array of its local shape, passed as an
// MLIR memref descriptor expanded into scalars (allocated pointer, aligned pointer, offset 0, the
// sizes, the row-major strides); the kernel writes its outputs in place and allocates nothing
// that outlives the call (its temporaries come from the scratch cache of kernel_scratch.h, bound
// to MLIR's generic allocation functions). The call goes through the packed wrapper
// `_mlir_<entry>(void**)`.
//
// Ownership: LoadCpuKernel returns a shared CpuKernel that owns its JIT-compiled code. Thread-safe:
// Run may be called from several threads at once (the code keeps no state between calls).
//
//   absl::StatusOr<std::shared_ptr<CpuKernel>> kernel = LoadCpuKernel(artifact);
//   std::vector<void*> buffers = {x.data(), w.data(), y.data()};
//   std::vector<Shape> shapes = {Shape({8, 16}), Shape({16, 4}), Shape({8, 4})};
//   absl::Status status = (*kernel)->Run(buffers, shapes, /*device_position=*/{});

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ifrt/shape.h"
#include "ifrt/spi/program_plan.h"

namespace tessera {

class CpuKernel {
 public:
  virtual ~CpuKernel() = default;

  // Runs the kernel once. `buffers[i]` has local shape `shapes[i]` (inputs, then outputs) and
  // must stay valid for the call; `device_position` has one coordinate per grid axis when the
  // kernel takes the device position, else is empty.
  // INVALID_ARGUMENT: buffers and shapes differ in count, or they (with the position) do not
  // match the entry's arguments; a null buffer of non-zero size. RESOURCE_EXHAUSTED: a temporary
  // buffer of the kernel could not be allocated (the outputs are then partly written).
  virtual absl::Status Run(absl::Span<void* const> buffers, absl::Span<const Shape> shapes,
                           absl::Span<const int64_t> device_position) const = 0;

  // The entry point's name.
  virtual const std::string& entry() const = 0;
};

// INVALID_ARGUMENT: a format other than "mlir-llvm", code that does not parse as an LLVM-dialect
// module, or no function named `entry`. INTERNAL: the JIT could not compile it.
absl::StatusOr<std::shared_ptr<CpuKernel>> LoadCpuKernel(const KernelArtifact& artifact);

}  // namespace tessera

#endif  // TESSERA_BACKENDS_CPU_KERNEL_LOADER_H_
