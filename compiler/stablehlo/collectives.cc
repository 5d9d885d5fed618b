// The explicit collectives of a manual computation's body (shard_map's psum, all_gather,
// psum_scatter, all_to_all, ppermute, axis_index): StableHLO's all_reduce, all_gather,
// reduce_scatter, all_to_all, collective_permute (shifts along mesh axes), partition_id and
// replica_id as the shard dialect's ops on @grid (internal.h). A
// collective's replica_groups (device ids, the devices in mesh order) must be the groups of some
// mesh axes, in some order: those become its grid axes.

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "compiler/internal.h"
#include "compiler/stablehlo/import_state.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinAttributes.h"

namespace tessera::compiler::stablehlo {
namespace {

using Groups = std::set<std::vector<int64_t>>;

// The most mesh axes one collective may span (GridAxesOf tries their 720 orders).
constexpr size_t kMaxSearchedAxes = 6;

// The device groups a collective over `axes` (in that order) of `grid` makes: the devices that
// agree on every other axis, ordered row-major by their coordinates on `axes`.
Groups GroupsOf(const std::vector<int64_t>& grid, const std::vector<int16_t>& axes) {
  int64_t devices = 1;
  for (int64_t size : grid) devices *= size;
  int64_t members = 1;
  for (int16_t axis : axes) members *= grid[axis];
  std::map<std::vector<int64_t>, std::vector<int64_t>> by_rest;
  for (int64_t device = 0; device < devices; ++device) {
    std::vector<int64_t> coords(grid.size());
    for (int64_t rest = device, i = static_cast<int64_t>(grid.size()) - 1; i >= 0; --i) {
      coords[i] = rest % grid[i];
      rest /= grid[i];
    }
    int64_t position = 0;
    for (int16_t axis : axes) {
      position = position * grid[axis] + coords[axis];
      coords[axis] = -1;
    }
    std::vector<int64_t>& group = by_rest[coords];
    group.resize(members);
    group[position] = device;
  }
  Groups groups;
  for (auto& [rest, group] : by_rest) groups.insert(std::move(group));
  return groups;
}

// `replica_groups` of `op` read as device groups: rows of distinct ids in [0, devices), every
// device in one group; empty (`dense<>`) means one group of all devices in order.
absl::StatusOr<Groups> ReadGroups(mlir::Operation* op, int64_t devices) {
  auto attr = mlir::dyn_cast_or_null<mlir::DenseIntElementsAttr>(
      ImportState::GetAttr(op, "replica_groups"));
  auto type = attr ? mlir::dyn_cast<mlir::RankedTensorType>(attr.getType()) : nullptr;
  if (!type || type.getRank() != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat(ImportState::Where(op), ": expected replica_groups, a 2-D integer tensor"));
  }
  std::vector<int64_t> ids;
  for (const llvm::APInt& id : attr.getValues<llvm::APInt>()) ids.push_back(id.getSExtValue());
  Groups groups;
  if (ids.empty()) {
    std::vector<int64_t> all(devices);
    for (int64_t i = 0; i < devices; ++i) all[i] = i;
    groups.insert(all);
    return groups;
  }
  const int64_t width = type.getDimSize(1);
  std::vector<bool> seen(devices, false);
  for (size_t row = 0; row * width < ids.size(); ++row) {
    std::vector<int64_t> group(ids.begin() + row * width, ids.begin() + (row + 1) * width);
    for (int64_t id : group) {
      if (id < 0 || id >= devices || seen[id]) {
        return absl::InvalidArgumentError(
            absl::StrCat(ImportState::Where(op), ": replica_groups name device ", id,
                         " outside the shard_map's ", devices, " devices or twice"));
      }
      seen[id] = true;
    }
    groups.insert(std::move(group));
  }
  if (static_cast<int64_t>(ids.size()) != devices) {
    return absl::InvalidArgumentError(absl::StrCat(ImportState::Where(op), ": replica_groups name ",
                                                   ids.size(), " of the shard_map's ", devices,
                                                   " devices; every device must be in one group"));
  }
  return groups;
}

// The grid axes, in order, whose groups are `op`'s replica_groups over the manual computation's
// grid (axes of size 1 left out; none: every group is one device). The axes are those along which
// the first group's members differ; their order, one of their permutations.
absl::StatusOr<std::vector<int16_t>> GridAxesOf(ImportState& state, mlir::Operation* op) {
  const std::vector<int64_t>& grid = *state.manual_grid();
  int64_t devices = 1;
  for (int64_t size : grid) devices *= size;  // at most kMaxManualDevices (manual_computation.h)
  TESSERA_ASSIGN_OR_RETURN(Groups groups, ReadGroups(op, devices));
  std::vector<int16_t> varying;
  const std::vector<int64_t>& first = *groups.begin();
  int64_t members = 1;
  for (size_t a = 0; a < grid.size(); ++a) {
    int64_t stride = 1;
    for (size_t b = a + 1; b < grid.size(); ++b) stride *= grid[b];
    for (int64_t device : first) {
      if ((device / stride) % grid[a] != (first[0] / stride) % grid[a]) {
        varying.push_back(static_cast<int16_t>(a));
        members *= grid[a];
        break;
      }
    }
  }
  if (varying.size() > kMaxSearchedAxes) {
    return absl::UnimplementedError(absl::StrCat(ImportState::Where(op), ": a collective over ",
                                                 varying.size(), " mesh axes (at most ",
                                                 kMaxSearchedAxes, " are supported)"));
  }
  std::optional<std::vector<int16_t>> found;
  if (members == static_cast<int64_t>(first.size())) {
    do {
      if (GroupsOf(grid, varying) == groups) found = varying;
    } while (!found && std::next_permutation(varying.begin(), varying.end()));
  }
  if (!found) {
    std::vector<std::string> rows;
    for (const std::vector<int64_t>& group : groups) {
      rows.push_back(absl::StrCat("[", absl::StrJoin(group, ","), "]"));
      if (rows.size() == 4) break;
    }
    return absl::UnimplementedError(
        absl::StrCat(ImportState::Where(op), ": its replica_groups (", absl::StrJoin(rows, ", "),
                     groups.size() > 4 ? ", ..." : "",
                     ") are not the groups of any mesh axes of the shard_map's mesh, which is all "
                     "Tessera's collectives communicate over"));
  }
  return *found;
}

// Whether `op` (a collective outside a shard_map body) has replica_groups of one device each
// (JAX's psum over a mesh of size-1 axes, as its gradients make outside any shard_map): each
// device's result is then its own operand. Maps each result to its operand when so.
bool MappedAsOneDeviceGroups(ImportState& state, mlir::Operation* op) {
  auto attr = mlir::dyn_cast_or_null<mlir::DenseIntElementsAttr>(
      ImportState::GetAttr(op, "replica_groups"));
  auto type = attr ? mlir::dyn_cast<mlir::RankedTensorType>(attr.getType()) : nullptr;
  if (!type || type.getRank() != 2 || type.getDimSize(1) != 1 ||
      op->getNumOperands() != op->getNumResults()) {
    return false;
  }
  std::vector<mlir::Value> inputs;
  for (unsigned i = 0; i < op->getNumOperands(); ++i) {
    absl::StatusOr<mlir::Value> input = state.Operand(op, i);
    absl::StatusOr<mlir::RankedTensorType> in = state.OperandType(op, i);
    absl::StatusOr<mlir::RankedTensorType> out = state.ResultType(op, i);
    if (!input.ok() || !in.ok() || !out.ok() || *in != *out) return false;
    inputs.push_back(*input);
  }
  for (unsigned i = 0; i < op->getNumResults(); ++i) state.Map(op->getResult(i), inputs[i]);
  return true;
}

// The manual computation's grid, or UNIMPLEMENTED for a collective outside one.
absl::Status CheckInManualComputation(ImportState& state, mlir::Operation* op) {
  if (state.manual_grid()) return absl::OkStatus();
  return absl::UnimplementedError(absl::StrCat(
      ImportState::Where(op),
      " outside a shard_map body: explicit collectives are supported inside shard_map only "
      "(and those whose device groups are one device each)"));
}

// `convert`, which takes collectives with replica_groups, preceded by the case of one device per
// group outside a shard_map body (MappedAsOneDeviceGroups).
OpConversion WithOneDeviceGroupsOutsideBodies(OpConversion convert) {
  return [convert = std::move(convert)](ImportState& state, mlir::Operation* op) {
    if (!state.manual_grid() && MappedAsOneDeviceGroups(state, op)) return absl::OkStatus();
    return convert(state, op);
  };
}

mlir::FlatSymbolRefAttr GridSymbol(ImportState& state) {
  return mlir::FlatSymbolRefAttr::get(state.builder().getContext(), kGridName);
}

// The arith op (by name) that combines two elements of `element` (the old type: signedness) as
// the body op `name` does, and the shard reduction kind it is; nullopt for others.
struct Combiner {
  std::string arith;
  mlir::shard::ReductionKind kind;
};
std::optional<Combiner> CombinerOf(std::string_view name, mlir::Type element) {
  using K = mlir::shard::ReductionKind;
  const bool is_float = mlir::isa<mlir::FloatType>(element);
  const bool is_bool = element.isInteger(1);
  const bool is_unsigned = element.isUnsignedInteger();
  // On booleans add / maximum are or, multiply / minimum are and (StableHLO's spec).
  if (name == "stablehlo.add") {
    if (is_bool) return Combiner{"arith.ori", K::BitwiseOr};
    return Combiner{is_float ? "arith.addf" : "arith.addi", K::Sum};
  }
  if (name == "stablehlo.multiply") {
    if (is_bool) return Combiner{"arith.andi", K::BitwiseAnd};
    return Combiner{is_float ? "arith.mulf" : "arith.muli", K::Product};
  }
  if (name == "stablehlo.maximum") {
    if (is_bool) return Combiner{"arith.ori", K::BitwiseOr};
    return Combiner{is_float      ? "arith.maximumf"
                    : is_unsigned ? "arith.maxui"
                                  : "arith.maxsi",
                    K::Max};
  }
  if (name == "stablehlo.minimum") {
    if (is_bool) return Combiner{"arith.andi", K::BitwiseAnd};
    return Combiner{is_float      ? "arith.minimumf"
                    : is_unsigned ? "arith.minui"
                                  : "arith.minsi",
                    K::Min};
  }
  if (is_float) return std::nullopt;
  if (name == "stablehlo.and") return Combiner{"arith.andi", K::BitwiseAnd};
  if (name == "stablehlo.or") return Combiner{"arith.ori", K::BitwiseOr};
  if (name == "stablehlo.xor") return Combiner{"arith.xori", K::BitwiseXor};
  return std::nullopt;
}

// The body op of an all_reduce / reduce_scatter: one op of its two arguments, returned.
absl::StatusOr<std::string> ReadCombinerBody(mlir::Operation* op) {
  mlir::Operation* combine = BinaryBodyOp(op);
  if (combine == nullptr) {
    return absl::UnimplementedError(absl::StrCat(
        ImportState::Where(op),
        ": its body must be one op of its two arguments (add, multiply, maximum, minimum, and, "
        "or, xor), returned"));
  }
  return combine->getName().getStringRef().str();
}

// `op`'s combiner for operand `i`'s element type, or UNIMPLEMENTED.
absl::StatusOr<Combiner> ReadCombiner(mlir::Operation* op, mlir::RankedTensorType operand) {
  TESSERA_ASSIGN_OR_RETURN(std::string name, ReadCombinerBody(op));
  std::optional<Combiner> combiner = CombinerOf(name, operand.getElementType());
  if (!combiner) {
    return absl::UnimplementedError(
        absl::StrCat(ImportState::Where(op), ": '", name, "' does not combine across devices"));
  }
  return *combiner;
}

// The integer attribute `name` of `op` in [0, rank). INVALID_ARGUMENT otherwise.
absl::StatusOr<int64_t> DimensionAttr(mlir::Operation* op, std::string_view name, int64_t rank) {
  auto attr = mlir::dyn_cast_or_null<mlir::IntegerAttr>(ImportState::GetAttr(op, name));
  if (!attr || attr.getValue().getSignificantBits() > 64 || attr.getInt() < 0 ||
      attr.getInt() >= rank) {
    return absl::InvalidArgumentError(absl::StrCat(ImportState::Where(op), ": ", std::string(name),
                                                   " must be a dimension of the operand (rank ",
                                                   rank, ")"));
  }
  return attr.getInt();
}

// The product of the sizes of `axes` on the manual grid.
int64_t GroupSize(ImportState& state, const std::vector<int16_t>& axes) {
  int64_t size = 1;
  for (int16_t axis : axes) size *= (*state.manual_grid())[axis];
  return size;
}

absl::Status ShapeMismatch(mlir::Operation* op, unsigned i, std::string_view expected) {
  return absl::InvalidArgumentError(absl::StrCat(ImportState::Where(op), ": result ", i,
                                                 " must have the operand's shape with ",
                                                 std::string(expected)));
}

// stablehlo.all_reduce (psum / pmax / pmin over mesh axes): one shard.all_reduce per operand.
absl::Status ConvertAllReduce(ImportState& state, mlir::Operation* op) {
  TESSERA_RETURN_IF_ERROR(CheckInManualComputation(state, op));
  const unsigned n = op->getNumOperands();
  TESSERA_RETURN_IF_ERROR(ImportState::CheckArity(op, n, n));
  TESSERA_ASSIGN_OR_RETURN(std::vector<int16_t> axes, GridAxesOf(state, op));
  for (unsigned i = 0; i < n; ++i) {
    TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType in, state.OperandType(op, i));
    TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType out, state.ResultType(op, i));
    TESSERA_ASSIGN_OR_RETURN(mlir::Value input, state.Operand(op, i));
    TESSERA_ASSIGN_OR_RETURN(Combiner combiner, ReadCombiner(op, in));
    if (in != out) return ShapeMismatch(op, i, "its type");
    if (axes.empty()) {
      state.Map(op->getResult(i), input);
      continue;
    }
    auto reduce = mlir::shard::AllReduceOp::create(
        state.builder(), op->getLoc(), ImportState::NewType(out), GridSymbol(state),
        state.builder().getDenseI16ArrayAttr(axes), input,
        mlir::shard::ReductionKindAttr::get(state.builder().getContext(), combiner.kind));
    reduce->setAttr(kCombinerAttrName, state.builder().getStringAttr(combiner.arith));
    state.Map(op->getResult(i), reduce.getResult());
  }
  return absl::OkStatus();
}

