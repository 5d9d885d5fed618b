// tests/mpi/loopback_program_test.cc: executables over the devices of several processes
// (runtime_executable.h, program_messages.h), with the processes as threads of one test process
// joined by the loopback transport: the examples' Megatron MLP (one all-reduce across processes)
// and row-sharded MLP, an all_to_all + all_gather program, an all_slice one (no messages),
// reductions whose all-reduce between processes must and / compare unsigned / keep a NaN, an
// executable on one process's devices (local: compiled and run by that process alone), guard
// refusals and mismatched arguments on one process failing Execute on every process, a Compile
// failing on one process failing it on every process, concurrent Execute, and failures
// (a kernel, a receive, an allocation) that fail every process's Execute and hang none.
//
// Each process has 2 CPU devices; the executables run on the first 4 devices (processes 0 and
// 1); a third process, where there is one, holds none of them and still takes part.

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/default_program_compiler.h"
#include "backends/registry.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ifrt/runtime/runtime_client.h"
#include "tessera.h"
#include "tests/ifrt/faulty_platform.h"
#include "tests/ifrt/test_util.h"
#include "tests/mpi/loopback_transport.h"
#include "tests/mpi/program_cases.h"
#include "tests/mpi/shard_checks.h"
#include "tests/testing/megatron_mlp.h"
#include "tests/testing/status_matchers.h"

namespace tessera {
namespace {

using testing::ExpectShards;
using testing::ExpectShardsNear;
using ::testing::HasSubstr;
using testing::LoopbackFault;
using testing::LoopbackHub;
using testing::MegatronCase;
using testing::Random;
using testing::ReadExample;
using testing::StatusIs;

// Process p's client: 2 CPU devices of one thread each (through a FaultyPlatform), the default
// program compiler, over the loopback hub.
absl::StatusOr<std::shared_ptr<Client>> LoopbackClient(LoopbackHub& hub, int p,
                                                       testing::FaultyPlatform*& faulty) {
  ClientOptions options{.cpu_devices = 2, .cpu_threads_per_device = 1, .vulkan = VulkanMode::kOff};
  std::vector<std::unique_ptr<Platform>> platforms;
  for (const PlatformFactory& f : PlatformRegistry::Default().Factories()) {
    if (f.name != "cpu") continue;
    absl::StatusOr<std::unique_ptr<Platform>> platform = f.create(options);
    if (!platform.ok()) return platform.status();
    auto wrapped = std::make_unique<testing::FaultyPlatform>(*std::move(platform));
    faulty = wrapped.get();
    platforms.push_back(std::move(wrapped));
  }
  absl::StatusOr<std::shared_ptr<runtime::RuntimeClient>> client = runtime::RuntimeClient::Create(
      std::move(platforms), guard::Policy(), CreateDefaultProgramCompiler(), hub.Transport(p));
  if (!client.ok()) return client.status();
  return std::shared_ptr<Client>(*std::move(client));
}

// One process (thread) of a test: its client and the first 4 global devices.
struct Process {
  int index;
  Client& client;
  testing::FaultyPlatform& faulty;
  DeviceListRef devices;  // the executables' devices

