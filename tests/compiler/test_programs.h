// tests/compiler/test_programs.h: helpers shared by the compiler tests: compiling a program text
// and summarising a plan's steps.

#ifndef TESSERA_TESTS_COMPILER_TEST_PROGRAMS_H_
#define TESSERA_TESTS_COMPILER_TEST_PROGRAMS_H_

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler/mlir_program_compiler.h"
#include "ifrt/spi/program_plan.h"

namespace tessera::testing {

inline absl::StatusOr<ProgramPlan> CompileText(const std::string& text, int64_t num_devices = 4,
                                               std::vector<ProgramSharding> params = {},
                                               std::vector<ProgramSharding> results = {},
                                               std::vector<std::string> platforms = {"cpu"}) {
  ProgramCompileRequest request;
  request.mlir_text = text;
  request.num_devices = num_devices;
  request.platforms = std::move(platforms);
  request.parameter_shardings = std::move(params);
  request.result_shardings = std::move(results);
  return CreateMlirProgramCompiler()->Compile(request);
}

using ::tessera::CollectiveName;  // ifrt/spi/program_plan.h

// The steps as words: "kernel", "all_reduce", ... in order.
inline std::vector<std::string> StepKinds(const ProgramPlan& plan) {
  std::vector<std::string> kinds;
  for (const ProgramStep& step : plan.steps) {
    kinds.push_back(step.kind == ProgramStep::Kind::kKernel ? "kernel"
                                                            : CollectiveName(step.collective.kind));
  }
  return kinds;
}

// y = relu(x @ w1 + b1) @ w2 over mesh{x=4}, x f32[b, n] and y replicated, w1 column-sharded, b1
// and w2 row-sharded, with one zero fill %acc for both matmuls' inits and the ReLU (as
// benchmarks/ifrt/program_benchmark.cc writes the Megatron MLP).
inline std::string MegatronWithSharedFill(int64_t b, int64_t n) {
  const std::string bn = "tensor<" + std::to_string(b) + "x" + std::to_string(n) + "xf32>";
  const std::string nn = "tensor<" + std::to_string(n) + "x" + std::to_string(n) + "xf32>";
  const std::string vn = "tensor<" + std::to_string(n) + "xf32>";
  auto attr = [](const std::string& spec) {
    return " {tessera.sharding = \"mesh{x=4} " + spec + "\"}";
  };
  return "func.func @main(%x: " + bn + attr("P()") + ", %w1: " + nn + attr("P(None,x)") +
         ", %b1: " + vn + attr("P(x)") + ", %w2: " + nn + attr("P(x,None)") + ") -> (" + bn +
         attr("P()") + ") {\n  %zero = arith.constant 0.0 : f32\n  %e = tensor.empty() : " + bn +
         "\n  %acc = linalg.fill ins(%zero : f32) outs(%e : " + bn + ") -> " + bn +
         "\n  %mm1 = linalg.matmul ins(%x, %w1 : " + bn + ", " + nn + ") outs(%acc : " + bn +
         ") -> " + bn + "\n  %bias = linalg.broadcast ins(%b1 : " + vn + ") outs(%e : " + bn +
         ") dimensions = [0]\n  %pre = arith.addf %mm1, %bias : " + bn +
         "\n  %h = arith.maximumf %pre, %acc : " + bn +
         "\n  %y = linalg.matmul ins(%h, %w2 : " + bn + ", " + nn + ") outs(%acc : " + bn +
         ") -> " + bn + "\n  return %y : " + bn + "\n}";
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace tessera::testing

#endif  // TESSERA_TESTS_COMPILER_TEST_PROGRAMS_H_
