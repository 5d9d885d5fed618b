// tests/mpi/multi_process_test.cc: a client over every process of an mpirun job
// (Distributed::kMpi), run by ctest under `mpirun -np 2` and `-np 4 --oversubscribe`.
//
// Process p has 1 + (p + 1) % 3 CPU devices (2, 3, 1, 2, ...), so device counts differ between
// processes; built with TESSERA_MPI_TEST_VULKAN_ICDS (mpi_multi_process_vulkan_test), each process
// has one lavapipe device after them too, whose device memory is not host-addressable (the copies
// between processes are staged through host memory). Every process runs every test with the same
// seeds, so that their collective calls match; each process checks its addressable shards bit for
// bit against slices of the same host pattern. A failure on one process fails the job (mpirun's
// exit status).
//
// Programs (MultiProcessProgramTest) run on 2 devices of process 0 and 2 of process 1 (with Vulkan:
// the first CPU device and the Vulkan device of each), compiled and executed by every process.

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ifrt/introspection.h"
#include "tessera.h"
#include "tests/ifrt/test_util.h"
#include "tests/mpi/program_cases.h"
#include "tests/mpi/shard_checks.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/vulkan_icds.h"

namespace tessera {
namespace {

using testing::ExpectShards;
using ::testing::HasSubstr;
using testing::Pattern;
using testing::StatusIs;

#ifdef TESSERA_MPI_TEST_VULKAN_ICDS
constexpr int kVulkanDevices = 1;
#else
constexpr int kVulkanDevices = 0;
#endif

int CpuDevicesOf(int process) { return 1 + (process + 1) % 3; }
int DevicesOf(int process) { return CpuDevicesOf(process) + kVulkanDevices; }

int RankFromEnvironment() {
  const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
  return rank == nullptr ? 0 : std::atoi(rank);
}

std::shared_ptr<Client>* g_client = nullptr;

class MultiProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(g_client, nullptr);
    client_ = g_client->get();
  }

  DeviceListRef All() {
    std::vector<Device*> all(client_->devices().begin(), client_->devices().end());
    return *client_->MakeDeviceList(all);
  }

  // Tiles of `tile` over `devices` (their count must be the number of tiles).
  ShardingRef Tiles(const DeviceListRef& devices, const Shape& shape, std::vector<int64_t> tile) {
    absl::StatusOr<ShardingRef> s = ConcreteEvenSharding::Create(devices, {}, shape, Shape(tile));
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? *s : nullptr;
  }

  // Tiles of dimension `dim` of a rank-2 `shape` over as many of every device as even tiles take.
  ShardingRef Split(const Shape& shape, int dim) {
    const int n = static_cast<int>(client_->devices().size());
    const int64_t size = shape.dims()[dim];
    const int64_t step = (size + n - 1) / n;
    const int tiles = static_cast<int>((size + step - 1) / step);
    std::vector<Device*> devices(client_->devices().begin(), client_->devices().begin() + tiles);
    std::vector<int64_t> tile(shape.dims().begin(), shape.dims().end());
    tile[dim] = step;
    return Tiles(*client_->MakeDeviceList(devices), shape, tile);
  }

  Client* client_ = nullptr;
};

TEST_F(MultiProcessTest, DevicesAreGlobalAndTheSameOnEveryProcess) {
  const int n = client_->process_count();
  const int me = client_->process_index();
  int total = 0;
  for (int p = 0; p < n; ++p) total += DevicesOf(p);
  ASSERT_EQ(static_cast<int>(client_->devices().size()), total);
  int expected_process = 0, left = DevicesOf(0);
  for (int i = 0; i < total; ++i) {
    while (left == 0) left = DevicesOf(++expected_process);
    --left;
    Device* d = client_->devices()[i];
    EXPECT_EQ(d->Id().value, i);
    EXPECT_EQ(d->ProcessIndex(), expected_process) << d->DebugString();
    EXPECT_EQ(d->IsAddressable(), expected_process == me) << d->DebugString();
    EXPECT_EQ(d->Kind(), left < kVulkanDevices ? "vulkan" : "cpu") << d->DebugString();
    EXPECT_EQ(*client_->LookupDevice(DeviceId{i}), d);
  }
  ASSERT_EQ(static_cast<int>(client_->addressable_devices().size()), DevicesOf(me));
  for (Device* d : client_->addressable_devices()) EXPECT_EQ(d->ProcessIndex(), me);
}

