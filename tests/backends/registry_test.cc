// Tests of the platform registry (backends/registry.h) and of CreateClient over it: the order in
// which platforms are created (device ids), what a failing platform does with each demand, and the
// registry's own checks. Fake platforms fail on purpose; platforms that succeed are real CPU
// platforms, so that the client built is a real one.

#include "backends/registry.h"

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "backends/client_factory.h"
#include "backends/cpu/cpu_platform.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace tessera {
namespace {

using ::tessera::testing::IsOk;
using ::tessera::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

std::vector<std::string> Names(const std::vector<PlatformFactory>& factories) {
  std::vector<std::string> names;
  for (const PlatformFactory& f : factories) names.push_back(f.name);
  return names;
}

// A factory whose platform, when demanded, fails with `error`; counts the attempts.
PlatformFactory FailingFactory(std::string name, int order, PlatformDemand demand,
                               absl::Status error, std::atomic<int>* attempts) {
  PlatformFactory f;
  f.name = name;
  f.display_name = name + " accelerator";
  f.order = order;
  f.demand = [demand](const ClientOptions&) { return demand; };
  f.create = [error, attempts](const ClientOptions&) -> absl::StatusOr<std::unique_ptr<Platform>> {
    ++*attempts;
    return error;
  };
  return f;
}

// The build's CPU factory, registered into `registry`.
void RegisterBuiltCpu(PlatformRegistry& registry) {
  for (PlatformFactory& f : PlatformRegistry::Default().Factories()) {
    if (f.name == "cpu") {
      ASSERT_THAT(registry.Register(std::move(f)), IsOk());
    }
  }
  ASSERT_TRUE(registry.Contains("cpu"));
}

TEST(PlatformRegistryTest, DefaultHoldsTheBuiltPlatformsCpuFirst) {
  const std::vector<std::string> names = Names(PlatformRegistry::Default().Factories());
  if (PlatformRegistry::Default().Contains("vulkan")) {
    EXPECT_THAT(names, ElementsAre("cpu", "vulkan"));
  } else {
    EXPECT_THAT(names, ElementsAre("cpu"));
  }
}

TEST(PlatformRegistryTest, FactoriesComeInAscendingOrderThenByName) {
  PlatformRegistry registry;
  std::atomic<int> attempts{0};
  const absl::Status error = absl::InternalError("unused");
  for (auto [name, order] : std::vector<std::pair<std::string, int>>{
           {"late", 300}, {"early", 10}, {"b_middle", 100}, {"a_middle", 100}}) {
    ASSERT_THAT(
        registry.Register(FailingFactory(name, order, PlatformDemand::kNone, error, &attempts)),
        IsOk());
  }
  EXPECT_THAT(Names(registry.Factories()), ElementsAre("early", "a_middle", "b_middle", "late"));
  EXPECT_TRUE(registry.Contains("late"));
  EXPECT_FALSE(registry.Contains("missing"));
}

TEST(PlatformRegistryTest, RejectsDuplicateAndIncompleteFactories) {
  PlatformRegistry registry;
  std::atomic<int> attempts{0};
  const absl::Status error = absl::InternalError("unused");
  ASSERT_THAT(registry.Register(FailingFactory("npu", 1, PlatformDemand::kNone, error, &attempts)),
              IsOk());
  EXPECT_THAT(registry.Register(FailingFactory("npu", 2, PlatformDemand::kNone, error, &attempts)),
              StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr("\"npu\"")));
  EXPECT_THAT(registry.Register(FailingFactory("", 2, PlatformDemand::kNone, error, &attempts)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("needs a name")));
  PlatformFactory no_create = FailingFactory("dsp", 2, PlatformDemand::kNone, error, &attempts);
  no_create.create = nullptr;
  EXPECT_THAT(registry.Register(std::move(no_create)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("\"dsp\" lacks")));
  EXPECT_THAT(Names(registry.Factories()), ElementsAre("npu"));
}

