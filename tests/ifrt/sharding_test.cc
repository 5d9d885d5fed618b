// Tests of DeviceList and of every Sharding class, on the devices of a 4-device
// CPU client.

// GCC 12 reports false -Wmaybe-uninitialized inside absl::InlinedVector moves
// (Shape, Index).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <memory>
#include <vector>

#include "absl/hash/hash.h"
#include "absl/hash/hash_testing.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/ifrt/test_util.h"

namespace tessera {
namespace {

using ::tessera::testing::DevicesAt;
using ::tessera::testing::IsOk;
using ::tessera::testing::Named;
using ::tessera::testing::ParamSharding;
using ::tessera::testing::StatusIs;
using ::testing::_;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class ShardingTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<std::shared_ptr<Client>> c =
        CreateClient({.cpu_devices = 4, .vulkan = VulkanMode::kOff});
    ASSERT_TRUE(c.ok()) << c.status();
    client_ = new std::shared_ptr<Client>(*std::move(c));
    absl::StatusOr<std::shared_ptr<Client>> other =
        CreateClient({.cpu_devices = 2, .vulkan = VulkanMode::kOff});
    ASSERT_TRUE(other.ok()) << other.status();
    other_client_ = new std::shared_ptr<Client>(*std::move(other));
  }
  static void TearDownTestSuite() {
    delete client_;
    delete other_client_;
    client_ = other_client_ = nullptr;
  }

  Client& client() { return **client_; }
  Device* device(int i) { return client().devices()[i]; }
  DeviceListRef Devices(const std::vector<int>& positions) {
    return DevicesAt(client(), positions);
  }
  DeviceListRef All() { return Devices({0, 1, 2, 3}); }
  DeviceListRef Reversed() { return Devices({3, 2, 1, 0}); }

  // Checks the behaviour every sharding with geometry shares: IndexDomains,
  // Disassemble and GetShardShape agree; WithDeviceAssignment keeps the
  // partitioning and swaps the devices; equality and hash follow.
  void CheckCommon(const ShardingRef& s, const Shape& shape,
                   const std::vector<IndexDomain>& expected_domains) {
    SCOPED_TRACE(s->DebugString());
    absl::StatusOr<std::vector<IndexDomain>> domains = s->IndexDomains(shape);
    ASSERT_THAT(domains, IsOk());
    EXPECT_EQ(*domains, expected_domains);
    absl::StatusOr<std::vector<std::pair<Shape, ShardingRef>>> parts = s->Disassemble(shape);
    ASSERT_THAT(parts, IsOk());
    ASSERT_EQ(parts->size(), expected_domains.size());
    bool even = true;
    for (size_t i = 0; i < parts->size(); ++i) {
      EXPECT_EQ((*parts)[i].first, expected_domains[i].shape());
      EXPECT_EQ(*(*parts)[i].second,
                *SingleDeviceSharding::Create(s->devices()->devices()[i], s->memory_kind()));
      even = even && expected_domains[i].shape() == expected_domains[0].shape();
    }
    if (even) {
      EXPECT_THAT(s->GetShardShape(shape), IsOk());
      EXPECT_EQ(*s->GetShardShape(shape), expected_domains[0].shape());
    } else {
      EXPECT_THAT(s->GetShardShape(shape),
                  StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("differ in shape")));
    }

    // A reversed device list (the same count): same partitioning, new devices.
    std::vector<Device*> reversed(s->devices()->devices().rbegin(), s->devices()->devices().rend());
    DeviceListRef rev = testing::MustDeviceList(client(), reversed);
    absl::StatusOr<ShardingRef> moved = s->WithDeviceAssignment(rev, std::nullopt);
    ASSERT_THAT(moved, IsOk());
    EXPECT_TRUE((*moved)->HasSamePartitioning(*s));
    EXPECT_TRUE(s->HasSamePartitioning(**moved));
    EXPECT_EQ(*(*moved)->devices(), *rev);
    EXPECT_EQ((*moved)->memory_kind(), s->memory_kind());
    EXPECT_EQ((*moved)->IsFullyReplicated(), s->IsFullyReplicated());
    EXPECT_EQ(*(*moved)->IndexDomains(shape), *domains);
    absl::StatusOr<ShardingRef> moved_again = s->WithDeviceAssignment(rev, std::nullopt);
    ASSERT_THAT(moved_again, IsOk());
    EXPECT_EQ(**moved, **moved_again);
    EXPECT_EQ(absl::HashOf(**moved), absl::HashOf(**moved_again));
    if (s->devices()->size() > 1) {
      EXPECT_NE(**moved, *s);
    }