  ShardingRef Named(const std::string& spec) const {
    return testing::Named("mesh{x=4}", spec, devices);
  }
  ArrayRef Put(const std::vector<float>& data, std::vector<int64_t> dims,
               const std::string& spec) const {
    return Put(data, std::move(dims), Named(spec));
  }
  ArrayRef Put(const std::vector<float>& data, std::vector<int64_t> dims,
               ShardingRef sharding) const {
    absl::StatusOr<ArrayRef> a = client.MakeArrayFromHostBuffer(
        data.data(), DType(DType::kF32), Shape(dims), std::nullopt, std::move(sharding),
        HostBufferSemantics::kImmutableOnlyDuringCall, nullptr);
    EXPECT_TRUE(a.ok()) << a.status();
    return a.ok() ? *a : nullptr;
  }
  absl::StatusOr<LoadedExecutableRef> Compile(const std::string& text,
                                              CompileOptions options = {}) const {
    options.devices = devices;
    return client.GetDefaultCompiler()->Compile(std::make_unique<MlirProgram>(text), options);
  }
};

// Process::Put as MegatronCase::Arguments wants it.
auto Putter(const Process& p) {
  return [&p](const std::vector<float>& data, std::vector<int64_t> dims, const std::string& spec) {
    return p.Put(data, std::move(dims), spec);
  };
}

// Runs `body` on `n` processes (threads) at once over one hub.
void OnEveryProcess(int n, const std::function<void(LoopbackHub&, Process&)>& body) {
  LoopbackHub hub(n);
  std::vector<std::thread> threads;
  for (int p = 0; p < n; ++p) {
    threads.emplace_back([&, p] {
      testing::FaultyPlatform* faulty = nullptr;
      absl::StatusOr<std::shared_ptr<Client>> client = LoopbackClient(hub, p, faulty);
      ASSERT_TRUE(client.ok()) << client.status();
      std::vector<Device*> first4((*client)->devices().begin(), (*client)->devices().begin() + 4);
      Process process{p, **client, *faulty, testing::MustDeviceList(**client, first4)};
      body(hub, process);
    });
  }
  for (std::thread& t : threads) t.join();
}

TEST(LoopbackProgramTest, MegatronExampleAllReducesAcrossProcesses) {
  const std::string text = ReadExample("mlp2_megatron.mlir");
  const MegatronCase data;
  const std::vector<float> want = data.Reference();
  OnEveryProcess(3, [&](LoopbackHub&, Process& p) {
    absl::StatusOr<LoadedExecutableRef> exe = p.Compile(text);
    ASSERT_TRUE(exe.ok()) << exe.status();
    // Phase 1: each of 4 members sends its 128-byte range of each of the 2 members on the other
    // process; phase 2: each its reduced range once to the other process.
    EXPECT_THAT((*exe)->Explain(),
                HasSubstr("between processes (sent over the transport): 1536 bytes per run"));
    std::vector<ArrayRef> args = data.Arguments(Putter(p));
    const TransferStats before = p.client.transfer_stats();
    absl::StatusOr<ExecuteResult> result = (*exe)->Execute(absl::MakeSpan(args));
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(testing::AwaitWithin(result->status), absl::OkStatus());
    ASSERT_EQ(result->outputs.size(), 1u);
    // Processes 0 and 1 hold 2 replicas each; process 2 none.
    EXPECT_EQ(ExpectShardsNear(result->outputs[0], want), p.index < 2 ? 2 : 0);
    // f32[8x16] (512 bytes) all-reduced in two phases over 4 devices: each device reads
    // 2 * 512 / 4 bytes from each of its 3 peers, 2 of them on the other process.
    const int64_t read =
        p.client.transfer_stats().device_to_device.bytes - before.device_to_device.bytes;
    EXPECT_EQ(read, p.index < 2 ? 2 * 3 * 256 : 0);
  });
}

TEST(LoopbackProgramTest, RowShardedMlpExampleRunsWithoutMessagesAndDonates) {
  const std::string text = ReadExample("mlp.mlir");
  const testing::RowMlpCase data;
  OnEveryProcess(2, [&](LoopbackHub& hub, Process& p) {
    absl::StatusOr<LoadedExecutableRef> exe =
        p.Compile(text, CompileOptions{.donated_input_indices = {0}});
    ASSERT_TRUE(exe.ok()) << exe.status();
    std::vector<ArrayRef> args = data.Arguments(Putter(p));
    absl::StatusOr<ExecuteResult> result = (*exe)->Execute(absl::MakeSpan(args));
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(testing::AwaitWithin(result->status), absl::OkStatus());
    EXPECT_EQ(ExpectShardsNear(result->outputs[0], data.Reference()), 2);
    EXPECT_TRUE(args[0]->IsDeleted());  // donated: its local shards
    EXPECT_FALSE(args[1]->IsDeleted());
    EXPECT_EQ(hub.sends(p.index), 0);  // no communication: only the agreement
  });
}

TEST(LoopbackProgramTest, AllToAllAndAllGatherAcrossProcessesAreBitExact) {
  const testing::AllToAllGatherCase data;
  // kAllToAllGather moves pieces of rows; with the operands' specs swapped, pieces of columns
  // (strided boxes of the input) travel between the processes.
  std::string columns = testing::kAllToAllGather;
  for (auto [from, to] : {std::pair{"P(x,None)", "P(@)"}, std::pair{"P(None,x)", "P(x,None)"},
                          std::pair{"P(@)", "P(None,x)"}}) {
    for (size_t at = columns.find(from); at != std::string::npos; at = columns.find(from, at + 1)) {
      columns.replace(at, std::string(from).size(), to);
    }
  }
  OnEveryProcess(2, [&](LoopbackHub&, Process& p) {
    for (const std::string& text : {std::string(testing::kAllToAllGather), columns}) {
      const bool rows = text == testing::kAllToAllGather;
      absl::StatusOr<LoadedExecutableRef> exe = p.Compile(text);
      ASSERT_TRUE(exe.ok()) << exe.status();
      EXPECT_THAT((*exe)->Explain(), HasSubstr("all_to_all"));
      EXPECT_THAT((*exe)->Explain(), HasSubstr("all_gather"));
      std::vector<ArrayRef> args = {p.Put(data.a, {8, 12}, rows ? "P(x,None)" : "P(None,x)"),
                                    p.Put(data.b, {8, 12}, rows ? "P(None,x)" : "P(x,None)")};
      absl::StatusOr<ExecuteResult> result = (*exe)->Execute(absl::MakeSpan(args));
      ASSERT_TRUE(result.ok()) << result.status();
      EXPECT_EQ(testing::AwaitWithin(result->status), absl::OkStatus());
      ExpectShards(result->outputs[0], data.Reference(), rows ? "a + b (rows)" : "a + b (columns)");
    }
  });
}

TEST(LoopbackProgramTest, PpermuteAcrossProcessesSendsEachSourceToItsTargetOnly) {
  // JAX's ppermute over mesh{x=4} (devices 0, 1 on process 0 and 2, 3 on process 1): a ring
  // (0 -> 1 -> 2 -> 3 -> 0) and a pipeline step (0 -> 1 -> 2 -> 3, device 0 receiving zeros).
  // Only 1 -> 2 and 3 -> 0 of the ring and 1 -> 2 of the step cross: three blocks of 2x12 f32.
  std::ifstream in(std::string(TESSERA_SOURCE_DIR) +
                   "/tests/compiler/stablehlo/ppermute_ring_and_stage.mlir");
  std::stringstream text;
  text << in.rdbuf();
  ASSERT_FALSE(text.str().empty());
  std::vector<float> a(8 * 12);
  for (size_t i = 0; i < a.size(); ++i) a[i] = 0.25f * static_cast<float>(i) - 7.0f;
  std::vector<float> ring(a.size()), stage(a.size(), 0.0f);
  for (int64_t row = 0; row < 8; ++row) {
    const int64_t block = row / 2, from = ((block + 3) % 4) * 2 + row % 2;
    for (int64_t col = 0; col < 12; ++col) {
      ring[row * 12 + col] = a[from * 12 + col];
      if (block > 0) stage[row * 12 + col] = 2 * a[(row - 2) * 12 + col];
    }
  }
  auto bytes = [](const std::vector<float>& v) {
    const auto* p = reinterpret_cast<const uint8_t*>(v.data());
    return std::vector<uint8_t>(p, p + v.size() * sizeof(float));
  };
  OnEveryProcess(2, [&](LoopbackHub& hub, Process& p) {
    CompileOptions options;
    options.devices = p.devices;
    absl::StatusOr<LoadedExecutableRef> exe = p.client.GetDefaultCompiler()->Compile(
        std::make_unique<StableHloProgram>(text.str()), options);
    ASSERT_TRUE(exe.ok()) << exe.status();
    EXPECT_THAT((*exe)->Explain(), HasSubstr("collective_permute"));
    EXPECT_THAT((*exe)->Explain(),
                HasSubstr("between processes (sent over the transport): 288 bytes per run"));
    std::vector<ArrayRef> args = {p.Put(a, {8, 12}, "P(x,None)")};
    const int64_t sends_before = hub.sends(p.index);
    absl::StatusOr<ExecuteResult> result = (*exe)->Execute(absl::MakeSpan(args));
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(testing::AwaitWithin(result->status), absl::OkStatus());
    ASSERT_EQ(result->outputs.size(), 2u);
    ExpectShards(result->outputs[0], bytes(ring), "ring");
    ExpectShards(result->outputs[1], bytes(stage), "stage");
    // Process 0 sends device 1's block twice (ring and step), process 1 device 3's once.
    EXPECT_EQ(hub.sends(p.index) - sends_before, p.index == 0 ? 2 : 1);
  });
}

TEST(LoopbackProgramTest, AllSliceAcrossProcessesSendsNothing) {
  // b replicated, sliced to rows on each device before the addition: no bytes between devices.
  constexpr char kAllSlice[] = R"mlir(
func.func @main(%a: tensor<8x12xf32> {tessera.sharding = "mesh{x=4} P(x,None)"},
                %b: tensor<8x12xf32> {tessera.sharding = "mesh{x=4} P()"})
    -> (tensor<8x12xf32> {tessera.sharding = "mesh{x=4} P(x,None)"}) {
  %z = arith.addf %a, %b : tensor<8x12xf32>
  return %z : tensor<8x12xf32>
})mlir";
  const testing::AllToAllGatherCase data;  // z = a + b, the same data
  OnEveryProcess(2, [&](LoopbackHub& hub, Process& p) {
    absl::StatusOr<LoadedExecutableRef> exe = p.Compile(kAllSlice);
    ASSERT_TRUE(exe.ok()) << exe.status();
    EXPECT_THAT((*exe)->Explain(), HasSubstr("all_slice"));
    std::vector<ArrayRef> args = {p.Put(data.a, {8, 12}, "P(x,None)"),
                                  p.Put(data.b, {8, 12}, "P()")};
    const int64_t sends = hub.sends(p.index);
    absl::StatusOr<ExecuteResult> result = (*exe)->Execute(absl::MakeSpan(args));
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(testing::AwaitWithin(result->status), absl::OkStatus());
    ExpectShards(result->outputs[0], data.Reference(), "a + b");
    EXPECT_EQ(hub.sends(p.index), sends);
  });
}

// `combiner` over dimension 0 of a 4x3 `element` array, one row per device (two per process): the
// all-reduce combines across processes, as the combiner says.
std::string ReduceRows(const std::string& combiner, const std::string& element,
                       const std::string& init) {
  const std::string in = "tensor<4x3x" + element + ">", out = "tensor<3x" + element + ">";
  return "func.func @main(%x: " + in + " {tessera.sharding = \"mesh{x=4} P(x)\"}) -> (" + out +
         " {tessera.sharding = \"mesh{x=4} P()\"}) {\n  %init = arith.constant " + init + " : " +
         element + "\n  %e = tensor.empty() : " + out +
         "\n  %f = linalg.fill ins(%init : " + element + ") outs(%e : " + out + ") -> " + out +
         "\n  %r = linalg.reduce ins(%x : " + in + ") outs(%f : " + out +
         ") dimensions = [0]\n    (%in: " + element + ", %acc: " + element +
         ") {\n      %s = " + combiner + " %in, %acc : " + element +
         "\n      linalg.yield %s : " + element + "\n    }\n  return %r : " + out + "\n}";
}

template <typename T>
std::vector<uint8_t> Bytes(const std::vector<T>& v) {
  std::vector<uint8_t> bytes(v.size() * sizeof(T));
  std::memcpy(bytes.data(), v.data(), bytes.size());
  return bytes;
}

// andi, unsigned max and a NaN on the second process's rows: the two-phase all-reduce between
// processes combines with the combiner's kind (not a sum, not a signed max, not dropping the NaN).
TEST(LoopbackProgramTest, ReductionsAcrossProcessesCombineAsTheirCombiner) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<int32_t> ints = {1, -1, 6, 2, 5, 3, -4, 7, 5, 8, 3, 7};
  const std::vector<float> floats = {1.0f, -0.0f, 2.0f, 3.0f, -0.0f, 1.0f,
                                     0.5f, 0.0f,  nan,  2.0f, -0.0f, 4.0f};
  struct Case {
    std::string program;
    DType dtype;
    std::vector<uint8_t> input, want;
  };
  const std::vector<Case> cases = {
      {ReduceRows("arith.andi", "i32", "-1"), DType(DType::kS32), Bytes(ints),
       Bytes(std::vector<int32_t>{1 & 2 & -4 & 8, -1 & 5 & 7 & 3, 6 & 3 & 5 & 7})},
      {ReduceRows("arith.maxui", "i32", "0"), DType(DType::kS32), Bytes(ints),
       Bytes(std::vector<int32_t>{-4, -1, 7})},
      {ReduceRows("arith.maximumf", "f32", "0xFF800000"), DType(DType::kF32), Bytes(floats),
       Bytes(std::vector<float>{3.0f, 0.0f, nan})},
  };
  OnEveryProcess(2, [&](LoopbackHub&, Process& p) {
    for (const Case& c : cases) {
      SCOPED_TRACE(c.program);
      absl::StatusOr<LoadedExecutableRef> exe = p.Compile(c.program);
      ASSERT_TRUE(exe.ok()) << exe.status();
      absl::StatusOr<ArrayRef> x =
          testing::MakeArray(p.client, c.input, c.dtype, Shape({4, 3}), p.Named("P(x)"));
      ASSERT_TRUE(x.ok()) << x.status();
      std::vector<ArrayRef> args = {*x};
      absl::StatusOr<ExecuteResult> result = (*exe)->Execute(absl::MakeSpan(args));
      ASSERT_TRUE(result.ok()) << result.status();
      EXPECT_EQ(testing::AwaitWithin(result->status), absl::OkStatus());
      ExpectShards(result->outputs[0], c.want, "reduction");
    }
  });
}

