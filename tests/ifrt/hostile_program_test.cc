// Hostile programs through the public API: whatever a program computes, it never takes the process
// down, and what cannot run is an error at Compile or on ExecuteResult::status.
//   - integer division and remainder by zero and INT_MIN / -1 have XLA's results, the same on CPU
//     devices (where the hardware traps) and on Vulkan (lavapipe: where the driver picks);
//   - a kernel temporary that cannot be allocated is RESOURCE_EXHAUSTED on the status;
//   - a null sharding in CompileOptions is INVALID_ARGUMENT.
// The Vulkan topology skips, saying why, only where no Vulkan driver exists at all.

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "base/status_macros.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tessera.h"
#include "tests/ifrt/test_util.h"
#include "tests/testing/vulkan_icds.h"

namespace tessera {
namespace {

using ::tessera::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

struct Topology {
  std::string name;
  bool vulkan = false;
};

absl::StatusOr<std::shared_ptr<Client>> CreateTopologyClient(const Topology& t) {
  if (!t.vulkan) return testing::CreateCpuTestClient(4);
  testing::SetVulkanIcdsIfUnset(TESSERA_HOSTILE_PROGRAM_TEST_VULKAN_ICDS);
  return CreateClient({.cpu_devices = 0,
                       .vulkan = VulkanMode::kRequired,
                       .vulkan_logical_devices_per_gpu = 2,
                       .transfer_guard = guard::Policy()});
}

// The seven integer divisions of arith on a, b (16 elements each, in rows over 4 devices).
constexpr char kDivisions[] = R"mlir(
func.func @main(%a: tensor<16xT> {tessera.sharding = "mesh{x=4} P(x)"},
                %b: tensor<16xT> {tessera.sharding = "mesh{x=4} P(x)"})
    -> (tensor<16xT>, tensor<16xT>, tensor<16xT>, tensor<16xT>, tensor<16xT>, tensor<16xT>,
        tensor<16xT>) {
  %0 = arith.divsi %a, %b : tensor<16xT>
  %1 = arith.remsi %a, %b : tensor<16xT>
  %2 = arith.divui %a, %b : tensor<16xT>
  %3 = arith.remui %a, %b : tensor<16xT>
  %4 = arith.ceildivsi %a, %b : tensor<16xT>
  %5 = arith.floordivsi %a, %b : tensor<16xT>
  %6 = arith.ceildivui %a, %b : tensor<16xT>
  return %0, %1, %2, %3, %4, %5, %6 : tensor<16xT>, tensor<16xT>, tensor<16xT>, tensor<16xT>,
                                      tensor<16xT>, tensor<16xT>, tensor<16xT>
}
)mlir";

// XLA's results (docs/computations.md): x / 0 = -1 (all ones unsigned), x % 0 = x,
// x / -1 = -x wrapping (INT_MIN / -1 = INT_MIN), x % -1 = 0.
template <typename T>
T Reference(int op, T a, T b) {
  using U = std::make_unsigned_t<T>;
  const U ua = static_cast<U>(a), ub = static_cast<U>(b);
  const T negated = static_cast<T>(U{0} - ua);
  T q = 0, r = 0;
  if (b != 0 && b != -1) {
    q = a / b;
    r = a % b;
  }
  switch (op) {
    case 0:  // divsi
      return b == 0 ? T(-1) : b == -1 ? negated : q;
    case 1:  // remsi
      return b == 0 ? a : b == -1 ? T(0) : r;
    case 2:  // divui
      return b == 0 ? T(-1) : static_cast<T>(ua / ub);
    case 3:  // remui
      return b == 0 ? a : static_cast<T>(ua % ub);
    case 4:  // ceildivsi
      if (b == 0) return T(-1);
      if (b == -1) return negated;
      return static_cast<T>(q + (r != 0 && ((r < 0) == (b < 0)) ? 1 : 0));
    case 5:  // floordivsi
      if (b == 0) return T(-1);
      if (b == -1) return negated;
      return static_cast<T>(q - (r != 0 && ((r < 0) != (b < 0)) ? 1 : 0));
    default:  // ceildivui
      return b == 0 ? T(-1) : static_cast<T>(ua / ub + (ua % ub != 0 ? 1 : 0));
  }
}

class HostileProgramTest : public ::testing::TestWithParam<Topology> {
 protected:
  void SetUp() override {
    absl::StatusOr<std::shared_ptr<Client>> client = CreateTopologyClient(GetParam());
    if (absl::IsNotFound(client.status())) {
      GTEST_SKIP() << "no Vulkan driver: " << client.status();
    }
    ASSERT_OK(client.status());
    client_ = *std::move(client);
    ASSERT_GE(client_->devices().size(), 4u);
    ASSERT_OK_AND_ASSIGN(devices_, client_->MakeDeviceList(client_->devices().first(4)));
  }