    // Only the memory kind.
    absl::StatusOr<ShardingRef> pinned = s->WithDeviceAssignment(std::nullopt, MemoryKind("x"));
    ASSERT_THAT(pinned, IsOk());
    EXPECT_EQ((*pinned)->memory_kind(), MemoryKind("x"));
    EXPECT_EQ(*(*pinned)->devices(), *s->devices());
    EXPECT_NE(**pinned, *s);
    EXPECT_TRUE((*pinned)->HasSamePartitioning(*s));

    // Nothing changed: equal to the original.
    absl::StatusOr<ShardingRef> same = s->WithDeviceAssignment(std::nullopt, std::nullopt);
    ASSERT_THAT(same, IsOk());
    EXPECT_EQ(**same, *s);
    EXPECT_EQ(absl::HashOf(**same), absl::HashOf(*s));

    // A device list of another size.
    const int n = s->devices()->size();
    std::vector<int> wrong_count;
    for (int i = 0; i < (n == 4 ? 3 : n + 1); ++i) wrong_count.push_back(i);
    EXPECT_THAT(s->WithDeviceAssignment(Devices(wrong_count), std::nullopt),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("devices")));
  }

  static std::shared_ptr<Client>* client_;
  static std::shared_ptr<Client>* other_client_;
};
std::shared_ptr<Client>* ShardingTest::client_ = nullptr;
std::shared_ptr<Client>* ShardingTest::other_client_ = nullptr;

// ---------------------------------------------------------------------------------------------
// DeviceList

TEST_F(ShardingTest, DeviceListBasics) {
  DeviceListRef all = All();
  EXPECT_EQ(all->size(), 4);
  EXPECT_EQ((*all)[2], device(2));
  EXPECT_THAT(all->ids(), ElementsAre(0, 1, 2, 3));
  EXPECT_EQ(all->IndexOf(device(3)), 3);
  EXPECT_EQ(Reversed()->IndexOf(device(3)), 0);
  EXPECT_EQ(Devices({0, 1})->IndexOf(device(3)), -1);
  EXPECT_EQ(Devices({0, 1})->DebugString(), "[cpu:0,cpu:1]");
  EXPECT_EQ(*all, *All());
  EXPECT_NE(*all, *Reversed());
  EXPECT_NE(*all, *Devices({0, 1, 2}));
  EXPECT_EQ(all->hash(), All()->hash());
  EXPECT_TRUE(SameDeviceList(all, All()));
  EXPECT_FALSE(SameDeviceList(all, Reversed()));
  EXPECT_TRUE(SameDeviceList(nullptr, nullptr));
  EXPECT_FALSE(SameDeviceList(all, nullptr));
  EXPECT_TRUE(absl::VerifyTypeImplementsAbslHashCorrectly(
      {*All(), *Reversed(), *Devices({0}), *Devices({1}), *Devices({0, 1})}));
}

TEST_F(ShardingTest, DeviceListErrors) {
  EXPECT_THAT(DeviceList::Create({}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("empty")));
  EXPECT_THAT(client().MakeDeviceList({}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("empty")));
  std::vector<Device*> with_null = {device(0), nullptr};
  EXPECT_THAT(DeviceList::Create(with_null),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("null")));
  EXPECT_THAT(client().MakeDeviceList(with_null),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("null")));
  std::vector<Device*> twice = {device(0), device(1), device(0)};
  EXPECT_THAT(DeviceList::Create(twice),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("twice")));
  EXPECT_THAT(client().MakeDeviceList(twice),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("twice")));
  Device* foreign = (*other_client_)->devices()[0];
  std::vector<Device*> mixed = {device(0), foreign};
  EXPECT_THAT(DeviceList::Create(mixed),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("another client")));
  std::vector<Device*> only_foreign = {foreign};
  EXPECT_THAT(client().MakeDeviceList(only_foreign),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("another client")));
}