// stablehlo.all_gather (all_gather over mesh axes, tiled): shard.all_gather per operand.
absl::Status ConvertAllGather(ImportState& state, mlir::Operation* op) {
  TESSERA_RETURN_IF_ERROR(CheckInManualComputation(state, op));
  const unsigned n = op->getNumOperands();
  TESSERA_RETURN_IF_ERROR(ImportState::CheckArity(op, n, n));
  TESSERA_ASSIGN_OR_RETURN(std::vector<int16_t> axes, GridAxesOf(state, op));
  const int64_t members = GroupSize(state, axes);
  for (unsigned i = 0; i < n; ++i) {
    TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType in, state.OperandType(op, i));
    TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType out, state.ResultType(op, i));
    TESSERA_ASSIGN_OR_RETURN(mlir::Value input, state.Operand(op, i));
    TESSERA_ASSIGN_OR_RETURN(int64_t dim, DimensionAttr(op, "all_gather_dim", in.getRank()));
    llvm::SmallVector<int64_t> expected(in.getShape());
    expected[dim] *= members;
    if (out.getShape() != llvm::ArrayRef<int64_t>(expected) ||
        out.getElementType() != in.getElementType()) {
      return ShapeMismatch(op, i, absl::StrCat("dimension ", dim, " ", members, " times longer"));
    }
    if (axes.empty()) {
      state.Map(op->getResult(i), input);
      continue;
    }
    auto gather = mlir::shard::AllGatherOp::create(
        state.builder(), op->getLoc(), ImportState::NewType(out), GridSymbol(state),
        state.builder().getDenseI16ArrayAttr(axes), input, state.builder().getIndexAttr(dim));
    state.Map(op->getResult(i), gather.getResult());
  }
  return absl::OkStatus();
}

