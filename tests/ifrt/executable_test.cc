// Programs through the public API (ifrt/compiler.h, ifrt/executable.h) on 4 devices of each
// topology: 4 CPU devices; 4 Vulkan devices (2 lavapipe devices, 2 logical devices each: SPIR-V
// kernels); 2 Vulkan + 2 CPU devices (each device runs its own platform's kernel, the
// communication crosses platforms). Results against reference loops, communication counted and
// guarded, arguments resharded as implicit transfers, donation, the compile cache, bad programs
// and bad arguments, concurrent Execute. The Vulkan topologies skip, saying why, only where no
// Vulkan driver exists at all.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "backends/vulkan/vulkan_platform.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "guard/recording_transfer_sink.h"
#include "ifrt/introspection.h"
#include "tessera.h"
#include "tests/ifrt/test_util.h"
#include "tests/testing/megatron_mlp.h"
#include "tests/testing/vulkan_icds.h"

namespace tessera {
namespace {

using ::tessera::testing::kMegatron;
using ::tessera::testing::MegatronReference;
using ::tessera::testing::Random;
using ::tessera::testing::StatusIs;
using ::testing::HasSubstr;

// y = x @ w with x rows-sharded, w replicated: no communication.
constexpr char kRowsMatmul[] = R"mlir(
func.func @main(%x: tensor<8x6xf32> {tessera.sharding = "mesh{x=4} P(x,None)"},
                %w: tensor<6x5xf32> {tessera.sharding = "mesh{x=4} P()"})
    -> (tensor<8x5xf32> {tessera.sharding = "mesh{x=4} P(x,None)"}) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x5xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<8x5xf32>) -> tensor<8x5xf32>
  %y = linalg.matmul ins(%x, %w : tensor<8x6xf32>, tensor<6x5xf32>)
                     outs(%acc : tensor<8x5xf32>) -> tensor<8x5xf32>
  return %y : tensor<8x5xf32>
}
)mlir";

// c[m,n] = a[m,k] @ b[k,n]
std::vector<float> MatMul(const std::vector<float>& a, const std::vector<float>& b, int m, int k,
                          int n) {
  std::vector<float> c(m * n, 0.0f);
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      double sum = 0;
      for (int p = 0; p < k; ++p) sum += static_cast<double>(a[i * k + p]) * b[p * n + j];
      c[i * n + j] = static_cast<float>(sum);
    }
  }
  return c;
}

void ExpectNear(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], 1e-4 * std::max(1.0f, std::abs(want[i]))) << "element " << i;
  }
}

// A client of 4 devices.
struct Topology {
  std::string name;
  int cpu_devices = 0;
  int vulkan_logical_devices_per_gpu = 0;  // 0: no Vulkan
};

std::vector<Topology> Topologies() {
  return {{"cpu4", 4, 0}, {"vulkan4", 0, 2}, {"vulkan2_cpu2", 2, 1}};
}

absl::StatusOr<std::shared_ptr<Client>> CreateTopologyClient(const Topology& t) {
  if (t.vulkan_logical_devices_per_gpu == 0) return testing::CreateCpuTestClient(t.cpu_devices);
  testing::SetVulkanIcdsIfUnset(TESSERA_EXECUTABLE_TEST_VULKAN_ICDS);
  return CreateClient({.cpu_devices = t.cpu_devices,
                       .cpu_threads_per_device = 1,
                       .vulkan = VulkanMode::kRequired,
                       .vulkan_logical_devices_per_gpu = t.vulkan_logical_devices_per_gpu,
                       .transfer_guard = guard::Policy()});
}

class ExecutableTest : public ::testing::TestWithParam<Topology> {
 protected:
  void SetUp() override {
    absl::StatusOr<std::shared_ptr<Client>> client = CreateTopologyClient(GetParam());
    if (absl::IsNotFound(client.status())) {
      GTEST_SKIP() << "no Vulkan driver: " << client.status();
    }
    ASSERT_OK(client.status());
    client_ = *std::move(client);
    ASSERT_GE(client_->devices().size(), 4u) << GetParam().name;
    ASSERT_OK_AND_ASSIGN(devices_, client_->MakeDeviceList(client_->devices().first(4)));
    validation_messages_ = VulkanValidationMessageCount();
  }
  // The Vulkan topologies run with the Khronos validation layer on (ctest's environment): any
  // message fails the test.
  void TearDown() override {
    EXPECT_EQ(VulkanValidationMessageCount(), validation_messages_) << "validation messages";
  }

  absl::StatusOr<LoadedExecutableRef> Compile(const std::string& text,
                                              CompileOptions options = {}) {
    if (options.devices == nullptr) options.devices = devices_;
    return client_->GetDefaultCompiler()->Compile(std::make_unique<MlirProgram>(text), options);
  }

  ShardingRef Named(const std::string& spec) {
    return *NamedSharding::Create(*sharding::Mesh::Parse("mesh{x=4}"),
                                  *sharding::PartitionSpec::Parse(spec), devices_, MemoryKind());
  }

  ArrayRef Put(const std::vector<float>& data, std::vector<int64_t> dims, ShardingRef sharding) {
    absl::StatusOr<ArrayRef> a = client_->MakeArrayFromHostBuffer(
        data.data(), DType(DType::kF32), Shape(dims), std::nullopt, std::move(sharding),
        HostBufferSemantics::kImmutableOnlyDuringCall, nullptr);
    EXPECT_OK(a.status());
    return *a;
  }

