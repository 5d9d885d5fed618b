// Faults midway through a program: a Megatron MLP (two matmul kernels per device and an all-reduce
// between them, the runtime's host-memory collective) on 4 CPU devices behind FaultyPlatform. For
// every kernel launch, every host callback (the collective's steps) and every allocation the
// program makes, and for a device lost partway, the same call fails in turn: Execute either
// refuses at once or returns futures that resolve with the injected error (never hang), every
// output carries the error, the arguments read back bit for bit, every memory is back at its
// baseline once the outputs are dropped, and the next clean Execute is right.

#include <chrono>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cpu/cpu_platform.h"
#include "backends/default_program_compiler.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ifrt/compiler.h"
#include "ifrt/executable.h"
#include "ifrt/program.h"
#include "ifrt/runtime/runtime_client.h"
#include "tests/ifrt/faulty_platform.h"
#include "tests/ifrt/test_util.h"
#include "tests/testing/status_matchers.h"

namespace tessera {
namespace {

using ::tessera::testing::FaultyPlatform;
using ::testing::HasSubstr;

// y = relu(x @ w1) @ w2 with w1 column- and w2 row-sharded: an all-reduce of f32[4x8].
constexpr char kMegatron[] = R"mlir(
func.func @main(%x: tensor<4x12xf32> {tessera.sharding = "mesh{x=4} P()"},
                %w1: tensor<12x16xf32> {tessera.sharding = "mesh{x=4} P(None,x)"},
                %w2: tensor<16x8xf32> {tessera.sharding = "mesh{x=4} P(x,None)"})
    -> (tensor<4x8xf32> {tessera.sharding = "mesh{x=4} P()"}) {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<4x16xf32>
  %a1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4x16xf32>) -> tensor<4x16xf32>
  %h = linalg.matmul ins(%x, %w1 : tensor<4x12xf32>, tensor<12x16xf32>)
                     outs(%a1 : tensor<4x16xf32>) -> tensor<4x16xf32>
  %r = linalg.map { arith.maximumf } ins(%h, %a1 : tensor<4x16xf32>, tensor<4x16xf32>)
                     outs(%e1 : tensor<4x16xf32>)
  %e2 = tensor.empty() : tensor<4x8xf32>
  %a2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = linalg.matmul ins(%r, %w2 : tensor<4x16xf32>, tensor<16x8xf32>)
                     outs(%a2 : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
)mlir";

std::vector<float> Random(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// The reference: relu(x @ w1) @ w2 in double.
std::vector<float> Reference(const std::vector<float>& x, const std::vector<float>& w1,
                             const std::vector<float>& w2) {
  std::vector<double> h(4 * 16, 0.0);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 16; ++j) {
      for (int k = 0; k < 12; ++k) h[i * 16 + j] += double{x[i * 12 + k]} * w1[k * 16 + j];
      h[i * 16 + j] = std::max(h[i * 16 + j], 0.0);
    }
  std::vector<float> y(4 * 8);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 8; ++j) {
      double sum = 0;
      for (int k = 0; k < 16; ++k) sum += h[i * 16 + k] * w2[k * 8 + j];
      y[i * 8 + j] = static_cast<float>(sum);
    }
  return y;
}

class ProgramFaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<Platform>> cpu =
        CreateCpuPlatform({.num_devices = 4, .threads_per_device = 1});
    ASSERT_OK(cpu.status());
    auto faulty = std::make_unique<FaultyPlatform>(*std::move(cpu));
    faulty_ = faulty.get();
    std::vector<std::unique_ptr<Platform>> platforms;
    platforms.push_back(std::move(faulty));
    ASSERT_OK_AND_ASSIGN(client_,
                         runtime::RuntimeClient::Create(std::move(platforms), guard::Policy(),
                                                        CreateDefaultProgramCompiler()));
    client_->transfer_guard().SetDefaultLogSinkEnabled(false);
    ASSERT_OK_AND_ASSIGN(devices_, client_->MakeDeviceList(client_->devices().first(4)));
    absl::StatusOr<LoadedExecutableRef> exe = client_->GetDefaultCompiler()->Compile(
        std::make_unique<MlirProgram>(kMegatron), CompileOptions{.devices = devices_});
    if (!exe.ok() && absl::IsUnimplemented(exe.status())) {
      GTEST_SKIP() << "this build compiles no programs: " << exe.status();
    }
    ASSERT_OK(exe.status());
    exe_ = *std::move(exe);
    x_ = Random(48, 1);
    w1_ = Random(192, 2);
    w2_ = Random(128, 3);
    args_ = {Put(x_, {4, 12}, "P()"), Put(w1_, {12, 16}, "P(None,x)"),
             Put(w2_, {16, 8}, "P(x,None)")};
    for (Device* d : client_->devices()) {
      for (Memory* m : d->Memories()) baseline_.push_back({m, m->BytesInUse()});
    }
  }

  void TearDown() override {
    if (faulty_ != nullptr) faulty_->Disarm();
  }

  ArrayRef Put(const std::vector<float>& data, std::vector<int64_t> dims, const std::string& spec) {
    absl::StatusOr<ShardingRef> sharding =
        NamedSharding::Create(*sharding::Mesh::Parse("mesh{x=4}"),
                              *sharding::PartitionSpec::Parse(spec), devices_, MemoryKind());
    EXPECT_OK(sharding.status());
    absl::StatusOr<ArrayRef> a = client_->MakeArrayFromHostBuffer(
        data.data(), DType(DType::kF32), Shape(dims), std::nullopt, *sharding,
        HostBufferSemantics::kImmutableOnlyDuringCall, nullptr);
    EXPECT_OK(a.status());
    return *a;
  }

  static std::vector<float> Get(const ArrayRef& a) {
    std::vector<float> out(a->shape().num_elements());
    EXPECT_OK(
        a->CopyToHostBuffer(out.data(), std::nullopt, ArrayCopySemantics::kAlwaysCopy).Await());
    return out;
  }

  // Each argument still reads back as what was put in, bit for bit.
  void ExpectArgumentsIntact() {
    EXPECT_EQ(Get(args_[0]), x_);
    EXPECT_EQ(Get(args_[1]), w1_);
    EXPECT_EQ(Get(args_[2]), w2_);
  }

  void ExpectMemoriesAtBaseline() {
    for (const auto& [memory, bytes] : baseline_) {
      for (int i = 0; i < 400 && memory->BytesInUse() != bytes; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
      EXPECT_EQ(memory->BytesInUse(), bytes) << memory->DebugString() << " leaks";
    }
  }

  // A clean Execute: the right numbers.
  void ExpectCleanRunIsRight() {
    ASSERT_OK_AND_ASSIGN(ExecuteResult result, exe_->Execute(absl::MakeSpan(args_)));
    ASSERT_OK(result.status.Await());
    const std::vector<float> got = Get(result.outputs[0]), want = Reference(x_, w1_, w2_);
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_NEAR(got[i], want[i], 1e-4 * std::max(1.0f, std::abs(want[i]))) << "element " << i;
    }
  }

  // Execute with a fault armed: refused at once with `code`, or every future carries it.
  void ExpectFailsEverywhere(absl::StatusCode code, const std::string& message) {
    absl::StatusOr<ExecuteResult> result = exe_->Execute(absl::MakeSpan(args_));
    if (!result.ok()) {
      EXPECT_EQ(result.status().code(), code) << result.status();
      EXPECT_THAT(std::string(result.status().message()), HasSubstr(message));
    } else {
      absl::Status status = result->status.Await();
      EXPECT_EQ(status.code(), code) << status;
      EXPECT_THAT(std::string(status.message()), HasSubstr(message));
      for (const ArrayRef& out : result->outputs) {
        absl::Status ready = out->GetReadyFuture().Await();
        EXPECT_EQ(ready.code(), code) << "an output of the failed program is usable: " << ready;
      }
    }
    faulty_->Disarm();
  }

  FaultyPlatform* faulty_ = nullptr;
  std::shared_ptr<runtime::RuntimeClient> client_;
  DeviceListRef devices_;
  LoadedExecutableRef exe_;
  std::vector<float> x_, w1_, w2_;
  std::vector<ArrayRef> args_;
  std::vector<std::pair<Memory*, int64_t>> baseline_;
};