TEST(LoopbackProgramTest, AnExecutableOnOneProcessIsThatProcesssAlone) {
  constexpr char kAdd[] = R"mlir(
func.func @main(%a: tensor<4x2xf32> {tessera.sharding = "mesh{x=2} P(x,None)"})
    -> (tensor<4x2xf32> {tessera.sharding = "mesh{x=2} P(x,None)"}) {
  %z = arith.addf %a, %a : tensor<4x2xf32>
  return %z : tensor<4x2xf32>
})mlir";
  const std::vector<float> a = Random(8, 11);
  std::vector<uint8_t> twice(32);
  for (int i = 0; i < 8; ++i) {
    const float z = a[i] + a[i];
    std::memcpy(twice.data() + 4 * i, &z, 4);
  }
  OnEveryProcess(2, [&](LoopbackHub& hub, Process& p) {
    // Process 1's two devices.
    DeviceListRef devices = testing::DevicesAt(p.client, {2, 3});
    absl::StatusOr<LoadedExecutableRef> exe = p.client.GetDefaultCompiler()->Compile(
        std::make_unique<MlirProgram>(kAdd), CompileOptions{.devices = devices});
    if (p.index == 0) {
      EXPECT_THAT(exe, StatusIs(absl::StatusCode::kInvalidArgument,
                                HasSubstr("belongs to process 1; compile it there")));
      return;
    }
    ASSERT_TRUE(exe.ok()) << exe.status();
    // A local Execute: no agreement, process 0 takes no part.
    std::vector<ArrayRef> args = {
        p.Put(a, {4, 2}, testing::Named("mesh{x=2}", "P(x,None)", devices))};
    absl::StatusOr<ExecuteResult> result = (*exe)->Execute(absl::MakeSpan(args));
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(testing::AwaitWithin(result->status), absl::OkStatus());
    ExpectShards(result->outputs[0], twice, "a + a");
    EXPECT_EQ(hub.sends(1), 0);
  });
}

