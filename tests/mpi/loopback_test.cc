// tests/mpi/loopback_test.cc: the multi-process runtime
// (ifrt/runtime/distributed/distributed_runtime.h) with its "processes" as threads of one test
// process, joined by a loopback transport instead of MPI: so that the sanitizers (which MPI's
// libraries do not run clean under) see the runtime's side of collective reshards, agreements and
// refusals.

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
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

// ---- CreateClient over the hub (CreateClientFromRegistry with a transport factory) ----

// A registry with the build's CPU platform, and `extra` when given.
std::unique_ptr<PlatformRegistry> CpuRegistry(std::optional<PlatformFactory> extra = std::nullopt) {
  auto registry = std::make_unique<PlatformRegistry>();
  for (PlatformFactory& f : PlatformRegistry::Default().Factories()) {
    if (f.name == "cpu") {
      EXPECT_TRUE(registry->Register(std::move(f)).ok());
    }
  }
  if (extra.has_value()) {
    EXPECT_TRUE(registry->Register(*std::move(extra)).ok());
  }
  return registry;
}

// A platform every client demands, whose creation fails with `error`.
PlatformFactory RequiredFailingPlatform(absl::Status error) {
  PlatformFactory f;
  f.name = "npu";
  f.display_name = "NPU";
  f.order = 300;
  f.demand = [](const ClientOptions&) { return PlatformDemand::kRequired; };
  f.create = [error](const ClientOptions&) -> absl::StatusOr<std::unique_ptr<Platform>> {
    return error;
  };
  return f;
}

// Process p's options for a client over the hub: 1 CPU device of one thread.
ClientOptions DistributedOptions() {
  return {.cpu_devices = 1,
          .cpu_threads_per_device = 1,
          .vulkan = VulkanMode::kOff,
          .transfer_guard = guard::Policy(),
          .distributed = Distributed::kMpi};
}