TEST_F(MultiProcessTest, RowsToColumnsAcrossProcesses) {
  const Shape shape({61, 47});  // ragged tiles for every device count
  const DType f32(DType::kF32);
  const std::vector<uint8_t> full = Pattern(61 * 47 * 4, 7);
  DeviceListRef all = All();
  ShardingRef rows = Split(shape, 0);
  ShardingRef cols = Split(shape, 1);
  ASSERT_TRUE(rows && cols);
  absl::StatusOr<ArrayRef> a = testing::MakeArray(*client_, full, f32, shape, rows);
  ASSERT_TRUE(a.ok()) << a.status();
  ExpectShards(*a, full, "rows");
  const TransferStats before = client_->transfer_stats();
  std::vector<ArrayRef> in = {*a};
  absl::StatusOr<std::vector<ArrayRef>> out = client_->ReshardArrays(
      absl::MakeSpan(in), {ArraySpec{f32, shape, cols}}, ArrayCopySemantics::kAlwaysCopy);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_TRUE((*out)[0]->GetReadyFuture().Await().ok());
  ExpectShards((*out)[0], full, "columns");
  // Every process received bytes from another process's devices.
  EXPECT_GT(client_->transfer_stats().device_to_device.bytes, before.device_to_device.bytes);
}

TEST_F(MultiProcessTest, ReplicatedOverEveryProcess) {
  const Shape shape({13, 5});
  const DType s16(DType::kS16);
  const std::vector<uint8_t> full = Pattern(13 * 5 * 2, 11);
  DeviceListRef all = All();
  absl::StatusOr<ArrayRef> a = testing::MakeArray(*client_, full, s16, shape, Split(shape, 0));
  ASSERT_TRUE(a.ok()) << a.status();
  std::vector<ArrayRef> in = {*a};
  absl::StatusOr<std::vector<ArrayRef>> out = client_->ReshardArrays(
      absl::MakeSpan(in), {ArraySpec{s16, shape, testing::ReplicatedSharding(all, shape)}},
      ArrayCopySemantics::kReuseInput);
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectShards((*out)[0], full, "replicated");
  // This process's replica, on its own.
  absl::StatusOr<ArrayRef> one = (*out)[0]->FullyReplicatedShard(ArrayCopySemantics::kAlwaysCopy);
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_TRUE((*one)->sharding().devices()->devices()[0]->IsAddressable());
  EXPECT_EQ(*testing::ReadBack(*one), full);
  // The whole array is not readable here: the other processes' replicas are not addressable.
  std::vector<uint8_t> host(full.size());
  EXPECT_THAT((*out)[0]
                  ->CopyToHostBuffer(host.data(), std::nullopt, ArrayCopySemantics::kAlwaysCopy)
                  .Await(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("this process cannot read devices")));
}

TEST_F(MultiProcessTest, AssembleTakesTheAddressableShards) {
  const Shape shape({16, 4});
  const DType u8(DType::kU8);
  const std::vector<uint8_t> full = Pattern(64, 3);
  DeviceListRef all = All();
  ShardingRef rows = Split(shape, 0);
  absl::StatusOr<ArrayRef> a = testing::MakeArray(*client_, full, u8, shape, rows);
  ASSERT_TRUE(a.ok()) << a.status();
  absl::StatusOr<std::vector<ArrayRef>> parts =
      (*a)->DisassembleIntoSingleDeviceArrays(ArrayCopySemantics::kAlwaysCopy);
  ASSERT_TRUE(parts.ok()) << parts.status();
  size_t mine = 0;
  for (Device* d : rows->devices()->devices()) mine += d->IsAddressable() ? 1 : 0;
  EXPECT_EQ(parts->size(), mine);
  absl::StatusOr<ArrayRef> back = client_->AssembleArrayFromSingleDeviceArrays(
      u8, shape, rows, absl::MakeSpan(*parts), ArrayCopySemantics::kReuseInput);
  ASSERT_TRUE(back.ok()) << back.status();
  ExpectShards(*back, full, "assembled");
  // One array per device of the whole sharding is too many.
  ASSERT_FALSE(parts->empty());
  std::vector<ArrayRef> too_many(all->size(), (*parts)[0]);
  EXPECT_THAT(client_->AssembleArrayFromSingleDeviceArrays(
                  u8, shape, rows, absl::MakeSpan(too_many), ArrayCopySemantics::kReuseInput),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("addressable devices")));
}