  std::vector<float> Get(const ArrayRef& a) {
    std::vector<float> out(a->shape().num_elements());
    EXPECT_OK(
        a->CopyToHostBuffer(out.data(), std::nullopt, ArrayCopySemantics::kAlwaysCopy).Await());
    return out;
  }

  std::shared_ptr<Client> client_;
  DeviceListRef devices_;
  int64_t validation_messages_ = 0;

 public:
  // For the helpers outside the fixture.
  absl::StatusOr<LoadedExecutableRef> CompileForTest(const std::string& text) {
    return Compile(text);
  }
  ShardingRef NamedForTest(const std::string& spec) { return Named(spec); }
  Client& client() { return *client_; }
};

TEST_P(ExecutableTest, RowShardedMatmulMatchesReferenceWithoutCommunication) {
  ASSERT_OK_AND_ASSIGN(LoadedExecutableRef exe, Compile(kRowsMatmul));
  EXPECT_EQ(exe->name(), "main");
  ASSERT_EQ(exe->GetParameterShardings().size(), 2u);
  EXPECT_EQ(*exe->GetParameterShardings()[0], *Named("P(x,None)"));
  EXPECT_EQ(*exe->GetOutputShardings()[0], *Named("P(x,None)"));
  const std::vector<float> x = Random(48, 1), w = Random(30, 2);
  std::vector<ArrayRef> args = {Put(x, {8, 6}, Named("P(x,None)")), Put(w, {6, 5}, Named("P()"))};
  const TransferStats before = client_->transfer_stats();
  ASSERT_OK_AND_ASSIGN(ExecuteResult result, exe->Execute(absl::MakeSpan(args)));
  ASSERT_OK(result.status.Await());
  ASSERT_EQ(result.outputs.size(), 1u);
  EXPECT_EQ(result.outputs[0]->shape(), Shape({8, 5}));
  ExpectNear(Get(result.outputs[0]), MatMul(x, w, 8, 6, 5));
  EXPECT_EQ(client_->transfer_stats().device_to_device, before.device_to_device);
  EXPECT_THAT(exe->Explain(), HasSubstr("none"));
}

TEST_P(ExecutableTest, MegatronAllReducesOnceAndCountsItsBytes) {
  ASSERT_OK_AND_ASSIGN(LoadedExecutableRef exe, Compile(kMegatron));
  EXPECT_THAT(exe->Explain(), HasSubstr("all_reduce"));
  const std::vector<float> x = Random(48, 3), w1 = Random(192, 4), w2 = Random(128, 5);
  std::vector<ArrayRef> args = {Put(x, {4, 12}, Named("P()")),
                                Put(w1, {12, 16}, Named("P(None,x)")),
                                Put(w2, {16, 8}, Named("P(x,None)"))};
  const TransferStats before = client_->transfer_stats();
  ASSERT_OK_AND_ASSIGN(ExecuteResult result, exe->Execute(absl::MakeSpan(args)));
  ASSERT_OK(result.status.Await());
  ExpectNear(Get(result.outputs[0]), MegatronReference(x, w1, w2));
  // An all-reduce of f32[4x8] (128 bytes) over 4 devices: each device reads a quarter from each
  // of its 3 peers to reduce, and gets a quarter from each (each peer's reduced range, which the
  // peer writes into every member's output): 2 * 128 / 4 per peer.
  EXPECT_EQ(client_->transfer_stats().device_to_device.bytes - before.device_to_device.bytes,
            4 * 3 * (2 * 128 / 4));
}

// On CPU devices (one host memory) the members of an all-reduce share its replicated result: one
// buffer, written once. Each shard reads as the whole result, and outlives the others. Where the
// group takes in a Vulkan device, every device has a buffer of its own.
TEST_P(ExecutableTest, AllReducedResultIsOneBufferWhereTheDevicesShareHostMemory) {
  ASSERT_OK_AND_ASSIGN(LoadedExecutableRef exe, Compile(kMegatron));
  const std::vector<float> x = Random(48, 13), w1 = Random(192, 14), w2 = Random(128, 15);
  std::vector<ArrayRef> args = {Put(x, {4, 12}, Named("P()")),
                                Put(w1, {12, 16}, Named("P(None,x)")),
                                Put(w2, {16, 8}, Named("P(x,None)"))};
  ASSERT_OK_AND_ASSIGN(ExecuteResult result, exe->Execute(absl::MakeSpan(args)));
  ASSERT_OK(result.status.Await());
  const std::vector<float> want = MegatronReference(x, w1, w2);
  ASSERT_OK_AND_ASSIGN(
      std::vector<ArrayRef> shards,
      result.outputs[0]->DisassembleIntoSingleDeviceArrays(ArrayCopySemantics::kReuseInput));
  ASSERT_EQ(shards.size(), 4u);
  std::vector<const void*> cpu_addresses;
  for (const ArrayRef& shard : shards) {
    absl::StatusOr<std::shared_ptr<void>> bytes = shard->AcquireExternalReference();
    if (absl::IsUnimplemented(bytes.status())) continue;  // a Vulkan device's memory
    ASSERT_OK(bytes.status());
    cpu_addresses.push_back(bytes->get());
  }
  const bool all_cpu = GetParam().vulkan_logical_devices_per_gpu == 0;
  ASSERT_EQ(cpu_addresses.size(), static_cast<size_t>(GetParam().cpu_devices));
  for (size_t i = 1; i < cpu_addresses.size(); ++i) {
    if (all_cpu) {
      EXPECT_EQ(cpu_addresses[i], cpu_addresses[0]) << "shard " << i;
    } else {
      EXPECT_NE(cpu_addresses[i], cpu_addresses[0]) << "shard " << i;
    }
  }
  // The shared buffer lives as long as any shard does: with the whole result and three shards
  // deleted, the last still reads as the result.
  ASSERT_OK(result.outputs[0]->Delete().Await());
  result.outputs.clear();
  for (int i = 0; i < 3; ++i) ASSERT_OK(shards[i]->Delete().Await());
  ExpectNear(Get(shards[3]), want);
}