  absl::StatusOr<LoadedExecutableRef> Compile(const std::string& text, CompileOptions options) {
    if (options.devices == nullptr) options.devices = devices_;
    return client_->GetDefaultCompiler()->Compile(std::make_unique<MlirProgram>(text), options);
  }

  template <typename T>
  void ExpectDefinedDivisions(const std::string& element, DType dtype) {
    constexpr T kMin = std::numeric_limits<T>::min(), kMax = std::numeric_limits<T>::max();
    const std::vector<T> a = {7, -7, 0, kMin, kMin, kMax, 7, -7, 7, -7, kMin, kMin, 5, -1, 1, kMax};
    const std::vector<T> b = {0, 0, 0, -1, 0, -1, 2, 2, -2, -2, 1, 2, kMin, -1, -1, kMax};
    ASSERT_OK_AND_ASSIGN(
        LoadedExecutableRef exe,
        Compile(absl::StrReplaceAll(kDivisions, {{"xT>", "x" + element + ">"}}), CompileOptions{}));
    const ShardingRef rows = testing::Named("mesh{x=4}", "P(x)", devices_);
    auto put = [&](const std::vector<T>& v) {
      return client_->MakeArrayFromHostBuffer(v.data(), dtype, Shape({16}), std::nullopt, rows,
                                              HostBufferSemantics::kImmutableOnlyDuringCall,
                                              nullptr);
    };
    ASSERT_OK_AND_ASSIGN(ArrayRef a_array, put(a));
    ASSERT_OK_AND_ASSIGN(ArrayRef b_array, put(b));
    std::vector<ArrayRef> args = {a_array, b_array};
    ASSERT_OK_AND_ASSIGN(ExecuteResult result, exe->Execute(absl::MakeSpan(args)));
    ASSERT_OK(result.status.Await());
    ASSERT_EQ(result.outputs.size(), 7u);
    for (int op = 0; op < 7; ++op) {
      std::vector<T> got(16);
      ASSERT_OK(result.outputs[op]
                    ->CopyToHostBuffer(got.data(), std::nullopt, ArrayCopySemantics::kAlwaysCopy)
                    .Await());
      for (int i = 0; i < 16; ++i) {
        EXPECT_EQ(got[i], Reference<T>(op, a[i], b[i]))
            << "op " << op << " of " << a[i] << " and " << b[i] << " (" << element << ")";
      }
    }
  }

  std::shared_ptr<Client> client_;
  DeviceListRef devices_;
};

TEST_P(HostileProgramTest, IntegerDivisionByZeroAndOverflowHaveDefinedResults) {
  ExpectDefinedDivisions<int32_t>("i32", DType(DType::kS32));
  ExpectDefinedDivisions<int64_t>("i64", DType(DType::kS64));
}

TEST_P(HostileProgramTest, NullShardingsAreInvalidArguments) {
  const std::string text = absl::StrReplaceAll(kDivisions, {{"xT>", "xi32>"}});
  const ShardingRef rows = testing::Named("mesh{x=4}", "P(x)", devices_);
  CompileOptions null_input{.devices = devices_,
                            .input_shardings = {rows, nullptr},
                            .output_shardings = std::vector<ShardingRef>(7, rows)};
  EXPECT_THAT(Compile(text, null_input), StatusIs(absl::StatusCode::kInvalidArgument,
                                                  HasSubstr("input_shardings[1] is null")));
  CompileOptions null_output{.devices = devices_,
                             .input_shardings = {rows, rows},
                             .output_shardings = std::vector<ShardingRef>(7, rows)};
  null_output.output_shardings[6] = nullptr;
  EXPECT_THAT(Compile(text, null_output), StatusIs(absl::StatusCode::kInvalidArgument,
                                                   HasSubstr("output_shardings[6] is null")));
}

INSTANTIATE_TEST_SUITE_P(Topologies, HostileProgramTest,
                         ::testing::Values(Topology{"cpu4", false}, Topology{"vulkan4", true}),
                         [](const auto& info) { return info.param.name; });

// x[n,1] @ y[1,n] summed over its columns: the product, 4 TiB for n = 2^20, is a temporary of the
// kernel (neither an argument nor a value between steps).
std::string OuterProductSum(int64_t n) {
  return absl::StrReplaceAll(R"mlir(
func.func @main(%x: tensor<Nx1xf32> {tessera.sharding = "mesh{x=1} P()"},
                %y: tensor<1xNxf32> {tessera.sharding = "mesh{x=1} P()"})
    -> (tensor<Nxf32> {tessera.sharding = "mesh{x=1} P()"}) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<NxNxf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<NxNxf32>) -> tensor<NxNxf32>
  %p = linalg.matmul ins(%x, %y : tensor<Nx1xf32>, tensor<1xNxf32>)
                     outs(%acc : tensor<NxNxf32>) -> tensor<NxNxf32>
  %o = tensor.empty() : tensor<Nxf32>
  %f = linalg.fill ins(%zero : f32) outs(%o : tensor<Nxf32>) -> tensor<Nxf32>
  %r = linalg.reduce ins(%p : tensor<NxNxf32>) outs(%f : tensor<Nxf32>) dimensions = [1]
    (%a: f32, %b: f32) {
      %s = arith.addf %a, %b : f32
      linalg.yield %s : f32
    }
  return %r : tensor<Nxf32>
}
)mlir",
                             {{"N", absl::StrCat(n)}});
}