TEST_F(ShardingTest, ClientDevices) {
  ASSERT_EQ(client().devices().size(), 4u);
  EXPECT_EQ(client().addressable_devices().size(), 4u);
  for (int i = 0; i < 4; ++i) {
    Device* d = device(i);
    EXPECT_EQ(d->Id().value, i);
    EXPECT_EQ(d->Kind(), "cpu");
    EXPECT_EQ(d->client(), &client());
    EXPECT_EQ(d->ToString(), "cpu:" + std::to_string(i));
    EXPECT_TRUE(d->IsAddressable());
    absl::StatusOr<Device*> looked_up = client().LookupDevice(DeviceId{i});
    ASSERT_THAT(looked_up, IsOk());
    EXPECT_EQ(*looked_up, d);
    absl::StatusOr<Memory*> m = d->DefaultMemory();
    ASSERT_THAT(m, IsOk());
    EXPECT_EQ((*m)->Kind(), MemoryKind("host"));
    EXPECT_THAT((*m)->Devices(), ElementsAre(d));
    EXPECT_THAT(d->Memories(), ::testing::Contains(*m));
  }
  EXPECT_THAT(client().LookupDevice(DeviceId{4}),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("no device with id 4")));
  EXPECT_THAT(client().LookupDevice(DeviceId{-1}),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("-1")));
  EXPECT_THAT(client().platform_names(), ElementsAre("cpu"));
}

// ---------------------------------------------------------------------------------------------
// SingleDeviceSharding

TEST_F(ShardingTest, SingleDevice) {
  ShardingRef s = SingleDeviceSharding::Create(device(2), MemoryKind());
  EXPECT_TRUE(s->IsFullyReplicated());
  EXPECT_EQ(s->devices()->size(), 1);
  EXPECT_EQ(static_cast<const SingleDeviceSharding&>(*s).device(), device(2));
  CheckCommon(s, Shape({7, 13}), {IndexDomain(Shape({7, 13}))});
  CheckCommon(s, Shape({0, 5}), {IndexDomain(Shape({0, 5}))});
  CheckCommon(s, Shape(), {IndexDomain(Shape())});
  EXPECT_EQ(*s, *SingleDeviceSharding::Create(device(2), MemoryKind()));
  EXPECT_NE(*s, *SingleDeviceSharding::Create(device(1), MemoryKind()));
  EXPECT_NE(*s, *SingleDeviceSharding::Create(device(2), MemoryKind("host")));
  // Same devices, another class.
  EXPECT_NE(*s, *testing::ReplicatedSharding(Devices({2}), Shape({7, 13})));
  EXPECT_THAT(s->IndexDomains(Shape({3, -1})),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("-1")));
  EXPECT_THAT(s->DebugString(), HasSubstr("cpu:2"));
}

// ---------------------------------------------------------------------------------------------
// OpaqueSharding

TEST_F(ShardingTest, Opaque) {
  ShardingRef s = OpaqueSharding::Create(All(), MemoryKind());
  EXPECT_FALSE(s->IsFullyReplicated());
  EXPECT_THAT(s->IndexDomains(Shape({4, 4})),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("no geometry")));
  EXPECT_THAT(s->Disassemble(Shape({4, 4})), StatusIs(absl::StatusCode::kUnimplemented, _));
  EXPECT_THAT(s->GetShardShape(Shape({4, 4})), StatusIs(absl::StatusCode::kUnimplemented, _));
  // Only the same object partitions alike.
  ShardingRef other = OpaqueSharding::Create(All(), MemoryKind());
  EXPECT_TRUE(s->HasSamePartitioning(*s));
  EXPECT_FALSE(s->HasSamePartitioning(*other));
  EXPECT_EQ(*s, *s);
  EXPECT_NE(*s, *other);
  absl::StatusOr<ShardingRef> moved = s->WithDeviceAssignment(Reversed(), std::nullopt);
  ASSERT_THAT(moved, IsOk());
  EXPECT_EQ(*(*moved)->devices(), *Reversed());
  EXPECT_NE(dynamic_cast<const OpaqueSharding*>(moved->get()), nullptr);
  EXPECT_THAT(s->WithDeviceAssignment(Devices({0}), std::nullopt),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("devices")));
}

// ---------------------------------------------------------------------------------------------
// ConcreteSharding