TEST_P(ExecutableTest, MismatchedArgumentIsReshardedAsAnImplicitTransfer) {
  ASSERT_OK_AND_ASSIGN(LoadedExecutableRef exe, Compile(kRowsMatmul));
  const std::vector<float> x = Random(48, 6), w = Random(30, 7);
  // x arrives replicated; the program wants rows.
  std::vector<ArrayRef> args = {Put(x, {8, 6}, Named("P()")), Put(w, {6, 5}, Named("P()"))};
  auto sink = std::make_shared<guard::RecordingTransferSink>();
  client_->transfer_guard().AddSink(sink);
  client_->transfer_guard().SetPolicy(*guard::Policy::Parse("d2d=log"));
  ASSERT_OK_AND_ASSIGN(ExecuteResult result, exe->Execute(absl::MakeSpan(args)));
  ASSERT_OK(result.status.Await());
  ExpectNear(Get(result.outputs[0]), MatMul(x, w, 8, 6, 5));
  // Replicated -> rows is local on every device (each holds the rows it needs): nothing to log.
  EXPECT_TRUE(sink->records().empty());

  // Rows over the devices in reverse order must move: logged as implicit.
  ASSERT_OK_AND_ASSIGN(DeviceListRef reversed,
                       client_->MakeDeviceList({client_->devices()[3], client_->devices()[2],
                                                client_->devices()[1], client_->devices()[0]}));
  ShardingRef reversed_rows =
      *NamedSharding::Create(*sharding::Mesh::Parse("mesh{x=4}"),
                             *sharding::PartitionSpec::Parse("P(x,None)"), reversed, MemoryKind());
  std::vector<ArrayRef> moved = {Put(x, {8, 6}, reversed_rows), args[1]};
  ASSERT_OK_AND_ASSIGN(result, exe->Execute(absl::MakeSpan(moved)));
  ASSERT_OK(result.status.Await());
  ExpectNear(Get(result.outputs[0]), MatMul(x, w, 8, 6, 5));
  ASSERT_EQ(sink->records().size(), 1u);
  EXPECT_FALSE(sink->records()[0].event.is_explicit);
  EXPECT_EQ(sink->records()[0].event.direction, guard::Direction::kDeviceToDevice);

  // Under d2d=disallow the same call is refused before anything runs; the argument stays usable.
  client_->transfer_guard().SetPolicy(*guard::Policy::Parse("d2d=disallow"));
  const TransferStats before = client_->transfer_stats();
  EXPECT_THAT(exe->Execute(absl::MakeSpan(moved)).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Disallowed device-to-device transfer")));
  EXPECT_EQ(client_->transfer_stats(), before);
  EXPECT_FALSE(moved[0]->IsDeleted());
  ExpectNear(Get(moved[0]), x);
}

// A program on one device takes an array on that device as it is, whatever its sharding's class
// (a SingleDeviceSharding where the program has a one-device mesh, as a framework's buffers are):
// no reshard is even planned, nothing moves, a guard that disallows device-to-device lets it run.
// An array on another device still moves, as an implicit transfer the guard sees.
TEST_P(ExecutableTest, OneDeviceProgramTakesASingleDeviceArrayInPlace) {
  ASSERT_OK_AND_ASSIGN(DeviceListRef one, client_->MakeDeviceList(client_->devices().first(1)));
  CompileOptions options;
  options.devices = one;
  ASSERT_OK_AND_ASSIGN(
      LoadedExecutableRef exe,
      Compile(absl::StrReplaceAll(std::string(kRowsMatmul), {{"mesh{x=4}", "mesh{x=1}"}}),
              options));
  const std::vector<float> x = Random(48, 21), w = Random(30, 22);
  auto on = [&](Device* device) { return SingleDeviceSharding::Create(device, MemoryKind()); };
  std::vector<ArrayRef> args = {Put(x, {8, 6}, on(client_->devices()[0])),
                                Put(w, {6, 5}, on(client_->devices()[0]))};
  auto sink = std::make_shared<guard::RecordingTransferSink>();
  client_->transfer_guard().AddSink(sink);
  client_->transfer_guard().SetPolicy(*guard::Policy::Parse("d2d=disallow"));
  const TransferStats before = client_->transfer_stats();
  ClientIntrospection* inspect = client_->introspection();
  ASSERT_NE(inspect, nullptr);
  const PlanCacheStats plans_before = inspect->plan_cache_stats();
  ASSERT_OK_AND_ASSIGN(ExecuteResult result, exe->Execute(absl::MakeSpan(args)));
  ASSERT_OK(result.status.Await());
  EXPECT_EQ(client_->transfer_stats().device_to_device, before.device_to_device);
  EXPECT_TRUE(sink->records().empty());
  // Not even a reshard that moves nothing: no plan was looked up.
  EXPECT_EQ(inspect->plan_cache_stats().hits, plans_before.hits);
  EXPECT_EQ(inspect->plan_cache_stats().misses, plans_before.misses);
  client_->transfer_guard().SetPolicy(*guard::Policy::Parse("d2d=allow"));
  ExpectNear(Get(result.outputs[0]), MatMul(x, w, 8, 6, 5));
  EXPECT_EQ(result.outputs[0]->sharding().devices()->devices()[0], client_->devices()[0]);

  // On another device the same array must move: refused under d2d=disallow, nothing run.
  client_->transfer_guard().SetPolicy(*guard::Policy::Parse("d2d=disallow"));
  std::vector<ArrayRef> elsewhere = {Put(x, {8, 6}, on(client_->devices()[1])), args[1]};
  EXPECT_THAT(exe->Execute(absl::MakeSpan(elsewhere)).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Disallowed device-to-device transfer")));
  EXPECT_FALSE(elsewhere[0]->IsDeleted());
}

TEST_P(ExecutableTest, CommunicationIsAnExplicitTransferTheGuardSees) {
  ASSERT_OK_AND_ASSIGN(LoadedExecutableRef exe, Compile(kMegatron));
  std::vector<ArrayRef> args = {Put(Random(48, 1), {4, 12}, Named("P()")),
                                Put(Random(192, 2), {12, 16}, Named("P(None,x)")),
                                Put(Random(128, 3), {16, 8}, Named("P(x,None)"))};
  // `disallow` acts on implicit transfers only: the program's own all-reduce is explicit.
  client_->transfer_guard().SetPolicy(*guard::Policy::Parse("d2d=disallow"));
  ASSERT_OK_AND_ASSIGN(ExecuteResult ok, exe->Execute(absl::MakeSpan(args)));
  ASSERT_OK(ok.status.Await());

  auto sink = std::make_shared<guard::RecordingTransferSink>();
  client_->transfer_guard().AddSink(sink);
  client_->transfer_guard().SetPolicy(*guard::Policy::Parse("d2d=log_explicit"));
  ASSERT_OK_AND_ASSIGN(ExecuteResult logged, exe->Execute(absl::MakeSpan(args)));
  ASSERT_OK(logged.status.Await());
  ASSERT_EQ(sink->records().size(), 1u);
  EXPECT_TRUE(sink->records()[0].event.is_explicit);
  EXPECT_THAT(sink->records()[0].event.operation, HasSubstr("'main'"));
  EXPECT_THAT(sink->records()[0].event.operation, HasSubstr("all_reduce"));
  EXPECT_EQ(sink->records()[0].event.bytes, 4 * 3 * (2 * 128 / 4));

  client_->transfer_guard().SetPolicy(*guard::Policy::Parse("d2d=disallow_explicit"));
  const TransferStats before = client_->transfer_stats();
  EXPECT_THAT(exe->Execute(absl::MakeSpan(args)).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Disallowed device-to-device transfer: Execute of 'main'")));
  EXPECT_EQ(client_->transfer_stats(), before);
}

TEST_P(ExecutableTest, DonatedArgumentsAreDeletedUnlessNonDonatable) {
  CompileOptions options{.donated_input_indices = {0}};
  ASSERT_OK_AND_ASSIGN(LoadedExecutableRef exe, Compile(kRowsMatmul, options));
  const std::vector<float> x = Random(48, 8), w = Random(30, 9);
  std::vector<ArrayRef> args = {Put(x, {8, 6}, Named("P(x,None)")), Put(w, {6, 5}, Named("P()"))};
  ExecuteOptions keep;
  keep.non_donatable_input_indices.insert(0);
  ASSERT_OK_AND_ASSIGN(ExecuteResult kept, exe->Execute(absl::MakeSpan(args), keep));
  ASSERT_OK(kept.status.Await());
  EXPECT_FALSE(args[0]->IsDeleted());
  ASSERT_OK_AND_ASSIGN(ExecuteResult donated, exe->Execute(absl::MakeSpan(args)));
  ASSERT_OK(donated.status.Await());
  EXPECT_TRUE(args[0]->IsDeleted());
  EXPECT_FALSE(args[1]->IsDeleted());
  ExpectNear(Get(donated.outputs[0]), MatMul(x, w, 8, 6, 5));
  EXPECT_THAT(exe->Execute(absl::MakeSpan(args)).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("deleted")));
}

// z = x + y, shardings from the options.
constexpr char kAdd[] = R"mlir(
func.func @main(%x: tensor<8x4xf32>, %y: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %e = tensor.empty() : tensor<8x4xf32>
  %z = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>,
                                        affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x, %y : tensor<8x4xf32>, tensor<8x4xf32>) outs(%e : tensor<8x4xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<8x4xf32>
  return %z : tensor<8x4xf32>
}
)mlir";

// One array passed as a donated argument and again as another: refused (as PjRt and IFRT do),
// naming both indices, nothing deleted. Before, it was accepted and the array deleted.
TEST_P(ExecutableTest, ADonatedArgumentPassedTwiceIsRefused) {
  const std::vector<float> x = Random(32, 12);
  std::vector<float> twice(32);
  for (int i = 0; i < 32; ++i) twice[i] = x[i] + x[i];
  const CompileOptions shardings{.input_shardings = {Named("P(x,None)"), Named("P(x,None)")},
                                 .output_shardings = {Named("P(x,None)")}};
  for (int donated : {0, 1}) {
    CompileOptions options = shardings;
    options.donated_input_indices = {donated};
    ASSERT_OK_AND_ASSIGN(LoadedExecutableRef exe, Compile(kAdd, options));
    ArrayRef a = Put(x, {8, 4}, Named("P(x,None)"));
    std::vector<ArrayRef> args = {a, a};
    EXPECT_THAT(exe->Execute(absl::MakeSpan(args)).status(),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr(absl::StrCat("argument 0 and argument 1 of 'main' are the same "
                                                "array, and argument ",
                                                donated, " is donated"))));
    EXPECT_FALSE(a->IsDeleted());
    ExpectNear(Get(a), x);
    // Not donated by this call: the same array twice is fine.
    ExecuteOptions keep;
    keep.non_donatable_input_indices.insert(donated);
    ASSERT_OK_AND_ASSIGN(ExecuteResult kept, exe->Execute(absl::MakeSpan(args), keep));
    ASSERT_OK(kept.status.Await());
    ExpectNear(Get(kept.outputs[0]), twice);
    EXPECT_FALSE(a->IsDeleted());
    // Two arrays: the donated one goes.
    std::vector<ArrayRef> two = {a, Put(x, {8, 4}, Named("P(x,None)"))};
    ASSERT_OK_AND_ASSIGN(ExecuteResult ran, exe->Execute(absl::MakeSpan(two)));
    ASSERT_OK(ran.status.Await());
    ExpectNear(Get(ran.outputs[0]), twice);
    EXPECT_TRUE(two[donated]->IsDeleted());
    EXPECT_FALSE(two[1 - donated]->IsDeleted());
  }
  // Undonated programs take the same array twice.
  ASSERT_OK_AND_ASSIGN(LoadedExecutableRef plain, Compile(kAdd, shardings));
  ArrayRef a = Put(x, {8, 4}, Named("P(x,None)"));
  std::vector<ArrayRef> args = {a, a};
  ASSERT_OK_AND_ASSIGN(ExecuteResult ran, plain->Execute(absl::MakeSpan(args)));
  ASSERT_OK(ran.status.Await());
  ExpectNear(Get(ran.outputs[0]), twice);
}