TEST(CreateClientFromRegistryTest, DeviceIdsFollowTheFactoriesOrder) {
  PlatformRegistry registry;
  RegisterBuiltCpu(registry);
  // A second CPU platform ordered before the built one, told apart by its threads per device.
  PlatformFactory first;
  first.name = "first";
  first.display_name = "First";
  first.order = 50;
  first.demand = [](const ClientOptions&) { return PlatformDemand::kRequired; };
  first.create = [](const ClientOptions&) {
    return CreateCpuPlatform({.num_devices = 1, .threads_per_device = 3});
  };
  ASSERT_THAT(registry.Register(std::move(first)), IsOk());

  absl::StatusOr<std::shared_ptr<Client>> client = CreateClientFromRegistry(
      registry, {.cpu_devices = 2, .cpu_threads_per_device = 1, .vulkan = VulkanMode::kOff});
  ASSERT_THAT(client, IsOk());
  ASSERT_EQ((*client)->devices().size(), 3u);
  std::vector<int64_t> threads;
  for (int id = 0; id < 3; ++id) {
    absl::StatusOr<Device*> device = (*client)->LookupDevice(DeviceId{id});
    ASSERT_THAT(device, IsOk());
    threads.push_back((*device)->Attributes().GetInt("threads").value_or(-1));
  }
  EXPECT_THAT(threads, ElementsAre(3, 1, 1));
}

TEST(CreateClientFromRegistryTest, RequiredPlatformFailureFailsTheCall) {
  PlatformRegistry registry;
  RegisterBuiltCpu(registry);
  std::atomic<int> attempts{0};
  ASSERT_THAT(
      registry.Register(FailingFactory("npu", 300, PlatformDemand::kRequired,
                                       absl::DataLossError("npu firmware missing"), &attempts)),
      IsOk());
  EXPECT_THAT(CreateClientFromRegistry(registry, {.cpu_devices = 2, .vulkan = VulkanMode::kOff}),
              StatusIs(absl::StatusCode::kDataLoss, "npu firmware missing"));
  EXPECT_EQ(attempts.load(), 1);
}

TEST(CreateClientFromRegistryTest, OptionalPlatformFailureIsLoggedOnceAndLeftOut) {
  PlatformRegistry registry;
  RegisterBuiltCpu(registry);
  std::atomic<int> attempts{0};
  ASSERT_THAT(registry.Register(FailingFactory("optional_npu", 300, PlatformDemand::kIfAvailable,
                                               absl::NotFoundError("no npu driver"), &attempts)),
              IsOk());
  const ClientOptions options{.cpu_devices = 2, .vulkan = VulkanMode::kOff};

  ::testing::internal::CaptureStderr();
  absl::StatusOr<std::shared_ptr<Client>> first = CreateClientFromRegistry(registry, options);
  const std::string first_log = ::testing::internal::GetCapturedStderr();
  ::testing::internal::CaptureStderr();
  absl::StatusOr<std::shared_ptr<Client>> second = CreateClientFromRegistry(registry, options);
  const std::string second_log = ::testing::internal::GetCapturedStderr();

  ASSERT_THAT(first, IsOk());
  ASSERT_THAT(second, IsOk());
  EXPECT_EQ((*first)->devices().size(), 2u);
  EXPECT_EQ((*second)->devices().size(), 2u);
  EXPECT_EQ(attempts.load(), 2);
  EXPECT_EQ(first_log, "tessera: no optional_npu accelerator devices: no npu driver\n");
  EXPECT_THAT(second_log, IsEmpty());
}

TEST(CreateClientFromRegistryTest, PlatformsNotDemandedAreNotCreated) {
  PlatformRegistry registry;
  RegisterBuiltCpu(registry);
  std::atomic<int> attempts{0};
  ASSERT_THAT(registry.Register(FailingFactory("idle_npu", 300, PlatformDemand::kNone,
                                               absl::InternalError("must not run"), &attempts)),
              IsOk());
  absl::StatusOr<std::shared_ptr<Client>> client =
      CreateClientFromRegistry(registry, {.cpu_devices = 1, .vulkan = VulkanMode::kOff});
  ASSERT_THAT(client, IsOk());
  EXPECT_EQ((*client)->devices().size(), 1u);
  EXPECT_EQ(attempts.load(), 0);
}

