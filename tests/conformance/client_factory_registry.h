// tests/conformance/client_factory_registry.h: how a backend joins the conformance suites.
//
// The suites in tests/conformance/ are TEST_P's over a registered factory: the API-contract suites
// of Client and Array (client_*_suite.cc, fixture ClientConformanceTest) run over every registered
// ClientFactory, the device-SPI suites (platform_*_suite.cc, fixture PlatformConformanceTest)
// over every registered PlatformFactory. A backend's test binary links the suite library and
// registers one factory per topology at static-initialisation time; gtest instantiates every suite
// for it, named after it (`Cpu`, `Vulkan`, `Mixed`, ...). A new backend (MPI, say) adds itself
// the same way, in its own binary:
//
//   const bool kRegistered = tessera::conformance::RegisterClientFactory({
//       .name = "Cpu",
//       .create = [] { return tessera::CreateClient({.cpu_devices = 4,
//                                                    .vulkan = tessera::VulkanMode::kOff}); },
//       .expected_devices = 4,
//       .expected_cpu_devices = 4});
//
// A factory whose `create` fails with NOT_FOUND or UNAVAILABLE (no driver on this machine) makes
// every test of its instance skip with that message; any other error fails the test.
//
// Thread-safety: register before main() (static initialisers) or before gtest lists its tests;
// the registries are read-only afterwards.

#ifndef TESSERA_TESTS_CONFORMANCE_CLIENT_FACTORY_REGISTRY_H_
#define TESSERA_TESTS_CONFORMANCE_CLIENT_FACTORY_REGISTRY_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ifrt/client.h"
#include "ifrt/spi/platform.h"

namespace tessera::conformance {

// One client topology for the API-contract suites.
struct ClientFactory {
  std::string name;  // the instance name in test names: letters and digits only
  // A fresh client per test. Its guard policy must allow everything.
  std::function<absl::StatusOr<std::shared_ptr<Client>>()> create;
  int expected_devices = 0;      // >= 2 and even: the suites split the devices in halves
  int expected_cpu_devices = 0;  // devices whose Kind() is "cpu"
  // Messages a backend's own checker printed so far (the Vulkan validation layer); any increase
  // during a test fails it. Null: none.
  std::function<int64_t()> diagnostic_count;
};

// One platform for the device-SPI suites.
struct PlatformFactory {
  std::string name;  // the instance name in test names: letters and digits only
  // A fresh platform per test, with at least `min_devices` devices.
  std::function<absl::StatusOr<std::unique_ptr<Platform>>()> create;
  int min_devices = 2;
  std::function<int64_t()> diagnostic_count;  // as in ClientFactory
};

// Adds a factory; returns true so that it can initialise a namespace-scope constant.
bool RegisterClientFactory(ClientFactory factory);
bool RegisterPlatformFactory(PlatformFactory factory);

// The factories registered so far, in registration order.
std::vector<ClientFactory> RegisteredClientFactories();
std::vector<PlatformFactory> RegisteredPlatformFactories();

// For gtest's messages about a parameter.
inline void PrintTo(const ClientFactory& f, std::ostream* os) { *os << f.name; }
inline void PrintTo(const PlatformFactory& f, std::ostream* os) { *os << f.name; }

}  // namespace tessera::conformance

#endif  // TESSERA_TESTS_CONFORMANCE_CLIENT_FACTORY_REGISTRY_H_