// stablehlo.reduce_scatter (psum_scatter, tiled): shard.reduce_scatter.
absl::Status ConvertReduceScatter(ImportState& state, mlir::Operation* op) {
  TESSERA_RETURN_IF_ERROR(CheckInManualComputation(state, op));
  TESSERA_RETURN_IF_ERROR(ImportState::CheckArity(op, 1, 1));
  TESSERA_ASSIGN_OR_RETURN(std::vector<int16_t> axes, GridAxesOf(state, op));
  const int64_t members = GroupSize(state, axes);
  TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType in, state.OperandType(op, 0));
  TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType out, state.ResultType(op, 0));
  TESSERA_ASSIGN_OR_RETURN(mlir::Value input, state.Operand(op, 0));
  TESSERA_ASSIGN_OR_RETURN(Combiner combiner, ReadCombiner(op, in));
  TESSERA_ASSIGN_OR_RETURN(int64_t dim, DimensionAttr(op, "scatter_dimension", in.getRank()));
  llvm::SmallVector<int64_t> expected(in.getShape());
  if (expected[dim] % members != 0) {
    return absl::InvalidArgumentError(absl::StrCat(ImportState::Where(op), ": dimension ", dim,
                                                   " of size ", expected[dim],
                                                   " does not split into ", members, " pieces"));
  }
  expected[dim] /= members;
  if (out.getShape() != llvm::ArrayRef<int64_t>(expected) ||
      out.getElementType() != in.getElementType()) {
    return ShapeMismatch(op, 0, absl::StrCat("dimension ", dim, " ", members, " times shorter"));
  }
  if (axes.empty()) {
    state.Map(op->getResult(0), input);
    return absl::OkStatus();
  }
  auto scatter = mlir::shard::ReduceScatterOp::create(
      state.builder(), op->getLoc(), ImportState::NewType(out), GridSymbol(state),
      state.builder().getDenseI16ArrayAttr(axes), input,
      mlir::shard::ReductionKindAttr::get(state.builder().getContext(), combiner.kind),
      state.builder().getIndexAttr(dim));
  scatter->setAttr(kCombinerAttrName, state.builder().getStringAttr(combiner.arith));
  state.Map(op->getResult(0), scatter.getResult());
  return absl::OkStatus();
}