TEST_F(ShardingTest, ConcreteIrregular) {
  // [10,4] as rows 0..1, 2..6, 7..9 and one replica of rows 2..6 (irregular,
  // overlapping).
  const Shape shape({10, 4});
  std::vector<IndexDomain> domains = {
      IndexDomain(Index{0, 0}, Shape({2, 4})), IndexDomain(Index{2, 0}, Shape({5, 4})),
      IndexDomain(Index{7, 0}, Shape({3, 4})), IndexDomain(Index{2, 0}, Shape({5, 4}))};
  std::vector<Shape> shard_shapes;
  for (const IndexDomain& d : domains) shard_shapes.push_back(d.shape());
  absl::StatusOr<ShardingRef> s =
      ConcreteSharding::Create(All(), MemoryKind(), shape, shard_shapes, domains);
  ASSERT_THAT(s, IsOk());
  EXPECT_FALSE((*s)->IsFullyReplicated());
  CheckCommon(*s, shape, domains);
  // Another shape than the one it was made for.
  EXPECT_THAT((*s)->IndexDomains(Shape({10, 5})),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("[10,4]")));
  absl::StatusOr<ShardingRef> again =
      ConcreteSharding::Create(All(), MemoryKind(), shape, shard_shapes, domains);
  ASSERT_THAT(again, IsOk());
  EXPECT_EQ(**s, **again);
  EXPECT_EQ(absl::HashOf(**s), absl::HashOf(**again));
  std::swap(domains[0], domains[3]);
  std::swap(shard_shapes[0], shard_shapes[3]);
  absl::StatusOr<ShardingRef> permuted =
      ConcreteSharding::Create(All(), MemoryKind(), shape, shard_shapes, domains);
  ASSERT_THAT(permuted, IsOk());
  EXPECT_FALSE((*s)->HasSamePartitioning(**permuted));
  EXPECT_NE(**s, **permuted);
}

TEST_F(ShardingTest, ConcreteErrors) {
  const Shape shape({4, 4});
  auto dom = [](int64_t r0, int64_t rows) { return IndexDomain(Index{r0, 0}, Shape({rows, 4})); };
  // Wrong counts.
  EXPECT_THAT(
      ConcreteSharding::Create(Devices({0, 1}), MemoryKind(), shape, {Shape({4, 4})}, {dom(0, 4)}),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("2 devices")));
  // Shard shape disagrees with its domain.
  EXPECT_THAT(ConcreteSharding::Create(Devices({0, 1}), MemoryKind(), shape,
                                       {Shape({2, 4}), Shape({3, 4})}, {dom(0, 2), dom(2, 2)}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("shard 1")));
  // Rank mismatch.
  EXPECT_THAT(ConcreteSharding::Create(Devices({0}), MemoryKind(), shape, {Shape({16})},
                                       {IndexDomain(Index{0}, Shape({16}))}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("rank")));
  // Outside the array.
  EXPECT_THAT(ConcreteSharding::Create(Devices({0, 1}), MemoryKind(), shape,
                                       {Shape({2, 4}), Shape({3, 4})}, {dom(0, 2), dom(2, 3)}),
              StatusIs(absl::StatusCode::kInvalidArgument, _));
  // Not covering it.
  EXPECT_THAT(ConcreteSharding::Create(Devices({0, 1}), MemoryKind(), shape,
                                       {Shape({1, 4}), Shape({2, 4})}, {dom(0, 1), dom(2, 2)}),
              StatusIs(absl::StatusCode::kInvalidArgument, _));
  EXPECT_THAT(ConcreteSharding::Create(nullptr, MemoryKind(), shape, {}, {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("null")));
  EXPECT_THAT(ConcreteSharding::Create(Devices({0}), MemoryKind(), Shape({-4, 4}), {Shape({4, 4})},
                                       {dom(0, 4)}),
              StatusIs(absl::StatusCode::kInvalidArgument, _));
}

// ---------------------------------------------------------------------------------------------
// ConcreteEvenSharding