// A ShardingParamSharding in the options is the NamedSharding that places every tile alike: the
// same program compiled with either gives the same result, shard by shard on the same devices.
TEST_P(ExecutableTest, ShardingParamShardingsCompileAsTheirNamedSharding) {
  const std::vector<float> x = Random(32, 13), y = Random(32, 14);
  std::vector<float> sum(32);
  for (int i = 0; i < 32; ++i) sum[i] = x[i] + y[i];
  auto param = [&](const std::string& text) {
    return *ShardingParamSharding::Create(*sharding::ShardingParam::Parse(text), devices_,
                                          MemoryKind());
  };
  auto named = [&](const std::string& mesh, const std::string& spec) {
    return *NamedSharding::Create(*sharding::Mesh::Parse(mesh),
                                  *sharding::PartitionSpec::Parse(spec), devices_, MemoryKind());
  };
  // (ShardingParam, the equivalent NamedSharding)
  const std::vector<std::pair<ShardingRef, ShardingRef>> pairs = {
      {param("4x1 to [0] on 4"), named("mesh{x=4}", "P(x,None)")},
      {param("2x2 to [0,1] on 2x2"), named("mesh{a=2,b=2}", "P(a,b)")},
      {param("4x1 to [1,0] on 2x2"), named("mesh{a=2,b=2}", "P((b,a),None)")},
      {param("2x1 to [0] on 4"), named("mesh{a=2,b=2}", "P(a,None)")},
  };
  for (const auto& [as_param, as_named] : pairs) {
    SCOPED_TRACE(as_param->DebugString());
    ASSERT_OK_AND_ASSIGN(
        LoadedExecutableRef by_param,
        Compile(kAdd, {.input_shardings = {as_param, as_param}, .output_shardings = {as_param}}));
    ASSERT_OK_AND_ASSIGN(
        LoadedExecutableRef by_named,
        Compile(kAdd, {.input_shardings = {as_named, as_named}, .output_shardings = {as_named}}));
    EXPECT_EQ(*by_param->GetParameterShardings()[0], *as_param);
    std::vector<ArrayRef> args = {Put(x, {8, 4}, as_param), Put(y, {8, 4}, as_param)};
    ASSERT_OK_AND_ASSIGN(ExecuteResult p, by_param->Execute(absl::MakeSpan(args)));
    ASSERT_OK(p.status.Await());
    std::vector<ArrayRef> named_args = {Put(x, {8, 4}, as_named), Put(y, {8, 4}, as_named)};
    ASSERT_OK_AND_ASSIGN(ExecuteResult n, by_named->Execute(absl::MakeSpan(named_args)));
    ASSERT_OK(n.status.Await());
    ExpectNear(Get(p.outputs[0]), sum);
    EXPECT_EQ(Get(p.outputs[0]), Get(n.outputs[0]));
    EXPECT_EQ(*p.outputs[0]->shared_ptr_sharding(), *as_param);
    ASSERT_OK_AND_ASSIGN(
        std::vector<ArrayRef> p_shards,
        p.outputs[0]->DisassembleIntoSingleDeviceArrays(ArrayCopySemantics::kReuseInput));
    ASSERT_OK_AND_ASSIGN(
        std::vector<ArrayRef> n_shards,
        n.outputs[0]->DisassembleIntoSingleDeviceArrays(ArrayCopySemantics::kReuseInput));
    ASSERT_EQ(p_shards.size(), n_shards.size());
    for (size_t i = 0; i < p_shards.size(); ++i) {
      EXPECT_EQ(p_shards[i]->sharding().devices()->devices()[0],
                n_shards[i]->sharding().devices()->devices()[0]);
      EXPECT_EQ(p_shards[i]->shape(), n_shards[i]->shape());
      EXPECT_EQ(Get(p_shards[i]), Get(n_shards[i])) << "shard " << i;
    }
  }
  // Beside a NamedSharding: on its mesh, where the param's tiles are whole axes of it.
  ASSERT_OK_AND_ASSIGN(
      LoadedExecutableRef mixed,
      Compile(kAdd, {.input_shardings = {named("mesh{x=4}", "P(x,None)"), param("4x1 to [0] on 4")},
                     .output_shardings = {param("1x1 to [0] on 4")}}));
  std::vector<ArrayRef> args = {Put(x, {8, 4}, Named("P(x,None)")), Put(y, {8, 4}, Named("P()"))};
  ASSERT_OK_AND_ASSIGN(ExecuteResult m, mixed->Execute(absl::MakeSpan(args)));
  ASSERT_OK(m.status.Await());
  ExpectNear(Get(m.outputs[0]), sum);
  EXPECT_THAT(
      Compile(kAdd, {.input_shardings = {named("mesh{x=4}", "P(x,None)"), param("2x1 to [0] on 4")},
                     .output_shardings = {Named("P()")}})
          .status(),
      StatusIs(absl::StatusCode::kUnimplemented,
               HasSubstr("input_shardings[1] ShardingParamSharding(2x1 to [0] on 4")));
}

