#ifndef TESSERA_COMPILER_INTERNAL_H_
#define TESSERA_COMPILER_INTERNAL_H_

// compiler/internal.h: the steps of the MLIR program compiler (mlir_program_compiler.h), one
// function each, in the order Compile runs them. Internal to compiler/ (not installed); every
// function works on IR owned by the caller's MLIRContext, which is confined to one Compile call
// (one thread).
//
//   ParseProgram          text -> module with a verified func.func @main (parse.cc), or
//   ImportProgram         StableHLO text -> the same (stablehlo/, then parse.cc's checks)
//   ResolveShardings      request / tessera.sharding attributes -> one mesh, a spec per value
//                         (shardings.cc)
//   AnnotateShardings     shard.grid, shard.sharding and shard.shard ops around @main
//                         (partition.cc)
//   PartitionProgram      sharding propagation, GatherUncombinableReductions (reduction_check.cc),
//                         reshards split into steps (reshard_steps.cc), SPMD partitioning,
//                         collectives of constant fills folded into local fills,
//                         CheckReductionsCombined (partition.cc)
//   CutIntoSteps          partitioned @main -> plan skeleton + one kernel module per kernel step
//                         (cut.cc)
//   DefineIntegerDivision integer division and remainder with defined results for every operand
//                         pair, on each kernel module (integer_division.cc)
//   LowerKernelForCpu     a kernel module (tensors) -> "mlir-llvm" artifact
//                         (targets/llvm_cpu/cpu_codegen.cc)
//   LowerKernelForVulkan  a kernel module (tensors) -> "spirv" artifact
//                         (targets/spirv/vulkan_codegen.cc and the stages of spirv_codegen.h)
//   (both code generators expand float max / min exactly: ExpandFloatMinMax, float_min_max.cc)

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ifrt/spi/program_compiler.h"
#include "ifrt/spi/program_plan.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Pass/PassManager.h"
#include "sharding/mesh.h"
#include "sharding/partition_spec.h"