// A random ConcreteEvenSharding (ragged tiles), replicated or single-device sharding over a
// random subset of every process's devices; the same on every process (same seed).
ShardingRef RandomSharding(Client& client, std::mt19937& rng, const Shape& shape) {
  std::vector<Device*> devices(client.devices().begin(), client.devices().end());
  std::shuffle(devices.begin(), devices.end(), rng);
  const int kind = static_cast<int>(rng() % 4);
  if (kind == 0) return SingleDeviceSharding::Create(devices[0], {});
  std::vector<int64_t> tile(shape.dims().begin(), shape.dims().end());
  int64_t tiles = 1;
  if (kind != 1) {
    for (int d = 0; d < shape.rank(); ++d) {
      const int64_t f = 1 + rng() % 3;
      if (shape.dims()[d] == 0 || tiles * f > static_cast<int64_t>(devices.size())) continue;
      tile[d] = (shape.dims()[d] + f - 1) / f;
      tiles *= (shape.dims()[d] + tile[d] - 1) / tile[d];
    }
  }
  if (kind == 1) tiles = 1 + rng() % devices.size();
  devices.resize(tiles);
  DeviceListRef list = *client.MakeDeviceList(devices);
  if (kind == 1) return testing::ReplicatedSharding(list, shape);
  absl::StatusOr<ShardingRef> s = ConcreteEvenSharding::Create(list, {}, shape, Shape(tile));
  EXPECT_TRUE(s.ok()) << s.status();
  return *s;
}

TEST_F(MultiProcessTest, RandomReshardChainsPreserveEveryShard) {
  const std::vector<DType> dtypes = {DType(DType::kS8), DType(DType::kF32), DType(DType::kS64),
                                     DType(DType::kBF16)};
  const std::vector<int64_t> sizes = {1, 2, 3, 5, 7, 13};
  for (uint32_t seed = 1; seed <= 12; ++seed) {
    std::mt19937 rng(seed);
    const DType dtype = dtypes[rng() % dtypes.size()];
    std::vector<int64_t> dims(1 + rng() % 3);
    for (int64_t& d : dims) d = sizes[rng() % sizes.size()];
    const Shape shape(dims);
    const std::vector<uint8_t> full = Pattern(shape.num_elements() * *dtype.byte_size(), seed);
    ShardingRef first = RandomSharding(*client_, rng, shape);
    absl::StatusOr<ArrayRef> a = testing::MakeArray(*client_, full, dtype, shape, first);
    ASSERT_TRUE(a.ok()) << a.status();
    ArrayRef current = *a;
    for (int step = 0; step < 6; ++step) {
      const std::string context = absl::StrCat("seed ", seed, " step ", step, " ",
                                               shape.DebugString(), " ", dtype.DebugString());
      ShardingRef target = RandomSharding(*client_, rng, shape);
      const auto semantics = static_cast<ArrayCopySemantics>(rng() % 3);
      std::vector<ArrayRef> in = {current};
      absl::StatusOr<std::vector<ArrayRef>> out =
          client_->ReshardArrays(absl::MakeSpan(in), {ArraySpec{dtype, shape, target}}, semantics);
      ASSERT_TRUE(out.ok()) << out.status() << " " << context;
      current = (*out)[0];
      ExpectShards(current, full, absl::StrCat(context, " -> ", target->DebugString()));
    }
  }
}

TEST_F(MultiProcessTest, CopyArraysMovesOntoAnotherProcessesDevices) {
  const int n = static_cast<int>(client_->devices().size());
  const Shape shape({10, 3});
  const DType f64(DType::kF64);
  const std::vector<uint8_t> full = Pattern(10 * 3 * 8, 21);
  // Two devices: the first and the last (on the first and the last process).
  DeviceListRef from = testing::DevicesAt(*client_, {0, 1});
  DeviceListRef to = testing::DevicesAt(*client_, {n - 1, n - 2});
  absl::StatusOr<ArrayRef> a =
      testing::MakeArray(*client_, full, f64, shape, Tiles(from, shape, {5, 3}));
  ASSERT_TRUE(a.ok()) << a.status();
  std::vector<ArrayRef> in = {*a};
  absl::StatusOr<std::vector<ArrayRef>> out =
      client_->CopyArrays(absl::MakeSpan(in), to, std::nullopt, ArrayCopySemantics::kAlwaysCopy);
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectShards((*out)[0], full, "copied");
}