TEST_F(ShardingTest, ConcreteEven) {
  // [8,6] in tiles of [4,3]: 4 tiles, one per device, row-major.
  absl::StatusOr<ShardingRef> s =
      ConcreteEvenSharding::Create(All(), MemoryKind(), Shape({8, 6}), Shape({4, 3}));
  ASSERT_THAT(s, IsOk());
  EXPECT_FALSE((*s)->IsFullyReplicated());
  CheckCommon(*s, Shape({8, 6}),
              {IndexDomain(Index{0, 0}, Shape({4, 3})), IndexDomain(Index{0, 3}, Shape({4, 3})),
               IndexDomain(Index{4, 0}, Shape({4, 3})), IndexDomain(Index{4, 3}, Shape({4, 3}))});

  // Ragged: [7,6] in tiles of [4,6] over 2 tiles, each held by 2 consecutive
  // devices.
  absl::StatusOr<ShardingRef> ragged =
      ConcreteEvenSharding::Create(All(), MemoryKind(), Shape({7, 6}), Shape({4, 6}));
  ASSERT_THAT(ragged, IsOk());
  CheckCommon(*ragged, Shape({7, 6}),
              {IndexDomain(Index{0, 0}, Shape({4, 6})), IndexDomain(Index{0, 0}, Shape({4, 6})),
               IndexDomain(Index{4, 0}, Shape({3, 6})), IndexDomain(Index{4, 0}, Shape({3, 6}))});

  // Fully replicated.
  absl::StatusOr<ShardingRef> replicated =
      ConcreteEvenSharding::Create(All(), MemoryKind(), Shape({3, 5}), Shape({3, 5}), true);
  ASSERT_THAT(replicated, IsOk());
  EXPECT_TRUE((*replicated)->IsFullyReplicated());
  CheckCommon(*replicated, Shape({3, 5}), std::vector<IndexDomain>(4, IndexDomain(Shape({3, 5}))));
  EXPECT_FALSE((*replicated)->HasSamePartitioning(**s));

  // Zero-sized.
  absl::StatusOr<ShardingRef> empty =
      ConcreteEvenSharding::Create(Devices({0, 1}), MemoryKind(), Shape({0, 5}), Shape({0, 5}));
  ASSERT_THAT(empty, IsOk());
  absl::StatusOr<std::vector<IndexDomain>> empty_domains = (*empty)->IndexDomains(Shape({0, 5}));
  ASSERT_THAT(empty_domains, IsOk());
  for (const IndexDomain& d : *empty_domains) {
    EXPECT_EQ(d.shape().num_elements(), 0);
  }

  EXPECT_THAT((*s)->IndexDomains(Shape({8, 7})),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("[8,6]")));
}

TEST_F(ShardingTest, ConcreteEvenErrors) {
  EXPECT_THAT(ConcreteEvenSharding::Create(All(), MemoryKind(), Shape({8, 6}), Shape({4})),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("rank")));
  // 3 tiles over 4 devices.
  EXPECT_THAT(ConcreteEvenSharding::Create(All(), MemoryKind(), Shape({9}), Shape({3})),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("3 tiles")));
  // 8 tiles over 4 devices.
  EXPECT_THAT(ConcreteEvenSharding::Create(All(), MemoryKind(), Shape({8}), Shape({1})),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("8 tiles")));
  EXPECT_THAT(ConcreteEvenSharding::Create(All(), MemoryKind(), Shape({8}), Shape({4}), true),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("fully replicated")));
  EXPECT_THAT(ConcreteEvenSharding::Create(All(), MemoryKind(), Shape({-8}), Shape({4})),
              StatusIs(absl::StatusCode::kInvalidArgument, _));
  EXPECT_THAT(ConcreteEvenSharding::Create(All(), MemoryKind(), Shape({8}), Shape({-4})),
              StatusIs(absl::StatusCode::kInvalidArgument, _));
  EXPECT_THAT(ConcreteEvenSharding::Create(All(), MemoryKind(), Shape({8}), Shape({0})),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("empty dimension")));
  EXPECT_THAT(ConcreteEvenSharding::Create(nullptr, MemoryKind(), Shape({8}), Shape({4})),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("null")));
}

// ---------------------------------------------------------------------------------------------
// ShardingParamSharding