TEST(LoopbackProgramTest, AGuardRefusalOnOneProcessFailsEveryProcess) {
  const std::string text = ReadExample("mlp2_megatron.mlir");
  const MegatronCase data;
  OnEveryProcess(2, [&](LoopbackHub&, Process& p) {
    absl::StatusOr<LoadedExecutableRef> exe = p.Compile(text);
    ASSERT_TRUE(exe.ok()) << exe.status();
    std::vector<ArrayRef> args = data.Arguments(Putter(p));
    {
      // The program's communication is explicit: disallow_explicit on process 1 refuses it.
      std::optional<guard::ScopedTransferGuard> scope;
      if (p.index == 1) {
        scope.emplace(guard::Direction::kDeviceToDevice, guard::Level::kDisallowExplicit);
      }
      absl::StatusOr<ExecuteResult> result = (*exe)->Execute(absl::MakeSpan(args));
      EXPECT_THAT(result, StatusIs(absl::StatusCode::kInvalidArgument,
                                   HasSubstr("Disallowed device-to-device transfer")));
      EXPECT_THAT(result.status().message(), HasSubstr("all_reduce"));
      if (p.index == 0) {
        EXPECT_THAT(result.status().message(), HasSubstr("process 1 refused the call"));
      }
    }
    // An argument in another sharding (w1 by rows, not columns) is resharded first, an implicit
    // transfer across processes: `disallow` (implicit transfers only) on process 0 refuses it,
    // on every process, before anything runs.
    std::vector<ArrayRef> mismatched = args;
    mismatched[1] = p.Put(data.w1, {16, 32}, "P(x,None)");
    {
      std::optional<guard::ScopedTransferGuard> scope;
      if (p.index == 0) scope.emplace(guard::Direction::kDeviceToDevice, guard::Level::kDisallow);
      absl::StatusOr<ExecuteResult> refused = (*exe)->Execute(absl::MakeSpan(mismatched));
      EXPECT_THAT(refused, StatusIs(absl::StatusCode::kInvalidArgument,
                                    HasSubstr("Disallowed device-to-device transfer")));
      EXPECT_THAT(refused.status().message(), HasSubstr("ReshardArrays"));
      if (p.index == 1) {
        EXPECT_THAT(refused.status().message(), HasSubstr("process 0 refused the call"));
      }
    }
    // Allowed, the reshard runs across processes and the program after it.
    absl::StatusOr<ExecuteResult> result = (*exe)->Execute(absl::MakeSpan(mismatched));
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(testing::AwaitWithin(result->status), absl::OkStatus());
    EXPECT_EQ(ExpectShardsNear(result->outputs[0], data.Reference()), 2);
  });
}