TEST_F(MultiProcessTest, GuardRefusalOnOneProcessFailsEveryProcess) {
  const Shape shape({8, 8});
  const DType f32(DType::kF32);
  const std::vector<uint8_t> full = Pattern(256, 5);
  DeviceListRef all = All();
  absl::StatusOr<ArrayRef> a = testing::MakeArray(*client_, full, f32, shape, Split(shape, 0));
  ASSERT_TRUE(a.ok()) << a.status();
  std::vector<ArrayRef> in = {*a};
  const ArraySpec cols{f32, shape, Split(shape, 1)};
  absl::StatusOr<std::vector<ArrayRef>> out;
  {
    std::optional<guard::ScopedTransferGuard> scope;
    if (client_->process_index() == 1) {
      scope.emplace(guard::Direction::kDeviceToDevice, guard::Level::kDisallowExplicit);
    }
    out = client_->ReshardArrays(absl::MakeSpan(in), {cols}, ArrayCopySemantics::kDonateInput);
  }
  EXPECT_THAT(out, StatusIs(absl::StatusCode::kInvalidArgument,
                            HasSubstr("Disallowed device-to-device transfer")));
  if (client_->process_index() != 1) {
    EXPECT_THAT(out.status().message(), HasSubstr("process 1 refused the call"));
  }
  // The input is intact, and the next call works everywhere.
  ExpectShards(*a, full, "after the refusal");
  out = client_->ReshardArrays(absl::MakeSpan(in), {cols}, ArrayCopySemantics::kReuseInput);
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectShards((*out)[0], full, "after the refusal, resharded");
}

TEST_F(MultiProcessTest, DifferentArgumentsAreAnErrorOnEveryProcess) {
  const Shape shape({6, 6});
  const DType s32(DType::kS32);
  const std::vector<uint8_t> full = Pattern(144, 9);
  DeviceListRef all = All();
  absl::StatusOr<ArrayRef> a = testing::MakeArray(*client_, full, s32, shape, Split(shape, 0));
  ASSERT_TRUE(a.ok()) << a.status();
  std::vector<ArrayRef> in = {*a};
  // Process 1 asks for columns, the others for a replicated array.
  ShardingRef target =
      client_->process_index() == 1 ? Split(shape, 1) : testing::ReplicatedSharding(all, shape);
  EXPECT_THAT(client_->ReshardArrays(absl::MakeSpan(in), {ArraySpec{s32, shape, target}},
                                     ArrayCopySemantics::kAlwaysCopy),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("different arguments")));
  // An argument error on process 1 alone: its own error there, its message everywhere else.
  ShardingRef bad = client_->process_index() == 1 ? nullptr : target;
  EXPECT_THAT(client_->ReshardArrays(absl::MakeSpan(in), {ArraySpec{s32, shape, bad}},
                                     ArrayCopySemantics::kAlwaysCopy),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("specs[0].sharding is null")));
  // Everything still works.
  absl::StatusOr<std::vector<ArrayRef>> out = client_->ReshardArrays(
      absl::MakeSpan(in), {ArraySpec{s32, shape, testing::ReplicatedSharding(all, shape)}},
      ArrayCopySemantics::kAlwaysCopy);
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectShards((*out)[0], full, "after the mismatch");
}

