#ifndef TESSERA_BACKENDS_CLIENT_FACTORY_H_
#define TESSERA_BACKENDS_CLIENT_FACTORY_H_

// CreateClient: assembles the platforms of this machine into one Client — N CPU devices and, when a
// Vulkan driver is present, one device per Vulkan GPU (lavapipe where there is no GPU).
//
//   absl::StatusOr<std::shared_ptr<tessera::Client>> client =
//       tessera::CreateClient({.cpu_devices = 8, .vulkan = tessera::VulkanMode::kOff});
//
// Device ids: the CPU devices first (0..cpu_devices-1), then the Vulkan devices. The platforms come
// from the platform registry (backends/registry.h), which holds those this build has.
// TESSERA_VULKAN_VALIDATION=1 turns on the Khronos validation layer (when installed).
//
// Many processes (docs/multi-process.md): with `.distributed = tessera::Distributed::kMpi`, run
// under mpirun, the client spans every process of MPI_COMM_WORLD: devices() lists every process's
// devices (process 0's first, each process's in the order above), addressable_devices() this
// process's. Creating such a client is collective: every process calls CreateClient.
//
// Thread-safe: clients may be created from several threads at once.

#include <memory>
#include <optional>

#include "absl/status/statusor.h"
#include "guard/policy.h"
#include "ifrt/client.h"

namespace tessera {

enum class VulkanMode {
  kOff,          // no Vulkan devices
  kIfAvailable,  // Vulkan devices when a driver is present; else none (the reason is logged once)
  kRequired,     // CreateClient fails (naming the reason) when no Vulkan device can be had
};

// Whether a client spans several processes.
enum class Distributed {
  kNone,  // this process only
  kMpi,   // every process of MPI_COMM_WORLD; MPI is initialized here when the caller has not
};

struct ClientOptions {
  int cpu_devices = 4;             // 0 for none (then Vulkan must provide devices)
  int cpu_threads_per_device = 0;  // 0: hardware threads / cpu_devices, at least 1
  VulkanMode vulkan = VulkanMode::kIfAvailable;
  int vulkan_logical_devices_per_gpu = 1;
  // The client's transfer guard policy. Unset: from TESSERA_TRANSFER_GUARD, else allow everything.
  std::optional<guard::Policy> transfer_guard;
  Distributed distributed = Distributed::kNone;
};

// INVALID_ARGUMENT for negative counts, no devices at all, or a malformed TESSERA_TRANSFER_GUARD;
// with kRequired, the Vulkan platform's error (NOT_FOUND when there is no usable driver or device),
// or UNAVAILABLE when this build has no Vulkan platform; with Distributed::kMpi, UNAVAILABLE
// when this build has no MPI or MPI fails, FAILED_PRECONDITION when the caller initialized MPI
// below MPI_THREAD_SERIALIZED, INVALID_ARGUMENT for a malformed TESSERA_MPI_TIMEOUT_S. With
// Distributed::kMpi the processes join MPI first and then agree on their checks above: one that
// fails on any process fails the call on every process, the others with its code and
// "CreateClient: process P refused the call: <its message>", within TESSERA_MPI_TIMEOUT_S.
absl::StatusOr<std::shared_ptr<Client>> CreateClient(const ClientOptions& options = {});

}  // namespace tessera

#endif  // TESSERA_BACKENDS_CLIENT_FACTORY_H_