TEST_F(ProgramFaultTest, EachFailedKernelLaunchFailsTheProgramAndNothingElse) {
  const int64_t before = faulty_->launch_calls();
  ExpectCleanRunIsRight();
  const int64_t launches = faulty_->launch_calls() - before;
  ASSERT_GE(launches, 4) << "a kernel on each of the 4 devices";
  for (int k = 1; k <= launches; ++k) {
    SCOPED_TRACE(absl::StrCat("kernel launch ", k, " of ", launches, " fails"));
    faulty_->FailLaunch(k);
    ExpectFailsEverywhere(absl::StatusCode::kDataLoss, "injected kernel failure");
    ExpectArgumentsIntact();
    ExpectMemoriesAtBaseline();
  }
  ExpectCleanRunIsRight();
}

TEST_F(ProgramFaultTest, EachFailedCollectiveStepFailsTheProgram) {
  const int64_t before = faulty_->callback_calls();
  ExpectCleanRunIsRight();
  const int64_t callbacks = faulty_->callback_calls() - before;
  ASSERT_GE(callbacks, 1) << "the all-reduce runs as host callbacks";
  for (int k = 1; k <= callbacks; ++k) {
    SCOPED_TRACE(absl::StrCat("host callback ", k, " of ", callbacks, " fails"));
    faulty_->FailHostCallback(k);
    ExpectFailsEverywhere(absl::StatusCode::kDataLoss, "injected host callback failure");
    ExpectArgumentsIntact();
    ExpectMemoriesAtBaseline();
  }
  ExpectCleanRunIsRight();
}

