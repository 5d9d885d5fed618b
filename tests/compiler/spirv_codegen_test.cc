// The Vulkan code generator's artifacts ("spirv"): their dispatches, bindings and scratch buffers
// for the examples and for each supported op, and every SPIR-V module through spirv-val (Vulkan
// 1.1 rules) where spirv-val is installed (Debian: spirv-tools). The numbers these kernels
// compute are checked on lavapipe by tests/backends/vulkan/vulkan_program_test.cc.

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ifrt/spi/spirv_artifact.h"
#include "tests/compiler/test_programs.h"
#include "tests/testing/status_matchers.h"

namespace tessera {
namespace {

using ::tessera::testing::CompileText;
using ::tessera::testing::ReadFile;
using ::tessera::testing::StatusIs;
using ::testing::HasSubstr;

bool HaveSpirvVal() { return std::system("spirv-val --version > /dev/null 2>&1") == 0; }

// spirv-val's verdict on `code` (OK, or its diagnostics as the message).
absl::Status SpirvVal(const std::string& code) {
  char path[] = "/tmp/tessera_spirv_XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) return absl::InternalError("mkstemp failed");
  close(fd);
  std::ofstream(path, std::ios::binary)
      .write(code.data(), static_cast<std::streamsize>(code.size()));
  const std::string log = absl::StrCat(path, ".log");
  const int rc = std::system(
      absl::StrCat("spirv-val --target-env vulkan1.1 ", path, " > ", log, " 2>&1").c_str());
  std::string text = ReadFile(log);
  std::remove(path);
  std::remove(log.c_str());
  return rc == 0 ? absl::OkStatus() : absl::InvalidArgumentError(text);
}

// The dispatches of a "spirv" artifact's payload (none for an artifact without one: a kernel of
// position variants).
const std::vector<SpirvDispatch>& Dispatches(const KernelArtifact& artifact) {
  static const std::vector<SpirvDispatch>* const kNone = new std::vector<SpirvDispatch>();
  const SpirvPayload* payload = GetSpirvPayload(artifact);
  return payload != nullptr ? payload->dispatches : *kNone;
}

// Every dispatch of `artifact` (and of its position variants): well-formed (bindings in range,
// sizes positive) and, where spirv-val exists, valid SPIR-V.
void CheckArtifact(const KernelStep& step, const KernelArtifact& artifact, bool validate,
                   int64_t max_invocations) {
  EXPECT_EQ(artifact.format, "spirv");
  for (const KernelArtifact& variant : artifact.position_variants) {
    CheckArtifact(step, variant, validate, max_invocations);
  }
  {
    const int args = static_cast<int>(step.inputs.size() + step.outputs.size());
    for (const SpirvDispatch& d : Dispatches(artifact)) {
      SCOPED_TRACE(absl::StrCat(step.name, " / ", d.entry));
      ASSERT_EQ(d.workgroup_size.size(), 3u);
      ASSERT_EQ(d.workgroup_count.size(), 3u);
      EXPECT_LE(d.workgroup_size[0] * d.workgroup_size[1] * d.workgroup_size[2], max_invocations);
      for (int64_t c : d.workgroup_count) EXPECT_LE(c, 65535);
      for (int b : d.bindings) {
        EXPECT_GE(b, 0);
        EXPECT_LT(b, args + static_cast<int>(artifact.scratch_bytes.size()));
      }
      ASSERT_EQ(d.code.size() % 4, 0u);
      ASSERT_GE(d.code.size(), 20u);
      EXPECT_EQ(static_cast<unsigned char>(d.code[0]), 0x03);  // magic 0x07230203, little-endian
      if (validate) {
        EXPECT_OK(SpirvVal(d.code));
      }
    }
  }
}

// `max_invocations`: the target's maxComputeWorkGroupInvocations (128 by default).
void CheckArtifacts(const ProgramPlan& plan, bool validate, int64_t max_invocations = 128) {
  int kernels = 0;
  for (const ProgramStep& step : plan.steps) {
    if (step.kind != ProgramStep::Kind::kKernel) continue;
    ++kernels;
    CheckArtifact(step.kernel, step.kernel.artifacts.at("vulkan"), validate, max_invocations);
  }
  EXPECT_GT(kernels, 0);
}

std::string Example(const std::string& name) {
  return ReadFile(std::string(TESSERA_SOURCE_DIR) + "/examples/" + name);
}

TEST(SpirvCodegenTest, MlpIsOneKernelOfFourDispatches) {
  ASSERT_OK_AND_ASSIGN(ProgramPlan plan, CompileText(Example("mlp.mlir"), 4, {}, {}, {"vulkan"}));
  ASSERT_EQ(plan.steps.size(), 1u);
  const KernelArtifact& artifact = plan.steps[0].kernel.artifacts.at("vulkan");
  EXPECT_FALSE(plan.steps[0].kernel.artifacts.contains("cpu"));
  // fill, matmul, and the bias + relu fused into elementwise kernels.
  EXPECT_GE(Dispatches(artifact).size(), 3u);
  EXPECT_LE(Dispatches(artifact).size(), 4u);
  // One 4x64 f32 temporary: the matmul's accumulator.
  EXPECT_THAT(artifact.scratch_bytes, ::testing::ElementsAre(4 * 64 * 4));
  CheckArtifacts(plan, HaveSpirvVal());
}

TEST(SpirvCodegenTest, MegatronHasBothPlatformsArtifacts) {
  ASSERT_OK_AND_ASSIGN(ProgramPlan plan,
                       CompileText(Example("mlp2_megatron.mlir"), 4, {}, {}, {"cpu", "vulkan"}));
  for (const ProgramStep& step : plan.steps) {
    if (step.kind != ProgramStep::Kind::kKernel) continue;
    EXPECT_EQ(step.kernel.artifacts.at("cpu").format, "mlir-llvm");
    EXPECT_EQ(step.kernel.artifacts.at("vulkan").format, "spirv");
  }
  CheckArtifacts(plan, HaveSpirvVal());
}

// One op per program, each compiled for 2 devices and validated.
std::vector<std::string> OpPrograms() {
  return {
      // transpose
      R"mlir(func.func @main(%a: tensor<6x4xf32> {tessera.sharding = "mesh{x=2} P(x,None)"})
          -> tensor<4x6xf32> {
        %e = tensor.empty() : tensor<4x6xf32>
        %t = linalg.transpose ins(%a : tensor<6x4xf32>) outs(%e : tensor<4x6xf32>)
                              permutation = [1, 0]
        return %t : tensor<4x6xf32>
      })mlir",
      // reduce over the sharded dimension (an all-reduce), f64
      R"mlir(func.func @main(%a: tensor<8x5xf64> {tessera.sharding = "mesh{x=2} P(x,None)"})
          -> tensor<5xf64> {
        %z = arith.constant 0.0 : f64
        %e = tensor.empty() : tensor<5xf64>
        %f = linalg.fill ins(%z : f64) outs(%e : tensor<5xf64>) -> tensor<5xf64>
        %r = linalg.reduce ins(%a : tensor<8x5xf64>) outs(%f : tensor<5xf64>) dimensions = [0]
          (%x: f64, %y: f64) { %s = arith.addf %x, %y : f64
                               linalg.yield %s : f64 }
        return %r : tensor<5xf64>
      })mlir",
      // math and integer ops
      R"mlir(func.func @main(%a: tensor<7xf32>, %b: tensor<7xi32>, %c: tensor<7xi64>)
          -> (tensor<7xf32>, tensor<7xi32>, tensor<7xi64>) {
        %e = math.exp %a : tensor<7xf32>
        %t = math.tanh %e : tensor<7xf32>
        %m = arith.muli %b, %b : tensor<7xi32>
        %s = arith.addi %c, %c : tensor<7xi64>
        return %t, %m, %s : tensor<7xf32>, tensor<7xi32>, tensor<7xi64>
      })mlir",
      // batch matmul and a full reduction to a scalar
      R"mlir(func.func @main(%a: tensor<2x3x5xf32>, %b: tensor<2x5x4xf32>)
          -> (tensor<2x3x4xf32>, tensor<f32>) {
        %z = arith.constant 0.0 : f32
        %e = tensor.empty() : tensor<2x3x4xf32>
        %f = linalg.fill ins(%z : f32) outs(%e : tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
        %c = linalg.batch_matmul ins(%a, %b : tensor<2x3x5xf32>, tensor<2x5x4xf32>)
                                 outs(%f : tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
        %e0 = tensor.empty() : tensor<f32>
        %f0 = linalg.fill ins(%z : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
        %r = linalg.reduce ins(%c : tensor<2x3x4xf32>) outs(%f0 : tensor<f32>)
                           dimensions = [0, 1, 2]
          (%x: f32, %y: f32) { %s = arith.addf %x, %y : f32
                               linalg.yield %s : f32 }
        return %c, %r : tensor<2x3x4xf32>, tensor<f32>
      })mlir",
  };
}

TEST(SpirvCodegenTest, EveryOpCompilesToValidSpirv) {
  const bool validate = HaveSpirvVal();
  for (const std::string& program : OpPrograms()) {
    SCOPED_TRACE(program);
    ASSERT_OK_AND_ASSIGN(ProgramPlan plan, CompileText(program, 2, {}, {}, {"vulkan"}));
    CheckArtifacts(plan, validate);
  }
  if (!validate) GTEST_SKIP() << "spirv-val is not installed (Debian: spirv-tools)";
}

TEST(SpirvCodegenTest, KernelUsingThePositionHasOneVariantPerPosition) {
  const std::string program = R"mlir(
func.func @main(%a: tensor<4x8xf32> {tessera.sharding = "mesh{x=2} P(None,x)"},
                %b: tensor<8x4xf32> {tessera.sharding = "mesh{x=2} P(x,None)"})
    -> (tensor<4x4xf32> {tessera.sharding = "mesh{x=2} P()"}) {
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<4x4xf32>
  %f = linalg.fill ins(%one : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %c = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x4xf32>)
                     outs(%f : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %c : tensor<4x4xf32>
})mlir";
  ASSERT_OK_AND_ASSIGN(ProgramPlan plan, CompileText(program, 2, {}, {}, {"vulkan"}));
  const KernelStep& step = plan.steps[0].kernel;
  EXPECT_TRUE(step.takes_device_position);
  const KernelArtifact& artifact = step.artifacts.at("vulkan");
  EXPECT_THAT(artifact.variant_grid, ::testing::ElementsAre(2));
  ASSERT_EQ(artifact.position_variants.size(), 2u);
  EXPECT_TRUE(Dispatches(artifact).empty());
  // Position 0 fills with 1.0, position 1 with 0.0: the variants differ.
  EXPECT_NE(Dispatches(artifact.position_variants[0])[0].code,
            Dispatches(artifact.position_variants[1])[0].code);
  CheckArtifacts(plan, HaveSpirvVal());
}

// Compiles `text` for 1 Vulkan device of `target`.
absl::StatusOr<ProgramPlan> CompileForTarget(const std::string& text, const KernelTarget& target) {
  ProgramCompileRequest request;
  request.mlir_text = text;
  request.num_devices = 1;
  request.platforms = {"vulkan"};
  request.targets["vulkan"] = target;
  return CreateMlirProgramCompiler()->Compile(request);
}

KernelTarget SmallRangeTarget() {
  KernelTarget target;
  target.max_storage_buffer_range = 1024;
  target.min_storage_buffer_offset_alignment = 64;
  return target;
}

// An elementwise op over 1000 f32 (4000 bytes) on a target whose range is 1024 bytes: chunks of
// 256 elements (1024 bytes, a multiple of the 64-byte alignment) run 3 times, then one kernel for
// the 232 left; every buffer bound by the same ranges.
TEST(SpirvCodegenTest, ElementwiseOpAboveTheRangeIsSplitIntoAlignedRanges) {
  const std::string program = R"mlir(
func.func @main(%a: tensor<1000xf32> {tessera.sharding = "mesh{x=1} P()"},
                %b: tensor<1000xf32> {tessera.sharding = "mesh{x=1} P()"})
    -> (tensor<1000xf32> {tessera.sharding = "mesh{x=1} P()"}) {
  %s = arith.addf %a, %b : tensor<1000xf32>
  %m = arith.mulf %s, %a : tensor<1000xf32>
  return %m : tensor<1000xf32>
})mlir";
  ASSERT_OK_AND_ASSIGN(ProgramPlan plan, CompileForTarget(program, SmallRangeTarget()));
  ASSERT_EQ(plan.steps.size(), 1u);
  const KernelArtifact& artifact = plan.steps[0].kernel.artifacts.at("vulkan");
  ASSERT_EQ(Dispatches(artifact).size(), 2u);
  const SpirvDispatch& chunks = Dispatches(artifact)[0];
  EXPECT_THAT(chunks.bindings, ::testing::ElementsAre(0, 1, 2));
  ASSERT_EQ(chunks.ranges.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_THAT(chunks.ranges[i].offsets, ::testing::Each(i * 1024));
    EXPECT_THAT(chunks.ranges[i].sizes, ::testing::Each(1024));
  }
  const SpirvDispatch& rest = Dispatches(artifact)[1];
  ASSERT_EQ(rest.ranges.size(), 1u);
  EXPECT_THAT(rest.ranges[0].offsets, ::testing::Each(3072));
  EXPECT_THAT(rest.ranges[0].sizes, ::testing::Each(232 * 4));
  EXPECT_NE(chunks.code, rest.code);
  CheckArtifacts(plan, HaveSpirvVal());
}