// The identity plan cache (same Sharding objects: no geometry on a hit) does not skip the
// agreement: a mismatch between cached calls is still an error on every process.
TEST_F(MultiProcessTest, CachedPlansStillAgreeOnEveryCall) {
  const Shape shape({10, 6});
  const DType f32(DType::kF32);
  const std::vector<uint8_t> full = Pattern(240, 4);
  DeviceListRef all = All();
  absl::StatusOr<ArrayRef> a = testing::MakeArray(*client_, full, f32, shape, Split(shape, 0));
  ASSERT_TRUE(a.ok()) << a.status();
  std::vector<ArrayRef> in = {*a};
  const ShardingRef cols = Split(shape, 1);
  const ShardingRef repl = testing::ReplicatedSharding(all, shape);
  ASSERT_NE(client_->introspection(), nullptr);
  const int64_t hits_before = client_->introspection()->plan_cache_stats().hits;
  for (const ShardingRef& target : {cols, repl, cols, repl}) {  // the second round hits
    absl::StatusOr<std::vector<ArrayRef>> out = client_->ReshardArrays(
        absl::MakeSpan(in), {ArraySpec{f32, shape, target}}, ArrayCopySemantics::kAlwaysCopy);
    ASSERT_TRUE(out.ok()) << out.status();
    ExpectShards((*out)[0], full, target->DebugString());
  }
  EXPECT_GE(client_->introspection()->plan_cache_stats().hits, hits_before + 2);
  const ShardingRef mine = client_->process_index() == 1 ? cols : repl;
  EXPECT_THAT(client_->ReshardArrays(absl::MakeSpan(in), {ArraySpec{f32, shape, mine}},
                                     ArrayCopySemantics::kAlwaysCopy),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("different arguments")));
  absl::StatusOr<std::vector<ArrayRef>> out = client_->ReshardArrays(
      absl::MakeSpan(in), {ArraySpec{f32, shape, cols}}, ArrayCopySemantics::kAlwaysCopy);
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectShards((*out)[0], full, "after the cached mismatch");
}

TEST_F(MultiProcessTest, ReshardsFromTwoThreadsDoNotMixTheirMessages) {
  const Shape shape({33, 17});
  const DType f32(DType::kF32);
  DeviceListRef all = All();
  ShardingRef rows = Split(shape, 0);
  ShardingRef cols = Split(shape, 1);
  // Two threads take turns issuing calls (collective calls reach every process in one order),
  // without waiting for the data: all their copies are in flight together.
  constexpr int kCalls = 8;
  std::mutex mu;
  std::condition_variable cv;
  int turn = 0;
  std::vector<std::vector<uint8_t>> data(2 * kCalls);
  std::vector<ArrayRef> results(2 * kCalls);
  auto worker = [&](int who) {
    for (int c = 0; c < kCalls; ++c) {
      const int id = 2 * c + who;
      data[id] = Pattern(33 * 17 * 4, 100 + id);
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return turn == id; });
      absl::StatusOr<ArrayRef> a = testing::MakeArray(*client_, data[id], f32, shape, rows);
      ASSERT_TRUE(a.ok()) << a.status();
      std::vector<ArrayRef> in = {*a};
      absl::StatusOr<std::vector<ArrayRef>> out = client_->ReshardArrays(
          absl::MakeSpan(in), {ArraySpec{f32, shape, cols}}, ArrayCopySemantics::kDonateInput);
      ASSERT_TRUE(out.ok()) << out.status();
      results[id] = (*out)[0];
      ++turn;
      cv.notify_all();
    }
  };
  std::thread t0(worker, 0), t1(worker, 1);
  t0.join();
  t1.join();
  for (int id = 0; id < 2 * kCalls; ++id) {
    ASSERT_NE(results[id], nullptr);
    ExpectShards(results[id], data[id], absl::StrCat("call ", id));
  }
}

// Executables over 2 devices of process 0 and 2 of process 1 (mesh{x=4}); the other processes
// hold none of them and still call Compile and Execute (multi-controller).
class MultiProcessProgramTest : public MultiProcessTest {
 protected:
  void SetUp() override {
    MultiProcessTest::SetUp();
    // With a Vulkan device per process: the first CPU device and the Vulkan device of each (the
    // collectives stage Vulkan device memory through pinned_host before sending).
    std::vector<Device*> devices;
    int taken[2] = {0, 0};
    for (Device* d : client_->devices()) {
      const int p = d->ProcessIndex();
      const bool wanted = kVulkanDevices == 0 || taken[p] == 0 || d->Kind() == "vulkan";
      if (p < 2 && taken[p] < 2 && wanted) {
        ++taken[p];
        devices.push_back(d);
      }
    }
    devices_ = testing::MustDeviceList(*client_, devices);
  }

