// tests/mpi/loopback_test.cc: the multi-process runtime (ifrt/runtime/distributed_runtime.h) with
// its "processes" as threads of one test process, joined by a loopback transport instead of MPI:
// so that the sanitizers (which MPI's libraries do not run clean under) see the runtime's side of
// collective reshards, agreements and refusals.

#include <functional>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "backends/registry.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ifrt/runtime/runtime_client.h"
#include "tessera.h"
#include "tests/ifrt/test_util.h"
#include "tests/mpi/loopback_transport.h"
#include "tests/mpi/shard_checks.h"
#include "tests/testing/status_matchers.h"

namespace tessera {
namespace {

using testing::ExpectShards;
using ::testing::HasSubstr;
using testing::Split;
using testing::StatusIs;

// Process p's client: p + 1 CPU devices of one thread each, over the loopback hub.
absl::StatusOr<std::shared_ptr<Client>> LoopbackClient(testing::LoopbackHub& hub, int p) {
  ClientOptions options{
      .cpu_devices = p + 1, .cpu_threads_per_device = 1, .vulkan = VulkanMode::kOff};
  std::vector<std::unique_ptr<Platform>> platforms;
  for (const PlatformFactory& f : PlatformRegistry::Default().Factories()) {
    if (f.name != "cpu") continue;
    absl::StatusOr<std::unique_ptr<Platform>> platform = f.create(options);
    if (!platform.ok()) return platform.status();
    platforms.push_back(*std::move(platform));
  }
  absl::StatusOr<std::shared_ptr<runtime::RuntimeClient>> client = runtime::RuntimeClient::Create(
      std::move(platforms), guard::Policy(), nullptr, hub.Transport(p));
  if (!client.ok()) return client.status();
  return std::shared_ptr<Client>(*std::move(client));
}

// Runs `body(client)` on `n` processes (threads) at once, each with its own client.
void OnEveryProcess(int n, const std::function<void(Client&)>& body) {
  testing::LoopbackHub hub(n);
  std::vector<std::thread> threads;
  for (int p = 0; p < n; ++p) {
    threads.emplace_back([&, p] {
      absl::StatusOr<std::shared_ptr<Client>> client = LoopbackClient(hub, p);
      ASSERT_TRUE(client.ok()) << client.status();
      body(**client);
    });
  }
  for (std::thread& t : threads) t.join();
}

TEST(LoopbackTest, DevicesAreGlobal) {
  OnEveryProcess(3, [](Client& client) {
    EXPECT_EQ(client.process_count(), 3);
    ASSERT_EQ(client.devices().size(), 6u);  // 1 + 2 + 3
    ASSERT_EQ(client.addressable_devices().size(), client.process_index() + 1u);
    const int first[] = {0, 1, 3};
    for (int i = 0; i < 6; ++i) {
      Device* d = client.devices()[i];
      const int p = i < 1 ? 0 : i < 3 ? 1 : 2;
      EXPECT_EQ(d->Id().value, i);
      EXPECT_EQ(d->ProcessIndex(), p);
      EXPECT_EQ(d->IsAddressable(), p == client.process_index());
      if (d->IsAddressable()) {
        EXPECT_EQ(client.addressable_devices()[i - first[p]], d);
      }
    }
  });
}

TEST(LoopbackTest, RowsToColumnsAndBackAcrossProcesses) {
  const Shape shape({29, 31});
  const DType f32(DType::kF32);
  const std::vector<uint8_t> full = testing::Pattern(29 * 31 * 4, 3);
  OnEveryProcess(3, [&](Client& client) {
    absl::StatusOr<ArrayRef> a =
        testing::MakeArray(client, full, f32, shape, Split(client, shape, 0));
    ASSERT_TRUE(a.ok()) << a.status();
    std::vector<ArrayRef> in = {*a};
    absl::StatusOr<std::vector<ArrayRef>> cols =
        client.ReshardArrays(absl::MakeSpan(in), {ArraySpec{f32, shape, Split(client, shape, 1)}},
                             ArrayCopySemantics::kAlwaysCopy);
    ASSERT_TRUE(cols.ok()) << cols.status();
    ExpectShards((*cols)[0], full);
    absl::StatusOr<std::vector<ArrayRef>> rows = client.ReshardArrays(
        absl::MakeSpan(*cols), {ArraySpec{f32, shape, Split(client, shape, 0)}},
        ArrayCopySemantics::kDonateInput);
    ASSERT_TRUE(rows.ok()) << rows.status();
    ExpectShards((*rows)[0], full);
    EXPECT_TRUE((*cols)[0]->IsDeleted());
    std::vector<uint8_t> host(full.size());
    EXPECT_THAT((*rows)[0]
                    ->CopyToHostBuffer(host.data(), std::nullopt, ArrayCopySemantics::kAlwaysCopy)
                    .Await(),
                StatusIs(absl::StatusCode::kFailedPrecondition,
                         HasSubstr("this process cannot read devices")));
  });
}

TEST(LoopbackTest, ARefusalOnOneProcessFailsEveryProcess) {
  const Shape shape({12, 12});
  const DType s32(DType::kS32);
  const std::vector<uint8_t> full = testing::Pattern(12 * 12 * 4, 4);
  OnEveryProcess(2, [&](Client& client) {
    absl::StatusOr<ArrayRef> a =
        testing::MakeArray(client, full, s32, shape, Split(client, shape, 0));
    ASSERT_TRUE(a.ok()) << a.status();
    std::vector<ArrayRef> in = {*a};
    std::optional<guard::ScopedTransferGuard> scope;
    if (client.process_index() == 0) {
      scope.emplace(guard::Direction::kDeviceToDevice, guard::Level::kDisallowExplicit);
    }
    absl::StatusOr<std::vector<ArrayRef>> out =
        client.ReshardArrays(absl::MakeSpan(in), {ArraySpec{s32, shape, Split(client, shape, 1)}},
                             ArrayCopySemantics::kDonateInput);
    EXPECT_THAT(out, StatusIs(absl::StatusCode::kInvalidArgument,
                              HasSubstr("Disallowed device-to-device transfer")));
    if (client.process_index() == 1) {
      EXPECT_THAT(out.status().message(), HasSubstr("process 0 refused the call"));
    }
    EXPECT_FALSE((*a)->IsDeleted());
    scope.reset();
    // Different arguments: an error everywhere.
    ShardingRef target =
        client.process_index() == 0
            ? Split(client, shape, 1)
            : testing::ReplicatedSharding(*client.MakeDeviceList(client.devices()), shape);
    EXPECT_THAT(client.ReshardArrays(absl::MakeSpan(in), {ArraySpec{s32, shape, target}},
                                     ArrayCopySemantics::kAlwaysCopy),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("different arguments")));
    // An empty CopyArrays is collective too, and matches on every process.
    EXPECT_TRUE(
        client.CopyArrays({}, std::nullopt, std::nullopt, ArrayCopySemantics::kAlwaysCopy).ok());
  });
}

}  // namespace
}  // namespace tessera