// A matmul cannot be split: a clear error at compile time naming the op, the size and the limit.
TEST(SpirvCodegenTest, MatmulAboveTheRangeIsResourceExhausted) {
  const std::string program = R"mlir(
func.func @main(%a: tensor<32x32xf32> {tessera.sharding = "mesh{x=1} P()"},
                %b: tensor<32x32xf32> {tessera.sharding = "mesh{x=1} P()"})
    -> (tensor<32x32xf32> {tessera.sharding = "mesh{x=1} P()"}) {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<32x32xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<32x32xf32>) -> tensor<32x32xf32>
  %c = linalg.matmul ins(%a, %b : tensor<32x32xf32>, tensor<32x32xf32>)
                     outs(%f : tensor<32x32xf32>) -> tensor<32x32xf32>
  return %c : tensor<32x32xf32>
})mlir";
  EXPECT_THAT(CompileForTarget(program, SmallRangeTarget()),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       ::testing::AllOf(HasSubstr("linalg.matmul"), HasSubstr("4096 bytes"),
                                        HasSubstr("maxStorageBufferRange (1024 bytes)"))));
}

// f64 / i64 data on a device without shaderFloat64 / shaderInt64: UNIMPLEMENTED at compile time,
// naming the capability.
TEST(SpirvCodegenTest, MissingFloat64OrInt64IsUnimplementedAtCompile) {
  KernelTarget no_float64, no_int64;
  no_float64.float64 = false;
  no_int64.int64 = false;
  const std::string f64 =
      R"mlir(func.func @main(%a: tensor<7xf64> {tessera.sharding = "mesh{x=1} P()"})
      -> (tensor<7xf64> {tessera.sharding = "mesh{x=1} P()"}) {
    %s = arith.addf %a, %a : tensor<7xf64>
    return %s : tensor<7xf64>
  })mlir";
  const std::string i64 =
      R"mlir(func.func @main(%a: tensor<7xi64> {tessera.sharding = "mesh{x=1} P()"})
      -> (tensor<7xi64> {tessera.sharding = "mesh{x=1} P()"}) {
    %s = arith.addi %a, %a : tensor<7xi64>
    return %s : tensor<7xi64>
  })mlir";
  EXPECT_THAT(CompileForTarget(f64, no_float64),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("Float64 (shaderFloat64)")));
  EXPECT_THAT(CompileForTarget(i64, no_int64),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("Int64 (shaderInt64)")));
  // The other capability is enough.
  EXPECT_OK(CompileForTarget(f64, no_int64).status());
  EXPECT_OK(CompileForTarget(i64, no_float64).status());
}