namespace tessera::compiler {

// The name of the argument / result attribute that carries a sharding in the program text.
inline constexpr std::string_view kShardingAttrName = "tessera.sharding";

// The array<i64> attribute of an argument whose sharding's mesh lists the program's devices in
// another order: the mesh's slot i is the program's device order[i] (a permutation). The
// StableHLO importer sets it from a Shardy mesh's device_ids; the plan's ProgramSharding carries
// it to the runtime.
inline constexpr std::string_view kDeviceOrderAttrName = "tessera.device_order";

// Whether `ids` lists each of 0, 1, ..., `n` - 1 once (a Shardy mesh's device_ids, a
// `tessera.device_order`).
inline bool IsPermutation(llvm::ArrayRef<int64_t> ids, int64_t n) {
  if (static_cast<int64_t>(ids.size()) != n) return false;
  std::vector<bool> seen(static_cast<size_t>(n), false);
  for (int64_t id : ids) {
    if (id < 0 || id >= n || seen[id]) return false;
    seen[id] = true;
  }
  return true;
}

// The unit attribute of an argument / result of integer type that the caller sees as unsigned
// (u8 ... u64; the program computes on signless integers, whose bits are the same). The
// StableHLO importer sets it for ui8 ... ui64 at @main's boundary.
inline constexpr std::string_view kUnsignedAttrName = "tessera.unsigned";

// The unit attribute of an i16 argument / result that the caller sees as bf16 (its bits; the
// StableHLO importer computes bf16 in f32 and converts at @main's boundary).
inline constexpr std::string_view kBf16AttrName = "tessera.bf16";
// The same for f16.
inline constexpr std::string_view kF16AttrName = "tessera.f16";

// The dictionary attribute of a linalg.generic that is a StableHLO scatter (the importer's
// ConvertScatter: loops over the operand, then over the updates' scatter dimensions and the offsets
// of windows over part of a dimension; every update matched against every element). It says where
// each update lands, for code generators that write each update where it lands instead
// (compiler/targets/llvm_cpu/scatters_as_loops.cc):
//   index_vector_dim  i64: the dimension of the captured indices tensor that holds index vectors
//   unsigned          bool: the indices are unsigned
//   index_loops       i64 array: per dimension of the indices other than index_vector_dim, the
//                     generic's loop its position is
//   index_of_operand  i64 array, per operand dimension: the index vector's element that starts it,
//                     or -1 (start 0)
//   inserted          i64 array, per operand dimension: 1 where the update window has no
//                     dimension for it (it lands at its start)
//   window_loop       i64 array, per operand dimension: the loop of the window's offset where the
//                     window covers part of the dimension, else -1 (the operand's own loop)
//   window_size       i64 array, per operand dimension: the update window's extent in it
inline constexpr std::string_view kScatterAttrName = "tessera.scatter";

// The unit attribute of a linalg.generic that makes a loop's positions, 0 ... n - 1, for another
// op to read as an input instead of linalg.index (the StableHLO importer's gathers), so that the
// partitioner may split that op's loops. Like every op reading its position it runs whole on every
// device, but annotated so only after a first propagation: annotated before, its replicated
// result would make the propagation replicate the op reading it (partition.cc).
inline constexpr std::string_view kLoopPositionsAttrName = "tessera.loop_positions";

// The unit attribute of an scf.if the program itself branches with (a StableHLO case), as opposed
// to the ones the partitioner makes on the device position.
inline constexpr std::string_view kProgramBranchAttrName = "tessera.program_branch";

// The grid AnnotateShardings adds for the program's mesh (mesh axis i is grid axis i).
inline constexpr std::string_view kGridName = "grid";

// A manual computation (JAX's shard_map: code that runs on each device's shards, communicating
// through explicit collectives) is, in @main's body, a builtin.unrealized_conversion_cast from its
// operands to its results (global values) with these attributes:
//   tessera.manual_body = "name": its body, func.func @name in the nested module
//     @tessera.manual_bodies (beside a shard.grid @grid of the mesh), on the local shapes; its
//     shard collectives (all_reduce, all_gather, reduce_scatter, all_to_all) and
//     shard.process_multi_index name that @grid, and each all_reduce / reduce_scatter carries
//     tessera.combiner, the name of the arith op that combines ("arith.addf");
//   tessera.manual_in / tessera.manual_out: one sharding text per operand / result
//     ("mesh{x=2} P(x)"; "" for replicated): how the global value splits into the local ones.
// The partitioner reshards each operand to its sharding (manual_computations.cc gives the cast a
// sharding model); InlineManualComputations then puts the body in its place.
inline constexpr std::string_view kManualBodyAttrName = "tessera.manual_body";
inline constexpr std::string_view kManualInAttrName = "tessera.manual_in";
inline constexpr std::string_view kManualOutAttrName = "tessera.manual_out";
inline constexpr std::string_view kManualBodiesModuleName = "tessera.manual_bodies";
inline constexpr std::string_view kCombinerAttrName = "tessera.combiner";
// The split axes AnnotateShardings gives a manual computation's cast, for its sharding model: one
// array per operand, then per result, of one i16 array of grid axes per dimension.
inline constexpr std::string_view kManualSplitAttrName = "tessera.manual_split";

// A context with every dialect and interface the compiler uses registered (loaded lazily),
// multithreading off: one Compile call runs on one thread.
std::unique_ptr<mlir::MLIRContext> CreateCompilerContext();

// Gives tensor.expand_shape and tensor.collapse_shape a sharding (a group of dimensions splits
// through its first one), which MLIR 22 lacks (reshape_sharding.cc).
void RegisterReshapeShardings(mlir::DialectRegistry& registry);

// Gives tensor.extract_slice, pad and concat a sharding (the dimensions they leave
// whole shard, the others do not), which MLIR 22 lacks (slice_sharding.cc).
void RegisterSliceShardings(mlir::DialectRegistry& registry);

// Gives scf.while, scf.if and tensor.extract a sharding: they run whole on every device
// (control_flow_sharding.cc).
void RegisterControlFlowShardings(mlir::DialectRegistry& registry);

// Gives builtin.unrealized_conversion_cast the sharding of a manual computation: its operands and
// results fixed to its tessera.manual_in / manual_out shardings, partitioned into the same cast
// on the local values (manual_computations.cc). Casts without tessera.manual_body are cloned.
void RegisterManualComputationShardings(mlir::MLIRContext& context);

// Rewrites the tensor ops of a kernel that make views or copies (expand_shape, collapse_shape,
// extract_slice, pad, concat) as linalg.generic over their results (tensor_ops_as_linalg.cc);
// UNIMPLEMENTED naming `name` for one with dynamic sizes.
absl::Status TensorOpsAsLinalg(mlir::func::FuncOp func, const std::string& name);

// Rewrites each f32 / f64 contraction of a kernel (on tensors, local shapes) that has batch
// dimensions or is a linalg.generic (attention's `bhsd,bhtd->bhst`) as transposes into (batch, m,
// k) x (batch, k, n), collapses, and a loop of linalg.matmul over the batch, which the CPU code
// generator calls BLAS for (targets/llvm_cpu/contractions_as_matmuls.cc).
void ContractionsAsMatmuls(mlir::func::FuncOp func);

// Rewrites each reduction over a kernel's innermost, contiguous dimension (a row sum, softmax's
// max and sum) as V partial results in vector registers, merged after the loop, instead of one
// scalar chain per output (targets/llvm_cpu/vectorized_reductions.cc); on tensors, before
// bufferization. INTERNAL naming `name` when the cleanup after it fails.
absl::Status VectorizeInnerReductions(mlir::ModuleOp kernel, const std::string& name);

// Collects the error diagnostics of a context while alive ("line:column: message", with notes).
class DiagnosticCollector {
 public:
  explicit DiagnosticCollector(mlir::MLIRContext* context);
  // The errors so far, joined by "; "; `fallback` when there were none.
  std::string Message(std::string_view fallback) const;

