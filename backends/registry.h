#ifndef TESSERA_BACKENDS_REGISTRY_H_
#define TESSERA_BACKENDS_REGISTRY_H_

// PlatformRegistry: the platforms a client can be assembled from, each entered once as a
// PlatformFactory by its platform's one registration entry point, in the style of IREE's driver
// registry. CreateClient (client_factory.h) asks every factory, in ascending `order`, what the
// ClientOptions demand of it, creates the platforms demanded and hands them to the client; device
// ids follow that order (the CPU devices first, then the Vulkan devices).
//
// Each platform of this repository has one registration entry point, in its folder:
// RegisterCpuPlatform in backends/cpu/registration.cc, RegisterVulkanPlatform in
// backends/vulkan/registration.cc. Which of them a build has is decided by CMake:
// backends/CMakeLists.txt generates RegisterBuiltPlatforms, a list that calls the entry point of
// each platform it builds, so no source names a platform that is not built and the linker cannot
// drop a registration. A platform built outside the repository registers into
// PlatformRegistry::Default() before the first CreateClient:
//
//   PlatformFactory npu;
//   npu.name = "npu";
//   npu.display_name = "NPU";
//   npu.order = 300;  // after the CPU (100) and Vulkan (200) devices
//   npu.demand = [](const ClientOptions&) { return PlatformDemand::kIfAvailable; };
//   npu.create = [](const ClientOptions&) { return CreateNpuPlatform(); };
//   absl::Status registered = PlatformRegistry::Default().Register(std::move(npu));
//
// Thread-safety: every method is thread-safe. Factories are copied out of the registry, so they
// stay usable while others register.

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "backends/client_factory.h"
#include "ifrt/client.h"
#include "ifrt/spi/platform.h"
#include "ifrt/spi/transport.h"

namespace tessera {

// What ClientOptions ask of one platform.
enum class PlatformDemand {
  kNone,         // not created
  kIfAvailable,  // created; a failure is logged once and the client is made without it
  kRequired,     // created; a failure fails CreateClient with the platform's error
};

struct PlatformFactory {
  // The platform's Platform::name(): "cpu", "vulkan". Unique within a registry.
  std::string name;
  // How messages name the platform: "CPU", "Vulkan" ("no Vulkan devices: ...").
  std::string display_name;
  // Platforms are created in ascending order (ties by name); device ids follow it.
  int order = 0;
  // What `options` ask of this platform.
  std::function<PlatformDemand(const ClientOptions&)> demand;
  // Creates the platform as `options` say; its error is the reason the platform is unavailable.
  std::function<absl::StatusOr<std::unique_ptr<Platform>>(const ClientOptions&)> create;
};

class PlatformRegistry {
 public:
  PlatformRegistry() = default;
  PlatformRegistry(const PlatformRegistry&) = delete;
  PlatformRegistry& operator=(const PlatformRegistry&) = delete;

  // The process's registry: the platforms of this build (RegisterBuiltPlatforms, on first use), and
  // whatever else was registered into it.
  static PlatformRegistry& Default();

  // INVALID_ARGUMENT when the name is empty or demand or create is missing; ALREADY_EXISTS when a
  // factory of that name is registered.
  absl::Status Register(PlatformFactory factory);
  // The factories in creation order: ascending `order`, ties by name.
  std::vector<PlatformFactory> Factories() const;
  // Whether a factory named `name` is registered.
  bool Contains(std::string_view name) const;

 private:
  mutable absl::Mutex mu_;
  std::vector<PlatformFactory> factories_ ABSL_GUARDED_BY(mu_);
};

// Calls the registration entry point of every platform this build has; generated from
// backends/registered_platforms.cc.in. Each entry point registers one factory and returns the
// status of PlatformRegistry::Register.
absl::Status RegisterBuiltPlatforms(PlatformRegistry& registry);

// CreateClient over the platforms of `registry` (CreateClient uses PlatformRegistry::Default()).
// Errors as CreateClient's; UNAVAILABLE when `options` require a platform that is not registered.
absl::StatusOr<std::shared_ptr<Client>> CreateClientFromRegistry(const PlatformRegistry& registry,
                                                                 const ClientOptions& options);

// Makes the transport of a client with Distributed::kMpi, given the wait bound `timeout_s` of
// TESSERA_MPI_TIMEOUT_S (the default where the variable is malformed: CreateClient then fails on
// every process, after the transport is up). Called once per client, before any local check.
using TransportFactory =
    std::function<absl::StatusOr<std::unique_ptr<Transport>>(double timeout_s)>;

// The same over the transport `make_transport` makes instead of CreateMpiTransport's (tests join
// threads with tests/mpi/loopback_transport.h). Ignored unless options.distributed is kMpi.
absl::StatusOr<std::shared_ptr<Client>> CreateClientFromRegistry(
    const PlatformRegistry& registry, const ClientOptions& options,
    const TransportFactory& make_transport);

}  // namespace tessera

#endif  // TESSERA_BACKENDS_REGISTRY_H_
