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

inline std::string CollectiveName(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return "all_reduce";
    case CollectiveKind::kAllGather:
      return "all_gather";
    case CollectiveKind::kAllToAll:
      return "all_to_all";
    case CollectiveKind::kAllSlice:
      return "all_slice";
    case CollectiveKind::kReduceScatter:
      return "reduce_scatter";
  }
  return "?";
}

// The steps as words: "kernel", "all_reduce", ... in order.
inline std::vector<std::string> StepKinds(const ProgramPlan& plan) {
  std::vector<std::string> kinds;
  for (const ProgramStep& step : plan.steps) {
    kinds.push_back(step.kind == ProgramStep::Kind::kKernel ? "kernel"
                                                            : CollectiveName(step.collective.kind));
  }
  return kinds;
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace tessera::testing

#endif  // TESSERA_TESTS_COMPILER_TEST_PROGRAMS_H_