 private:
  std::vector<std::string> errors_;
  mlir::ScopedDiagnosticHandler handler_;
};

// Whether `op` has MLIR's elementwise-mappable traits (an arith / math op that applies lane by
// lane), asked through libMLIR's own hasElementwiseMappableTraits. Never op.hasTrait<...>() in
// this library: a trait's TypeID is found by a name GCC and Clang spell differently, so in the
// Python extension (hidden visibility: its own copy of the lookup) it is another TypeID than the
// one libMLIR's ops registered, and hasTrait answers false there (tests/layering checks this).
inline bool IsElementwiseMappable(mlir::Operation& op) {
  return mlir::OpTrait::hasElementwiseMappableTraits(&op);
}

// The value of the arith.constant that defines `value`, or null. Never matchPattern(value,
// m_Constant(...)) in this library: its match asks hasTrait<ConstantLike>, which answers false in
// the Python extension and the plugin as IsElementwiseMappable says (tests/layering checks this).
inline mlir::Attribute ConstantValueOf(mlir::Value value) {
  auto constant = value.getDefiningOp<mlir::arith::ConstantOp>();
  return constant ? constant.getValue() : mlir::Attribute();
}

// Runs `pm` on `module`; a failure is `code` with `what` and the pass diagnostics.
absl::Status RunPipeline(mlir::PassManager& pm, mlir::ModuleOp module, absl::StatusCode code,
                         std::string_view what);

// Verifies `module`; a failure is `code`: "<what>: <the verifier's diagnostics>".
absl::Status VerifyModule(mlir::ModuleOp module, absl::StatusCode code, std::string_view what);

// The most ops the body of one fused elementwise loop nest holds: a chain of elementwise ops
// longer than that becomes one loop nest (and one temporary) per kMaxFusedBodyOps ops.
inline constexpr int kMaxFusedBodyOps = 64;

// Whether fusing the producer of `fused` into its consumer (elementwise linalg op fusion) keeps
// the fused body within kMaxFusedBodyOps; both code generators' fusion controls ask it.
// targets/llvm_cpu/cpu_codegen.cc.
bool FusedBodyFits(mlir::OpOperand* fused);

// Adds the bufferization both code generators share: tensors -> memrefs across the whole module,
// function signatures included, with plain row-major memrefs at the boundary (the runtime's
// buffers are contiguous); then returned memrefs -> trailing out-params the caller allocates (a
// returned static allocation becomes the out-param itself, written in place). cpu_codegen.cc.
void AddBufferizationToOutParams(mlir::OpPassManager& pm);

// Marks `func`'s tensor arguments not writable for bufferization: inputs are the runtime's
// buffers, shared with other steps and the caller, never written. targets/llvm_cpu/cpu_codegen.cc.
void MarkInputsReadOnly(mlir::func::FuncOp func);

// "line:column" of `loc` when it is (or wraps) a file location, else its printed form.
std::string FormatLocation(mlir::Location loc);

// The dtype and shape of a ranked static tensor type. INVALID_ARGUMENT: not a ranked static
// tensor; UNIMPLEMENTED: an element type other than f32, f64, i1 (pred), i8, i16, i32, i64
// (signless integers are signed: s8 ... s64).
absl::StatusOr<ProgramValue> ValueOfType(mlir::Type type);

// The op printed in MLIR's generic-free (custom) form.
std::string PrintOp(mlir::Operation* op);

// The type as MLIR prints it ("tensor<4x?xf32>").
std::string PrintType(mlir::Type type);

// Parses and verifies `text`; returns the module with its @main.
// INVALID_ARGUMENT: text nested deeper than kMaxProgramNesting (compiler/nesting.h; checked
// before MLIR's recursive parser runs), parse or verifier errors ("3:14: expected ..."), no
// func.func @main or a @main declared without a body, @main's signature is not over ranked static
// tensors, or a value anywhere in the program (an intermediate inside a kernel too) whose type is
// not static or whose byte count overflows int64 (named by its op and location).
// UNIMPLEMENTED: an op outside the supported set (the outermost one, named with its location;
// control flow says so), a dtype ValueOfType does not take, or a second function.
absl::StatusOr<mlir::OwningOpRef<mlir::ModuleOp>> ParseProgram(mlir::MLIRContext& context,
                                                               std::string_view text);

// What ParseProgram checks once the text is a module: supported ops, one @main with a body over
// ranked static tensors, values whose byte counts fit in int64. The StableHLO importer's output
// passes the same checks (ImportProgram).
absl::Status CheckProgram(mlir::ModuleOp module);

// StableHLO text (compiler/stablehlo/stablehlo_import.h) imported, then checked as ParseProgram
// checks a linalg program.
absl::StatusOr<mlir::OwningOpRef<mlir::ModuleOp>> ImportProgram(mlir::MLIRContext& context,
                                                                std::string_view text);

// The shardings of the program: one mesh (the grid), a PartitionSpec per argument and result, and
// one per sharding constraint: an identity linalg.generic of @main's body with a
// `tessera.sharding` attribute (the StableHLO importer makes one of each
// sdy.sharding_constraint). A constraint over another mesh than the request's is left out (and
// stays a copy).
struct ProgramShardings {
  sharding::Mesh mesh;
  std::vector<sharding::PartitionSpec> parameters;
  std::vector<sharding::PartitionSpec> results;
  // Arguments and results whose sharding came from a `tessera.sharding` attribute.
  int from_attributes = 0;
  // [parameter]: its `tessera.device_order`; empty when in order, and when the request gives the
  // shardings.
  std::vector<std::vector<int64_t>> parameter_device_orders;
  std::vector<std::pair<mlir::Operation*, sharding::PartitionSpec>> constraints;
  // The manual computations of @main's body, with their operands' and results' specs.
  struct Manual {
    mlir::Operation* op = nullptr;
    std::vector<sharding::PartitionSpec> in, out;
  };
  std::vector<Manual> manuals;
  // [result]: whether the program leaves it open (a StableHLO jit's result without out_shardings
  // whose sharding the program does not say): `results` holds P() for it until PartitionProgram
  // gives it the sharding propagation gives its value.
  std::vector<bool> open_results;
};

// Reads the shardings from the request (when given) or from @main's `tessera.sharding`
// attributes; a value without one is replicated. INVALID_ARGUMENT: a count that differs from
// @main's arguments / results, a text the parsers reject, two different meshes, a mesh whose size
// is not `num_devices`, a spec longer than its value's rank or naming an unknown axis, a sharded
// dimension its tile count does not divide.
absl::StatusOr<ProgramShardings> ResolveShardings(mlir::func::FuncOp main,
                                                  const ProgramCompileRequest& request);

// Checks each manual computation of `shardings` against its body (manual_computations.cc):
// INVALID_ARGUMENT naming the computation's location when its body is missing, takes or returns
// other local types than its shardings give, or its grid is not the mesh; or when a shard op or an
// unrealized_conversion_cast of @main is not part of one.
absl::Status CheckManualComputations(mlir::ModuleOp module, mlir::func::FuncOp main,
                                     const ProgramShardings& shardings);

// In the partitioned @main, each manual computation's cast becomes a copy of its body on the
// cast's (now local) operands; the bodies' module is erased. INTERNAL when an operand's local type
// is not the body's (manual_computations.cc).
absl::Status InlineManualComputations(mlir::ModuleOp module, mlir::func::FuncOp main);

// Adds `shard.grid @grid` (the mesh's axis sizes) and annotates every argument (shard.shard) and
// every returned value (shard.shard annotate_for_users) of @main with its sharding; each
// constraint op becomes a shard.shard of its input (the op is erased).
void AnnotateShardings(mlir::ModuleOp module, mlir::func::FuncOp main,
                       const ProgramShardings& shardings);

// Each linalg op of @main (its shardings propagated, not yet partitioned) that reduces a sharded
// dimension in a way MLIR 22's partitioner cannot combine across devices (aborting the process:
// a combining op without an identity element, such as subf, divf, subi or remsi, a region that is
// not one combining op, or several outputs, as argmax has) takes its operands with the reduced
// dimensions gathered, and reduces whole rows on each device (reduction_check.cc). UNIMPLEMENTED,
// naming the op, its location and the combiner, where an operand's sharding is not split axes
// alone.
absl::Status GatherUncombinableReductions(mlir::func::FuncOp main);

// Each change of sharding between two chained shard.shard ops of @main that MLIR 22's partitioner
// would make in part (it recognizes one axis added, removed or moved per change: from P(None, y,
// x) to replicated it gathers y only) becomes a chain of such changes (reshard_steps.cc).
void SplitReshardsIntoSteps(mlir::func::FuncOp main);

// Propagates the shardings and partitions @main into the program one device runs (local shapes,
// shard collectives); an all_gather / all_slice / all_to_all of a fill of a constant becomes a
// local fill. Each open result (ProgramShardings::open_results) gets, in `shardings.results`, the
// sharding the propagation gives the value it returns where that splits it evenly, P()
// otherwise. Where split arguments meet split results, two propagations are tried (the results
// annotated before and after a first pass) and the program whose collectives move fewer bytes is
// kept: @main may be a new op afterwards. INVALID_ARGUMENT / UNIMPLEMENTED with the partitioner's
// diagnostics, or UNIMPLEMENTED where the partitioned program reduces part of a reduction's extent
// on each device without an all-reduce of the rest (MLIR 22 drops it under some shardings);
// INTERNAL when the clean-up after the fold fails.
absl::Status PartitionProgram(mlir::ModuleOp module, ProgramShardings& shardings);

// A plan without artifacts, and one module per kernel step (steps[kernel_step_indices[i]]),
// holding a func.func named like the step over tensors: inputs, then one i64 per grid axis when
// the step takes the device position; results = the step's outputs.
struct CutProgram {
  ProgramPlan plan;
  std::vector<size_t> kernel_step_indices;
  std::vector<mlir::OwningOpRef<mlir::ModuleOp>> kernels;
};

// Cuts the partitioned @main at each shard collective; a reduction's kind comes from the combiner
// of the linalg op it reduces (not from the partitioner's kind alone). UNIMPLEMENTED: a shard op
// other than the collectives all_reduce, all_gather, all_to_all, all_slice, reduce_scatter, a
// reduction whose combiner is not one of addf, addi, mulf, muli, maximumf, minimumf, maxnumf,
// minnumf, maxsi, minsi, maxui, minui, andi, ori, xori (or is not found; named with its location),
// or a non-tensor value that crosses a collective.
absl::StatusOr<CutProgram> CutIntoSteps(mlir::ModuleOp module, mlir::func::FuncOp main,
                                        const std::vector<int64_t>& grid_shape);

// Gives every integer division and remainder under `root` XLA's defined results where arith
// leaves them undefined (and x86 traps): x / 0 = -1 signed, all ones unsigned; x % 0 = x;
// INT_MIN / -1 = INT_MIN and INT_MIN % -1 = 0 (divsi, divui, ceildivsi, ceildivui, floordivsi,
// remsi, remui: a divisor that cannot fault, and selects). Run on each kernel before any code
// generator, so that every platform computes the same.
void DefineIntegerDivision(mlir::Operation* root);

// Lowers one kernel module (as CutIntoSteps makes it) to the LLVM dialect: artifact format
// "mlir-llvm", entry = the kernel's name, arguments as KernelArtifact documents them.
// INTERNAL when a pass fails (with its diagnostics).
absl::StatusOr<KernelArtifact> LowerKernelForCpu(mlir::ModuleOp kernel, const std::string& name,
                                                 bool takes_device_position);

// Each arith.maxnumf / minnumf in `root` (and maximumf / minimumf when `maximum_minimum_too`), on
// scalars or vectors -> compares and selects that order -0 < +0 and treat NaN as ReductionKind
// documents (ifrt/spi/program_plan.h): the same bits on every target and in every order
// (float_min_max.cc). The CPU target needs it for maxnumf / minnumf only (LLVM's maximum / minimum
// are exact; its maxnum / minnum leave max(-0, +0) open), SPIR-V for all four.
void ExpandFloatMinMax(mlir::Operation* root, bool maximum_minimum_too);

// Each top-level linalg.generic on buffers of `func` that reduces one long dimension (parallel
// dimensions first) with addf / maximumf / minimumf / maxnumf / minnumf on floats, or addi /
// maxsi / minsi / maxui / minui on integers -> two
// gpu.launch ops (work-groups reduce slices through workgroup memory, then combine the partials,
// kept in a scratch allocation); other generics are left alone (targets/spirv/vulkan_reduction.cc).
void EmitTwoPassReductions(mlir::func::FuncOp func, const KernelTarget& target);

// Lowers one kernel module (as CutIntoSteps makes it; modified in place) to SPIR-V: artifact
// format "spirv", its dispatches and scratch buffers as KernelArtifact documents them; a kernel
// that computes with the device position gets one variant per position of `grid_shape`. Compiled
// for `target` (its SPIR-V target environment; elementwise ops whose buffers exceed its
// max_storage_buffer_range split into ranges, SpirvDispatch::ranges).
// UNIMPLEMENTED: host code left outside every kernel (named), f64 / i64 data on a target without
// Float64 / Int64 (naming the capability); RESOURCE_EXHAUSTED: an op that cannot be split binding
// a buffer above the range (naming the op, the size and the limit); INTERNAL when a pass fails
// (with its diagnostics).
absl::StatusOr<KernelArtifact> LowerKernelForVulkan(mlir::ModuleOp kernel, const std::string& name,
                                                    bool takes_device_position,
                                                    const std::vector<int64_t>& grid_shape,
                                                    const KernelTarget& target);

}  // namespace tessera::compiler

#endif  // TESSERA_COMPILER_INTERNAL_H_