// stablehlo.all_to_all (all_to_all, tiled): shard.all_to_all per operand.
absl::Status ConvertAllToAll(ImportState& state, mlir::Operation* op) {
  TESSERA_RETURN_IF_ERROR(CheckInManualComputation(state, op));
  const unsigned n = op->getNumOperands();
  TESSERA_RETURN_IF_ERROR(ImportState::CheckArity(op, n, n));
  TESSERA_ASSIGN_OR_RETURN(std::vector<int16_t> axes, GridAxesOf(state, op));
  const int64_t members = GroupSize(state, axes);
  auto count = mlir::dyn_cast_or_null<mlir::IntegerAttr>(ImportState::GetAttr(op, "split_count"));
  if (!count || count.getValue() != members) {
    return absl::InvalidArgumentError(absl::StrCat(
        ImportState::Where(op), ": split_count must be the size of its groups, ", members));
  }
  for (unsigned i = 0; i < n; ++i) {
    TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType in, state.OperandType(op, i));
    TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType out, state.ResultType(op, i));
    TESSERA_ASSIGN_OR_RETURN(mlir::Value input, state.Operand(op, i));
    TESSERA_ASSIGN_OR_RETURN(int64_t split, DimensionAttr(op, "split_dimension", in.getRank()));
    TESSERA_ASSIGN_OR_RETURN(int64_t concat, DimensionAttr(op, "concat_dimension", in.getRank()));
    llvm::SmallVector<int64_t> expected(in.getShape());
    if (expected[split] % members != 0) {
      return absl::InvalidArgumentError(absl::StrCat(ImportState::Where(op), ": dimension ", split,
                                                     " of size ", expected[split],
                                                     " does not split into ", members, " pieces"));
    }
    expected[split] /= members;
    expected[concat] *= members;
    if (out.getShape() != llvm::ArrayRef<int64_t>(expected) ||
        out.getElementType() != in.getElementType()) {
      return ShapeMismatch(op, i,
                           "its split dimension divided and its concatenated one multiplied");
    }
    if (axes.empty()) {
      state.Map(op->getResult(i), input);
      continue;
    }
    auto exchange = mlir::shard::AllToAllOp::create(
        state.builder(), op->getLoc(), ImportState::NewType(out), GridSymbol(state),
        state.builder().getDenseI16ArrayAttr(axes), input, state.builder().getIndexAttr(split),
        state.builder().getIndexAttr(concat));
    state.Map(op->getResult(i), exchange.getResult());
  }
  return absl::OkStatus();
}

