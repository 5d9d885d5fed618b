#include "backends/client_factory.h"

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "backends/default_program_compiler.h"
#include "backends/mpi/transport_factory.h"
#include "backends/registry.h"
#include "ifrt/runtime/runtime_client.h"
#include "ifrt/status_macros.h"

namespace tessera {
namespace {

// Says once per process and platform why an optional platform has no devices.
void LogUnavailableOnce(const PlatformFactory& factory, const absl::Status& status) {
  static absl::Mutex mu(absl::kConstInit);
  static absl::flat_hash_set<std::string>* logged = new absl::flat_hash_set<std::string>();
  absl::MutexLock lock(&mu);
  if (!logged->insert(factory.name).second) return;
  std::fprintf(stderr, "tessera: no %s devices: %s\n", factory.display_name.c_str(),
               std::string(status.message()).c_str());
}

absl::Status ValidateOptions(const ClientOptions& options) {
  if (options.cpu_devices < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("cpu_devices must be >= 0, got ", options.cpu_devices));
  }
  if (options.vulkan_logical_devices_per_gpu < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("vulkan_logical_devices_per_gpu must be >= 1, got ",
                     options.vulkan_logical_devices_per_gpu));
  }
  return absl::OkStatus();
}

// UNAVAILABLE when `options` require a platform that this registry (this build) lacks.
absl::Status CheckRequiredPlatformsRegistered(const PlatformRegistry& registry,
                                              const ClientOptions& options) {
  if (options.vulkan == VulkanMode::kRequired && !registry.Contains("vulkan")) {
    return absl::UnavailableError("this build of Tessera has no Vulkan platform");
  }
  return absl::OkStatus();
}

absl::StatusOr<guard::Policy> TransferGuardPolicy(const ClientOptions& options) {
  if (options.transfer_guard.has_value()) return *options.transfer_guard;
  return guard::Policy::FromEnvironment();
}

// The platforms `options` demand, in the registry's order. A required platform that fails fails the
// call; an optional one is logged and left out.
absl::StatusOr<std::vector<std::unique_ptr<Platform>>> CreatePlatforms(
    const PlatformRegistry& registry, const ClientOptions& options) {
  std::vector<std::unique_ptr<Platform>> platforms;
  for (const PlatformFactory& factory : registry.Factories()) {
    const PlatformDemand demand = factory.demand(options);
    if (demand == PlatformDemand::kNone) continue;
    absl::StatusOr<std::unique_ptr<Platform>> platform = factory.create(options);
    if (platform.ok()) {
      platforms.push_back(*std::move(platform));
    } else if (demand == PlatformDemand::kRequired) {
      return platform.status();
    } else {
      LogUnavailableOnce(factory, platform.status());
    }
  }
  return platforms;
}

}  // namespace

absl::StatusOr<std::shared_ptr<Client>> CreateClientFromRegistry(const PlatformRegistry& registry,
                                                                 const ClientOptions& options) {
  TESSERA_RETURN_IF_ERROR(ValidateOptions(options));
  TESSERA_ASSIGN_OR_RETURN(const guard::Policy policy, TransferGuardPolicy(options));
  TESSERA_RETURN_IF_ERROR(CheckRequiredPlatformsRegistered(registry, options));
  TESSERA_ASSIGN_OR_RETURN(std::vector<std::unique_ptr<Platform>> platforms,
                           CreatePlatforms(registry, options));
  if (platforms.empty()) {
    return absl::InvalidArgumentError(
        "no devices: cpu_devices is 0 and no Vulkan device is available");
  }
  std::unique_ptr<Transport> transport;
  if (options.distributed == Distributed::kMpi) {
    TESSERA_ASSIGN_OR_RETURN(transport, CreateMpiTransport());
  }
  TESSERA_ASSIGN_OR_RETURN(
      std::shared_ptr<runtime::RuntimeClient> client,
      runtime::RuntimeClient::Create(std::move(platforms), policy, CreateDefaultProgramCompiler(),
                                     std::move(transport)));
  return std::shared_ptr<Client>(std::move(client));
}

absl::StatusOr<std::shared_ptr<Client>> CreateClient(const ClientOptions& options) {
  return CreateClientFromRegistry(PlatformRegistry::Default(), options);
}

}  // namespace tessera
