// Steps c: annotate @main with its shardings (shard dialect; ops that read their position or a
// captured tensor replicated: ReplicatePositionalOps), propagate them, gather the reduced
// dimensions the partitioner cannot combine (GatherUncombinableReductions, reduction_check.cc) and
// partition it for SPMD; then collectives of constant fills become local fills
// (FoldCollectivesOfConstantFills), and every reduction whose devices reduce part of its extent
// is checked to be all-reduced (CheckReductionsCombined).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "compiler/internal.h"
#include "compiler/sharding_models.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SetVector.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Shard/Transforms/Passes.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "mlir/Transforms/RegionUtils.h"

namespace tessera::compiler {
namespace {

// The grid axes of each dimension `spec` splits: mesh axis i is grid axis i.
std::vector<mlir::shard::GridAxesAttr> SplitAxes(mlir::MLIRContext* context,
                                                 const sharding::Mesh& mesh,
                                                 const sharding::PartitionSpec& spec) {
  std::vector<mlir::shard::GridAxesAttr> split_axes;
  for (const sharding::PartitionSpec::Dim& dim : spec.dims()) {
    std::vector<mlir::shard::GridAxis> axes;
    for (const std::string& name : dim) {
      axes.push_back(static_cast<mlir::shard::GridAxis>(*mesh.FindAxis(name)));
    }
    split_axes.push_back(mlir::DenseI16ArrayAttr::get(context, axes));
  }
  return split_axes;
}

// `shard.sharding @grid split_axes = [...]` for `spec`.
mlir::Value MakeSharding(mlir::OpBuilder& builder, mlir::Location loc, const sharding::Mesh& mesh,
                         const sharding::PartitionSpec& spec) {
  std::vector<mlir::shard::GridAxesAttr> split_axes = SplitAxes(builder.getContext(), mesh, spec);
  while (!split_axes.empty() && split_axes.back().empty()) split_axes.pop_back();
  // The op's syntax needs at least one (possibly empty) entry.
  if (split_axes.empty())
    split_axes.push_back(mlir::DenseI16ArrayAttr::get(builder.getContext(), {}));
  auto grid = mlir::FlatSymbolRefAttr::get(builder.getContext(), kGridName);
  return mlir::shard::ShardingOp::create(builder, loc, grid, split_axes).getResult();
}

// `shard.sharding @grid split_axes = [[]]`: replicated.
mlir::Value MakeReplicatedSharding(mlir::OpBuilder& builder, mlir::Location loc) {
  auto grid = mlir::FlatSymbolRefAttr::get(builder.getContext(), kGridName);
  return mlir::shard::ShardingOp::create(builder, loc,
                                         ShardingOfAxes(builder.getContext(), grid, {}));
}

// Propagation on @main: every tensor op gets a sharding.
void BuildPropagationPipeline(mlir::OpPassManager& pm) {
  mlir::OpPassManager& func = pm.nest<mlir::func::FuncOp>();
  // Elementwise arith / math on tensors -> linalg.generic: the partitioner only knows ops that
  // implement the sharding interface (linalg does, tensor-level arith does not).
  func.addPass(mlir::createConvertElementwiseToLinalgPass());
  // Give every tensor op a sharding, from the annotations on arguments and results. No CSE
  // around it: after propagation CSE would merge two identical tensor.empty inits annotated with
  // different shardings into one value with two, on which MLIR 22's partitioner crashes; before
  // it, one empty shared by ops of different shardings would be resharded (a collective of
  // nothing). The clean-up after partitioning merges duplicates.
  func.addPass(mlir::shard::createShardingPropagation());
}

// The rewrite to the per-device program, on @main (after GatherUncombinableReductions).
void BuildPartitionPipeline(mlir::OpPassManager& pm) {
  mlir::OpPassManager& func = pm.nest<mlir::func::FuncOp>();
  // Local shapes, collectives where shardings change.
  func.addPass(mlir::shard::createPartition());
}

// The clean-up after FoldCollectivesOfConstantFills, on @main.
void BuildCleanupPipeline(mlir::OpPassManager& pm) {
  mlir::OpPassManager& func = pm.nest<mlir::func::FuncOp>();
  // Fold what partitioning leaves (identity scf.if, redundant casts and resharding chains).
  func.addPass(mlir::createCanonicalizerPass());
  // Merge duplicate constants, fills and grid queries the canonicalizer exposes ...
  func.addPass(mlir::createCSEPass());
  // ... and fold the scf.if whose branches now yield the same fill.
  func.addPass(mlir::createCanonicalizerPass());
}

// A collective that only moves elements (all_gather, all_slice, all_to_all) of a fill with a
// constant holds that constant everywhere on every device: it becomes a local fill of its result
// shape, and the communication disappears; one of a tensor.empty becomes a local tensor.empty. (The
// partitioner makes these when one zero fill initializes matmuls of different shardings, as in
// `relu(x @ w1 + b1) @ w2` with one %acc.)
void FoldCollectivesOfConstantFills(mlir::ModuleOp module) {
  std::vector<mlir::Operation*> collectives;
  module.walk([&](mlir::Operation* op) {
    if (mlir::isa<mlir::shard::AllGatherOp, mlir::shard::AllSliceOp, mlir::shard::AllToAllOp>(op)) {
      collectives.push_back(op);
    }
  });
  for (mlir::Operation* op : collectives) {
    auto type = mlir::dyn_cast<mlir::RankedTensorType>(op->getResult(0).getType());
    // A collective of an uninitialized tensor (an init the program shares between ops of
    // different shardings) moves nothing anyone reads: a local tensor.empty.
    if (op->getOperand(0).getDefiningOp<mlir::tensor::EmptyOp>() && type && type.hasStaticShape()) {
      mlir::OpBuilder builder(op);
      auto empty = mlir::tensor::EmptyOp::create(builder, op->getLoc(), type.getShape(),
                                                 type.getElementType(), type.getEncoding());
      op->getResult(0).replaceAllUsesWith(empty.getResult());
      op->erase();
      continue;
    }
    auto fill = op->getOperand(0).getDefiningOp<mlir::linalg::FillOp>();
    if (!fill || !fill.hasPureTensorSemantics() || !type || !type.hasStaticShape() ||
        !ConstantValueOf(fill.getInputs()[0])) {
      continue;
    }
    mlir::OpBuilder builder(op);
    auto empty = mlir::tensor::EmptyOp::create(builder, op->getLoc(), type.getShape(),
                                               type.getElementType(), type.getEncoding());
    auto local =
        mlir::linalg::FillOp::create(builder, op->getLoc(), fill.getInputs()[0], empty.getResult());
    op->getResult(0).replaceAllUsesWith(local.getResult(0));
    op->erase();
  }
}

// The product of `op`'s static reduction loop ranges (1 without reduction loops; -1 when one is
// dynamic).
int64_t ReducedExtent(mlir::linalg::LinalgOp op) {
  const llvm::SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  const llvm::SmallVector<mlir::utils::IteratorType> iterators = op.getIteratorTypesArray();
  int64_t extent = 1;
  for (size_t i = 0; i < ranges.size() && i < iterators.size(); ++i) {
    if (iterators[i] != mlir::utils::IteratorType::reduction) continue;
    if (mlir::ShapedType::isDynamic(ranges[i])) return -1;
    extent *= ranges[i];
  }
  return extent;
}

constexpr char kReducedExtentAttr[] = "tessera.reduced_extent";

// Marks each linalg op on tensors that reduces with its whole reduced extent (the attribute
// survives partitioning: the partitioner clones ops with their attributes).
void MarkReductions(mlir::ModuleOp module) {
  mlir::Builder builder(module.getContext());
  module.walk([&](mlir::linalg::LinalgOp op) {
    const int64_t extent = ReducedExtent(op);
    if (op.getNumReductionLoops() == 0 || !op.hasPureTensorSemantics() || extent < 1) return;
    op->setAttr(kReducedExtentAttr, builder.getI64IntegerAttr(extent));
  });
}

// Each marked op whose device reduces only part of its extent must have its result combined by
// all-reduces (or reduce-scatters) over exactly the rest of the devices. MLIR 22's partitioner
// sometimes leaves the all-reduce out (f32[4x1x12] P(y,None,x) reduced over dimension 2 into a
// replicated result on mesh{x=2,y=2}: it gathers y and reduces half of dimension 2): a silent
// wrong result, refused here as UNIMPLEMENTED. Removes the marks.
absl::Status CheckReductionsCombined(mlir::ModuleOp module) {
  std::vector<int64_t> grid;
  module.walk([&](mlir::shard::GridOp op) {
    if (grid.empty()) grid.assign(op.getShape().begin(), op.getShape().end());
  });
  absl::Status status;
  module.walk([&](mlir::linalg::LinalgOp op) {
    auto global = op->getAttrOfType<mlir::IntegerAttr>(kReducedExtentAttr);
    if (!global) return;
    op->removeAttr(kReducedExtentAttr);
    const int64_t local = ReducedExtent(op);
    if (!status.ok() || local == global.getInt() || local < 1) return;
    int64_t combined = 1;
    for (mlir::Operation* user : op->getResult(0).getUsers()) {
      llvm::ArrayRef<int16_t> axes;
      if (auto reduce = mlir::dyn_cast<mlir::shard::AllReduceOp>(user)) axes = reduce.getGridAxes();
      if (auto scatter = mlir::dyn_cast<mlir::shard::ReduceScatterOp>(user)) {
        axes = scatter.getGridAxes();
      }
      for (int16_t axis : axes) {
        if (axis >= 0 && static_cast<size_t>(axis) < grid.size()) combined *= grid[axis];
      }
    }
    if (local * combined == global.getInt()) return;
    status = absl::UnimplementedError(absl::StrCat(
        "partitioning failed: ", FormatLocation(op->getLoc()), ": each device reduces ", local,
        " of the ", global.getInt(), " elements '", op->getName().getStringRef().str(),
        "' combines, and no all-reduce combines the devices' partial results (MLIR's "
        "partitioner drops it under these shardings); shard the reduction's input otherwise"));
  });
  return status;
}

// Whether `op`'s body reads its own position (linalg.index: an iota). MLIR 22's partitioner gives
// it no device's offset: linalg.index would count from 0 on every device.
bool ReadsPosition(mlir::linalg::LinalgOp op) {
  bool reads_position = false;
  op->walk([&](mlir::linalg::IndexOp) { reads_position = true; });
  return reads_position;
}

// Whether `op`'s body reads its own position or a tensor it does not take as an operand (a
// tensor.extract from a tensor defined outside it: the partitioner would hand it the device's
// shard of that tensor).
bool ReadsPositionOrCapturedTensors(mlir::linalg::LinalgOp op) {
  const bool reads_position = ReadsPosition(op);
  llvm::SetVector<mlir::Value> captured;
  mlir::getUsedValuesDefinedAbove(op->getRegions(), captured);
  return reads_position || llvm::any_of(captured, [](mlir::Value value) {
           return mlir::isa<mlir::RankedTensorType>(value.getType());
         });
}

// Whether `op` computes whole on every device, but is annotated so only after a first
// propagation: a loop's positions for a gather (kLoopPositionsAttrName) and a scatter
// (kScatterAttrName: a lookup's gradient). Annotated before, their replicated operands and
// results would make the propagation replicate what computes their inputs and what reads their
// results: a data-parallel embedding lookup, forward and backward, on every device whole.
bool AnnotatedLater(mlir::Operation& op) {
  return op.hasAttr(kLoopPositionsAttrName) || op.hasAttr(kScatterAttrName);
}

// Each op ReadsPositionOrCapturedTensors finds, and each scf.while / scf.if (whose regions the
// partitioner does not enter: control_flow_sharding.cc), computes its whole result on every
// device: its operands, its results and every tensor its regions use are annotated replicated, so
// that the partitioner splits none of its loops and slices (locally) or gathers around it. Correct
// whatever the shardings; an iota or a reverse is cheap beside the matmuls around it. An op that
// reads captured tensors but not its position (a gather: the table it looks up, at positions its
// inputs give) has only those tensors replicated: whichever of its loops the partitioner splits,
// each device reads the whole tensor at the positions its elements name. `later` picks the ops
// AnnotatedLater names (annotated after a first propagation) or all the others (before it).
// Returns whether it annotated any.
bool ReplicatePositionalOps(mlir::func::FuncOp main, bool later) {
  std::vector<mlir::Operation*> ops;
  for (mlir::Operation& op : main.getBody().front()) {
    auto linalg = mlir::dyn_cast<mlir::linalg::LinalgOp>(&op);
    if (AnnotatedLater(op) != later) continue;
    if (linalg ? linalg.hasPureTensorSemantics() && ReadsPositionOrCapturedTensors(linalg)
               : mlir::isa<mlir::scf::WhileOp, mlir::scf::IfOp>(op)) {
      ops.push_back(&op);
    }
  }
  mlir::OpBuilder builder(main.getContext());
  for (mlir::Operation* op : ops) {
    builder.setInsertionPoint(op);
    mlir::Location loc = op->getLoc();
    mlir::Value replicated = MakeReplicatedSharding(builder, loc);
    llvm::SetVector<mlir::Value> captured;
    mlir::getUsedValuesDefinedAbove(op->getRegions(), captured);
    for (mlir::Value value : captured) {
      if (!IsShardable(value)) continue;
      auto whole = mlir::shard::ShardOp::create(builder, loc, value, replicated,
                                                /*annotate_for_users=*/true);
      value.replaceUsesWithIf(whole.getResult(), [&](mlir::OpOperand& use) {
        return op->isProperAncestor(use.getOwner());
      });
    }
    auto linalg = mlir::dyn_cast<mlir::linalg::LinalgOp>(op);
    if (linalg && !ReadsPosition(linalg)) continue;
    // Its operands too: a split loop would be counted from 0 on each device as well.
    for (mlir::OpOperand& operand : op->getOpOperands()) {
      if (!IsShardable(operand.get())) continue;
      auto whole = mlir::shard::ShardOp::create(builder, loc, operand.get(), replicated,
                                                /*annotate_for_users=*/true);
      operand.set(whole.getResult());
    }
    builder.setInsertionPointAfter(op);
    for (mlir::Value result : op->getResults()) {
      if (!IsShardable(result)) continue;
      auto whole = mlir::shard::ShardOp::create(builder, loc, result, replicated,
                                                /*annotate_for_users=*/false);
      result.replaceAllUsesExcept(whole.getResult(), whole);
    }
  }
  return !ops.empty();
}

// MLIR 22's partitioner crashes on an op with a tensor result nobody uses beside results that are
// used (argmax's linalg.reduce: the values reduced beside their indices): it reads a sharding off
// each result's one user. Each such result gets the sharding of a used sibling of its shape (the
// results of one linalg op share its loops), annotated by a shard.shard that nothing reads.
void AnnotateUnusedResults(mlir::func::FuncOp main) {
  mlir::OpBuilder builder(main.getContext());
  for (mlir::Operation& op : main.getBody().front()) {
    if (op.getNumResults() < 2) continue;
    for (mlir::OpResult result : op.getResults()) {
      if (!result.use_empty() || !mlir::isa<mlir::RankedTensorType>(result.getType())) continue;
      for (mlir::OpResult sibling : op.getResults()) {
        auto shard = sibling.hasOneUse()
                         ? mlir::dyn_cast<mlir::shard::ShardOp>(*sibling.getUsers().begin())
                         : nullptr;
        auto sibling_type = mlir::cast<mlir::ShapedType>(sibling.getType());
        if (!shard ||
            sibling_type.getShape() != mlir::cast<mlir::ShapedType>(result.getType()).getShape()) {
          continue;
        }
        builder.setInsertionPointAfter(shard);
        mlir::shard::ShardOp::create(builder, shard.getLoc(), result, shard.getSharding(),
                                     /*annotate_for_users=*/false);
        break;
      }
    }
  }
}

// Whether `spec` splits any dimension.
bool IsSplit(const sharding::PartitionSpec& spec) {
  return llvm::any_of(spec.dims(),
                      [](const sharding::PartitionSpec::Dim& dim) { return !dim.empty(); });
}

// The arguments (indices) whose replicated sharding, and the results whose sharding,
// AnnotateShardings leaves off until propagation has run once.
constexpr char kArgumentsReplicatedLaterAttr[] = "tessera.arguments_replicated_later";
constexpr char kResultsLaterAttr[] = "tessera.results_later";
// The open results (indices) whose sharding AnnotateOpenResults takes from the first propagation.
constexpr char kResultsOpenAttr[] = "tessera.results_open";
// The split results (indices) AnnotateShardings annotated before the first propagation, in a
// program with split arguments: PartitionProgram also tries them annotated later (DeferResults).
constexpr char kResultsPinnedAttr[] = "tessera.results_pinned";

// `name`'s indices on `main`, removed.
std::vector<int64_t> TakeIndices(mlir::func::FuncOp main, llvm::StringRef name) {
  auto indices = main->getAttrOfType<mlir::DenseI64ArrayAttr>(name);
  if (!indices) return {};
  main->removeAttr(name);
  return std::vector<int64_t>(indices.asArrayRef().begin(), indices.asArrayRef().end());
}

// In a program with split arguments (or constraints), the replicated arguments and results are
// annotated only after a first propagation, as what the values must be at the boundary rather than
// how to compute them. MLIR 22's propagation runs backward first and takes a replicated sharding as
// seriously as a split one: a matmul by a replicated weight would replicate its other operand, and
// a replicated result (a gradient of replicated weights, a loss) everything it depends on. In a
// data-parallel training step every device would gather the batch and compute all of it. Annotated
// afterwards, the values keep the split their arguments give them; the partitioner slices a
// replicated argument locally where a split is wanted, and gathers or all-reduces into a replicated
// result. Split results wait here too in one of PartitionProgram's two candidates (DeferResults),
// annotated with their own sharding. Returns whether it annotated any (the caller then propagates
// again, for the ops the first pass left without a sharding).
bool AnnotateLater(mlir::func::FuncOp main, const ProgramShardings& shardings) {
  const std::vector<int64_t> arguments = TakeIndices(main, kArgumentsReplicatedLaterAttr);
  const std::vector<int64_t> results = TakeIndices(main, kResultsLaterAttr);
  mlir::Block& entry = main.getBody().front();
  mlir::OpBuilder builder(main.getContext());
  builder.setInsertionPointToStart(&entry);
  for (int64_t index : arguments) {
    mlir::BlockArgument arg = entry.getArgument(index);
    mlir::Value replicated = MakeReplicatedSharding(builder, arg.getLoc());
    auto shard = mlir::shard::ShardOp::create(builder, arg.getLoc(), arg, replicated,
                                              /*annotate_for_users=*/false);
    arg.replaceAllUsesExcept(shard.getResult(), shard);
  }
  mlir::Operation* ret = entry.getTerminator();
  builder.setInsertionPoint(ret);
  for (int64_t index : results) {
    mlir::OpOperand& operand = ret->getOpOperand(index);
    mlir::Value sharding =
        MakeSharding(builder, ret->getLoc(), shardings.mesh, shardings.results[index]);
    auto shard = mlir::shard::ShardOp::create(builder, ret->getLoc(), operand.get(), sharding,
                                              /*annotate_for_users=*/true);
    operand.set(shard.getResult());
  }
  return !arguments.empty() || !results.empty();
}

// The sharding the propagation gave `value`: its defining shard.shard's, or that of a shard.shard
// annotating it for its producer; empty when neither is there.
mlir::shard::Sharding PropagatedSharding(mlir::Value value) {
  if (auto shard = value.getDefiningOp<mlir::shard::ShardOp>()) {
    return mlir::shard::Sharding(shard.getSharding());
  }
  for (mlir::Operation* user : value.getUsers()) {
    auto shard = mlir::dyn_cast<mlir::shard::ShardOp>(user);
    if (shard && !shard.getAnnotateForUsers()) return mlir::shard::Sharding(shard.getSharding());
  }
  return mlir::shard::Sharding();
}

// `sharding` of a value of `type` as a spec over `mesh` (grid axis i is mesh axis i); nullopt
// unless it splits each dimension evenly into whole tiles and has no halos or offsets (what a
// program's result may be).
std::optional<sharding::PartitionSpec> EvenSpecOf(const mlir::shard::Sharding& sharding,
                                                  mlir::RankedTensorType type,
                                                  const sharding::Mesh& mesh) {
  if (!sharding || !sharding.getStaticHaloSizes().empty() ||
      !sharding.getStaticShardedDimsOffsets().empty() || !sharding.getDynamicHaloSizes().empty() ||
      !sharding.getDynamicShardedDimsOffsets().empty() ||
      static_cast<int64_t>(sharding.getSplitAxes().size()) > type.getRank()) {
    return std::nullopt;
  }
  std::vector<sharding::PartitionSpec::Dim> dims;
  for (size_t d = 0; d < sharding.getSplitAxes().size(); ++d) {
    sharding::PartitionSpec::Dim names;
    int64_t tiles = 1;
    for (int16_t axis : sharding.getSplitAxes()[d].asArrayRef()) {
      if (axis < 0 || static_cast<size_t>(axis) >= mesh.axes().size()) return std::nullopt;
      names.push_back(mesh.axes()[axis].name);
      tiles *= mesh.axes()[axis].size;
    }
    if (type.getDimSize(d) % tiles != 0) return std::nullopt;
    dims.push_back(std::move(names));
  }
  while (!dims.empty() && dims.back().empty()) dims.pop_back();  // P(None) is P()
  absl::StatusOr<sharding::PartitionSpec> spec = sharding::PartitionSpec::Create(std::move(dims));
  if (!spec.ok()) return std::nullopt;
  return *std::move(spec);
}

// After a first propagation: each open result annotated with the sharding the propagation gave
// the value it returns (EvenSpecOf), else replicated; `shardings.results` says which. As for the
// results annotated late (AnnotateLater), a value computed from split arguments keeps their split,
// where XLA's partitioner, for a jit without out_shardings, would pick the same. Returns whether
// it annotated any.
bool AnnotateOpenResults(mlir::func::FuncOp main, ProgramShardings& shardings) {
  const std::vector<int64_t> open = TakeIndices(main, kResultsOpenAttr);
  mlir::Block& entry = main.getBody().front();
  mlir::Operation* ret = entry.getTerminator();
  mlir::OpBuilder builder(main.getContext());
  builder.setInsertionPoint(ret);
  for (int64_t index : open) {
    mlir::OpOperand& operand = ret->getOpOperand(index);
    auto type = mlir::cast<mlir::RankedTensorType>(operand.get().getType());
    std::optional<sharding::PartitionSpec> spec =
        EvenSpecOf(PropagatedSharding(operand.get()), type, shardings.mesh);
    shardings.results[index] = spec ? *spec : sharding::PartitionSpec();
    mlir::Value sharding =
        MakeSharding(builder, ret->getLoc(), shardings.mesh, shardings.results[index]);
    auto shard = mlir::shard::ShardOp::create(builder, ret->getLoc(), operand.get(), sharding,
                                              /*annotate_for_users=*/true);
    operand.set(shard.getResult());
  }
  return !open.empty();
}

// A manual computation's operands annotated (for it) and results annotated with its shardings,
// which its cast also carries (kManualSplitAttrName) for its sharding model.
void AnnotateManualComputation(mlir::OpBuilder& builder, const ProgramShardings::Manual& manual,
                               const sharding::Mesh& mesh) {
  mlir::Operation* op = manual.op;
  mlir::MLIRContext* context = op->getContext();
  std::vector<mlir::Attribute> split;
  for (const std::vector<sharding::PartitionSpec>* specs : {&manual.in, &manual.out}) {
    for (const sharding::PartitionSpec& spec : *specs) {
      std::vector<mlir::shard::GridAxesAttr> axes = SplitAxes(context, mesh, spec);
      split.push_back(builder.getArrayAttr(std::vector<mlir::Attribute>(axes.begin(), axes.end())));
    }
  }
  op->setAttr(kManualSplitAttrName, builder.getArrayAttr(split));
  builder.setInsertionPoint(op);
  for (mlir::OpOperand& operand : op->getOpOperands()) {
    if (!IsShardable(operand.get())) continue;
    mlir::Value sharding =
        MakeSharding(builder, op->getLoc(), mesh, manual.in[operand.getOperandNumber()]);
    operand.set(mlir::shard::ShardOp::create(builder, op->getLoc(), operand.get(), sharding,
                                             /*annotate_for_users=*/true)
                    .getResult());
  }
  builder.setInsertionPointAfter(op);
  for (mlir::OpResult result : op->getResults()) {
    if (!IsShardable(result)) continue;
    mlir::Value sharding =
        MakeSharding(builder, op->getLoc(), mesh, manual.out[result.getResultNumber()]);
    auto shard = mlir::shard::ShardOp::create(builder, op->getLoc(), result, sharding,
                                              /*annotate_for_users=*/false);
    result.replaceAllUsesExcept(shard.getResult(), shard);
  }
}

// MLIR 22's propagation annotates a linalg op of no loops (on rank-0 tensors: a lax.cond's
// clamped index) with shardings of no grid when nothing split is near it, which its verifier
// refuses. A rank-0 tensor is whole on every device: such a sharding, annotating rank-0 tensors
// only, becomes the replicated one on the program's grid. Others are left to the verifier.
void ReplicateGridlessScalars(mlir::ModuleOp module) {
  std::vector<mlir::shard::ShardingOp> gridless;
  module.walk([&](mlir::shard::ShardingOp op) {
    if (op.getGridAttr()) return;
    const bool scalars = llvm::all_of(op->getUsers(), [](mlir::Operation* user) {
      auto shard = mlir::dyn_cast<mlir::shard::ShardOp>(user);
      auto type = shard ? mlir::dyn_cast<mlir::RankedTensorType>(shard.getSrc().getType())
                        : mlir::RankedTensorType();
      return type && type.getRank() == 0;
    });
    if (scalars) gridless.push_back(op);
  });
  for (mlir::shard::ShardingOp op : gridless) {
    mlir::OpBuilder builder(op);
    op.getResult().replaceAllUsesWith(MakeReplicatedSharding(builder, op.getLoc()));
    op.erase();
  }
}

}  // namespace

void AnnotateShardings(mlir::ModuleOp module, mlir::func::FuncOp main,
                       const ProgramShardings& shardings) {
  mlir::OpBuilder builder(module.getContext());
  builder.setInsertionPointToStart(module.getBody());
  std::vector<int64_t> shape;
  for (const sharding::Mesh::Axis& axis : shardings.mesh.axes()) shape.push_back(axis.size);
  mlir::shard::GridOp::create(builder, module.getLoc(), kGridName, shape);

  // Replicated arguments and results wait for AnnotateLater where an argument or a constraint is
  // split; split results are annotated now, and PartitionProgram also tries them later
  // (kResultsPinnedAttr).
  const bool any_argument_split =
      llvm::any_of(shardings.parameters, IsSplit) ||
      llvm::any_of(shardings.constraints, [](const auto& c) { return IsSplit(c.second); }) ||
      llvm::any_of(shardings.manuals, [](const ProgramShardings::Manual& manual) {
        return llvm::any_of(manual.in, IsSplit);
      });
  std::vector<int64_t> arguments_later, results_later;
  mlir::Block& entry = main.getBody().front();
  builder.setInsertionPointToStart(&entry);
  for (mlir::BlockArgument arg : entry.getArguments()) {
    const sharding::PartitionSpec& spec = shardings.parameters[arg.getArgNumber()];
    if (any_argument_split && !IsSplit(spec)) {
      arguments_later.push_back(arg.getArgNumber());
      continue;
    }
    mlir::Location loc = arg.getLoc();
    mlir::Value sharding = MakeSharding(builder, loc, shardings.mesh, spec);
    auto shard = mlir::shard::ShardOp::create(builder, loc, arg, sharding, false);
    arg.replaceAllUsesExcept(shard.getResult(), shard);
  }
  mlir::Operation* ret = entry.getTerminator();
  builder.setInsertionPoint(ret);
  std::vector<int64_t> results_open, results_pinned;
  for (mlir::OpOperand& operand : ret->getOpOperands()) {
    const sharding::PartitionSpec& spec = shardings.results[operand.getOperandNumber()];
    const size_t index = operand.getOperandNumber();
    if (any_argument_split && index < shardings.open_results.size() &&
        shardings.open_results[index] && IsShardable(operand.get())) {
      results_open.push_back(operand.getOperandNumber());
      continue;
    }
    if (any_argument_split && !IsSplit(spec)) {
      results_later.push_back(operand.getOperandNumber());
      continue;
    }
    mlir::Value sharding = MakeSharding(builder, ret->getLoc(), shardings.mesh, spec);
    auto shard = mlir::shard::ShardOp::create(builder, ret->getLoc(), operand.get(), sharding,
                                              /*annotate_for_users=*/true);
    operand.set(shard.getResult());
    if (any_argument_split) results_pinned.push_back(operand.getOperandNumber());
  }
  // Sharding constraints: the constrained value is the op's input, given the sharding.
  for (const auto& [op, spec] : shardings.constraints) {
    builder.setInsertionPoint(op);
    mlir::Value constrained = op->getOperand(0);
    if (IsShardable(constrained)) {  // a rank-0 value has one sharding: nothing to constrain
      mlir::Value sharding = MakeSharding(builder, op->getLoc(), shardings.mesh, spec);
      constrained = mlir::shard::ShardOp::create(builder, op->getLoc(), constrained, sharding,
                                                 /*annotate_for_users=*/false)
                        .getResult();
    }
    op->getResult(0).replaceAllUsesWith(constrained);
    mlir::Operation* init = op->getNumOperands() > 1 ? op->getOperand(1).getDefiningOp() : nullptr;
    op->erase();
    if (init && mlir::isa<mlir::tensor::EmptyOp>(init) && init->use_empty()) init->erase();
  }
  // Manual computations: their operands resharded to theirs, their results as they make them.
  for (const ProgramShardings::Manual& manual : shardings.manuals) {
    AnnotateManualComputation(builder, manual, shardings.mesh);
  }
  if (!arguments_later.empty()) {
    main->setAttr(kArgumentsReplicatedLaterAttr, builder.getDenseI64ArrayAttr(arguments_later));
  }
  if (!results_later.empty()) {
    main->setAttr(kResultsLaterAttr, builder.getDenseI64ArrayAttr(results_later));
  }
  if (!results_open.empty()) {
    main->setAttr(kResultsOpenAttr, builder.getDenseI64ArrayAttr(results_open));
  }
  if (!results_pinned.empty()) {
    main->setAttr(kResultsPinnedAttr, builder.getDenseI64ArrayAttr(results_pinned));
  }
  ReplicatePositionalOps(main, /*later=*/false);
}

// Runs a propagation pipeline, then gives the program's grid to the scalars' shardings it left
// without one (ReplicateGridlessScalars) before verifying.
absl::Status Propagate(mlir::ModuleOp module) {
  mlir::PassManager propagation(module.getContext());
  BuildPropagationPipeline(propagation);
  propagation.enableVerifier(false);
  TESSERA_RETURN_IF_ERROR(
      RunPipeline(propagation, module, absl::StatusCode::kUnimplemented, "partitioning"));
  ReplicateGridlessScalars(module);
  return VerifyModule(module, absl::StatusCode::kUnimplemented, "partitioning failed");
}

namespace {

// PartitionProgram on `module` as annotated: one candidate.
absl::Status PartitionAnnotated(mlir::ModuleOp module, ProgramShardings& shardings) {
  MarkReductions(module);
  TESSERA_RETURN_IF_ERROR(Propagate(module));
  auto main = module.lookupSymbol<mlir::func::FuncOp>("main");
  // All three, before propagating again.
  const bool opened = main && AnnotateOpenResults(main, shardings);
  const bool positions = main && ReplicatePositionalOps(main, /*later=*/true);
  if (main && (AnnotateLater(main, shardings) || opened || positions)) {
    // Again, for the ops the first pass left without a sharding of their own (a fill only a
    // reduction reads, a transpose of a replicated weight).
    TESSERA_RETURN_IF_ERROR(Propagate(module));
  }
  if (main) AnnotateUnusedResults(main);
  if (main) TESSERA_RETURN_IF_ERROR(GatherUncombinableReductions(main));
  if (main) SplitReshardsIntoSteps(main);
  mlir::PassManager partition(module.getContext());
  BuildPartitionPipeline(partition);
  TESSERA_RETURN_IF_ERROR(
      RunPipeline(partition, module, absl::StatusCode::kUnimplemented, "partitioning"));
  // Before any canonicalization: it would fold a manual computation's cast whose operands and
  // results have the same types.
  if (main) TESSERA_RETURN_IF_ERROR(InlineManualComputations(module, main));
  FoldCollectivesOfConstantFills(module);
  mlir::PassManager cleanup(module.getContext());
  BuildCleanupPipeline(cleanup);
  TESSERA_RETURN_IF_ERROR(
      RunPipeline(cleanup, module, absl::StatusCode::kInternal, "cleaning up the partitioning"));
  return CheckReductionsCombined(module);
}

// `main`'s results at `indices` (annotated by AnnotateShardings) left for AnnotateLater instead:
// their shard.shard at the return removed, their indices added to kResultsLaterAttr.
void DeferResults(mlir::func::FuncOp main, const std::vector<int64_t>& indices) {
  std::vector<int64_t> later = TakeIndices(main, kResultsLaterAttr);
  mlir::Operation* ret = main.getBody().front().getTerminator();
  for (int64_t index : indices) {
    mlir::OpOperand& operand = ret->getOpOperand(index);
    auto shard = operand.get().getDefiningOp<mlir::shard::ShardOp>();
    if (!shard) continue;
    operand.set(shard.getSrc());
    mlir::Operation* sharding = shard.getSharding().getDefiningOp();
    if (shard->use_empty()) shard->erase();
    if (sharding != nullptr && sharding->use_empty()) sharding->erase();
    later.push_back(index);
  }
  main->setAttr(kResultsLaterAttr, mlir::DenseI64ArrayAttr::get(main.getContext(), later));
}

// The bytes a partitioned module's collectives hand each device: an all-slice nothing (it slices
// locally), the others the larger of their operand and result.
int64_t CollectiveBytes(mlir::ModuleOp module) {
  auto bytes = [](mlir::Type type) -> int64_t {
    auto shaped = mlir::dyn_cast<mlir::ShapedType>(type);
    if (!shaped || !shaped.hasStaticShape()) return 0;
    mlir::Type element = shaped.getElementType();
    const int64_t bits = element.isIntOrFloat() ? element.getIntOrFloatBitWidth() : 64;
    return shaped.getNumElements() * ((bits + 7) / 8);
  };
  int64_t total = 0;
  module.walk([&](mlir::Operation* op) {
    if (!mlir::isa<mlir::shard::AllReduceOp, mlir::shard::AllGatherOp, mlir::shard::AllToAllOp,
                   mlir::shard::ReduceScatterOp, mlir::shard::ShiftOp>(op)) {
      return;
    }
    total += std::max(bytes(op->getOperand(0).getType()), bytes(op->getResult(0).getType()));
  });
  return total;
}

}  // namespace

absl::Status PartitionProgram(mlir::ModuleOp module, ProgramShardings& shardings) {
  auto main = module.lookupSymbol<mlir::func::FuncOp>("main");
  const std::vector<int64_t> pinned =
      main ? TakeIndices(main, kResultsPinnedAttr) : std::vector<int64_t>{};
  if (pinned.empty()) return PartitionAnnotated(module, shardings);
  // Split results in a program with split arguments: MLIR 22's propagation walks backward first,
  // so a split result decides the ops it depends on before the arguments' splits reach them, and
  // its merging of conflicting operand shardings decides them otherwise when it does not. Neither
  // order is right for every program: in a Megatron block's backward pass the gradient of the first
  // weight fixed the activations' gradient before the product by that weight's transpose was seen,
  // which then gathered both of its operands (8 and 4 MiB) and multiplied whole on every device
  // instead of all-reducing the partial products; annotated later, a Megatron MLP on a dp x tp
  // mesh gathers its rows where the bias's broadcast meets them. Both are partitioned and the one
  // whose collectives move fewer bytes kept (on a tie, the results annotated first: a program
  // that moves nothing so annotated is not partitioned again).
  mlir::OwningOpRef<mlir::ModuleOp> deferred = module.clone();
  DeferResults(deferred->lookupSymbol<mlir::func::FuncOp>("main"), pinned);
  ProgramShardings deferred_shardings = shardings;
  absl::Status status = PartitionAnnotated(module, shardings);
  const int64_t bytes = status.ok() ? CollectiveBytes(module) : 0;
  if (status.ok() && bytes == 0) return status;
  absl::Status deferred_status = PartitionAnnotated(*deferred, deferred_shardings);
  if (!deferred_status.ok() || (status.ok() && bytes <= CollectiveBytes(*deferred))) {
    return status;
  }
  module.getBodyRegion().takeBody(deferred->getBodyRegion());
  shardings = std::move(deferred_shardings);
  return absl::OkStatus();
}

}  // namespace tessera::compiler