TEST(CreateClientFromRegistryTest, RequiredVulkanWithoutAVulkanPlatformIsUnavailable) {
  PlatformRegistry registry;  // as in a build without Vulkan
  RegisterBuiltCpu(registry);
  EXPECT_THAT(
      CreateClientFromRegistry(registry, {.cpu_devices = 1, .vulkan = VulkanMode::kRequired}),
      StatusIs(absl::StatusCode::kUnavailable, "this build of Tessera has no Vulkan platform"));
  // kIfAvailable goes on without it, silently.
  ::testing::internal::CaptureStderr();
  absl::StatusOr<std::shared_ptr<Client>> client =
      CreateClientFromRegistry(registry, {.cpu_devices = 1, .vulkan = VulkanMode::kIfAvailable});
  EXPECT_THAT(::testing::internal::GetCapturedStderr(), IsEmpty());
  ASSERT_THAT(client, IsOk());
  EXPECT_EQ((*client)->devices().size(), 1u);
}

TEST(CreateClientFromRegistryTest, InvalidOptions) {
  PlatformRegistry registry;
  RegisterBuiltCpu(registry);
  EXPECT_THAT(CreateClientFromRegistry(registry, {.cpu_devices = -1}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("cpu_devices must be >= 0")));
  EXPECT_THAT(CreateClientFromRegistry(registry, {.vulkan_logical_devices_per_gpu = 0}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("vulkan_logical_devices_per_gpu must be >= 1, got 0")));
  EXPECT_THAT(CreateClientFromRegistry(registry, {.cpu_devices = 0, .vulkan = VulkanMode::kOff}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no devices")));
  PlatformRegistry empty;
  EXPECT_THAT(CreateClientFromRegistry(empty, {.cpu_devices = 2}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no devices")));
}

// The default registry through CreateClient: CPU devices first, then Vulkan (lavapipe here; the
// test's environment points VK_DRIVER_FILES at one lavapipe manifest).
TEST(CreateClientTest, CpuDevicesComeBeforeVulkanDevices) {
  if (!PlatformRegistry::Default().Contains("vulkan")) {
    GTEST_SKIP() << "this build has no Vulkan platform";
  }
  absl::StatusOr<std::shared_ptr<Client>> client = CreateClient(
      {.cpu_devices = 2, .vulkan = VulkanMode::kRequired, .vulkan_logical_devices_per_gpu = 1});
  if (absl::IsNotFound(client.status())) GTEST_SKIP() << "no Vulkan driver: " << client.status();
  ASSERT_THAT(client, IsOk());
  std::vector<std::string> kinds;
  for (Device* device : (*client)->devices()) kinds.emplace_back(device->Kind());
  ASSERT_GE(kinds.size(), 3u);
  EXPECT_THAT(std::vector<std::string>(kinds.begin(), kinds.begin() + 3),
              ElementsAre("cpu", "cpu", "vulkan"));
  EXPECT_THAT(std::vector<std::string>(kinds.begin() + 2, kinds.end()),
              Not(::testing::Contains("cpu")));
}

TEST(CreateClientTest, RequiredVulkanInABuildWithoutVulkanIsUnavailable) {
  if (PlatformRegistry::Default().Contains("vulkan")) {
    GTEST_SKIP() << "this build has a Vulkan platform (-DTESSERA_ENABLE_VULKAN=OFF tests this)";
  }
  EXPECT_THAT(
      CreateClient({.cpu_devices = 1, .vulkan = VulkanMode::kRequired}),
      StatusIs(absl::StatusCode::kUnavailable, "this build of Tessera has no Vulkan platform"));
}

}  // namespace
}  // namespace tessera