// The device's position in the manual computation's mesh, row-major, as an index (its id in
// replica_groups and source_target_pairs).
mlir::Value LinearPosition(ImportState& state, mlir::Location loc) {
  mlir::OpBuilder& builder = state.builder();
  const std::vector<int64_t>& grid = *state.manual_grid();
  std::vector<mlir::shard::GridAxis> axes;
  for (size_t i = 0; i < grid.size(); ++i) axes.push_back(static_cast<mlir::shard::GridAxis>(i));
  mlir::Value linear = mlir::arith::ConstantIndexOp::create(builder, loc, 0);
  if (axes.empty()) return linear;
  auto position = mlir::shard::ProcessMultiIndexOp::create(builder, loc, kGridName, axes);
  for (size_t i = 0; i < grid.size(); ++i) {
    mlir::Value size = mlir::arith::ConstantIndexOp::create(builder, loc, grid[i]);
    linear = mlir::arith::AddIOp::create(builder, loc,
                                         mlir::arith::MulIOp::create(builder, loc, linear, size),
                                         position->getResult(i));
  }
  return linear;
}

// stablehlo.partition_id (axis_index's source): the device's position in the mesh, row-major, as
// a rank-0 ui32 tensor; stablehlo.replica_id: 0 (one replica).
absl::Status ConvertPartitionId(ImportState& state, mlir::Operation* op) {
  TESSERA_RETURN_IF_ERROR(CheckInManualComputation(state, op));
  TESSERA_RETURN_IF_ERROR(ImportState::CheckArity(op, 0, 1));
  TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType out, state.ResultType(op, 0));
  if (out.getRank() != 0 || !out.getElementType().isInteger(32)) {
    return absl::InvalidArgumentError(
        absl::StrCat(ImportState::Where(op), ": expected a tensor<ui32> result"));
  }
  mlir::OpBuilder& builder = state.builder();
  const mlir::Location loc = op->getLoc();
  mlir::RankedTensorType type = ImportState::NewType(out);
  if (op->getName().getStringRef() == "stablehlo.replica_id") {
    state.Map(op->getResult(0), state.Fill(loc, type, builder.getI32IntegerAttr(0)));
    return absl::OkStatus();
  }
  mlir::Value linear = LinearPosition(state, loc);
  mlir::Value id = mlir::arith::IndexCastOp::create(builder, loc, type.getElementType(), linear);
  mlir::Value fill =
      mlir::linalg::FillOp::create(builder, loc, id, state.Empty(loc, type)).getResult(0);
  state.Map(op->getResult(0), fill);
  return absl::OkStatus();
}