  absl::StatusOr<LoadedExecutableRef> Compile(const std::string& text,
                                              CompileOptions options = {}) {
    options.devices = devices_;
    return client_->GetDefaultCompiler()->Compile(std::make_unique<MlirProgram>(text), options);
  }

  // Makes f32 arrays over the executables' devices in a PartitionSpec of mesh{x=4}.
  auto Put() {
    return [this](const std::vector<float>& data, std::vector<int64_t> dims,
                  const std::string& spec) -> ArrayRef {
      absl::StatusOr<ArrayRef> a = client_->MakeArrayFromHostBuffer(
          data.data(), DType(DType::kF32), Shape(dims), std::nullopt,
          testing::Named("mesh{x=4}", spec, devices_),
          HostBufferSemantics::kImmutableOnlyDuringCall, nullptr);
      EXPECT_TRUE(a.ok()) << a.status();
      return a.ok() ? *a : nullptr;
    };
  }

  // The replicas or tiles a result has on this process.
  int LocalShards() const { return client_->process_index() < 2 ? 2 : 0; }

  DeviceListRef devices_;
};

// Compiles `text` or skips the test where the build has no program compiler (every process
// decides alike).
#define COMPILE_OR_SKIP(exe, ...)                                        \
  absl::StatusOr<LoadedExecutableRef> exe = Compile(__VA_ARGS__);        \
  if (absl::IsUnimplemented(exe.status())) GTEST_SKIP() << exe.status(); \
  ASSERT_TRUE(exe.ok()) << exe.status()

TEST_F(MultiProcessProgramTest, ExamplesAndCollectivesRunAcrossProcesses) {
  // The Megatron MLP: one all-reduce across the two processes.
  const testing::MegatronCase megatron;
  COMPILE_OR_SKIP(mlp2, testing::ReadExample("mlp2_megatron.mlir"));
  std::vector<ArrayRef> args = megatron.Arguments(Put());
  absl::StatusOr<ExecuteResult> result = (*mlp2)->Execute(absl::MakeSpan(args));
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_TRUE(result->status.Await().ok()) << result->status.Await();
  EXPECT_EQ(testing::ExpectShardsNear(result->outputs[0], megatron.Reference()), LocalShards());
  // The row-sharded MLP: no communication; x donated (its local shards).
  const testing::RowMlpCase rows;
  COMPILE_OR_SKIP(mlp, testing::ReadExample("mlp.mlir"),
                  CompileOptions{.donated_input_indices = {0}});
  args = rows.Arguments(Put());
  result = (*mlp)->Execute(absl::MakeSpan(args));
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_TRUE(result->status.Await().ok()) << result->status.Await();
  EXPECT_EQ(testing::ExpectShardsNear(result->outputs[0], rows.Reference()), LocalShards());
  EXPECT_TRUE(args[0]->IsDeleted());
  // all_to_all, then all_gather: bit-exact.
  const testing::AllToAllGatherCase gather;
  COMPILE_OR_SKIP(to_all, testing::kAllToAllGather);
  args = gather.Arguments(Put());
  result = (*to_all)->Execute(absl::MakeSpan(args));
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_TRUE(result->status.Await().ok()) << result->status.Await();
  ExpectShards(result->outputs[0], gather.Reference(), "a + b");
}

TEST_F(MultiProcessProgramTest, ARefusalOrMismatchOnOneProcessFailsEveryProcess) {
  const testing::MegatronCase data;
  COMPILE_OR_SKIP(exe, testing::ReadExample("mlp2_megatron.mlir"));
  std::vector<ArrayRef> args = data.Arguments(Put());
  {
    std::optional<guard::ScopedTransferGuard> scope;
    if (client_->process_index() == 1) {
      scope.emplace(guard::Direction::kDeviceToDevice, guard::Level::kDisallowExplicit);
    }
    absl::StatusOr<ExecuteResult> result = (*exe)->Execute(absl::MakeSpan(args));
    EXPECT_THAT(result, StatusIs(absl::StatusCode::kInvalidArgument,
                                 HasSubstr("Disallowed device-to-device transfer")));
    if (client_->process_index() != 1) {
      EXPECT_THAT(result.status().message(), HasSubstr("process 1 refused the call"));
    }
  }
  std::vector<ArrayRef> mismatched = args;
  if (client_->process_index() == 0) mismatched[1] = Put()(data.w1, {16, 32}, "P()");
  EXPECT_THAT((*exe)->Execute(absl::MakeSpan(mismatched)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("different arguments")));
  absl::StatusOr<ExecuteResult> result = (*exe)->Execute(absl::MakeSpan(args));
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_TRUE(result->status.Await().ok()) << result->status.Await();
  EXPECT_EQ(testing::ExpectShardsNear(result->outputs[0], data.Reference()), LocalShards());
}

