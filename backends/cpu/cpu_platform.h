#ifndef TESSERA_BACKENDS_CPU_CPU_PLATFORM_H_
#define TESSERA_BACKENDS_CPU_CPU_PLATFORM_H_

// The CPU platform: N "devices", each a group of threads (its stream's own thread, which sleeps
// while idle, plus oneTBB workers in its task_arena beyond the first thread) with an
// in-order stream and one memory of kind "host" (64-byte aligned buffers, host-addressable). Copies
// are strided memcpy, split across the device's threads when large.
//
//   absl::StatusOr<std::unique_ptr<tessera::Platform>> cpu =
//       tessera::CreateCpuPlatform({.num_devices = 8});
//
// Thread-safe as ifrt/spi/platform.h requires. Destroying the platform waits for every operation
// already enqueued on its streams.

#include <cstdint>
#include <memory>
#include <optional>

#include "absl/status/statusor.h"
#include "ifrt/spi/platform.h"

namespace tessera {

struct CpuPlatformOptions {
  int num_devices = 4;
  // Threads per device; 0 picks max(1, hardware threads / num_devices).
  int threads_per_device = 0;
  // Copy operations of at most this many bytes (all copies of one call on one device together)
  // run inline on the calling thread when their inputs are ready and the device's stream is idle
  // (backends/cpu/cpu_stream.h), instead of waking a device thread; kernel launches likewise up to
  // a sixteenth of it in buffer bytes (everything when "always"). Negative: never.
  // nullopt: the environment variable TESSERA_CPU_INLINE_MAX_BYTES ("never", "always" or a byte
  // count), else kDefaultInlineMaxBytes.
  std::optional<int64_t> inline_max_bytes;
};

inline constexpr int64_t kDefaultInlineMaxBytes = 256 << 10;

// The inline threshold `options` asks for, resolved as CpuPlatformOptions::inline_max_bytes says.
// INVALID_ARGUMENT for an environment value that is neither "never", "always" nor an integer.
absl::StatusOr<int64_t> ResolveInlineMaxBytes(const CpuPlatformOptions& options);

// INVALID_ARGUMENT for num_devices < 1 or threads_per_device < 0; RESOURCE_EXHAUSTED when the
// system cannot start a thread per device.
absl::StatusOr<std::unique_ptr<Platform>> CreateCpuPlatform(const CpuPlatformOptions& options = {});

}  // namespace tessera

#endif  // TESSERA_BACKENDS_CPU_CPU_PLATFORM_H_