// An i32 reduction of all of `dims` with `op` (arith.addi, arith.muli, ...) into 0.
std::string IntegerReductionProgram(const std::vector<int64_t>& dims, const std::string& op) {
  const std::string t = absl::StrCat("tensor<", absl::StrJoin(dims, "x"), "xi32>");
  std::vector<int64_t> all(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) all[i] = static_cast<int64_t>(i);
  return absl::StrCat("func.func @main(%a: ", t, R"mlir( {tessera.sharding = "mesh{x=1} P()"})
    -> (tensor<i32> {tessera.sharding = "mesh{x=1} P()"}) {
  %z = arith.constant 0 : i32
  %e = tensor.empty() : tensor<i32>
  %f = linalg.fill ins(%z : i32) outs(%e : tensor<i32>) -> tensor<i32>
  %r = linalg.reduce ins(%a : )mlir",
                      t, ") outs(%f : tensor<i32>) dimensions = [", absl::StrJoin(all, ", "),
                      "]\n    (%x: i32, %y: i32) { %s = ", op,
                      R"mlir( %x, %y : i32
                         linalg.yield %s : i32 }
  return %r : tensor<i32>
})mlir");
}

// Where the driver ends a shader's loops after max_loop_iterations in all (lavapipe: 65535), a
// kernel whose one invocation would loop longer (one invocation walking a product, or a reduction
// of two dimensions) is UNIMPLEMENTED at Compile, naming both counts; nested loops count once per
// iteration of the loops around them. Without a limit it compiles; sums (float or integer) of
// one dimension are split over work-groups and loop briefly.
TEST(SpirvCodegenTest, LoopsLongerThanTheDriverRunsAreRefused) {
  KernelTarget lavapipe;
  lavapipe.max_loop_iterations = 65535;
  EXPECT_OK(CompileForTarget(IntegerReductionProgram({65535}, "arith.muli"), lavapipe).status());
  EXPECT_THAT(CompileForTarget(IntegerReductionProgram({65536}, "arith.muli"), lavapipe),
              StatusIs(absl::StatusCode::kUnimplemented,
                       ::testing::AllOf(HasSubstr("runs 65536 loop iterations"),
                                        HasSubstr("after 65535 in all"))));
  EXPECT_THAT(CompileForTarget(IntegerReductionProgram({300, 300}, "arith.addi"), lavapipe),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("runs 90300 loop iterations")));
  ASSERT_OK_AND_ASSIGN(
      ProgramPlan plan,
      CompileForTarget(IntegerReductionProgram({300, 300}, "arith.addi"), KernelTarget{}));
  CheckArtifacts(plan, HaveSpirvVal());
  // An i32 sum of one dimension: fill, partials, totals.
  ASSERT_OK_AND_ASSIGN(
      ProgramPlan sum,
      CompileForTarget(IntegerReductionProgram({1000003}, "arith.addi"), lavapipe));
  EXPECT_EQ(Dispatches(sum.steps[0].kernel.artifacts.at("vulkan")).size(), 3u);
  CheckArtifacts(sum, HaveSpirvVal());
}