TEST(LoopbackProgramTest, MismatchedArgumentsAreInvalidOnEveryProcess) {
  const std::string text = ReadExample("mlp2_megatron.mlir");
  const MegatronCase data;
  OnEveryProcess(2, [&](LoopbackHub&, Process& p) {
    absl::StatusOr<LoadedExecutableRef> exe = p.Compile(text);
    ASSERT_TRUE(exe.ok()) << exe.status();
    std::vector<ArrayRef> args = data.Arguments(Putter(p));
    // Process 0 passes w1 replicated, process 1 column-sharded: never a deadlock.
    std::vector<ArrayRef> mine = args;
    if (p.index == 0) mine[1] = p.Put(data.w1, {16, 32}, "P()");
    EXPECT_THAT((*exe)->Execute(absl::MakeSpan(mine)),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("different arguments")));
    // Process 1 passes one argument too few: its own error there, named as its refusal here.
    std::vector<ArrayRef> fewer = args;
    if (p.index == 1) fewer.pop_back();
    absl::StatusOr<ExecuteResult> result = (*exe)->Execute(absl::MakeSpan(fewer));
    EXPECT_THAT(result, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("arguments")));
    if (p.index == 0) {
      EXPECT_THAT(result.status().message(), HasSubstr("process 1 refused the call"));
    }
    // The same call everywhere still runs.
    result = (*exe)->Execute(absl::MakeSpan(args));
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(testing::AwaitWithin(result->status), absl::OkStatus());
  });
}

