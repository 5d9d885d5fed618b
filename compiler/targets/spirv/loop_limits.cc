#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "compiler/targets/spirv/spirv_codegen.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVDialect.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"
#include "mlir/Dialect/SPIRV/IR/TargetAndABI.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/SPIRV/Serialization.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/Passes.h"
#include "mlir/Transforms/RegionUtils.h"

namespace tessera::compiler::spirv {

namespace {

// Loop counts saturate here: far above any driver's limit, and never an overflow however large the
// program's (caller-given) shapes.
constexpr int64_t kIterationCap = int64_t{1} << 50;

int64_t SaturatingProduct(int64_t a, int64_t b) {
  return b != 0 && a > kIterationCap / b ? kIterationCap : a * b;
}

// `loop`'s iterations (saturated at kIterationCap), or 1 where its bounds are not constants.
int64_t TripCountOrOne(mlir::scf::ForOp loop) {
  std::optional<int64_t> lb = mlir::getConstantIntValue(loop.getLowerBound());
  std::optional<int64_t> ub = mlir::getConstantIntValue(loop.getUpperBound());
  std::optional<int64_t> step = mlir::getConstantIntValue(loop.getStep());
  if (!lb || !ub || !step || *step <= 0) return 1;
  if (*ub <= *lb) return 0;
  const uint64_t span = static_cast<uint64_t>(*ub) - static_cast<uint64_t>(*lb);
  return static_cast<int64_t>(
      std::min<uint64_t>(span / static_cast<uint64_t>(*step) + (span % *step != 0), kIterationCap));
}

}  // namespace

// Where the device's driver ends a shader's loops after target.max_loop_iterations iterations in
// all (Mesa's llvmpipe, lavapipe: 65535, counted over every loop of one invocation), a kernel one
// of whose invocations would run more is UNIMPLEMENTED at Compile, naming the kernel and both
// counts, instead of stopping short on the device and computing a wrong result. An invocation's
// count: each scf.for of its launch once per iteration of the loops around it (a loop of unknown
// bounds, which the code generators make only over short extents such as tiles and work-group
// slices, as one).
absl::Status CheckLoopIterations(mlir::func::FuncOp func, const std::string& name,
                                 const KernelTarget& target) {
  if (target.max_loop_iterations <= 0) return absl::OkStatus();
  for (mlir::Operation& launch : func.getBody().front()) {
    if (!mlir::isa<mlir::scf::ParallelOp, mlir::gpu::LaunchOp>(launch)) continue;
    int64_t total = 0;
    launch.walk([&](mlir::scf::ForOp loop) {
      int64_t runs = TripCountOrOne(loop);
      for (auto outer = loop->getParentOfType<mlir::scf::ForOp>();
           outer && launch.isProperAncestor(outer);
           outer = outer->getParentOfType<mlir::scf::ForOp>()) {
        runs = SaturatingProduct(runs, std::max<int64_t>(TripCountOrOne(outer), 1));
      }
      total = std::min(total + runs, kIterationCap);
    });
    if (total > target.max_loop_iterations) {
      return absl::UnimplementedError(absl::StrCat(
          name, ": an invocation of this kernel runs ", total,
          " loop iterations, and this device's driver (Mesa's llvmpipe) ends a shader's loops "
          "after ",
          target.max_loop_iterations,
          " in all, which would cut the result short; shard the program further, or run it on "
          "CPU devices or a GPU (a sum, maximum or minimum over one dimension is split over "
          "work-groups and has no such limit)"));
    }
  }
  return absl::OkStatus();
}

}  // namespace tessera::compiler::spirv