// The (source, target) device pairs of a collective_permute: ids in [0, devices), no device a
// source or a target twice.
absl::StatusOr<std::set<std::pair<int64_t, int64_t>>> ReadPairs(mlir::Operation* op,
                                                                int64_t devices) {
  auto attr = mlir::dyn_cast_or_null<mlir::DenseIntElementsAttr>(
      ImportState::GetAttr(op, "source_target_pairs"));
  auto type = attr ? mlir::dyn_cast<mlir::RankedTensorType>(attr.getType()) : nullptr;
  if (!type || type.getRank() != 2 || (type.getNumElements() > 0 && type.getDimSize(1) != 2)) {
    return absl::InvalidArgumentError(absl::StrCat(
        ImportState::Where(op), ": expected source_target_pairs, an N x 2 integer tensor"));
  }
  std::vector<int64_t> ids;
  for (const llvm::APInt& id : attr.getValues<llvm::APInt>()) ids.push_back(id.getSExtValue());
  std::set<std::pair<int64_t, int64_t>> pairs;
  std::set<int64_t> sources, targets;
  for (size_t i = 0; i + 1 < ids.size(); i += 2) {
    const int64_t source = ids[i], target = ids[i + 1];
    if (source < 0 || source >= devices || target < 0 || target >= devices ||
        !sources.insert(source).second || !targets.insert(target).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(ImportState::Where(op), ": source_target_pairs name [", source, ", ", target,
                       "]: each id must be one of the shard_map's ", devices,
                       " devices, and no device a source or a target twice"));
    }
    pairs.insert({source, target});
  }
  return pairs;
}

// For pairs that permute the positions along mesh axis `axis` the same way in every group of
// devices agreeing on the other axes: the target positions of each offset (target position minus
// source position); nullopt for any other pairs.
std::optional<std::map<int64_t, std::vector<int64_t>>> PermutationAlong(
    const std::vector<int64_t>& grid, size_t axis,
    const std::set<std::pair<int64_t, int64_t>>& pairs) {
  int64_t devices = 1, stride = 1;
  for (int64_t size : grid) devices *= size;
  for (size_t b = axis + 1; b < grid.size(); ++b) stride *= grid[b];
  const int64_t n = grid[axis];
  auto position = [&](int64_t d) { return (d / stride) % n; };
  auto rest = [&](int64_t d) { return d - position(d) * stride; };  // the group
  std::map<int64_t, std::set<std::pair<int64_t, int64_t>>> by_group;
  for (const auto& [source, target] : pairs) {
    if (rest(source) != rest(target)) return std::nullopt;
    by_group[rest(source)].insert({position(source), position(target)});
  }
  if (static_cast<int64_t>(by_group.size()) != devices / n) return std::nullopt;
  for (const auto& [group, moves] : by_group) {
    if (moves != by_group.begin()->second) return std::nullopt;
  }
  std::map<int64_t, std::vector<int64_t>> targets;
  for (const auto& [from, to] : by_group.begin()->second) targets[to - from].push_back(to);
  return targets;
}

// For any pairs: the targets (linear ids) of each offset across all mesh axes (the target's
// coordinates minus the source's), the axes' offsets in mesh order.
std::map<std::vector<int64_t>, std::vector<int64_t>> OffsetsAcrossAxes(
    const std::vector<int64_t>& grid, const std::set<std::pair<int64_t, int64_t>>& pairs) {
  auto coordinates = [&](int64_t d) {
    std::vector<int64_t> at(grid.size());
    for (size_t i = grid.size(); i-- > 0;) {
      at[i] = d % grid[i];
      d /= grid[i];
    }
    return at;
  };
  std::map<std::vector<int64_t>, std::vector<int64_t>> targets;
  for (const auto& [source, target] : pairs) {
    std::vector<int64_t> offset = coordinates(target);
    const std::vector<int64_t> from = coordinates(source);
    for (size_t i = 0; i < grid.size(); ++i) offset[i] -= from[i];
    targets[offset].push_back(target);
  }
  return targets;
}

