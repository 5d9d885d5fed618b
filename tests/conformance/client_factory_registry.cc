#include "tests/conformance/client_factory_registry.h"

#include <utility>
#include <vector>

namespace tessera::conformance {
namespace {

// Function-local statics: registration runs from other translation units' static initialisers.
std::vector<ClientFactory>& ClientFactories() {
  static auto* factories = new std::vector<ClientFactory>();
  return *factories;
}

std::vector<PlatformFactory>& PlatformFactories() {
  static auto* factories = new std::vector<PlatformFactory>();
  return *factories;
}

}  // namespace

bool RegisterClientFactory(ClientFactory factory) {
  ClientFactories().push_back(std::move(factory));
  return true;
}

bool RegisterPlatformFactory(PlatformFactory factory) {
  PlatformFactories().push_back(std::move(factory));
  return true;
}

std::vector<ClientFactory> RegisteredClientFactories() { return ClientFactories(); }

std::vector<PlatformFactory> RegisteredPlatformFactories() { return PlatformFactories(); }

}  // namespace tessera::conformance
