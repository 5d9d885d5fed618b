// tests/conformance/client_conformance.h: the fixture of the API-contract suites.
//
// ClientConformanceTest is parameterised by a registered ClientFactory
// (client_factory_registry.h): SetUp creates a fresh client of that topology, TearDown fails the
// test when the backend's own checker (the Vulkan validation layer) reported anything. Each suite
// (client_*_suite.cc) derives its own empty fixture from it, so that its tests are named after
// the suite, and instantiates it over every registered factory with
// TESSERA_INSTANTIATE_CLIENT_SUITE. Every case is written against the public API and holds for
// any topology of at least 2 devices, an even number.
//
// Not thread-safe, as gtest fixtures are not; the clients it creates are.

#ifndef TESSERA_TESTS_CONFORMANCE_CLIENT_CONFORMANCE_H_
#define TESSERA_TESTS_CONFORMANCE_CLIENT_CONFORMANCE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gtest/gtest.h"
#include "ifrt/introspection.h"
#include "tessera.h"
#include "tests/conformance/client_factory_registry.h"
#include "tests/ifrt/test_util.h"

namespace tessera::conformance {

using ::tessera::testing::Eventually;

inline constexpr DType kS32(DType::kS32);
inline constexpr DType kF32(DType::kF32);
inline constexpr DType kS16(DType::kS16);

// The instance name of a factory in test names.
std::string FactoryName(const ::testing::TestParamInfo<ClientFactory>& info);

class ClientConformanceTest : public ::testing::TestWithParam<ClientFactory> {
 protected:
  void SetUp() override;
  void TearDown() override;

  Client& client() { return *client_; }
  ClientIntrospection& runtime() { return *client_->introspection(); }
  // The devices at `positions` of client().devices().
  DeviceListRef At(const std::vector<int>& positions);
  DeviceListRef All();
  DeviceListRef Reversed();
  DeviceListRef FirstHalf();
  DeviceListRef SecondHalf();
  // Positions of the devices of `kind` ("cpu", "vulkan").
  std::vector<int> OfKind(std::string_view kind);
  // Rows split over the first axis, columns replicated: a partially replicated sharding.
  ShardingRef PartiallyTiled(const DeviceListRef& devices);

  // Every shard of `array` (read through DisassembleIntoSingleDeviceArrays) holds its box of
  // `data`, and the whole array reads back as `data`.
  void ExpectContents(const ArrayRef& array, const std::vector<uint8_t>& data);

  std::shared_ptr<Client> client_;
  int n_ = 0;  // client().devices().size()
  int64_t diagnostics_ = 0;
};

}  // namespace tessera::conformance

// Instantiates the suite `suite` (a fixture derived from ClientConformanceTest) for every
// registered client factory; its tests are named `suite.Test/<factory name>`.
#define TESSERA_INSTANTIATE_CLIENT_SUITE(suite)                                          \
  INSTANTIATE_TEST_SUITE_P(                                                              \
      , suite, ::testing::ValuesIn(::tessera::conformance::RegisteredClientFactories()), \
      ::tessera::conformance::FactoryName)

#endif  // TESSERA_TESTS_CONFORMANCE_CLIENT_CONFORMANCE_H_