// A sum over a long extent: two dispatches (slices reduced by work-groups through workgroup
// memory into a scratch buffer of partials, then the partials combined); a short one stays one.
TEST(SpirvCodegenTest, LongReductionRunsInTwoPasses) {
  auto program = [](int64_t n) {
    const std::string t = absl::StrCat("tensor<3x", n, "xf32>");
    return absl::StrCat(R"mlir(func.func @main(%a: )mlir", t,
                        R"mlir( {tessera.sharding = "mesh{x=1} P()"})
    -> (tensor<3xf32> {tessera.sharding = "mesh{x=1} P()"}) {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<3xf32>) -> tensor<3xf32>
  %r = linalg.reduce ins(%a : )mlir",
                        t, R"mlir() outs(%f : tensor<3xf32>) dimensions = [1]
    (%x: f32, %y: f32) { %s = arith.addf %x, %y : f32
                         linalg.yield %s : f32 }
  return %r : tensor<3xf32>
})mlir");
  };
  ASSERT_OK_AND_ASSIGN(ProgramPlan plan, CompileForTarget(program(5000), KernelTarget{}));
  const KernelArtifact& artifact = plan.steps[0].kernel.artifacts.at("vulkan");
  // fill, partials, totals; the partials: 3 outputs x 5 slices (5000 / (64 x 16), rounded up).
  ASSERT_EQ(Dispatches(artifact).size(), 3u);
  EXPECT_THAT(artifact.scratch_bytes, ::testing::ElementsAre(3 * 5 * 4));
  EXPECT_THAT(Dispatches(artifact)[1].workgroup_count, ::testing::ElementsAre(5, 3, 1));
  EXPECT_THAT(Dispatches(artifact)[2].workgroup_count, ::testing::ElementsAre(1, 3, 1));
  EXPECT_THAT(Dispatches(artifact)[1].workgroup_size, ::testing::ElementsAre(64, 1, 1));
  CheckArtifacts(plan, HaveSpirvVal());
  ASSERT_OK_AND_ASSIGN(ProgramPlan short_plan, CompileForTarget(program(100), KernelTarget{}));
  EXPECT_EQ(Dispatches(short_plan.steps[0].kernel.artifacts.at("vulkan")).size(), 2u);
  // A maximum to a scalar: one output, 98 slices (100003 / 1024, rounded up).
  const std::string scalar = R"mlir(