TEST_F(ShardingTest, ShardingParam) {
  // 2x1 tiles, each replicated on 2 slots: "2x1 to [0,1] on 2x2".
  ShardingRef s = ParamSharding("2x1 to [0,1] on 2x2", All());
  ASSERT_NE(s, nullptr);
  EXPECT_FALSE(s->IsFullyReplicated());
  absl::StatusOr<std::vector<IndexDomain>> domains = s->IndexDomains(Shape({6, 4}));
  ASSERT_THAT(domains, IsOk());
  int top = 0;
  for (const IndexDomain& d : *domains) {
    EXPECT_EQ(d.shape(), Shape({3, 4}));
    top += d.origin()[0] == 0;
  }
  EXPECT_EQ(top, 2);
  CheckCommon(s, Shape({6, 4}), *domains);
  // Ragged rows.
  ShardingRef rows = ParamSharding("4x1 to [0] on 4", All());
  CheckCommon(rows, Shape({7, 3}),
              {IndexDomain(Index{0, 0}, Shape({2, 3})), IndexDomain(Index{2, 0}, Shape({2, 3})),
               IndexDomain(Index{4, 0}, Shape({2, 3})), IndexDomain(Index{6, 0}, Shape({1, 3}))});
  // Replicated.
  ShardingRef replicated = ParamSharding("1x1 to [0] on 4", All());
  EXPECT_TRUE(replicated->IsFullyReplicated());
  CheckCommon(replicated, Shape({2, 2}), std::vector<IndexDomain>(4, IndexDomain(Shape({2, 2}))));
  EXPECT_FALSE(replicated->HasSamePartitioning(*rows));
  EXPECT_EQ(*rows, *ParamSharding("4x1 to [0] on 4", All()));
  EXPECT_EQ(absl::HashOf(*rows), absl::HashOf(*ParamSharding("4x1 to [0] on 4", All())));

  // Errors: the device count; the rank of the array.
  absl::StatusOr<sharding::ShardingParam> param = sharding::ShardingParam::Parse("2x1 to [0] on 2");
  ASSERT_THAT(param, IsOk());
  EXPECT_THAT(ShardingParamSharding::Create(*param, All(), MemoryKind()),
              StatusIs(absl::StatusCode::kInvalidArgument, _));
  EXPECT_THAT(ShardingParamSharding::Create(*param, nullptr, MemoryKind()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("null")));
  EXPECT_THAT(rows->IndexDomains(Shape({7})), StatusIs(absl::StatusCode::kInvalidArgument, _));
  EXPECT_THAT(rows->IndexDomains(Shape({7, -3})), StatusIs(absl::StatusCode::kInvalidArgument, _));
  sharding::ShardingParam invalid({2, 2}, {{0}, {2}});  // 4 tiles on 2 slots
  EXPECT_THAT(ShardingParamSharding::Create(invalid, Devices({0, 1}), MemoryKind()),
              StatusIs(absl::StatusCode::kInvalidArgument, _));
}

// ---------------------------------------------------------------------------------------------
// NamedSharding