TEST_F(ProgramFaultTest, EachFailedAllocationIsResourceExhaustedAndReleasesTheOthers) {
  const int64_t before = faulty_->allocation_calls();
  ExpectCleanRunIsRight();
  ExpectMemoriesAtBaseline();
  // The clean run's allocations, less the read-back's (none: it copies into the caller's memory).
  const int64_t allocations = faulty_->allocation_calls() - before;
  ASSERT_GE(allocations, 4) << "at least an output shard on each device";
  for (int k = 1; k <= allocations; ++k) {
    SCOPED_TRACE(absl::StrCat("allocation ", k, " of ", allocations, " fails"));
    faulty_->FailAllocation(k);
    ExpectFailsEverywhere(absl::StatusCode::kResourceExhausted, "injected: out of memory");
    ExpectArgumentsIntact();
    ExpectMemoriesAtBaseline();
  }
  ExpectCleanRunIsRight();
}

TEST_F(ProgramFaultTest, DeviceLostMidwayFailsTheProgramAndNeverHangs) {
  // Device 2 is lost after 0, 1, 2, ... more of its operations: wherever the program is then. Past
  // the program's last operation on it the loss comes too late, and the run must be right.
  for (int ops = 0; ops < 8; ++ops) {
    SCOPED_TRACE(absl::StrCat("device 2 lost after ", ops, " operations"));
    const int64_t faults_before = faulty_->injected_faults();
    faulty_->LoseDeviceAfter(2, ops);
    {
      absl::StatusOr<ExecuteResult> result = exe_->Execute(absl::MakeSpan(args_));
      if (!result.ok()) {
        EXPECT_EQ(result.status().code(), absl::StatusCode::kUnavailable) << result.status();
      } else if (absl::Status status = result->status.Await(); !status.ok()) {
        EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
        EXPECT_THAT(std::string(status.message()), HasSubstr("device lost"));
        for (const ArrayRef& out : result->outputs) {
          EXPECT_FALSE(out->GetReadyFuture().Await().ok()) << "a failed program's output is usable";
        }
      } else {
        EXPECT_EQ(faulty_->injected_faults(), faults_before) << "a lost device went unnoticed";
        const std::vector<float> got = Get(result->outputs[0]), want = Reference(x_, w1_, w2_);
        for (size_t i = 0; i < want.size(); ++i) {
          ASSERT_NEAR(got[i], want[i], 1e-4 * std::max(1.0f, std::abs(want[i])));
        }
      }
    }
    faulty_->Disarm();
    ExpectArgumentsIntact();
    ExpectMemoriesAtBaseline();
  }
  ExpectCleanRunIsRight();
}

}  // namespace
}  // namespace tessera