TEST_P(ExecutableTest, SecondCompileIsACacheHit) {
  ClientIntrospection* inspect = client_->introspection();
  ASSERT_NE(inspect, nullptr);
  const PlanCacheStats before = inspect->program_cache_stats();
  ASSERT_OK_AND_ASSIGN(LoadedExecutableRef first, Compile(kRowsMatmul));
  ASSERT_OK_AND_ASSIGN(LoadedExecutableRef second, Compile(kRowsMatmul));
  const PlanCacheStats after = inspect->program_cache_stats();
  EXPECT_EQ(after.misses - before.misses, 1);
  EXPECT_EQ(after.hits - before.hits, 1);
  EXPECT_EQ(first->Fingerprint(), second->Fingerprint());
  // Deleting one executable leaves the other usable.
  static_cast<void>(first->Delete());
  EXPECT_TRUE(first->IsDeleted());
  EXPECT_FALSE(second->IsDeleted());
  // Other options: another fingerprint.
  ASSERT_OK_AND_ASSIGN(LoadedExecutableRef donating,
                       Compile(kRowsMatmul, CompileOptions{.donated_input_indices = {1}}));
  EXPECT_NE(donating->Fingerprint(), first->Fingerprint());
}

TEST_P(ExecutableTest, OptionsGiveTheShardingsInsteadOfAttributes) {
  std::string plain =
      absl::StrReplaceAll(kRowsMatmul, {{R"t( {tessera.sharding = "mesh{x=4} P(x,None)"})t", ""},
                                        {R"t( {tessera.sharding = "mesh{x=4} P()"})t", ""}});
  plain = absl::StrReplaceAll(plain, {{"-> (tensor<8x5xf32>)", "-> tensor<8x5xf32>"}});
  ASSERT_EQ(plain.find("tessera.sharding"), std::string::npos) << plain;
  // Neither options nor attributes.
  EXPECT_THAT(Compile(plain).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no shardings")));
  CompileOptions options{.input_shardings = {Named("P(None,x)"), Named("P()")},
                         .output_shardings = {Named("P()")}};
  // Columns of x over 4 devices: 6 does not split in 4.
  EXPECT_THAT(Compile(plain, options).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("divide")));
  options.input_shardings = {Named("P()"), Named("P(None,x)")};
  options.output_shardings = {Named("P(None,x)")};
  // Columns of w: 5 does not split in 4 either; rows of x then.
  EXPECT_THAT(Compile(plain, options).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("divide")));
  options.input_shardings = {Named("P(x,None)"), Named("P()")};
  options.output_shardings = {Named("P()")};
  ASSERT_OK_AND_ASSIGN(LoadedExecutableRef exe, Compile(plain, options));
  const std::vector<float> x = Random(48, 10), w = Random(30, 11);
  std::vector<ArrayRef> args = {Put(x, {8, 6}, Named("P(x,None)")), Put(w, {6, 5}, Named("P()"))};
  ASSERT_OK_AND_ASSIGN(ExecuteResult result, exe->Execute(absl::MakeSpan(args)));
  ASSERT_OK(result.status.Await());
  EXPECT_EQ(*result.outputs[0]->shared_ptr_sharding(), *Named("P()"));
  ExpectNear(Get(result.outputs[0]), MatMul(x, w, 8, 6, 5));
}

