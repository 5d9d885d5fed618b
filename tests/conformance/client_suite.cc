// The client itself: its devices, their ids and default memories.
// Part of the API-contract suite (tests/conformance/client_conformance.h), instantiated for every
// registered client factory.

// GCC 12 reports false -Wmaybe-uninitialized inside absl::InlinedVector moves (Shape, Index).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tessera.h"
#include "tests/conformance/client_conformance.h"
#include "tests/ifrt/test_util.h"

namespace tessera::conformance {
namespace {

using ::tessera::testing::IsOk;
using ::tessera::testing::StatusIs;
using ::testing::_;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class ClientTest : public ClientConformanceTest {};

// Devices

TEST_P(ClientTest, Topology) {
  EXPECT_EQ(n_, GetParam().expected_devices);
  EXPECT_EQ(static_cast<int>(OfKind("cpu").size()), GetParam().expected_cpu_devices);
  for (int i = 0; i < n_; ++i) {
    Device* d = client().devices()[i];
    EXPECT_EQ(d->Id().value, i);
    EXPECT_EQ(*client().LookupDevice(d->Id()), d);
    absl::StatusOr<Memory*> m = d->DefaultMemory();
    ASSERT_THAT(m, IsOk());
    EXPECT_THAT((*m)->Devices(), ElementsAre(d));
  }
  EXPECT_THAT(client().LookupDevice(DeviceId{n_}),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr(absl::StrCat("id ", n_))));
  EXPECT_THAT(client().LookupDevice(DeviceId{-1}), StatusIs(absl::StatusCode::kNotFound, _));
}

TESSERA_INSTANTIATE_CLIENT_SUITE(ClientTest);

}  // namespace
}  // namespace tessera::conformance
