// Step d: cut the partitioned @main at its shard collectives into kernel and collective steps.
//
// The top-level ops of @main fall into three kinds:
//   collectives      shard.all_reduce / all_gather / all_to_all / all_slice / reduce_scatter /
//                    shift: one CollectiveStep each; they separate kernels;
//   rematerialized   cheap pure ops without regions that yield no tensor (constants, index
//                    arithmetic, shard.process_multi_index) and tensor.empty: cloned into every
//                    kernel that uses them instead of being passed between steps; a fill of a
//                    constant (IsRefilled) is a kernel op, but cloned into the later kernels
//                    that use it rather than passed to them;
//   kernel ops       everything else: consecutive ones form one kernel.
// A kernel's inputs are the tensors it uses from outside (parameters, earlier steps' outputs);
// its outputs are the tensors it defines that a later step or the return uses.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "compiler/internal.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"
#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace tessera::compiler {
namespace {

bool IsCollective(mlir::Operation* op) {
  return mlir::isa<mlir::shard::AllReduceOp, mlir::shard::AllGatherOp, mlir::shard::AllToAllOp,
                   mlir::shard::AllSliceOp, mlir::shard::ReduceScatterOp, mlir::shard::ShiftOp>(op);
}

bool IsRematerialized(mlir::Operation* op) {
  if (mlir::isa<mlir::shard::ProcessMultiIndexOp, mlir::tensor::EmptyOp>(op)) return true;
  if (op->getNumRegions() != 0 || !mlir::isMemoryEffectFree(op)) return false;
  if (op->getDialect()->getNamespace() == "shard") return false;
  for (mlir::Type type : op->getResultTypes()) {
    if (mlir::isa<mlir::ShapedType>(type)) return false;
  }
  return true;
}

// A fill of a constant into a tensor.empty: filled again in each kernel that reads it, where it
// fuses into the ops that read it, rather than written to memory by one kernel and read by the
// next (a backward pass reads the forward's broadcast constants: 8 MiB a call in a transformer
// block's Megatron step).
bool IsRefilled(mlir::Operation* op) {
  auto fill = mlir::dyn_cast<mlir::linalg::FillOp>(op);
  return fill && llvm::all_of(fill->getOperands(), [](mlir::Value operand) {
           return mlir::isa_and_nonnull<mlir::arith::ConstantOp, mlir::tensor::EmptyOp>(
               operand.getDefiningOp());
         });
}

// The single op that combines into the output of the linalg reduction defining `value` (its
// first result's combiner, as MLIR's sharding interface finds it), or null.
mlir::Operation* CombinerOf(mlir::Value value) {
  auto linalg = value.getDefiningOp<mlir::linalg::LinalgOp>();
  if (!linalg || linalg.getNumReductionLoops() == 0) return nullptr;
  const unsigned position = mlir::cast<mlir::OpResult>(value).getResultNumber();
  llvm::SmallVector<mlir::Operation*> combiners;
  if (!mlir::matchReduction(linalg.getRegionOutputArgs(), position, combiners) ||
      combiners.size() != 1) {
    return nullptr;
  }
  return combiners[0];
}

// What a combiner means across devices, and the kinds MLIR 22's sharding interface may give its
// all_reduce (it gives andi a sum, maxui / minui the signed max / min, maxnumf / minnumf none).
struct CombinerKind {
  ReductionKind kind;
  std::vector<mlir::shard::ReductionKind> mlir_kinds;
};
// `name`: the combining op's name ("arith.addf").
std::optional<CombinerKind> KindOf(llvm::StringRef name) {
  using K = mlir::shard::ReductionKind;
  using R = ReductionKind;
  if (name == "arith.addf" || name == "arith.addi") return CombinerKind{R::kSum, {K::Sum}};
  if (name == "arith.mulf" || name == "arith.muli") return CombinerKind{R::kProduct, {K::Product}};
  if (name == "arith.maximumf" || name == "arith.maxsi") return CombinerKind{R::kMax, {K::Max}};
  if (name == "arith.minimumf" || name == "arith.minsi") return CombinerKind{R::kMin, {K::Min}};
  if (name == "arith.maxui") return CombinerKind{R::kMaxUnsigned, {K::Max}};
  if (name == "arith.minui") return CombinerKind{R::kMinUnsigned, {K::Min}};
  if (name == "arith.maxnumf") return CombinerKind{R::kMaxNum, {K::Generic}};
  if (name == "arith.minnumf") return CombinerKind{R::kMinNum, {K::Generic}};
  if (name == "arith.andi") return CombinerKind{R::kAnd, {K::BitwiseAnd, K::Sum}};
  if (name == "arith.ori") return CombinerKind{R::kOr, {K::BitwiseOr}};
  if (name == "arith.xori") return CombinerKind{R::kXor, {K::BitwiseXor}};
  return std::nullopt;
}

// The reduction of collective `op` (kind `kind` from the partitioner) over `input`: taken from the
// combiner of the linalg reduction that defines `input`, never from `kind` alone (MLIR's kinds
// lose signedness and NaN semantics); a manual computation's explicit collective names its
// combiner (kCombinerAttrName). UNIMPLEMENTED, naming the combiner and its location: a
// combiner other than addf / addi, mulf / muli, maximumf / minimumf, maxnumf / minnumf, maxsi /
// minsi, maxui / minui, andi, ori, xori; none found; or one that disagrees with `kind`.
absl::StatusOr<ReductionKind> ToReduction(mlir::Operation* op, mlir::shard::ReductionKind kind,
                                          mlir::Value input) {
  const std::string collective =
      absl::StrCat(op->getName().getStringRef().str(), " at ", FormatLocation(op->getLoc()),
                   " (reduction '", mlir::shard::stringifyReductionKind(kind).str(), "')");
  if (auto named = op->getAttrOfType<mlir::StringAttr>(kCombinerAttrName)) {
    std::optional<CombinerKind> combined = KindOf(named.getValue());
    if (!combined || absl::c_find(combined->mlir_kinds, kind) == combined->mlir_kinds.end()) {
      return absl::UnimplementedError(absl::StrCat(collective, " combines with '",
                                                   named.getValue().str(),
                                                   "', which is not one of its reductions"));
    }
    return combined->kind;
  }
  mlir::Operation* combiner = CombinerOf(input);
  if (combiner == nullptr) {
    return absl::UnimplementedError(
        absl::StrCat(collective,
                     ": its input is not a linalg reduction with one combining op, so what it "
                     "combines is unknown"));
  }
  const std::string name = absl::StrCat("combiner '", combiner->getName().getStringRef().str(),
                                        "' at ", FormatLocation(combiner->getLoc()));
  std::optional<CombinerKind> combined = KindOf(combiner->getName().getStringRef());
  if (!combined) {
    return absl::UnimplementedError(absl::StrCat(
        "a reduction over a sharded dimension with ", name,
        ": across devices only addf, addi, mulf, muli, maximumf, minimumf, maxnumf, minnumf, "
        "maxsi, minsi, maxui, minui, andi, ori and xori combine (",
        collective, ")"));
  }
  if (absl::c_find(combined->mlir_kinds, kind) == combined->mlir_kinds.end()) {
    return absl::UnimplementedError(absl::StrCat(collective, " does not match its ", name));
  }
  return combined->kind;
}

// The CollectiveStep of `op` (input and output ids filled by the caller).
absl::StatusOr<CollectiveStep> DescribeCollective(mlir::Operation* op) {
  CollectiveStep step;
  auto axes = [&](llvm::ArrayRef<int16_t> grid_axes) {
    step.grid_axes.assign(grid_axes.begin(), grid_axes.end());
  };
  if (auto all_reduce = mlir::dyn_cast<mlir::shard::AllReduceOp>(op)) {
    step.kind = CollectiveKind::kAllReduce;
    axes(all_reduce.getGridAxes());
    TESSERA_ASSIGN_OR_RETURN(step.reduction,
                             ToReduction(op, all_reduce.getReduction(), all_reduce.getInput()));
    if (all_reduce.getInput().getType() != all_reduce.getResult().getType()) {
      return absl::UnimplementedError(absl::StrCat("all_reduce at ", FormatLocation(op->getLoc()),
                                                   " changes the element type"));
    }
  } else if (auto gather = mlir::dyn_cast<mlir::shard::AllGatherOp>(op)) {
    step.kind = CollectiveKind::kAllGather;
    axes(gather.getGridAxes());
    step.gather_axis = gather.getGatherAxis().getSExtValue();
  } else if (auto to_all = mlir::dyn_cast<mlir::shard::AllToAllOp>(op)) {
    step.kind = CollectiveKind::kAllToAll;
    axes(to_all.getGridAxes());
    step.split_axis = to_all.getSplitAxis().getSExtValue();
    step.concat_axis = to_all.getConcatAxis().getSExtValue();
  } else if (auto slice = mlir::dyn_cast<mlir::shard::AllSliceOp>(op)) {
    step.kind = CollectiveKind::kAllSlice;
    axes(slice.getGridAxes());
    step.split_axis = slice.getSliceAxis().getSExtValue();
  } else if (auto scatter = mlir::dyn_cast<mlir::shard::ReduceScatterOp>(op)) {
    step.kind = CollectiveKind::kReduceScatter;
    axes(scatter.getGridAxes());
    step.split_axis = scatter.getScatterAxis().getSExtValue();
    TESSERA_ASSIGN_OR_RETURN(step.reduction,
                             ToReduction(op, scatter.getReduction(), scatter.getInput()));
  } else if (auto shift = mlir::dyn_cast<mlir::shard::ShiftOp>(op)) {
    step.kind = CollectiveKind::kCollectivePermute;
    axes(shift.getGridAxes());
    const int64_t shift_axis = shift.getShiftAxis().getSExtValue();
    if (step.grid_axes != std::vector<int>{static_cast<int>(shift_axis)}) {
      return absl::UnimplementedError(
          absl::StrCat("shift at ", FormatLocation(op->getLoc()),
                       ": only a shift within groups along its own grid axis is supported"));
    }
    step.shift_offset = shift.getOffsetAttr().getValue().getSExtValue();
    step.shift_rotates = shift.getRotate();
  }
  return step;
}

// The cutter's state over one @main.
class Cutter {
 public:
  Cutter(mlir::func::FuncOp main, const std::vector<int64_t>& grid_shape)
      : main_(main), block_(main.getBody().front()), grid_rank_(grid_shape.size()) {}