// A value each device may keep, and the positions (along one axis, or linear ids) that keep it.
struct Candidate {
  mlir::Value value;
  std::vector<int64_t> positions;
};

// On each device, the candidate whose positions list the device's `position`; zeros on a device
// that no candidate lists. One i1 per device (a filled mask) selects between whole tensors.
mlir::Value SelectByPosition(ImportState& state, mlir::Location loc, mlir::RankedTensorType type,
                             mlir::Value position, const std::vector<Candidate>& candidates) {
  mlir::OpBuilder& builder = state.builder();
  mlir::Value result = state.Fill(loc, type, builder.getZeroAttr(type.getElementType()));
  const auto flags = mlir::RankedTensorType::get(type.getShape(), builder.getI1Type());
  for (const Candidate& candidate : candidates) {
    mlir::Value mine = mlir::arith::ConstantIntOp::create(builder, loc, 0, 1);
    for (int64_t at : candidate.positions) {
      mlir::Value here =
          mlir::arith::CmpIOp::create(builder, loc, mlir::arith::CmpIPredicate::eq, position,
                                      mlir::arith::ConstantIndexOp::create(builder, loc, at));
      mine = mlir::arith::OrIOp::create(builder, loc, mine, here);
    }
    const mlir::Value keep =
        mlir::linalg::FillOp::create(builder, loc, mine, state.Empty(loc, flags)).getResult(0);
    result = mlir::arith::SelectOp::create(builder, loc, keep, candidate.value, result);
  }
  return result;
}

