#ifndef TESSERA_COMPILER_TARGETS_SPIRV_SPIRV_CODEGEN_H_
#define TESSERA_COMPILER_TARGETS_SPIRV_SPIRV_CODEGEN_H_

// The stages of SPIR-V code generation (compiler/targets/spirv/), shared by its files; internal to
// compiler/. The order they run in, and why, is vulkan_codegen.cc's opening comment:
//   pipelines.cc        the pass pipelines, named ops generalized, capabilities checked
//   matmul_tiling.cc    each matmul -> a register-blocked gpu.launch (4x4 of C per invocation)
//   vector_elementwise.cc  elementwise ops on 32-bit elements -> vec4 launches
//   parallel_loops.cc   linalg -> scf.parallel, collapsed and tiled by kThreadsPerGroup
//   loop_limits.cc      the loop limits of the target device (llvmpipe: 65535 iterations)
//   large_ops.cc        elementwise ops above max_storage_buffer_range split into chunks
//   dispatches.cc       the host function's launches -> SpirvDispatch list
// Free functions over MLIR; not thread-safe beyond MLIR's own rules (one module per call).

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "compiler/internal.h"
#include "ifrt/spi/spirv_artifact.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

namespace tessera::compiler::spirv {

// Invocations per work-group: below every Vulkan device's maxComputeWorkGroupInvocations (at
// least 128 by the specification).
inline constexpr int64_t kThreadsPerGroup = 64;

// Work-groups along one grid axis: maxComputeWorkGroupCount is at least 65535 on every device.
inline constexpr int64_t kMaxGroupsPerAxis = 65535;

// A collapsed loop longer than kThreadsPerGroup * kMaxGroupsPerAxis runs over a 2-D grid whose
// rows hold this many iterations.
inline constexpr int64_t kRowIterations = 65536;

// Element indices of a split kernel's chunk stay below 2^30 (SPIR-V indices are 32-bit).
inline constexpr int64_t kMaxChunkElements = int64_t{1} << 30;

// The dispatches of each split op (SplitLargeElementwiseOps), by the name of the function its
// call in the host function calls; their bindings index that call's operands.
using SplitDispatches = std::map<std::string, std::vector<SpirvDispatch>>;

// The target a kernel is compiled for: SPIR-V 1.3 (Vulkan 1.1 and later), 64-bit integers and
// floats where the device has them (spirv-update-vce keeps only the capabilities a kernel uses),
// and the device's work-group limits and subgroup size.
std::string TargetEnvText(const KernelTarget& target);

// Runs the textual pass pipeline `pipeline` on `module`; INTERNAL naming `what` on failure.
absl::Status RunPipelineText(mlir::ModuleOp module, const std::string& pipeline,
                             const std::string& what);

// Elementwise arith / math ops on tensors -> linalg.generic; chains of elementwise generics fused
// into one (one kernel, no intermediate buffer) by FuseElementwiseGenerics in between. Named ops
// were generalized before (matmuls excepted: they get their own kernel, EmitTiledMatmuls).
std::string VulkanTensorPipeline();

// Canonicalization and CSE after fusion.
std::string VulkanFusionCleanupPipeline();

// What linalg-fuse-elementwise-ops does (elementwise fusion of single-use producers, constant
// folding of linalg ops, the linalg canonicalizations; top down), the fused bodies bounded
// (FusedBodyFits: the pass's fusion is quadratic in the length of a chain).
absl::Status FuseElementwiseGenerics(mlir::ModuleOp kernel, const std::string& name);

// Tensors -> memrefs, results -> out-params (as on CPU, no deallocation: temporaries are scratch
// buffers the launch allocates).
void BuildBufferizationPipeline(mlir::OpPassManager& pm);

// scf.parallel -> gpu.launch (outer loops: work-groups, inner: invocations), then outlined.
std::string GpuOutliningPipeline();

// gpu.func -> spirv.func in spirv.module (storage buffers for memrefs, SCF and arith in the same
// conversion), then the interface variables and the minimal version / capabilities.
std::string SpirvPipeline();

// Each scf.for with results in `kernel` that may run no iteration (its trip count is not a
// constant of at least 1) is put in an scf.if on `lower < upper` whose else branch yields the
// initial values. Why: MLIR's SCF-to-SPIR-V conversion (LLVM 22) returns the loop's results
// through Function variables that only the loop body stores, so a loop that runs no iteration
// returns an uninitialized value, not its initial values (+0 on lavapipe: an invocation of a
// reduction with nothing to walk then added a +0 to its work-group tree;
// llvm/llvm-project#206280 fixes the conversion upstream). Run before SpirvPipeline.
void GuardZeroTripLoops(mlir::ModuleOp kernel);

// Each entry point of `kernel`'s SPIR-V modules declares SignedZeroInfNanPreserve for 32-bit (and
// 64-bit) floats where `target` allows it: without it the driver may assume no NaN, infinity or
// signed zero (lavapipe folds a product whose accumulator starts at a constant -0.0 to +0.0,
// dropping a NaN).
void PreserveSignedZeroInfNan(mlir::ModuleOp kernel, const KernelTarget& target);

// memref.copy (bufferization's copies into out-params) -> linalg.copy, which becomes a kernel.
void CopiesToLinalg(mlir::func::FuncOp func);

// Named linalg ops (fill, broadcast, transpose, reduce, batch_matmul, ...) -> linalg.generic;
// linalg.matmul stays named for EmitTiledMatmuls. The tensor ops that make views or copies
// (reshapes, slices, pad, concat) become linalg.generic first (TensorOpsAsLinalg): a view of a
// buffer cannot be a dispatch's argument.
absl::Status GeneralizeNamedOps(mlir::func::FuncOp func, const std::string& name);

// UNIMPLEMENTED when the kernel holds f64 / i64 data and `target` lacks the Float64 / Int64
// capability (the device's shaderFloat64 / shaderInt64): said at compile time, not at load.
absl::Status CheckCapabilities(mlir::func::FuncOp func, const std::string& name,
                               const KernelTarget& target);

// Each tileable linalg.matmul of `func` (static, identity layouts, one element type) -> one
// register-blocked gpu.launch (a 4x4 block of C per invocation, vec4 loads where the shapes allow,
// no workgroup memory), its work-group size within `target`'s limits.
void EmitTiledMatmuls(mlir::func::FuncOp func, const KernelTarget& target);

// Each top-level elementwise linalg.generic of `func` on 32-bit elements (identity maps on static
// buffers of one shape, arith / math ops, at least 4 elements) -> a gpu.launch on its buffers
// viewed as vector<4xT> arrays (several vectors per invocation, work-group size from `target`),
// plus a one-invocation launch for the last N % 4 elements; the same results bit for bit. Other
// generics are left to the scalar parallel loops.
void EmitVectorElementwise(mlir::func::FuncOp func, const KernelTarget& target);

// Lanes of the vec4 kernels' loads and stores (EmitVectorElementwise, the row reductions).
inline constexpr int64_t kVectorLanes = 4;

// Whether `type` is a scalar the vec4 kernels compute on: a 32-bit integer or float, or a boolean
// (the result of a compare).
bool IsLaneType(mlir::Type type);

// Whether `op` (in a linalg body) applies to vectors lane by lane, as the SPIR-V conversion takes
// them: an arith or math op with the elementwise-mappable traits on lane types, a constant, or the
// body's yield.
bool IsLaneOp(mlir::Operation& op);

// Every linalg.generic (named ops were generalized) with its parallel dimensions first: they then
// all become the scf.parallel loop the kernel's invocations share, the reductions scf.for loops
// inside it.
absl::Status ParallelDimensionsFirst(mlir::func::FuncOp func, const std::string& name);

// Every top-level scf.parallel: normalized and collapsed to one dimension, split over a 2-D grid
// when longer than one grid axis holds, then tiled: the outer loop becomes the work-groups, the
// inner one (kThreadsPerGroup iterations, guarded by an scf.if where it overruns) the invocations.
absl::Status TileParallelLoops(mlir::func::FuncOp func, const std::string& name);

// Where the device's driver ends a shader's loops after target.max_loop_iterations iterations in
// all (Mesa's llvmpipe, lavapipe: 65535, counted over every loop of one invocation), a kernel one
// of whose invocations would run more is UNIMPLEMENTED at Compile, naming the kernel and both
// counts, instead of stopping short on the device and computing a wrong result. An invocation's
// count: each scf.for of its launch once per iteration of the loops around it (a loop of unknown
// bounds, which the code generators make only over short extents such as tiles and work-group
// slices, as one).
absl::Status CheckLoopIterations(mlir::func::FuncOp func, const std::string& name,
                                 const KernelTarget& target);

// The target environment on the module; on every kernel its work-group size as the entry point
// ABI (from the launch's known block size).
absl::Status SetSpirvAttributes(mlir::ModuleOp module, const std::string& name,
                                const KernelTarget& target);

// The host function, after outlining, as the artifact's dispatch list and scratch buffers.
absl::Status CollectDispatches(mlir::ModuleOp module, mlir::func::FuncOp host,
                               const SplitDispatches& splits, KernelArtifact& artifact);

// The trailing i64 arguments (the device's grid position) are often dead once the kernel is
// simplified (the partitioner's `scf.if` on the position whose branches agree, or a position made
// constant by LowerPositionVariants): then removed. UNIMPLEMENTED where a kernel still reads one.
absl::Status DropPositionArguments(mlir::func::FuncOp func, const std::string& name);

// Every top-level linalg op of the (bufferized) host function binding a buffer above the
// target's max_storage_buffer_range: split into ranges (SplitOp) when elementwise, else
// RESOURCE_EXHAUSTED naming the op, the size and the limit.
absl::Status SplitLargeElementwiseOps(mlir::func::FuncOp func, const std::string& name,
                                      const KernelTarget& target, SplitDispatches& splits);

// Linalg on buffers (and tiled matmul launches) -> parallel loops -> kernels -> SPIR-V -> the
// dispatches of `func`.
absl::StatusOr<KernelArtifact> LowerLoopsToDispatches(mlir::ModuleOp kernel,
                                                      mlir::func::FuncOp func,
                                                      const std::string& name,
                                                      const KernelTarget& target,
                                                      const SplitDispatches& splits);

}  // namespace tessera::compiler::spirv

#endif  // TESSERA_COMPILER_TARGETS_SPIRV_SPIRV_CODEGEN_H_