// Runs OuterProductSum(n) on one CPU device of `client` with x = 1 and y = 2 everywhere.
absl::StatusOr<ExecuteResult> RunOuterProductSum(Client& client, int64_t n) {
  TESSERA_ASSIGN_OR_RETURN(DeviceListRef one, client.MakeDeviceList(client.devices().first(1)));
  TESSERA_ASSIGN_OR_RETURN(
      LoadedExecutableRef exe,
      client.GetDefaultCompiler()->Compile(std::make_unique<MlirProgram>(OuterProductSum(n)),
                                           CompileOptions{.devices = one}));
  const ShardingRef single = SingleDeviceSharding::Create(client.devices()[0], MemoryKind());
  std::vector<float> ones(n, 1.0f), twos(n, 2.0f);
  TESSERA_ASSIGN_OR_RETURN(ArrayRef x,
                           client.MakeArrayFromHostBuffer(
                               ones.data(), DType(DType::kF32), Shape({n, 1}), std::nullopt, single,
                               HostBufferSemantics::kImmutableOnlyDuringCall, nullptr));
  TESSERA_ASSIGN_OR_RETURN(ArrayRef y,
                           client.MakeArrayFromHostBuffer(
                               twos.data(), DType(DType::kF32), Shape({1, n}), std::nullopt, single,
                               HostBufferSemantics::kImmutableOnlyDuringCall, nullptr));
  std::vector<ArrayRef> args = {x, y};
  return exe->Execute(absl::MakeSpan(args));
}

TEST(KernelTemporaryTest, OneThatCannotBeAllocatedIsResourceExhaustedOnTheStatus) {
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Client> client, testing::CreateCpuTestClient(1));
  constexpr int64_t kN = int64_t{1} << 20;  // the product: 2^42 bytes
  for (int attempt = 0; attempt < 2; ++attempt) {
    SCOPED_TRACE(absl::StrCat("attempt ", attempt));
    ASSERT_OK_AND_ASSIGN(ExecuteResult result, RunOuterProductSum(*client, kN));
    EXPECT_THAT(result.status.Await(),
                StatusIs(absl::StatusCode::kResourceExhausted,
                         AllOf(HasSubstr("cannot allocate a temporary buffer of 4398046511104 "
                                         "bytes"),
                               HasSubstr("kernel_0"))));
    ASSERT_EQ(result.outputs.size(), 1u);
    EXPECT_EQ(result.outputs[0]->GetReadyFuture().Await().code(),
              absl::StatusCode::kResourceExhausted);
  }
  // The same program where the product fits runs, on the same device's threads.
  ASSERT_OK_AND_ASSIGN(ExecuteResult small, RunOuterProductSum(*client, 64));
  ASSERT_OK(small.status.Await());
  std::vector<float> sums(64);
  ASSERT_OK(small.outputs[0]
                ->CopyToHostBuffer(sums.data(), std::nullopt, ArrayCopySemantics::kAlwaysCopy)
                .Await());
  for (float s : sums) EXPECT_EQ(s, 128.0f);
}

}  // namespace
}  // namespace tessera