// Compile over the devices of several processes is collective: a compile that fails on one
// process fails on every process with its message (the others never wait for it in Execute), a
// different program on one process is INVALID_ARGUMENT everywhere, and the third process, which
// holds none of the devices, takes part in both.
TEST(LoopbackProgramTest, CompileFailsOnEveryProcessWhenItFailsOnOne) {
  const std::string text = ReadExample("mlp2_megatron.mlir");
  OnEveryProcess(3, [&](LoopbackHub&, Process& p) {
    absl::StatusOr<LoadedExecutableRef> broken =
        p.Compile(p.index == 1 ? std::string("func.func @main(%x: tensor<4xf32>") : text);
    EXPECT_THAT(broken, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("invalid program")));
    if (p.index != 1) {
      EXPECT_THAT(broken.status().message(), HasSubstr("process 1 refused the call"));
    }
    const std::string other = absl::StrCat(text, "\n// process ", p.index, "\n");
    EXPECT_THAT(p.Compile(p.index == 2 ? other : text),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("different arguments")));
    // The same program everywhere compiles and runs.
    const MegatronCase data;
    absl::StatusOr<LoadedExecutableRef> exe = p.Compile(text);
    ASSERT_TRUE(exe.ok()) << exe.status();
    std::vector<ArrayRef> args = data.Arguments(Putter(p));
    absl::StatusOr<ExecuteResult> result = (*exe)->Execute(absl::MakeSpan(args));
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(testing::AwaitWithin(result->status), absl::OkStatus());
  });
}