func.func @main(%a: tensor<100003xf32> {tessera.sharding = "mesh{x=1} P()"})
    -> (tensor<f32> {tessera.sharding = "mesh{x=1} P()"}) {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %r = linalg.reduce ins(%a : tensor<100003xf32>) outs(%f : tensor<f32>) dimensions = [0]
    (%x: f32, %y: f32) { %s = arith.maximumf %x, %y : f32
                         linalg.yield %s : f32 }
  return %r : tensor<f32>
})mlir";
  ASSERT_OK_AND_ASSIGN(ProgramPlan scalar_plan, CompileForTarget(scalar, KernelTarget{}));
  const KernelArtifact& scalar_artifact = scalar_plan.steps[0].kernel.artifacts.at("vulkan");
  ASSERT_EQ(Dispatches(scalar_artifact).size(), 3u);
  EXPECT_THAT(scalar_artifact.scratch_bytes, ::testing::ElementsAre(98 * 4));
  EXPECT_THAT(Dispatches(scalar_artifact)[1].workgroup_count, ::testing::ElementsAre(98, 1, 1));
  CheckArtifacts(scalar_plan, HaveSpirvVal());
}

// A reduction of the last dimension with many outputs: one dispatch after the fill, one invocation
// per row (64 per work-group), no scratch buffer; rows of a multiple of 4 elements or not alike.
TEST(SpirvCodegenTest, ManyRowsReduceOneInvocationPerRow) {
  auto program = [](int64_t rows, int64_t cols) {
    const std::string t = absl::StrCat("tensor<", rows, "x", cols, "xf32>");
    const std::string o = absl::StrCat("tensor<", rows, "xf32>");
    return absl::StrCat("func.func @main(%a: ", t, R"mlir( {tessera.sharding = "mesh{x=1} P()"})
    -> ()mlir",
                        o, R"mlir( {tessera.sharding = "mesh{x=1} P()"}) {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : )mlir",
                        o, "\n  %f = linalg.fill ins(%z : f32) outs(%e : ", o, ") -> ", o,
                        "\n  %r = linalg.reduce ins(%a : ", t, ") outs(%f : ", o,
                        R"mlir() dimensions = [1]
    (%x: f32, %y: f32) { %s = arith.addf %x, %y : f32
                         linalg.yield %s : f32 }
  return %r : )mlir",
                        o, "\n}");
  };
  for (const auto& [rows, cols] : {std::pair<int64_t, int64_t>{4096, 4096}, {300, 1031}}) {
    SCOPED_TRACE(absl::StrCat(rows, "x", cols));
    ASSERT_OK_AND_ASSIGN(ProgramPlan plan, CompileForTarget(program(rows, cols), KernelTarget{}));
    const KernelArtifact& artifact = plan.steps[0].kernel.artifacts.at("vulkan");
    ASSERT_EQ(Dispatches(artifact).size(), 2u);
    EXPECT_TRUE(artifact.scratch_bytes.empty());
    EXPECT_THAT(Dispatches(artifact)[1].workgroup_count,
                ::testing::ElementsAre((rows + 63) / 64, 1, 1));
    EXPECT_THAT(Dispatches(artifact)[1].workgroup_size, ::testing::ElementsAre(64, 1, 1));
    CheckArtifacts(plan, HaveSpirvVal());
  }
}