TEST_P(ExecutableTest, BadProgramsAreClearErrors) {
  EXPECT_THAT(Compile("func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n  return %y\n}"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("2:")));
  const std::string unsupported = R"mlir(
func.func @main(%x: tensor<8xf32> {tessera.sharding = "mesh{x=4} P(x)"}) -> tensor<8xf32> {
  %c = arith.constant 1 : index
  %d = tensor.dim %x, %c : tensor<8xf32>
  return %x : tensor<8xf32>
}
)mlir";
  EXPECT_THAT(Compile(unsupported),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("tensor.dim")));
  EXPECT_THAT(client_->GetDefaultCompiler()->Compile(std::make_unique<MlirProgram>(kRowsMatmul),
                                                     CompileOptions{}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("devices")));
  EXPECT_THAT(Compile(kRowsMatmul, CompileOptions{.donated_input_indices = {2}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("donated_input_indices")));
}

TEST_P(ExecutableTest, BadArgumentsAreRejectedBeforeAnythingRuns) {
  ASSERT_OK_AND_ASSIGN(LoadedExecutableRef exe, Compile(kRowsMatmul));
  std::vector<ArrayRef> one = {Put(Random(48, 1), {8, 6}, Named("P(x,None)"))};
  EXPECT_THAT(exe->Execute(absl::MakeSpan(one)).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("takes 2 arguments, got 1")));
  std::vector<ArrayRef> wrong_shape = {Put(Random(48, 1), {6, 8}, Named("P(x,None)")),
                                       Put(Random(30, 2), {6, 5}, Named("P()"))};
  EXPECT_THAT(exe->Execute(absl::MakeSpan(wrong_shape)).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("argument 0")));
  std::vector<int32_t> ints(48);
  ASSERT_OK_AND_ASSIGN(
      ArrayRef int_array,
      client_->MakeArrayFromHostBuffer(ints.data(), DType(DType::kS32), Shape({8, 6}), std::nullopt,
                                       Named("P(x,None)"),
                                       HostBufferSemantics::kImmutableOnlyDuringCall, nullptr));
  std::vector<ArrayRef> wrong_dtype = {int_array, wrong_shape[1]};
  EXPECT_THAT(exe->Execute(absl::MakeSpan(wrong_dtype)).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("s32")));
  ASSERT_OK_AND_ASSIGN(DeviceListRef two, client_->MakeDeviceList(client_->devices().first(2)));
  std::vector<ArrayRef> good = {Put(Random(48, 1), {8, 6}, Named("P(x,None)")),
                                Put(Random(30, 2), {6, 5}, Named("P()"))};
  EXPECT_THAT(exe->Execute(absl::MakeSpan(good), {}, two).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("devices")));
  static_cast<void>(exe->Delete());
  EXPECT_THAT(exe->Execute(absl::MakeSpan(good)).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("deleted")));
}

