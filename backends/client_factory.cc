#include "backends/client_factory.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "backends/default_program_compiler.h"
#include "backends/mpi/transport_factory.h"
#include "backends/registry.h"
#include "base/message_text.h"
#include "base/status_macros.h"
#include "ifrt/runtime/runtime_client.h"

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

// What this process brings to a client, once its local checks passed.
struct LocalParts {
  guard::Policy policy;
  std::vector<std::unique_ptr<Platform>> platforms;
};

// This process's checks and platforms: the options, the guard policy (TESSERA_TRANSFER_GUARD),
// the platforms required and available.
absl::StatusOr<LocalParts> PrepareLocalParts(const PlatformRegistry& registry,
                                             const ClientOptions& options) {
  TESSERA_RETURN_IF_ERROR(ValidateOptions(options));
  LocalParts parts;
  TESSERA_ASSIGN_OR_RETURN(parts.policy, TransferGuardPolicy(options));
  TESSERA_RETURN_IF_ERROR(CheckRequiredPlatformsRegistered(registry, options));
  TESSERA_ASSIGN_OR_RETURN(parts.platforms, CreatePlatforms(registry, options));
  if (parts.platforms.empty()) {
    return absl::InvalidArgumentError(
        "no devices: cpu_devices is 0 and no Vulkan device is available");
  }
  return parts;
}

absl::StatusOr<std::shared_ptr<Client>> Assemble(LocalParts parts,
                                                 std::unique_ptr<Transport> transport) {
  TESSERA_ASSIGN_OR_RETURN(
      std::shared_ptr<runtime::RuntimeClient> client,
      runtime::RuntimeClient::Create(std::move(parts.platforms), parts.policy,
                                     CreateDefaultProgramCompiler(), std::move(transport)));
  return std::shared_ptr<Client>(std::move(client));
}

constexpr char kMpiTimeoutEnvVar[] = "TESSERA_MPI_TIMEOUT_S";
constexpr double kDefaultMpiTimeoutSeconds = 600;

// TESSERA_MPI_TIMEOUT_S: unset or empty, the default; else a number of seconds >= 0 (0: never).
absl::StatusOr<double> MpiTimeoutFromEnvironment() {
  const char* env = std::getenv(kMpiTimeoutEnvVar);
  if (env == nullptr || *env == '\0') return kDefaultMpiTimeoutSeconds;
  double seconds = 0;
  if (!absl::SimpleAtod(env, &seconds) || !std::isfinite(seconds) || std::signbit(seconds)) {
    return absl::InvalidArgumentError(
        absl::StrCat(kMpiTimeoutEnvVar, ": invalid value ", base::QuoteExcerpt(env),
                     " (expected a number of seconds >= 0, such as 600 or 2.5; 0 waits forever)"));
  }
  return seconds;
}

// A client over several processes. The transport comes first, on every process (MPI_Init and
// MPI_Comm_dup are collective), then the processes agree on their local checks: a failure on one
// process fails CreateClient on every process, with that process's message, instead of leaving
// the others waiting for it.
absl::StatusOr<std::shared_ptr<Client>> CreateDistributedClient(
    const PlatformRegistry& registry, const ClientOptions& options,
    const TransportFactory& make_transport) {
  const absl::StatusOr<double> timeout = MpiTimeoutFromEnvironment();
  TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<Transport> transport,
                           make_transport(timeout.value_or(kDefaultMpiTimeoutSeconds)));
  absl::StatusOr<LocalParts> parts =
      timeout.ok() ? PrepareLocalParts(registry, options) : timeout.status();
  TESSERA_RETURN_IF_ERROR(
      transport->Agree("CreateClient", /*fingerprint=*/0, /*messages=*/0, parts.status()).status());
  return Assemble(*std::move(parts), std::move(transport));
}

}  // namespace

absl::StatusOr<std::shared_ptr<Client>> CreateClientFromRegistry(
    const PlatformRegistry& registry, const ClientOptions& options,
    const TransportFactory& make_transport) {
  if (options.distributed == Distributed::kMpi) {
    if (!make_transport) return absl::InvalidArgumentError("no transport factory given");
    return CreateDistributedClient(registry, options, make_transport);
  }
  TESSERA_ASSIGN_OR_RETURN(LocalParts parts, PrepareLocalParts(registry, options));
  return Assemble(std::move(parts), nullptr);
}

absl::StatusOr<std::shared_ptr<Client>> CreateClientFromRegistry(const PlatformRegistry& registry,
                                                                 const ClientOptions& options) {
  return CreateClientFromRegistry(registry, options, [](double timeout_s) {
    return CreateMpiTransport({.timeout_s = timeout_s});
  });
}

absl::StatusOr<std::shared_ptr<Client>> CreateClient(const ClientOptions& options) {
  return CreateClientFromRegistry(PlatformRegistry::Default(), options);
}

}  // namespace tessera