TEST_F(MultiProcessProgramTest, ExecuteFromTwoThreadsPairsCallsByOrder) {
  COMPILE_OR_SKIP(exe, testing::kMegatron);
  constexpr int kCalls = 6;
  std::mutex mu;
  std::condition_variable cv;
  int turn = 0;
  std::vector<std::vector<float>> wants(2 * kCalls);
  std::vector<ExecuteResult> results(2 * kCalls);
  auto worker = [&](int who) {
    for (int c = 0; c < kCalls; ++c) {
      const int id = 2 * c + who;
      const std::vector<float> x = testing::Random(48, 40 + 3 * id),
                               w1 = testing::Random(192, 41 + 3 * id),
                               w2 = testing::Random(128, 42 + 3 * id);
      wants[id] = testing::MegatronReference(x, w1, w2);
      std::vector<ArrayRef> args = {Put()(x, {4, 12}, "P()"), Put()(w1, {12, 16}, "P(None,x)"),
                                    Put()(w2, {16, 8}, "P(x,None)")};
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return turn == id; });
      absl::StatusOr<ExecuteResult> result = (*exe)->Execute(absl::MakeSpan(args));
      EXPECT_TRUE(result.ok()) << result.status();
      if (result.ok()) results[id] = *std::move(result);
      ++turn;
      cv.notify_all();
    }
  };
  std::thread t0(worker, 0), t1(worker, 1);
  t0.join();
  t1.join();
  for (int id = 0; id < 2 * kCalls; ++id) {
    ASSERT_EQ(results[id].outputs.size(), 1u) << "call " << id;
    EXPECT_TRUE(results[id].status.Await().ok()) << "call " << id;
    EXPECT_EQ(testing::ExpectShardsNear(results[id].outputs[0], wants[id]), LocalShards())
        << "call " << id;
  }
}

// A local failure on one process at start-up (a bad option, a malformed TESSERA_TRANSFER_GUARD or
// TESSERA_MPI_TIMEOUT_S there alone) fails CreateClient on every process, with that process's
// message, at once: the processes join MPI, then agree on their local checks. (Before, the
// failing process returned at once and the others waited for it in MPI forever.)
TEST_F(MultiProcessTest, ALocalStartUpFailureOnOneProcessFailsCreateClientEverywhere) {
  const int n = client_->process_count();
  const int last = n - 1;
  const int me = client_->process_index();
  ClientOptions options{.cpu_devices = 1,
                        .cpu_threads_per_device = 1,
                        .vulkan = VulkanMode::kOff,
                        .transfer_guard = guard::Policy(),
                        .distributed = Distributed::kMpi};
  struct Case {
    const char* variable;  // set on process `last` alone (nullptr: a bad option there instead)
    const char* value;
    absl::StatusCode code;
    std::string message;
  };
  const Case cases[] = {
      {nullptr, nullptr, absl::StatusCode::kInvalidArgument, "cpu_devices must be >= 0, got -1"},
      {"TESSERA_TRANSFER_GUARD", "d2d=never", absl::StatusCode::kInvalidArgument,
       "TESSERA_TRANSFER_GUARD: invalid transfer guard policy"},
      {"TESSERA_MPI_TIMEOUT_S", "5 minutes", absl::StatusCode::kInvalidArgument,
       "TESSERA_MPI_TIMEOUT_S: invalid value \"5 minutes\""},
  };
  for (const Case& c : cases) {
    ClientOptions mine = options;
    std::optional<std::string> saved;
    if (me == last && c.variable == nullptr) mine.cpu_devices = -1;
    if (me == last && c.variable != nullptr) {
      if (const char* old = std::getenv(c.variable)) saved = old;
      setenv(c.variable, c.value, 1);
      if (std::string(c.variable) == "TESSERA_TRANSFER_GUARD") mine.transfer_guard.reset();
    }
    const auto start = std::chrono::steady_clock::now();
    absl::StatusOr<std::shared_ptr<Client>> other = CreateClient(mine);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (me == last && c.variable != nullptr) {
      if (saved.has_value()) {
        setenv(c.variable, saved->c_str(), 1);
      } else {
        unsetenv(c.variable);
      }
    }
    EXPECT_THAT(other, StatusIs(c.code, HasSubstr(c.message))) << "process " << me;
    if (me != last) {
      EXPECT_THAT(other.status().message(),
                  HasSubstr(absl::StrCat("CreateClient: process ", last, " refused the call")));
    }
    EXPECT_LT(seconds, 30) << "process " << me;
  }
  // And a client made after them works.
  absl::StatusOr<std::shared_ptr<Client>> again = CreateClient(options);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ((*again)->process_count(), n);
}