TEST_P(ExecutableTest, ExecuteFromEightThreadsAtOnce) {
  ASSERT_OK_AND_ASSIGN(LoadedExecutableRef exe, Compile(kMegatron));
  const std::vector<float> x = Random(48, 3), w1 = Random(192, 4), w2 = Random(128, 5);
  const std::vector<float> want = MegatronReference(x, w1, w2);
  std::vector<ArrayRef> args = {Put(x, {4, 12}, Named("P()")),
                                Put(w1, {12, 16}, Named("P(None,x)")),
                                Put(w2, {16, 8}, Named("P(x,None)"))};
  std::vector<std::thread> threads;
  std::vector<std::vector<float>> results(8);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < 10; ++r) {
        std::vector<ArrayRef> mine = args;
        absl::StatusOr<ExecuteResult> result = exe->Execute(absl::MakeSpan(mine));
        ASSERT_OK(result.status());
        ASSERT_OK(result->status.Await());
        results[t] = Get(result->outputs[0]);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const auto& r : results) ExpectNear(r, want);
}

// `combiner` over dimension 0 of a 4xN `element` array sharded along it (one row per device: the
// reduction is an all-reduce across all four), from a fill of `init`.
std::string ReduceRowsProgram(const std::string& combiner, const std::string& element, int n,
                              const std::string& init) {
  const std::string in = absl::StrCat("tensor<4x", n, "x", element, ">");
  const std::string out = absl::StrCat("tensor<", n, "x", element, ">");
  return absl::StrCat("func.func @main(%x: ", in, " {tessera.sharding = \"mesh{x=4} P(x)\"}) -> (",
                      out, " {tessera.sharding = \"mesh{x=4} P()\"}) {\n  %init = arith.constant ",
                      init, " : ", element, "\n  %e = tensor.empty() : ", out,
                      "\n  %f = linalg.fill ins(%init : ", element, ") outs(%e : ", out, ") -> ",
                      out, "\n  %r = linalg.reduce ins(%x : ", in, ") outs(%f : ", out,
                      ") dimensions = [0]\n    (%in: ", element, ", %acc: ", element,
                      ") {\n      %s = ", combiner, " %in, %acc : ", element,
                      "\n      linalg.yield %s : ", element, "\n    }\n  return %r : ", out, "\n}");
}

// Runs a ReduceRowsProgram on `rows` (4 x n, row-major, `dtype`) and returns the result's bytes.
template <typename T>
std::vector<T> RunReduceRows(ExecutableTest& t, const std::string& program, DType dtype,
                             const std::vector<T>& rows) {
  absl::StatusOr<LoadedExecutableRef> exe = t.CompileForTest(program);
  EXPECT_OK(exe.status());
  if (!exe.ok()) return {};
  const int64_t n = static_cast<int64_t>(rows.size()) / 4;
  std::vector<uint8_t> bytes(rows.size() * sizeof(T));
  std::memcpy(bytes.data(), rows.data(), bytes.size());
  absl::StatusOr<ArrayRef> x =
      testing::MakeArray(t.client(), bytes, dtype, Shape({4, n}), t.NamedForTest("P(x)"));
  EXPECT_OK(x.status());
  if (!x.ok()) return {};
  std::vector<ArrayRef> args = {*x};
  absl::StatusOr<ExecuteResult> result = (*exe)->Execute(absl::MakeSpan(args));
  EXPECT_OK(result.status());
  if (!result.ok()) return {};
  EXPECT_OK(result->status.Await());
  absl::StatusOr<std::vector<uint8_t>> back = testing::ReadBack(result->outputs[0]);
  EXPECT_OK(back.status());
  if (!back.ok()) return {};
  std::vector<T> values(n);
  std::memcpy(values.data(), back->data(), back->size());
  return values;
}