TEST_F(ShardingTest, Named) {
  ShardingRef rows = Named("mesh{x=2,y=2}", "P(x,None)", All());
  ASSERT_NE(rows, nullptr);
  EXPECT_FALSE(rows->IsFullyReplicated());
  // Mesh slots row-major: (x=0,y=0), (0,1), (1,0), (1,1); rows split over x.
  CheckCommon(rows, Shape({6, 5}),
              {IndexDomain(Index{0, 0}, Shape({3, 5})), IndexDomain(Index{0, 0}, Shape({3, 5})),
               IndexDomain(Index{3, 0}, Shape({3, 5})), IndexDomain(Index{3, 0}, Shape({3, 5}))});
  ShardingRef grid = Named("mesh{x=2,y=2}", "P(x,y)", All());
  CheckCommon(grid, Shape({4, 6}),
              {IndexDomain(Index{0, 0}, Shape({2, 3})), IndexDomain(Index{0, 3}, Shape({2, 3})),
               IndexDomain(Index{2, 0}, Shape({2, 3})), IndexDomain(Index{2, 3}, Shape({2, 3}))});
  ShardingRef both = Named("mesh{x=2,y=2}", "P((x,y),None)", All());
  CheckCommon(both, Shape({13, 2}),
              {IndexDomain(Index{0, 0}, Shape({4, 2})), IndexDomain(Index{4, 0}, Shape({4, 2})),
               IndexDomain(Index{8, 0}, Shape({4, 2})), IndexDomain(Index{12, 0}, Shape({1, 2}))});
  ShardingRef replicated = Named("mesh{x=4}", "P()", All());
  EXPECT_TRUE(replicated->IsFullyReplicated());
  CheckCommon(replicated, Shape({3}), std::vector<IndexDomain>(4, IndexDomain(Shape({3}))));
  // A size-1 axis splits nothing.
  EXPECT_TRUE(Named("mesh{x=1,y=4}", "P(x)", All())->IsFullyReplicated());

  EXPECT_EQ(*rows, *Named("mesh{x=2,y=2}", "P(x,None)", All()));
  EXPECT_EQ(absl::HashOf(*rows), absl::HashOf(*Named("mesh{x=2,y=2}", "P(x,None)", All())));
  EXPECT_NE(*rows, *grid);
  EXPECT_NE(*rows, *Named("mesh{x=2,y=2}", "P(x,None)", Reversed()));
  EXPECT_TRUE(rows->HasSamePartitioning(*Named("mesh{x=2,y=2}", "P(x,None)", Reversed())));

  absl::StatusOr<sharding::ShardingParam> param =
      static_cast<const NamedSharding&>(*grid).ToShardingParam(2);
  ASSERT_THAT(param, IsOk());
  ShardingRef as_param = *ShardingParamSharding::Create(*param, All(), MemoryKind());
  EXPECT_EQ(*as_param->IndexDomains(Shape({4, 6})), *grid->IndexDomains(Shape({4, 6})));

  // Equal shardings hash alike; these differ pairwise and (almost surely) hash
  // apart.
  const std::vector<ShardingRef> distinct = {rows, grid, replicated, as_param};
  for (size_t i = 0; i < distinct.size(); ++i) {
    for (size_t j = i + 1; j < distinct.size(); ++j) {
      EXPECT_NE(*distinct[i], *distinct[j]);
      EXPECT_NE(absl::HashOf(*distinct[i]), absl::HashOf(*distinct[j]));
    }
  }
}

TEST_F(ShardingTest, NamedErrors) {
  absl::StatusOr<sharding::Mesh> mesh = sharding::Mesh::Parse("mesh{x=2,y=2}");
  ASSERT_THAT(mesh, IsOk());
  EXPECT_THAT(NamedSharding::Create(*mesh, *sharding::PartitionSpec::Parse("P(x)"), Devices({0, 1}),
                                    MemoryKind()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("4 devices")));
  EXPECT_THAT(
      NamedSharding::Create(*mesh, *sharding::PartitionSpec::Parse("P(z)"), All(), MemoryKind()),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("z")));
  EXPECT_THAT(
      NamedSharding::Create(*mesh, *sharding::PartitionSpec::Parse("P(x,x)"), All(), MemoryKind()),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("x")));
  EXPECT_THAT(
      NamedSharding::Create(*mesh, *sharding::PartitionSpec::Parse("P(x)"), nullptr, MemoryKind()),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("null")));
  // A spec longer than the array's rank.
  ShardingRef s = Named("mesh{x=2,y=2}", "P(x,y)", All());
  EXPECT_THAT(s->IndexDomains(Shape({4})), StatusIs(absl::StatusCode::kInvalidArgument, _));
}

// Shardings of different classes with the same devices never compare equal, and
// a sharding equals itself moved back to its own devices.
TEST_F(ShardingTest, CrossClassEquality) {
  const Shape shape({4, 4});
  std::vector<ShardingRef> all = {
      *ConcreteEvenSharding::Create(All(), MemoryKind(), shape, Shape({1, 4})),
      ParamSharding("4x1 to [0] on 4", All()),
      Named("mesh{x=4}", "P(x,None)", All()),
      OpaqueSharding::Create(All(), MemoryKind()),
  };
  for (size_t i = 0; i < all.size(); ++i) {
    for (size_t j = 0; j < all.size(); ++j) {
      EXPECT_EQ(*all[i] == *all[j], i == j) << i << " vs " << j;
    }
    absl::StatusOr<ShardingRef> there = all[i]->WithDeviceAssignment(Reversed(), std::nullopt);
    ASSERT_THAT(there, IsOk());
    absl::StatusOr<ShardingRef> back = (*there)->WithDeviceAssignment(All(), std::nullopt);
    ASSERT_THAT(back, IsOk());
    if (i != 3) {  // opaque: only identity partitions alike
      EXPECT_EQ(**back, *all[i]);
    }
  }
}

}  // namespace
}  // namespace tessera