// Failure-model tests, run by ctest as separate jobs that must end with an error (WILL_FAIL, with a
// timeout that fails them if they hang instead). TESSERA_MPI_TEST_FAILURE selects the failure:
// "die": process 1 aborts while process 0 waits in a collective call; "skip": process 1 never
// makes the call (process 0's wait runs into TESSERA_MPI_TIMEOUT_S and aborts the job).
TEST_F(MultiProcessTest, AFailedProcessEndsTheJob) {
  const char* failure = std::getenv("TESSERA_MPI_TEST_FAILURE");
  if (failure == nullptr) GTEST_SKIP() << "run by ctest as mpi.failure_* (WILL_FAIL) only";
  ASSERT_GE(client_->process_count(), 2);
  const Shape shape({16, 4});
  const std::vector<uint8_t> full = Pattern(64, 1);
  absl::StatusOr<ArrayRef> a =
      testing::MakeArray(*client_, full, DType(DType::kU8), shape, Split(shape, 0));
  ASSERT_TRUE(a.ok()) << a.status();
  if (client_->process_index() == 1) {
    if (std::string(failure) == "die") std::abort();
    std::this_thread::sleep_for(std::chrono::seconds(600));  // "skip"
  }
  std::vector<ArrayRef> in = {*a};
  absl::StatusOr<std::vector<ArrayRef>> out = client_->ReshardArrays(
      absl::MakeSpan(in), {ArraySpec{DType(DType::kU8), shape, Split(shape, 1)}},
      ArrayCopySemantics::kAlwaysCopy);
  ADD_FAILURE() << "the job should have ended: " << out.status();
}

// What the other processes print instead of gtest's progress: their failures, named.
class FailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit FailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::fprintf(stderr, "[process %d] %s:%d: %s\n", rank_,
                 result.file_name() ? result.file_name() : "?", result.line_number(),
                 result.summary());
  }

 private:
  int rank_;
};

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const int rank = tessera::RankFromEnvironment();
#ifdef TESSERA_MPI_TEST_VULKAN_ICDS
  tessera::testing::SetVulkanIcdsIfUnset(TESSERA_MPI_TEST_VULKAN_ICDS);
#endif
  absl::StatusOr<std::shared_ptr<tessera::Client>> client =
      tessera::CreateClient({.cpu_devices = tessera::CpuDevicesOf(rank),
                             .cpu_threads_per_device = 1,
                             .vulkan = tessera::kVulkanDevices > 0 ? tessera::VulkanMode::kRequired
                                                                   : tessera::VulkanMode::kOff,
                             .transfer_guard = tessera::guard::Policy(),
                             .distributed = tessera::Distributed::kMpi});
  if (!client.ok()) {
    std::fprintf(stderr, "CreateClient: %s\n", std::string(client.status().message()).c_str());
    return 1;
  }
  if ((*client)->process_index() != rank) return 1;
  tessera::g_client = new std::shared_ptr<tessera::Client>(*std::move(client));
  // Only process 0 prints the progress of the tests.
  if (rank != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new tessera::FailurePrinter(rank));
  }
  const int result = RUN_ALL_TESTS();
  delete tessera::g_client;  // before MPI finalizes at exit
  return result;
}
