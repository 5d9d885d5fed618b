#ifndef TESSERA_IFRT_SPI_PLATFORM_H_
#define TESSERA_IFRT_SPI_PLATFORM_H_

// The device SPI: what a platform (backends/cpu, backends/vulkan, ...) implements so that the
// generic runtime (ifrt/runtime/) can put arrays on its devices.
//
// A Platform enumerates its devices and their memories, allocates buffers in a memory, and
// enqueues box copies on a device's in-order stream. Everything above this interface — argument
// validation, shardings, planning, the transfer guard, statistics — is done once in ifrt/;
// platforms trust their arguments (precondition violations are bugs, not errors).
//
// Streams: each device has one in-order stream. An enqueued operation starts after (a) the
// operation enqueued before it on the same stream has finished and (b) every future in `after`
// is set. If any of `after` carries an error, the operation does not run and its future carries
// that error; a failed operation does not poison later, unrelated operations of the stream.
// The returned future is set when the operation has finished (its writes are visible to the
// host and to every other device of the platform). Operations keep the buffers they touch alive
// until they finish: a caller may drop its references right after enqueueing.
//
// Host pointers passed to copies must stay valid until the returned future is set.
//
// Thread-safety: every method may be called concurrently from any thread, including from the
// callbacks of futures returned by this or another platform.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "ifrt/attribute_map.h"
#include "ifrt/future.h"
#include "ifrt/spi/kernel.h"
#include "ifrt/spi/program_plan.h"
#include "ifrt/strided_copy.h"

namespace tessera {

// One memory of a platform device.
struct PlatformMemoryInfo {
  std::string kind;               // "host", "device", "pinned_host"
  bool host_addressable = false;  // buffers in it have a host_address()
  int64_t capacity_bytes = 0;     // 0 when unknown
};

// One device of a platform.
struct PlatformDeviceInfo {
  std::string kind;  // the platform's name: "cpu", "vulkan"
  std::string name;  // human readable, e.g. "llvmpipe (LLVM 15.0.6, 256 bits)"
  AttributeMap attributes;
  std::vector<PlatformMemoryInfo> memories;
  int default_memory = 0;  // index into memories
};

// A buffer allocated by a platform in one memory of one device. Freed when the last reference
// goes away (operations in flight hold references). Thread-safe.
class PlatformBuffer {
 public:
  virtual ~PlatformBuffer() = default;
  virtual int64_t size_bytes() const = 0;
  // The buffer's bytes as seen by the host, or nullptr when the memory is not host-addressable.
  // Reading or writing it is only valid while no stream operation writes the buffer.
  virtual void* host_address() const = 0;
};
using PlatformBufferRef = std::shared_ptr<PlatformBuffer>;

struct HostToBufferCopy {
  const void* src;
  PlatformBufferRef dst;
  StridedCopy geometry;  // src offsets are relative to `src`, dst offsets to the buffer start
};
struct BufferToHostCopy {
  PlatformBufferRef src;
  void* dst;
  StridedCopy geometry;
};
struct BufferToBufferCopy {
  PlatformBufferRef src;  // may live on another device of the same platform
  PlatformBufferRef dst;
  StridedCopy geometry;
};

class Platform {
 public:
  virtual ~Platform() = default;

  // "cpu", "vulkan"; also the Kind() of its devices.
  virtual std::string_view name() const = 0;
  virtual int device_count() const = 0;
  // 0 <= device < device_count().
  virtual const PlatformDeviceInfo& device_info(int device) const = 0;

  // Allocates `bytes` (may be 0) in memory `memory` of `device`. RESOURCE_EXHAUSTED when the
  // memory is full; INVALID_ARGUMENT when `bytes` exceeds what one buffer may hold.
  virtual absl::StatusOr<PlatformBufferRef> Allocate(int device, int memory, int64_t bytes) = 0;

  // Bytes currently allocated in memory `memory` of `device` (0 if the platform does not track it).
  virtual int64_t BytesInUse(int device, int memory) const { return 0; }

  // Whether a buffer of a host-addressable memory of one device serves every device of this
  // platform as one of its own: a kernel's operand, a copy's source, a shard of an array on that
  // device. True where every device addresses the one host memory (CPU devices); the runtime then
  // gives one buffer to several devices (an all-reduce's replicated result, written once rather
  // than once per device), counted in BytesInUse of the memory that allocated it.
  virtual bool HostBuffersServeEveryDevice() const { return false; }

  // Wraps caller-owned host memory as a buffer of `memory` without copying; `on_release` runs
  // once the buffer is freed. UNIMPLEMENTED where the platform cannot use host memory in place
  // (then the caller copies), or where `data` is not aligned as the platform needs (a CPU device
  // takes any 16-byte aligned address; Vulkan its driver's host-import alignment). `data` is at
  // least 16-byte aligned.
  virtual absl::StatusOr<PlatformBufferRef> WrapHostMemory(int device, int memory, void* data,
                                                           int64_t bytes,
                                                           std::function<void()> on_release) {
    return absl::UnimplementedError("this platform cannot use host memory in place");
  }

  // The futures of the copy methods below carry: OK; the first error among `after` (the copies did
  // not run); RESOURCE_EXHAUSTED when host or staging memory ran out while copying; INTERNAL for a
  // failure of the device or its driver (a Vulkan device lost, a failed submission), naming it.
  //
  // Copies on the stream of `device`, all copies of one call as one operation (the platform may
  // run them in parallel). Every destination buffer belongs to `device`.
  virtual Future<> CopyHostToBuffers(int device, std::vector<HostToBufferCopy> copies,
                                     absl::Span<const Future<>> after) = 0;
  // Every source buffer belongs to `device`.
  virtual Future<> CopyBuffersToHost(int device, std::vector<BufferToHostCopy> copies,
                                     absl::Span<const Future<>> after) = 0;
  // Copies between buffers of this platform; `device` executes them and owns the destinations.
  // Sources may live on other devices of the platform.
  virtual Future<> CopyBuffersToBuffers(int device, std::vector<BufferToBufferCopy> copies,
                                        absl::Span<const Future<>> after) = 0;

  // Runs `fn` on the stream of `device` (after `after`), e.g. to release a host buffer once the
  // operations before it have finished. The future carries `fn`'s status, or the first error
  // among `after` (then `fn` does not run).
  virtual Future<> EnqueueHostCallback(int device, std::function<absl::Status()> fn,
                                       absl::Span<const Future<>> after) = 0;

  // Loads a compiled kernel for `device` (ifrt/spi/kernel.h). A platform may share one loaded
  // kernel among its devices. INVALID_ARGUMENT for an artifact it cannot read (wrong format, bad
  // code); UNIMPLEMENTED where the platform runs no kernels.
  virtual absl::StatusOr<PlatformKernelRef> LoadKernel(int device, const KernelArtifact& artifact) {
    return absl::UnimplementedError(
        absl::StrCat("platform '", std::string(name()), "' cannot run compiled kernels"));
  }
  // Runs a loaded kernel on the stream of `device` after `after`, like a copy: in order with the
  // stream's other operations; its failure fails the returned future only. The future carries
  // the copies' codes (above), and the kernel's own error when it failed on the device.
  virtual Future<> LaunchKernel(int device, KernelLaunch launch, absl::Span<const Future<>> after) {
    return MakeReadyFuture(absl::UnimplementedError(
        absl::StrCat("platform '", std::string(name()), "' cannot run compiled kernels")));
  }
};

}  // namespace tessera

#endif  // TESSERA_IFRT_SPI_PLATFORM_H_