  absl::StatusOr<CutProgram> Run();

 private:
  struct Segment {
    std::vector<mlir::Operation*> ops;
    absl::flat_hash_set<mlir::Operation*> members;
    llvm::SetVector<mlir::Value> inputs;      // plan values, in first-use order
    llvm::SetVector<mlir::Operation*> remat;  // top-level ops to clone in
    llvm::SetVector<mlir::Value> outputs;
  };

  absl::Status CheckOps();
  void FormSegments();
  absl::Status CollectInputs(Segment& segment);
  absl::Status AddExternal(Segment& segment, mlir::Value value);
  // Whether an op of `segment` defines `value`.
  bool DefinedBy(const Segment& segment, mlir::Value value);
  absl::Status CollectOutputs(Segment& segment);
  absl::StatusOr<int> NewValue(mlir::Value value);
  absl::StatusOr<int> IdOf(mlir::Value value, std::string_view use);
  absl::Status EmitKernel(Segment& segment, CutProgram& cut);
  absl::Status EmitCollective(mlir::Operation* op, CutProgram& cut);

  mlir::func::FuncOp main_;
  mlir::Block& block_;
  size_t grid_rank_;
  // In program order: a segment (index into segments_) or a collective op.
  std::vector<std::pair<int, mlir::Operation*>> order_;
  std::vector<Segment> segments_;
  llvm::DenseMap<mlir::Operation*, int> segment_of_;  // kernel op -> segment
  llvm::DenseMap<mlir::Value, int> ids_;
  std::vector<ProgramValue> values_;
};

absl::Status Cutter::CheckOps() {
  for (mlir::Operation& op : block_.without_terminator()) {
    absl::Status status;
    op.walk([&](mlir::Operation* nested) {
      if (IsCollective(nested) && nested != &op) {
        // Collectives run between kernels; a kernel's loop or branch cannot hold one.
        status = absl::UnimplementedError(absl::StrCat(
            "'", nested->getName().getStringRef().str(), "' at ", FormatLocation(nested->getLoc()),
            " is inside '", op.getName().getStringRef().str(), "' at ", FormatLocation(op.getLoc()),
            ": a collective inside a loop or a branch (a psum in a lax.map, scan or cond body) "
            "is not supported; the runtime runs collectives between kernels"));
        return mlir::WalkResult::interrupt();
      }
      if (nested->getDialect()->getNamespace() != "shard" || IsCollective(nested) ||
          mlir::isa<mlir::shard::ProcessMultiIndexOp>(nested)) {
        return mlir::WalkResult::advance();
      }
      status = absl::UnimplementedError(absl::StrCat(
          "the partitioned program uses '", nested->getName().getStringRef().str(), "' at ",
          FormatLocation(nested->getLoc()), ", which the runtime cannot execute"));
      return mlir::WalkResult::interrupt();
    });
    TESSERA_RETURN_IF_ERROR(status);
    if ((IsCollective(&op) || mlir::isa<mlir::shard::ProcessMultiIndexOp>(&op)) &&
        op.getParentOp() != main_) {
      return absl::UnimplementedError("a shard op nested in a region of @main");
    }
  }
  return absl::OkStatus();
}

void Cutter::FormSegments() {
  int current = -1;
  for (mlir::Operation& op : block_.without_terminator()) {
    if (IsCollective(&op)) {
      order_.push_back({-1, &op});
      current = -1;
    } else if (!IsRematerialized(&op)) {
      if (current < 0) {
        current = static_cast<int>(segments_.size());
        segments_.emplace_back();
        order_.push_back({current, nullptr});
      }
      segments_[current].ops.push_back(&op);
      segments_[current].members.insert(&op);
      segment_of_[&op] = current;
    }
  }
}

bool Cutter::DefinedBy(const Segment& segment, mlir::Value value) {
  mlir::Operation* def = value.getDefiningOp();
  mlir::Operation* owner = def ? block_.findAncestorOpInBlock(*def) : nullptr;
  return owner != nullptr && segment.members.contains(owner);
}

absl::Status Cutter::AddExternal(Segment& segment, mlir::Value value) {
  mlir::Operation* def = value.getDefiningOp();
  if (def && (IsRematerialized(def) || IsRefilled(def))) {
    if (segment.remat.contains(def)) return absl::OkStatus();
    for (mlir::Value operand : def->getOperands()) {
      // An operand this kernel computes (a scalar read of its tensor): the clone goes after it.
      if (DefinedBy(segment, operand)) continue;
      TESSERA_RETURN_IF_ERROR(AddExternal(segment, operand));
    }
    segment.remat.insert(def);
    return absl::OkStatus();
  }
  if (!mlir::isa<mlir::RankedTensorType>(value.getType())) {
    return absl::UnimplementedError(
        absl::StrCat("a non-tensor value defined at ", FormatLocation(value.getLoc()),
                     " is used across a collective; only tensors can pass between steps"));
  }
  segment.inputs.insert(value);
  return absl::OkStatus();
}

absl::Status Cutter::CollectInputs(Segment& segment) {
  absl::Status status;
  for (mlir::Operation* op : segment.ops) {
    op->walk([&](mlir::Operation* nested) {
      for (mlir::Value operand : nested->getOperands()) {
        mlir::Operation* def = operand.getDefiningOp();
        mlir::Operation* owner = def ? block_.findAncestorOpInBlock(*def) : nullptr;
        if (owner == nullptr) {
          // A block argument: of @main (external) or of a region inside this segment.
          if (mlir::cast<mlir::BlockArgument>(operand).getOwner() != &block_) continue;
        } else if (segment.members.contains(owner)) {
          continue;
        }
        status.Update(AddExternal(segment, operand));
      }
    });
  }
  return status;
}

absl::Status Cutter::CollectOutputs(Segment& segment) {
  for (mlir::Operation* op : segment.ops) {
    for (mlir::Value result : op->getResults()) {
      for (mlir::Operation* user : result.getUsers()) {
        mlir::Operation* owner = block_.findAncestorOpInBlock(*user);
        if (owner != nullptr && segment.members.contains(owner)) continue;
        // A later kernel fills it again; a collective or the return takes it from this one.
        if (IsRefilled(op) && owner != nullptr && !IsCollective(owner) &&
            owner != block_.getTerminator()) {
          continue;
        }
        if (!mlir::isa<mlir::RankedTensorType>(result.getType())) {
          return absl::UnimplementedError(
              absl::StrCat("a non-tensor value defined at ", FormatLocation(result.getLoc()),
                           " is used across a collective; only tensors can pass between steps"));
        }
        segment.outputs.insert(result);
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<int> Cutter::NewValue(mlir::Value value) {
  TESSERA_ASSIGN_OR_RETURN(ProgramValue program_value, ValueOfType(value.getType()));
  int id = static_cast<int>(values_.size());
  values_.push_back(std::move(program_value));
  ids_[value] = id;
  return id;
}

absl::StatusOr<int> Cutter::IdOf(mlir::Value value, std::string_view use) {
  auto it = ids_.find(value);
  if (it != ids_.end()) return it->second;
  return absl::UnimplementedError(absl::StrCat(
      std::string(use), " at ", FormatLocation(value.getLoc()), " uses a value no step defines"));
}

absl::Status Cutter::EmitKernel(Segment& segment, CutProgram& cut) {
  if (segment.outputs.empty()) return absl::OkStatus();  // dead code: nothing uses its values
  KernelStep step;
  step.name = absl::StrCat("kernel_", cut.kernels.size());
  std::vector<mlir::Type> arg_types, result_types;
  for (mlir::Value input : segment.inputs) {
    TESSERA_ASSIGN_OR_RETURN(int id, IdOf(input, step.name));
    step.inputs.push_back(id);
    arg_types.push_back(input.getType());
  }
  for (mlir::Operation* op : segment.remat) {
    step.takes_device_position |= mlir::isa<mlir::shard::ProcessMultiIndexOp>(op);
  }
  mlir::OpBuilder builder(main_.getContext());
  if (step.takes_device_position)
    arg_types.resize(arg_types.size() + grid_rank_, builder.getI64Type());
  for (mlir::Value output : segment.outputs) result_types.push_back(output.getType());

  mlir::Location loc = segment.ops.front()->getLoc();
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::ModuleOp::create(loc);
  builder.setInsertionPointToEnd(module->getBody());
  auto func = mlir::func::FuncOp::create(builder, loc, step.name,
                                         builder.getFunctionType(arg_types, result_types));
  mlir::Block* body = func.addEntryBlock();
  builder.setInsertionPointToStart(body);
  mlir::IRMapping mapping;
  for (size_t i = 0; i < segment.inputs.size(); ++i) {
    mapping.map(segment.inputs[i], body->getArgument(i));
  }
  // Rematerialized ops go first, except those reading a value the kernel computes (a scalar read
  // of one of its tensors), which go right before their first user.
  std::vector<mlir::Operation*> late;
  for (mlir::Operation* op : segment.remat) {
    if (llvm::any_of(op->getOperands(),
                     [&](mlir::Value operand) { return DefinedBy(segment, operand); })) {
      late.push_back(op);
      continue;
    }
    auto position = mlir::dyn_cast<mlir::shard::ProcessMultiIndexOp>(op);
    if (!position) {
      builder.clone(*op, mapping);
      continue;
    }
    // The device's coordinate per grid axis arrives as trailing i64 arguments.
    llvm::ArrayRef<int16_t> axes = position.getAxes();
    for (size_t j = 0; j < position.getNumResults(); ++j) {
      size_t axis = axes.empty() ? j : static_cast<size_t>(axes[j]);
      mlir::Value coordinate = body->getArgument(segment.inputs.size() + axis);
      mapping.map(position->getResult(j),
                  mlir::arith::IndexCastOp::create(builder, op->getLoc(), builder.getIndexType(),
                                                   coordinate)
                      .getResult());
    }
  }
  std::vector<std::string> op_names;
  auto uses = [](mlir::Operation* user, mlir::Operation* def) {
    bool used = false;
    user->walk([&](mlir::Operation* nested) {
      for (mlir::Value operand : nested->getOperands()) used |= operand.getDefiningOp() == def;
    });
    return used;
  };
  for (mlir::Operation* op : segment.ops) {
    for (mlir::Operation*& pending : late) {
      if (pending != nullptr && uses(op, pending)) {
        builder.clone(*pending, mapping);
        pending = nullptr;
      }
    }
    builder.clone(*op, mapping);
    if (!mlir::isa<mlir::arith::ConstantOp, mlir::tensor::EmptyOp>(op)) {
      op_names.push_back(op->getName().getStringRef().str());
    }
  }
  step.ops = absl::StrJoin(op_names, ", ");
  std::vector<mlir::Value> returned;
  for (mlir::Value output : segment.outputs) {
    returned.push_back(mapping.lookup(output));
    TESSERA_ASSIGN_OR_RETURN(int id, NewValue(output));
    step.outputs.push_back(id);
  }
  mlir::func::ReturnOp::create(builder, loc, returned);

  cut.kernel_step_indices.push_back(cut.plan.steps.size());
  cut.kernels.push_back(std::move(module));
  cut.plan.steps.push_back({ProgramStep::Kind::kKernel, std::move(step), {}});
  return absl::OkStatus();
}

absl::Status Cutter::EmitCollective(mlir::Operation* op, CutProgram& cut) {
  TESSERA_ASSIGN_OR_RETURN(CollectiveStep step, DescribeCollective(op));
  TESSERA_ASSIGN_OR_RETURN(step.input, IdOf(op->getOperand(0), op->getName().getStringRef().str()));
  TESSERA_ASSIGN_OR_RETURN(step.output, NewValue(op->getResult(0)));
  cut.plan.steps.push_back({ProgramStep::Kind::kCollective, {}, std::move(step)});
  return absl::OkStatus();
}

absl::StatusOr<CutProgram> Cutter::Run() {
  TESSERA_RETURN_IF_ERROR(CheckOps());
  FormSegments();
  for (Segment& segment : segments_) {
    TESSERA_RETURN_IF_ERROR(CollectInputs(segment));
    TESSERA_RETURN_IF_ERROR(CollectOutputs(segment));
  }
  CutProgram cut;
  for (mlir::BlockArgument arg : block_.getArguments()) {
    TESSERA_ASSIGN_OR_RETURN(int id, NewValue(arg));
    cut.plan.parameters.push_back(id);
  }
  for (auto [segment, collective] : order_) {
    if (collective != nullptr) {
      TESSERA_RETURN_IF_ERROR(EmitCollective(collective, cut));
    } else {
      TESSERA_RETURN_IF_ERROR(EmitKernel(segments_[segment], cut));
    }
  }
  // A tensor.empty the program returns as it is (a slice of no elements, as jnp's out-of-range
  // slices make): rematerialized where used, so no step defines it; a kernel of its own does.
  for (mlir::Value result : block_.getTerminator()->getOperands()) {
    auto empty = result.getDefiningOp<mlir::tensor::EmptyOp>();
    if (!empty || empty->getBlock() != &block_ || ids_.contains(result)) continue;
    Segment segment;
    segment.ops.push_back(empty);
    segment.members.insert(empty);
    segment.outputs.insert(result);
    TESSERA_RETURN_IF_ERROR(EmitKernel(segment, cut));
  }
  for (mlir::Value result : block_.getTerminator()->getOperands()) {
    TESSERA_ASSIGN_OR_RETURN(int id, IdOf(result, "the return"));
    cut.plan.results.push_back(id);
  }
  cut.plan.values = std::move(values_);
  return cut;
}

}  // namespace

absl::StatusOr<CutProgram> CutIntoSteps(mlir::ModuleOp module, mlir::func::FuncOp main,
                                        const std::vector<int64_t>& grid_shape) {
  return Cutter(main, grid_shape).Run();
}

}  // namespace tessera::compiler