// stablehlo.collective_permute (shard_map's ppermute), the devices that no pair targets receiving
// zeros as in StableHLO. Every valid set of pairs runs, in the fewest shard.shift ops this finds:
// - pairs that shift the devices along one mesh axis, wrapping around or not (a ring, a
//   pipeline's stages): one shift, each device reading its source's input only;
// - pairs that permute the positions along one axis the same way in every group (pairwise
//   swaps, a reversal): one shift per distinct offset, each device keeping the one its position
//   takes (d offsets move up to d times the bytes);
// - any other pairs (a ring over several axes, a permutation that differs between groups): per
//   distinct offset across the axes, one shift along each axis it moves on (composed, a source's
//   block passes through a device on the way whose coordinates are all in the mesh), each device
//   keeping the one its id takes.
// No pairs: zeros; every device its own target: the input.
absl::Status ConvertCollectivePermute(ImportState& state, mlir::Operation* op) {
  TESSERA_RETURN_IF_ERROR(CheckInManualComputation(state, op));
  TESSERA_RETURN_IF_ERROR(ImportState::CheckArity(op, 1, 1));
  TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType in, state.OperandType(op, 0));
  TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType out, state.ResultType(op, 0));
  if (in != out) return ShapeMismatch(op, 0, "its type");
  TESSERA_ASSIGN_OR_RETURN(mlir::Value input, state.Operand(op, 0));
  const std::vector<int64_t>& grid = *state.manual_grid();
  int64_t devices = 1;
  for (int64_t size : grid) devices *= size;
  TESSERA_ASSIGN_OR_RETURN(auto pairs, ReadPairs(op, devices));
  mlir::OpBuilder& builder = state.builder();
  const mlir::Location loc = op->getLoc();
  const mlir::RankedTensorType type = ImportState::NewType(out);
  if (pairs.empty()) {
    state.Map(op->getResult(0), state.Fill(loc, type, builder.getZeroAttr(type.getElementType())));
    return absl::OkStatus();
  }
  if (static_cast<int64_t>(pairs.size()) == devices &&
      absl::c_all_of(pairs, [](const auto& p) { return p.first == p.second; })) {
    state.Map(op->getResult(0), input);
    return absl::OkStatus();
  }
  // shard.shift takes a tensor of rank 1 or more: a scalar travels as tensor<1> (a
  // linalg.broadcast there and a linalg.reduce back, as reshapes insert and drop units).
  const mlir::RankedTensorType shifted =
      type.getRank() == 0 ? mlir::RankedTensorType::get({1}, type.getElementType()) : type;
  const mlir::Value value =
      type.getRank() != 0
          ? input
          : mlir::linalg::BroadcastOp::create(builder, loc, input, state.Empty(loc, shifted),
                                              llvm::ArrayRef<int64_t>{0})
                ->getResult(0);
  auto from_shifted = [&](mlir::Value result) -> mlir::Value {
    if (type.getRank() != 0) return result;
    return mlir::linalg::ReduceOp::create(
               builder, loc, mlir::ValueRange{result}, mlir::ValueRange{state.Empty(loc, type)},
               llvm::ArrayRef<int64_t>{0},
               [](mlir::OpBuilder& b, mlir::Location l, mlir::ValueRange args) {
                 mlir::linalg::YieldOp::create(b, l, args[0]);
               })
        ->getResult(0);
  };
  auto shift = [&](mlir::Value moved, size_t axis, int64_t offset, bool rotate) -> mlir::Value {
    return mlir::shard::ShiftOp::create(builder, loc, shifted, GridSymbol(state),
                                        builder.getDenseI16ArrayAttr({static_cast<int16_t>(axis)}),
                                        moved, builder.getIndexAttr(static_cast<int64_t>(axis)),
                                        builder.getI64IntegerAttr(offset),
                                        rotate ? builder.getUnitAttr() : nullptr);
  };
  for (size_t axis = 0; axis < grid.size(); ++axis) {
    const int64_t n = grid[axis];
    if (n < 2) continue;
    std::optional<std::map<int64_t, std::vector<int64_t>>> by_offset =
        PermutationAlong(grid, axis, pairs);
    if (!by_offset) continue;
    // A plain shift: one offset k reaching every position it can (n - |k| of them, no wrap), or a
    // ring, offsets k and k - n covering all n positions.
    const int64_t low = by_offset->begin()->first, high = by_offset->rbegin()->first;
    const size_t reached = by_offset->begin()->second.size() + by_offset->rbegin()->second.size();
    if (by_offset->size() == 1 && low != 0 &&
        static_cast<int64_t>(by_offset->begin()->second.size()) == n - std::abs(low)) {
      state.Map(op->getResult(0), from_shifted(shift(value, axis, low, false)));
      return absl::OkStatus();
    }
    if (by_offset->size() == 2 && high - low == n && static_cast<int64_t>(reached) == n) {
      state.Map(op->getResult(0), from_shifted(shift(value, axis, high, true)));
      return absl::OkStatus();
    }
    std::vector<Candidate> candidates;
    for (const auto& [offset, targets] : *by_offset) {
      candidates.push_back({offset == 0 ? value : shift(value, axis, offset, false), targets});
    }
    const mlir::Value position =
        mlir::shard::ProcessMultiIndexOp::create(
            builder, loc, kGridName,
            llvm::ArrayRef<mlir::shard::GridAxis>{static_cast<mlir::shard::GridAxis>(axis)})
            ->getResult(0);
    state.Map(op->getResult(0),
              from_shifted(SelectByPosition(state, loc, shifted, position, candidates)));
    return absl::OkStatus();
  }
  std::vector<Candidate> candidates;
  for (const auto& [offsets, targets] : OffsetsAcrossAxes(grid, pairs)) {
    mlir::Value moved = value;
    for (size_t axis = 0; axis < grid.size(); ++axis) {
      if (offsets[axis] != 0) moved = shift(moved, axis, offsets[axis], false);
    }
    candidates.push_back({moved, targets});
  }
  state.Map(op->getResult(0), from_shifted(SelectByPosition(
                                  state, loc, shifted, LinearPosition(state, loc), candidates)));
  return absl::OkStatus();
}

// One-to-all collectives have no shard op Tessera runs.
absl::Status RefuseCollective(ImportState&, mlir::Operation* op) {
  return absl::UnimplementedError(absl::StrCat(
      ImportState::Where(op),
      ": not supported (shard_map's psum / pmax / pmin, all_gather, psum_scatter, all_to_all, "
      "ppermute and axis_index are)"));
}

}  // namespace

void AddCollectiveConversions(ConversionTable& table) {
  table["stablehlo.all_reduce"] = WithOneDeviceGroupsOutsideBodies(ConvertAllReduce);
  table["stablehlo.all_gather"] = WithOneDeviceGroupsOutsideBodies(ConvertAllGather);
  table["stablehlo.reduce_scatter"] = WithOneDeviceGroupsOutsideBodies(ConvertReduceScatter);
  table["stablehlo.all_to_all"] = WithOneDeviceGroupsOutsideBodies(ConvertAllToAll);
  table["stablehlo.partition_id"] = ConvertPartitionId;
  table["stablehlo.replica_id"] = ConvertPartitionId;
  table["stablehlo.collective_permute"] = ConvertCollectivePermute;
  table["stablehlo.collective_broadcast"] = RefuseCollective;
}

}  // namespace tessera::compiler::stablehlo