TEST(LoopbackProgramTest, ExecuteFromTwoThreadsPairsCallsByOrder) {
  constexpr int kCalls = 6;
  std::vector<std::vector<float>> xs, w1s, w2s, wants;
  for (int id = 0; id < 2 * kCalls; ++id) {
    xs.push_back(Random(48, 20 + 3 * id));
    w1s.push_back(Random(192, 21 + 3 * id));
    w2s.push_back(Random(128, 22 + 3 * id));
    wants.push_back(testing::MegatronReference(xs[id], w1s[id], w2s[id]));
  }
  OnEveryProcess(2, [&](LoopbackHub&, Process& p) {
    absl::StatusOr<LoadedExecutableRef> exe = p.Compile(testing::kMegatron);
    ASSERT_TRUE(exe.ok()) << exe.status();
    // Two threads take turns issuing Execute (collective calls reach every process in one
    // order) without waiting for the results: their messages are in flight together.
    std::mutex mu;
    std::condition_variable cv;
    int turn = 0;
    std::vector<ExecuteResult> results(2 * kCalls);
    auto worker = [&](int who) {
      for (int c = 0; c < kCalls; ++c) {
        const int id = 2 * c + who;
        std::vector<ArrayRef> args = {p.Put(xs[id], {4, 12}, "P()"),
                                      p.Put(w1s[id], {12, 16}, "P(None,x)"),
                                      p.Put(w2s[id], {16, 8}, "P(x,None)")};
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
      EXPECT_EQ(testing::AwaitWithin(results[id].status), absl::OkStatus()) << "call " << id;
      EXPECT_EQ(ExpectShardsNear(results[id].outputs[0], wants[id]), 2) << "call " << id;
    }
  });
}

// Runs the Megatron MLP once, `arm` called just before Execute; returns Execute's error, or the
// status future's (nullopt: a hang).
std::optional<absl::Status> RunMegatron(
    const Process& p, LoadedExecutable& exe, const MegatronCase& data,
    const std::function<void()>& arm = [] {}) {
  std::vector<ArrayRef> args = data.Arguments(Putter(p));
  arm();
  absl::StatusOr<ExecuteResult> result = exe.Execute(absl::MakeSpan(args));
  if (!result.ok()) return result.status();
  return testing::AwaitWithin(result->status);
}

TEST(LoopbackProgramTest, FailuresFailEveryProcessAndHangNone) {
  const std::string text = ReadExample("mlp2_megatron.mlir");
  const MegatronCase data;
  OnEveryProcess(2, [&](LoopbackHub& hub, Process& p) {
    absl::StatusOr<LoadedExecutableRef> exe = p.Compile(text);
    ASSERT_TRUE(exe.ok()) << exe.status();
    // A kernel of process 0 fails: its peers' messages go empty, process 1 fails too.
    std::optional<absl::Status> s = RunMegatron(p, **exe, data, [&] {
      if (p.index == 0) p.faulty.FailLaunch(1);
    });
    ASSERT_TRUE(s.has_value()) << "a hang";
    if (p.index == 0) {
      EXPECT_THAT(*s, StatusIs(absl::StatusCode::kDataLoss, HasSubstr("injected kernel failure")));
    } else {
      EXPECT_THAT(*s, StatusIs(absl::StatusCode::kInternal, HasSubstr("did not arrive")));
    }
    hub.AllGather(p.index, "");  // a barrier, outside any call
    // Process 1's first receive fails: both fail.
    if (p.index == 0) hub.InjectFault({LoopbackFault::Kind::kFailReceive, 1, 1});
    hub.AllGather(p.index, "");
    s = RunMegatron(p, **exe, data);
    ASSERT_TRUE(s.has_value()) << "a hang";
    EXPECT_FALSE(s->ok());
    if (p.index == 1) {
      EXPECT_THAT(*s, StatusIs(absl::StatusCode::kUnavailable, HasSubstr("injected")));
    }
    hub.AllGather(p.index, "");
    if (p.index == 0) hub.ClearFault();
    hub.AllGather(p.index, "");
    // Process 0 runs out of memory after the agreement: Execute fails there, its messages are
    // settled, and process 1's Execute fails rather than wait.
    s = RunMegatron(p, **exe, data, [&] {
      if (p.index == 0) p.faulty.FailAllocation(1);
    });
    ASSERT_TRUE(s.has_value()) << "a hang";
    if (p.index == 0) {
      EXPECT_THAT(
          *s, StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("injected: out of memory")));
    } else {
      EXPECT_THAT(*s, StatusIs(absl::StatusCode::kInternal, HasSubstr("did not arrive")));
    }
    // The same when the allocation throws std::bad_alloc.
    s = RunMegatron(p, **exe, data, [&] {
      if (p.index == 0) p.faulty.FailAllocation(1, /*throw_bad_alloc=*/true);
    });
    ASSERT_TRUE(s.has_value()) << "a hang";
    if (p.index == 0) {
      EXPECT_THAT(*s, StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("Execute")));
    } else {
      EXPECT_THAT(*s, StatusIs(absl::StatusCode::kInternal, HasSubstr("did not arrive")));
    }
    // Nothing is left over: the next Execute runs clean.
    std::vector<ArrayRef> args = data.Arguments(Putter(p));
    absl::StatusOr<ExecuteResult> result = (*exe)->Execute(absl::MakeSpan(args));
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(testing::AwaitWithin(result->status), absl::OkStatus());
    EXPECT_EQ(ExpectShardsNear(result->outputs[0], data.Reference()), 2);
  });
}

}  // namespace
}  // namespace tessera