// Creates a client on each of the hub's processes (threads) at once, process p with options[p]
// from registries[p]; returns each process's result (the hub must outlive the clients). A process
// left waiting for 60 s (the start-up hangs) fails the test and ends the test program, which cannot
// join it.
std::vector<absl::StatusOr<std::shared_ptr<Client>>> CreateOnEveryProcess(
    testing::LoopbackHub& hub, const std::vector<ClientOptions>& options,
    const std::vector<std::unique_ptr<PlatformRegistry>>& registries) {
  const int n = hub.size();
  std::vector<absl::StatusOr<std::shared_ptr<Client>>> results(n, absl::UnknownError("not run"));
  std::atomic<int> done{0};
  std::vector<std::thread> threads;
  for (int p = 0; p < n; ++p) {
    threads.emplace_back([&, p] {
      results[p] = CreateClientFromRegistry(*registries[p], options[p],
                                            [&hub, p](double) { return hub.Transport(p); });
      ++done;
    });
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (done.load() < n && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (done.load() < n) {
    ADD_FAILURE() << "CreateClient did not return on every process within 60 s";
    std::fflush(nullptr);
    std::_Exit(1);
  }
  for (std::thread& t : threads) t.join();
  return results;
}

// Sets an environment variable for the scope's life, then restores it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    if (old != nullptr) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_.has_value()) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(LoopbackCreateClientTest, EveryProcessJoinsAndSeesEveryDevice) {
  std::vector<std::unique_ptr<PlatformRegistry>> registries;
  for (int p = 0; p < 3; ++p) registries.push_back(CpuRegistry());
  testing::LoopbackHub hub(3);
  auto results =
      CreateOnEveryProcess(hub, std::vector<ClientOptions>(3, DistributedOptions()), registries);
  for (int p = 0; p < 3; ++p) {
    ASSERT_TRUE(results[p].ok()) << results[p].status();
    EXPECT_EQ((*results[p])->process_index(), p);
    EXPECT_EQ((*results[p])->devices().size(), 3u);
  }
}

// A bad option on one process: that process fails with its own error, the others with its code
// and message (before, it returned at once and the others waited for it forever).
TEST(LoopbackCreateClientTest, ABadOptionOnOneProcessFailsEveryProcess) {
  for (int bad = 0; bad < 3; ++bad) {
    std::vector<std::unique_ptr<PlatformRegistry>> registries;
    std::vector<ClientOptions> options(3, DistributedOptions());
    for (int p = 0; p < 3; ++p) registries.push_back(CpuRegistry());
    options[bad].cpu_devices = -1;
    testing::LoopbackHub hub(3);
    auto results = CreateOnEveryProcess(hub, options, registries);
    for (int p = 0; p < 3; ++p) {
      EXPECT_THAT(results[p], StatusIs(absl::StatusCode::kInvalidArgument,
                                       HasSubstr("cpu_devices must be >= 0, got -1")))
          << "process " << p << ", bad process " << bad;
      if (p != bad) {
        EXPECT_THAT(results[p].status().message(),
                    HasSubstr(absl::StrCat("CreateClient: process ", bad, " refused the call")));
      }
    }
  }
}

// A platform required on one host that it lacks: every process fails with its error.
TEST(LoopbackCreateClientTest, ARequiredPlatformMissingOnOneProcessFailsEveryProcess) {
  std::vector<std::unique_ptr<PlatformRegistry>> registries;
  registries.push_back(CpuRegistry());
  registries.push_back(CpuRegistry(RequiredFailingPlatform(absl::NotFoundError("no NPU here"))));
  testing::LoopbackHub hub(2);
  auto results =
      CreateOnEveryProcess(hub, {DistributedOptions(), DistributedOptions()}, registries);
  EXPECT_THAT(results[1], StatusIs(absl::StatusCode::kNotFound, "no NPU here"));
  EXPECT_THAT(results[0], StatusIs(absl::StatusCode::kNotFound,
                                   "CreateClient: process 1 refused the call: no NPU here"));
}

// TESSERA_MPI_TIMEOUT_S: a number of seconds >= 0; anything else is refused, naming the variable
// and the value (before, atof read "abc" and "-1" as "never" and "5 minutes" as 5 s).
TEST(LoopbackCreateClientTest, AMalformedMpiTimeoutIsRefused) {
  for (const char* bad : {"abc", "-1", "5 minutes", "inf", "nan", "-0", "1e999", "0x"}) {
    ScopedEnv env("TESSERA_MPI_TIMEOUT_S", bad);
    std::vector<std::unique_ptr<PlatformRegistry>> registries;
    registries.push_back(CpuRegistry());
    registries.push_back(CpuRegistry());
    testing::LoopbackHub hub(2);
    auto results =
        CreateOnEveryProcess(hub, {DistributedOptions(), DistributedOptions()}, registries);
    for (int p = 0; p < 2; ++p) {
      EXPECT_THAT(results[p],
                  StatusIs(absl::StatusCode::kInvalidArgument,
                           HasSubstr(absl::StrCat("TESSERA_MPI_TIMEOUT_S: invalid value \"", bad,
                                                  "\" (expected a number of seconds >= 0"))))
          << bad;
    }
  }
  for (const char* good : {"", "0", "2.5", "600", " 30 "}) {
    ScopedEnv env("TESSERA_MPI_TIMEOUT_S", good);
    std::vector<std::unique_ptr<PlatformRegistry>> registries;
    registries.push_back(CpuRegistry());
    testing::LoopbackHub hub(1);
    auto results = CreateOnEveryProcess(hub, {DistributedOptions()}, registries);
    EXPECT_TRUE(results[0].ok()) << "'" << good << "': " << results[0].status();
  }
}

// The timeout given to the transport factory is the variable's (the default when unset).
TEST(LoopbackCreateClientTest, TheTransportGetsTheTimeout) {
  PlatformRegistry registry;
  for (PlatformFactory& f : PlatformRegistry::Default().Factories()) {
    if (f.name == "cpu") {
      ASSERT_TRUE(registry.Register(std::move(f)).ok());
    }
  }
  testing::LoopbackHub hub(1);
  std::vector<double> given;
  auto make = [&](double timeout_s) {
    given.push_back(timeout_s);
    return absl::StatusOr<std::unique_ptr<Transport>>(hub.Transport(0));
  };
  {
    ScopedEnv env("TESSERA_MPI_TIMEOUT_S", "2.5");
    EXPECT_TRUE(CreateClientFromRegistry(registry, DistributedOptions(), make).ok());
  }
  {
    ScopedEnv env("TESSERA_MPI_TIMEOUT_S", "");
    EXPECT_TRUE(CreateClientFromRegistry(registry, DistributedOptions(), make).ok());
  }
  EXPECT_THAT(given, ::testing::ElementsAre(2.5, 600));
  // Not distributed: no transport, and the variable is not read.
  ScopedEnv env("TESSERA_MPI_TIMEOUT_S", "abc");
  ClientOptions local = DistributedOptions();
  local.distributed = Distributed::kNone;
  EXPECT_TRUE(CreateClientFromRegistry(registry, local, make).ok());
  EXPECT_EQ(given.size(), 2u);
}

}  // namespace
}  // namespace tessera