// Sharded integer reductions combine as their combiner says: andi is an AND (not a sum), maxui /
// minui compare unsigned (not signed), on every topology (the all-reduce spans CPU and Vulkan
// devices in the mixed one).
TEST_P(ExecutableTest, ShardedIntegerReductionsCombineAsTheirCombiner) {
  const int32_t kMin = std::numeric_limits<int32_t>::min();
  // Columns: the issue's 1 & 2 & -4 & 8; signs that differ; INT_MIN; zero and all ones.
  const std::vector<int32_t> rows = {1,  -1, kMin, 0,  7,  //
                                     2,  5,  0,    -1, 7,  //
                                     -4, 7,  -1,   0,  3,  //
                                     8,  3,  1,    -1, 6};
  struct Case {
    std::string combiner, init;
    std::function<int32_t(int32_t, int32_t)> fn;
  };
  using U = uint32_t;
  const std::vector<Case> cases = {
      {"arith.andi", "-1", [](int32_t a, int32_t b) { return a & b; }},
      {"arith.ori", "0", [](int32_t a, int32_t b) { return a | b; }},
      {"arith.xori", "0", [](int32_t a, int32_t b) { return a ^ b; }},
      {"arith.maxui", "0", [](int32_t a, int32_t b) { return U(a) > U(b) ? a : b; }},
      {"arith.minui", "-1", [](int32_t a, int32_t b) { return U(a) < U(b) ? a : b; }},
      {"arith.maxsi", "-2147483648", [](int32_t a, int32_t b) { return std::max(a, b); }},
      {"arith.minsi", "2147483647", [](int32_t a, int32_t b) { return std::min(a, b); }},
      {"arith.addi", "0", [](int32_t a, int32_t b) { return static_cast<int32_t>(U(a) + U(b)); }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.combiner);
    std::vector<int32_t> want(5);
    for (int j = 0; j < 5; ++j) {
      int32_t acc = static_cast<int32_t>(std::stoll(c.init));
      for (int i = 0; i < 4; ++i) acc = c.fn(rows[i * 5 + j], acc);
      want[j] = acc;
    }
    EXPECT_EQ(RunReduceRows(*this, ReduceRowsProgram(c.combiner, "i32", 5, c.init),
                            DType(DType::kS32), rows),
              want);
  }
}

// The bits of a float max / min, NaN as one value (its payload and sign are not compared).
std::vector<uint32_t> FloatClasses(const std::vector<float>& v) {
  std::vector<uint32_t> bits;
  for (float f : v) bits.push_back(std::isnan(f) ? 0x7fc00000u : std::bit_cast<uint32_t>(f));
  return bits;
}

// Sharded float max / min equal the one-device definition on every topology: maximumf / minimumf
// propagate a NaN from any device (also a later one), maxnumf / minnumf ignore NaN, and both order
// -0 < +0 (lavapipe's own max / min do not, inside one device either).
TEST_P(ExecutableTest, ShardedFloatMaxMinKeepNaNAndOrderSignedZeros) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // Columns: NaN on the last device; NaN on the first; -0 then +0; +0 then -0; -0 everywhere;
  // NaN everywhere; ordinary numbers.
  const std::vector<float> rows = {1.0f, nan,  -0.0f, 0.0f,  -0.0f, nan, -3.0f,  //
                                   2.0f, 1.0f, -0.0f, -0.0f, -0.0f, nan, 5.0f,   //
                                   0.5f, 1.5f, 0.0f,  -0.0f, -0.0f, nan, -7.0f,  //
                                   nan,  2.5f, -0.0f, -0.0f, -0.0f, nan, 4.0f};
  struct Case {
    std::string combiner, init;
    bool max, num;
  };
  const std::vector<Case> cases = {{"arith.maximumf", "0xFF800000", true, false},
                                   {"arith.minimumf", "0x7F800000", false, false},
                                   {"arith.maxnumf", "0x7FC00000", true, true},
                                   {"arith.minnumf", "0x7FC00000", false, true}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.combiner);
    auto combine = [&](float a, float b) {
      if (c.max ? a > b : a < b) return a;
      if (c.max ? b > a : b < a) return b;
      const uint32_t x = std::bit_cast<uint32_t>(a), y = std::bit_cast<uint32_t>(b);
      if (a == b) return std::bit_cast<float>(c.max ? x & y : x | y);
      return std::isnan(a) == c.num ? b : a;
    };
    std::vector<float> want(7);
    for (int j = 0; j < 7; ++j) {
      float acc = std::bit_cast<float>(static_cast<uint32_t>(std::stoul(c.init, nullptr, 16)));
      for (int i = 0; i < 4; ++i) acc = combine(rows[i * 7 + j], acc);
      want[j] = acc;
    }
    EXPECT_EQ(FloatClasses(RunReduceRows(*this, ReduceRowsProgram(c.combiner, "f32", 7, c.init),
                                         DType(DType::kF32), rows)),
              FloatClasses(want));
  }
}

INSTANTIATE_TEST_SUITE_P(Topologies, ExecutableTest, ::testing::ValuesIn(Topologies()),
                         [](const ::testing::TestParamInfo<Topology>& info) {
                           return info.param.name;
                         });

}  // namespace
}  // namespace tessera
