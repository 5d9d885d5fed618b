#include "tests/conformance/client_conformance.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/ifrt/test_util.h"

namespace tessera::conformance {

using ::tessera::testing::IsOk;
using ::tessera::testing::ReadBack;
using ::tessera::testing::SliceDomain;

std::string FactoryName(const ::testing::TestParamInfo<ClientFactory>& info) {
  return info.param.name;
}

void ClientConformanceTest::SetUp() {
  const ClientFactory& factory = GetParam();
  diagnostics_ = factory.diagnostic_count ? factory.diagnostic_count() : 0;
  absl::StatusOr<std::shared_ptr<Client>> c = factory.create();
  if (absl::IsNotFound(c.status()) || absl::IsUnavailable(c.status())) {
    GTEST_SKIP() << "no " << factory.name << " client on this machine: " << c.status();
  }
  ASSERT_THAT(c, IsOk()) << "cannot create a " << factory.name << " client";
  client_ = *std::move(c);
  client_->transfer_guard().SetDefaultLogSinkEnabled(false);
  n_ = static_cast<int>(client_->devices().size());
  ASSERT_GE(n_, 2);
  ASSERT_EQ(n_ % 2, 0);
}

void ClientConformanceTest::TearDown() {
  const ClientFactory& factory = GetParam();
  if (factory.diagnostic_count) {
    EXPECT_EQ(factory.diagnostic_count(), diagnostics_)
        << "the " << factory.name << " backend's checker (validation layer) reported problems";
  }
}

DeviceListRef ClientConformanceTest::At(const std::vector<int>& positions) {
  return testing::DevicesAt(client(), positions);
}

DeviceListRef ClientConformanceTest::All() {
  std::vector<int> p;
  for (int i = 0; i < n_; ++i) p.push_back(i);
  return At(p);
}

DeviceListRef ClientConformanceTest::Reversed() {
  std::vector<int> p;
  for (int i = n_ - 1; i >= 0; --i) p.push_back(i);
  return At(p);
}

DeviceListRef ClientConformanceTest::FirstHalf() {
  std::vector<int> p;
  for (int i = 0; i < n_ / 2; ++i) p.push_back(i);
  return At(p);
}

DeviceListRef ClientConformanceTest::SecondHalf() {
  std::vector<int> p;
  for (int i = n_ / 2; i < n_; ++i) p.push_back(i);
  return At(p);
}

std::vector<int> ClientConformanceTest::OfKind(std::string_view kind) {
  std::vector<int> p;
  for (int i = 0; i < n_; ++i) {
    if (client().devices()[i]->Kind() == kind) p.push_back(i);
  }
  return p;
}

ShardingRef ClientConformanceTest::PartiallyTiled(const DeviceListRef& devices) {
  return testing::Named(absl::StrCat("mesh{x=2,y=", devices->size() / 2, "}"), "P(x,None)",
                        devices);
}

void ClientConformanceTest::ExpectContents(const ArrayRef& array,
                                           const std::vector<uint8_t>& data) {
  SCOPED_TRACE(array->DebugString());
  absl::StatusOr<std::vector<uint8_t>> whole = ReadBack(array);
  ASSERT_THAT(whole, IsOk());
  EXPECT_TRUE(*whole == data) << "whole array differs";
  absl::StatusOr<std::vector<IndexDomain>> domains = array->sharding().IndexDomains(array->shape());
  ASSERT_THAT(domains, IsOk());
  absl::StatusOr<std::vector<ArrayRef>> parts =
      array->DisassembleIntoSingleDeviceArrays(ArrayCopySemantics::kReuseInput);
  ASSERT_THAT(parts, IsOk());
  ASSERT_EQ(parts->size(), domains->size());
  const int64_t element_bytes = *array->dtype().byte_size();
  for (size_t i = 0; i < parts->size(); ++i) {
    absl::StatusOr<std::vector<uint8_t>> shard = ReadBack((*parts)[i]);
    ASSERT_THAT(shard, IsOk());
    EXPECT_TRUE(*shard == SliceDomain(data, array->shape(), element_bytes, (*domains)[i]))
        << "shard " << i << " (" << (*domains)[i].DebugString() << ") differs";
  }
}

}  // namespace tessera::conformance
