// The runtime finds the plans of uploads, downloads and reshards by the identity of the shardings
// involved (ifrt/runtime/plan_cache.h): a repeated movement with the same Sharding object computes
// no layout and no plan, and the arrays it places share one layout. Every result stays bit-exact,
// and a new but equal Sharding object is planned again, just as exactly.

#include <cstdint>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ifrt/introspection.h"
#include "ifrt/runtime/runtime_array.h"
#include "tessera.h"
#include "tests/testing/status_matchers.h"

namespace tessera {
namespace {

using ::tessera::testing::IsOk;

class IdentityCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(client_, CreateClient({.cpu_devices = 8, .vulkan = VulkanMode::kOff}));
    ASSERT_OK_AND_ASSIGN(devices_, client_->MakeDeviceList(client_->devices()));
    inspect_ = client_->introspection();
    ASSERT_NE(inspect_, nullptr);
  }

  ShardingRef Named(const std::string& spec) const {
    return *NamedSharding::Create(*sharding::Mesh::Parse("mesh{x=8}"),
                                  *sharding::PartitionSpec::Parse(spec), devices_, MemoryKind());
  }

  absl::StatusOr<ArrayRef> Put(const std::vector<int32_t>& host, const ShardingRef& sharding) {
    return client_->MakeArrayFromHostBuffer(host.data(), DType(DType::kS32), shape_, std::nullopt,
                                            sharding, HostBufferSemantics::kImmutableOnlyDuringCall,
                                            nullptr);
  }

  absl::StatusOr<std::vector<int32_t>> Read(const ArrayRef& array) {
    std::vector<int32_t> back(64, -1);
    absl::Status st =
        array->CopyToHostBuffer(back.data(), std::nullopt, ArrayCopySemantics::kAlwaysCopy).Await();
    if (!st.ok()) return st;
    return back;
  }

  void ExpectContents(const ArrayRef& array, const std::vector<int32_t>& expected) {
    ASSERT_OK_AND_ASSIGN(std::vector<int32_t> back, Read(array));
    EXPECT_EQ(back, expected);
  }

  static std::vector<int32_t> Iota(int32_t first) {
    std::vector<int32_t> v(64);
    std::iota(v.begin(), v.end(), first);
    return v;
  }

  static const sharding::ShardLayout* LayoutOf(const ArrayRef& array) {
    return &static_cast<const runtime::RuntimeArray&>(*array).layout();
  }

  const Shape shape_{{8, 8}};
  std::shared_ptr<Client> client_;
  DeviceListRef devices_;
  ClientIntrospection* inspect_ = nullptr;
};

TEST_F(IdentityCacheTest, RepeatedMovementsOfOneShardingPlanNothingAndShareTheLayout) {
  const ShardingRef rows = Named("P(x,None)");
  const ShardingRef cols = Named("P(None,x)");
  ASSERT_OK_AND_ASSIGN(ArrayRef a, Put(Iota(0), rows));

  // The second upload to `rows`: one hit, no plan made, the same layout object.
  PlanCacheStats before = inspect_->plan_cache_stats();
  ASSERT_OK_AND_ASSIGN(ArrayRef b, Put(Iota(1000), rows));
  EXPECT_EQ(inspect_->plan_cache_stats().hits, before.hits + 1);
  EXPECT_EQ(inspect_->plan_cache_stats().misses, before.misses);
  EXPECT_EQ(LayoutOf(a), LayoutOf(b));

  // Downloads: the first of `rows` may plan; the second is one hit.
  ASSERT_OK_AND_ASSIGN(std::vector<int32_t> a_back, Read(a));
  before = inspect_->plan_cache_stats();
  ASSERT_OK_AND_ASSIGN(std::vector<int32_t> b_back, Read(b));
  EXPECT_EQ(inspect_->plan_cache_stats().hits, before.hits + 1);
  EXPECT_EQ(inspect_->plan_cache_stats().misses, before.misses);
  EXPECT_EQ(a_back, Iota(0));
  EXPECT_EQ(b_back, Iota(1000));

  // Reshards rows -> cols: the second of each pair is one hit and shares the first's layout.
  const std::vector<ArraySpec> to_cols = {ArraySpec{DType(DType::kS32), shape_, cols}};
  ASSERT_OK_AND_ASSIGN(
      std::vector<ArrayRef> a_cols,
      client_->ReshardArrays(absl::MakeSpan(&a, 1), to_cols, ArrayCopySemantics::kAlwaysCopy));
  before = inspect_->plan_cache_stats();
  ASSERT_OK_AND_ASSIGN(
      std::vector<ArrayRef> b_cols,
      client_->ReshardArrays(absl::MakeSpan(&b, 1), to_cols, ArrayCopySemantics::kAlwaysCopy));
  EXPECT_EQ(inspect_->plan_cache_stats().hits, before.hits + 1);
  EXPECT_EQ(inspect_->plan_cache_stats().misses, before.misses);
  EXPECT_EQ(LayoutOf(a_cols[0]), LayoutOf(b_cols[0]));
  ExpectContents(a_cols[0], Iota(0));
  ExpectContents(b_cols[0], Iota(1000));
  ExpectContents(a, Iota(0));  // the inputs are intact
}

TEST_F(IdentityCacheTest, AnotherButEqualShardingIsPlacedAgainAndExact) {
  const ShardingRef rows = Named("P(x,None)");
  ASSERT_OK_AND_ASSIGN(ArrayRef a, Put(Iota(0), rows));
  ASSERT_THAT(Read(a).status(), IsOk());
  // A new object with the same meaning misses the identity cache and is planned by its layout.
  const ShardingRef same_rows = Named("P(x,None)");
  ASSERT_OK_AND_ASSIGN(ArrayRef b, Put(Iota(7), same_rows));
  EXPECT_NE(LayoutOf(a), LayoutOf(b));
  EXPECT_EQ(*LayoutOf(a), *LayoutOf(b));
  ExpectContents(b, Iota(7));
  // A sharding over other devices, reached through the same identity cache, lands on them.
  ASSERT_OK_AND_ASSIGN(ArrayRef one, Put(Iota(3), SingleDeviceSharding::Create(
                                                      client_->devices()[5], MemoryKind())));
  EXPECT_EQ(one->sharding().devices()->devices()[0], client_->devices()[5]);
  ExpectContents(one, Iota(3));
  // Counted once per upload, whatever the cache did.
  EXPECT_EQ(client_->transfer_stats().host_to_device.bytes, 3 * 64 * 4);
}

}  // namespace
}  // namespace tessera