// The matmul is register-blocked: 4x4 blocks of C per invocation on 16x4 invocations, B and C
// bound as vec4 arrays where N is a multiple of 4 (16 vec4 columns per work-group), as scalars
// otherwise (64 columns); the work-group shrinks where the device allows fewer invocations. On a
// CPU implementation (lavapipe) with vec4s and a C of at least 64x512 elements: 16x32 blocks on
// 8x4 invocations (256 columns and 64 rows per work-group).
TEST(SpirvCodegenTest, MatmulIsRegisterBlocked) {
  auto program = [](int n) {
    return absl::StrReplaceAll(R"mlir(
func.func @main(%a: tensor<40x24xf32> {tessera.sharding = "mesh{x=1} P()"},
                %b: tensor<24xNxf32> {tessera.sharding = "mesh{x=1} P()"})
    -> (tensor<40xNxf32> {tessera.sharding = "mesh{x=1} P()"}) {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<40xNxf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<40xNxf32>) -> tensor<40xNxf32>
  %c = linalg.matmul ins(%a, %b : tensor<40x24xf32>, tensor<24xNxf32>)
                     outs(%f : tensor<40xNxf32>) -> tensor<40xNxf32>
  return %c : tensor<40xNxf32>
})mlir",
                               {{"xN", absl::StrCat("x", n)}});
  };
  KernelTarget small;
  small.max_workgroup_invocations = 32;
  KernelTarget cpu;
  cpu.cpu_device = true;
  struct Case {
    int n;
    KernelTarget target;
    int64_t group_x, group_y, groups_x, groups_y;
  };
  for (const Case& c :
       {Case{72, KernelTarget{}, 16, 4, (72 / 4 + 15) / 16, (40 + 15) / 16},
        Case{70, KernelTarget{}, 16, 4, (70 + 63) / 64, (40 + 15) / 16},
        Case{72, small, 16, 2, 2, (40 + 7) / 8}, Case{820, cpu, 8, 4, (820 + 255) / 256, 1},
        // A small C on a CPU device: 4x4 blocks (16x32 blocks would compute mostly clamped ones).
        Case{72, cpu, 16, 4, (72 / 4 + 15) / 16, (40 + 15) / 16},
        // Scalars on a CPU device too: 4x4 blocks.
        Case{70, cpu, 16, 4, (70 + 63) / 64, (40 + 15) / 16}}) {
    SCOPED_TRACE(absl::StrCat(c.n, " columns, ", c.target.max_workgroup_invocations, " invocations",
                              c.target.cpu_device ? ", a CPU device" : ""));
    ASSERT_OK_AND_ASSIGN(ProgramPlan plan, CompileForTarget(program(c.n), c.target));
    const KernelArtifact& artifact = plan.steps[0].kernel.artifacts.at("vulkan");
    ASSERT_GE(Dispatches(artifact).size(), 2u);  // fill (one or two launches), matmul
    const SpirvDispatch& matmul = Dispatches(artifact).back();
    EXPECT_THAT(matmul.workgroup_size, ::testing::ElementsAre(c.group_x, c.group_y, 1));
    EXPECT_THAT(matmul.workgroup_count, ::testing::ElementsAre(c.groups_x, c.groups_y, 1));
    CheckArtifacts(plan, HaveSpirvVal(), c.target.max_workgroup_invocations);
  }
}

TEST(SpirvCodegenTest, UnknownPlatformIsUnimplemented) {
  EXPECT_THAT(CompileText(Example("mlp.mlir"), 4, {}, {}, {"metal"}),
              StatusIs(absl::StatusCode::kUnimplemented,
                       HasSubstr("no code generator for platform 'metal'")));
}

}  // namespace
}  // namespace tessera
