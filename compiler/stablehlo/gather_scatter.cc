// stablehlo.gather and stablehlo.scatter (ConvertScatter, below). gather (an embedding lookup
// `table[ids]`, `jnp.take`, indexing with an array, and vmap of any of them): one linalg.generic
// over the result whose body computes each element's operand position, as the StableHLO spec
// defines it, and reads it with tensor.extract:
//   batch index   the result's dimensions that are not offset_dims, in order; they index
//                 start_indices' dimensions other than index_vector_dim, in order
//   start         start_indices[batch index, with index_vector_dim = k] for k of start_index_map,
//                 clamped to [0, operand dimension - slice size] (as the spec does: a slice that
//                 would run past the operand is moved inside it)
//   batching      operand_batching_dims[i] is at the batch index of start_indices_batching_dims[i]
//                 (a batched lookup, as vmap makes one: each batch reads its own operand slice)
//   offset        the result's offset_dims, in order, for the operand's dimensions that are
//                 neither collapsed nor batching, in order
//   operand[start + batching + offset]
// The indices' elements and the loops' positions are the generic's inputs (ConvertGather), the
// operand is read whole (ReplicatePositionalOps in partition.cc replicates it): the partitioner
// may split any loop of the result.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "compiler/internal.h"
#include "compiler/stablehlo/attribute_text.h"
#include "compiler/stablehlo/import_state.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/AffineMap.h"

namespace tessera::compiler::stablehlo {
namespace {

using mlir::Value;

bool DistinctSortedInRange(const std::vector<int64_t>& dims, int64_t rank) {
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 0 || dims[i] >= rank || (i > 0 && dims[i] <= dims[i - 1])) return false;
  }
  return true;
}

bool DistinctInRange(const std::vector<int64_t>& dims, int64_t rank) {
  std::vector<bool> seen(rank > 0 ? rank : 0, false);
  for (int64_t d : dims) {
    if (d < 0 || d >= rank || seen[d]) return false;
    seen[d] = true;
  }
  return true;
}

// A gather's or scatter's dimension numbers from their attribute text.
absl::StatusOr<GatherDimensions> ReadDimensions(mlir::Operation* op, const std::string& text) {
  absl::StatusOr<GatherDimensions> parsed = ParseGatherDimensions(text);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(ImportState::Where(op), ": ", parsed.status().message()));
  }
  return parsed;
}

// Whether a gather's or scatter's batching dimensions pair operand dimensions with index
// dimensions of the same size: as many of each, distinct, in range, none of them index_vector_dim
// and none of the operand's in `taken` (collapsed or inserted dimensions, start_index_map).
bool BatchingDimsFit(const GatherDimensions& dims, mlir::RankedTensorType operand,
                     mlir::RankedTensorType indices, const std::vector<int64_t>& taken) {
  const std::vector<int64_t>& of_operand = dims.operand_batching_dims;
  const std::vector<int64_t>& of_indices = dims.start_indices_batching_dims;
  if (of_operand.size() != of_indices.size() ||
      !DistinctSortedInRange(of_operand, operand.getRank()) ||
      !DistinctInRange(of_indices, indices.getRank())) {
    return false;
  }
  for (size_t i = 0; i < of_operand.size(); ++i) {
    if (of_indices[i] == dims.index_vector_dim || llvm::is_contained(taken, of_operand[i]) ||
        operand.getDimSize(of_operand[i]) != indices.getDimSize(of_indices[i])) {
      return false;
    }
  }
  return true;
}

// The position among start_indices' batch dimensions (those other than index_vector_dim) of its
// dimension `indices_dim`.
int64_t BatchPosition(int64_t indices_dim, int64_t index_vector_dim) {
  return indices_dim < index_vector_dim ? indices_dim : indices_dim - 1;
}

// The number of indices each start index vector holds (index_vector_dim past the last
// dimension: one), or -1 when index_vector_dim is not a dimension of `indices` or just past it.
int64_t IndexVectorSize(int64_t index_vector_dim, mlir::RankedTensorType indices) {
  if (index_vector_dim == indices.getRank()) return 1;
  if (index_vector_dim < 0 || index_vector_dim > indices.getRank()) return -1;
  return indices.getDimSize(index_vector_dim);
}

// What the body needs, checked against the op's types.
struct GatherPlan {
  std::vector<int64_t> batch_dims;         // result dimensions indexing start_indices, in order
  std::vector<int64_t> offset_of_operand;  // per operand dimension: its result dimension, or -1
  std::vector<int64_t> start_of_operand;   // per operand dimension: its k in start_index_map, or -1
  std::vector<int64_t> batch_of_operand;   // per operand dimension: the result dimension at
                                           // which a batching dimension reads, or -1
  std::vector<int64_t> max_start;          // per operand dimension: dim size - slice size
  int64_t index_vector_dim = 0;
  int64_t indices_rank = 0;
};

absl::StatusOr<GatherPlan> PlanGather(mlir::Operation* op, mlir::RankedTensorType operand,
                                      mlir::RankedTensorType indices,
                                      mlir::RankedTensorType result) {
  TESSERA_ASSIGN_OR_RETURN(std::string text, ImportState::OpaqueAttrText(op, "dimension_numbers"));
  TESSERA_ASSIGN_OR_RETURN(GatherDimensions dims, ReadDimensions(op, text));
  TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> slice_sizes,
                           ImportState::I64ArrayAttr(op, "slice_sizes"));
  const int64_t rank = operand.getRank();
  GatherPlan plan;
  plan.indices_rank = indices.getRank();
  plan.index_vector_dim = dims.index_vector_dim;
  const bool implicit_vector = dims.index_vector_dim == indices.getRank();
  const int64_t vector_size = IndexVectorSize(dims.index_vector_dim, indices);
  const int64_t batch_rank = indices.getRank() - (implicit_vector ? 0 : 1);
  std::vector<int64_t> taken = dims.collapsed_slice_dims;
  taken.insert(taken.end(), dims.start_index_map.begin(), dims.start_index_map.end());
  const auto batching = static_cast<int64_t>(dims.operand_batching_dims.size());
  bool valid = static_cast<int64_t>(slice_sizes.size()) == rank && vector_size >= 0 &&
               DistinctSortedInRange(dims.offset_dims, result.getRank()) &&
               DistinctSortedInRange(dims.collapsed_slice_dims, rank) &&
               DistinctInRange(dims.start_index_map, rank) &&
               BatchingDimsFit(dims, operand, indices, taken) &&
               static_cast<int64_t>(dims.start_index_map.size()) == vector_size &&
               result.getRank() == batch_rank + static_cast<int64_t>(dims.offset_dims.size()) &&
               rank - static_cast<int64_t>(dims.collapsed_slice_dims.size()) - batching ==
                   static_cast<int64_t>(dims.offset_dims.size()) &&
               operand.getElementType() == result.getElementType() &&
               mlir::isa<mlir::IntegerType>(indices.getElementType());
  plan.offset_of_operand.assign(valid ? rank : 0, -1);
  plan.start_of_operand.assign(valid ? rank : 0, -1);
  plan.batch_of_operand.assign(valid ? rank : 0, -1);
  plan.max_start.assign(valid ? rank : 0, 0);
  for (int64_t d = 0, j = 0; valid && d < rank; ++d) {
    valid = slice_sizes[d] >= 0 && slice_sizes[d] <= operand.getDimSize(d);
    if (!valid) break;
    plan.max_start[d] = operand.getDimSize(d) - slice_sizes[d];
    if (llvm::is_contained(dims.collapsed_slice_dims, d) ||
        llvm::is_contained(dims.operand_batching_dims, d)) {
      // One element: the body reads it. (A slice of none would read past the operand; it is
      // allowed where the result has no elements to read.)
      valid = slice_sizes[d] == 1 || (slice_sizes[d] == 0 && result.getNumElements() == 0);
      continue;
    }
    const int64_t r = dims.offset_dims[j++];
    plan.offset_of_operand[d] = r;
    valid = result.getDimSize(r) == slice_sizes[d];
  }
  for (size_t k = 0; valid && k < dims.start_index_map.size(); ++k) {
    plan.start_of_operand[dims.start_index_map[k]] = static_cast<int64_t>(k);
  }
  for (int64_t r = 0, i = 0; valid && r < result.getRank(); ++r) {
    if (llvm::is_contained(dims.offset_dims, r)) continue;
    if (!implicit_vector && i == dims.index_vector_dim) ++i;
    plan.batch_dims.push_back(r);
    valid = i < indices.getRank() && result.getDimSize(r) == indices.getDimSize(i);
    ++i;
  }
  for (int64_t b = 0; valid && b < batching; ++b) {
    // BatchingDimsFit checked the index dimension is in range and not index_vector_dim, and
    // batch_dims has one entry per such dimension.
    plan.batch_of_operand[dims.operand_batching_dims[b]] =
        plan.batch_dims[BatchPosition(dims.start_indices_batching_dims[b], dims.index_vector_dim)];
  }
  if (!valid) {
    return absl::InvalidArgumentError(
        absl::StrCat(ImportState::Where(op), ": gather dimension numbers ", text,
                     " with slice sizes [", absl::StrJoin(slice_sizes, ", "),
                     "] do not fit operand ", absl::StrJoin(operand.getShape(), "x"), ", indices ",
                     absl::StrJoin(indices.getShape(), "x"), " and result ",
                     absl::StrJoin(result.getShape(), "x")));
  }
  return plan;
}

// `raw` (an index of the indices' element type) widened to i64: a u64 above 2^63 wraps negative,
// past any operand either way.
Value WidenIndex(mlir::OpBuilder& b, mlir::Location loc, Value raw, bool is_unsigned) {
  mlir::Type i64 = b.getI64Type();
  if (raw.getType().getIntOrFloatBitWidth() >= 64) return raw;
  if (is_unsigned) return mlir::arith::ExtUIOp::create(b, loc, i64, raw);
  return mlir::arith::ExtSIOp::create(b, loc, i64, raw);
}

// indices[batch position, k at index_vector_dim] widened to i64 (WidenIndex), the batch position
// being the loops `batch_loops` in order.
Value ReadIndex(mlir::OpBuilder& b, mlir::Location loc, Value indices, int64_t index_vector_dim,
                llvm::ArrayRef<int64_t> batch_loops, bool is_unsigned, int64_t k) {
  const int64_t rank = mlir::cast<mlir::RankedTensorType>(indices.getType()).getRank();
  llvm::SmallVector<Value> position;
  for (int64_t i = 0, j = 0; i < rank; ++i) {
    if (i == index_vector_dim) {
      position.push_back(mlir::arith::ConstantIndexOp::create(b, loc, k));
    } else {
      position.push_back(mlir::linalg::IndexOp::create(b, loc, batch_loops[j++]));
    }
  }
  return WidenIndex(b, loc, mlir::tensor::ExtractOp::create(b, loc, indices, position),
                    is_unsigned);
}

// The start of gather's slice in operand dimension d from its index `raw`: clamped to
// [0, max_start[d]].
Value StartIndex(mlir::OpBuilder& b, mlir::Location loc, const GatherPlan& plan, Value raw,
                 bool is_unsigned, int64_t d) {
  Value wide = WidenIndex(b, loc, raw, is_unsigned);
  mlir::Type i64 = b.getI64Type();
  Value zero = mlir::arith::ConstantIntOp::create(b, loc, i64, 0);
  Value max = mlir::arith::ConstantIntOp::create(b, loc, i64, plan.max_start[d]);
  // Unsigned: an index above 2^63 (negative in i64) is past the end, clamped to it.
  Value clamped = is_unsigned ? mlir::arith::MinUIOp::create(b, loc, wide, max).getResult()
                              : mlir::arith::MinSIOp::create(
                                    b, loc, mlir::arith::MaxSIOp::create(b, loc, wide, zero), max)
                                    .getResult();
  return mlir::arith::IndexCastOp::create(b, loc, b.getIndexType(), clamped);
}

// Element k of every index vector: `indices` sliced at k along index_vector_dim, that dimension
// dropped (a tensor of the gather's batch shape); `indices` itself when the vector is implicit.
Value IndexComponent(ImportState& state, mlir::Location loc, Value indices, int64_t vector_dim,
                     int64_t k) {
  auto type = mlir::cast<mlir::RankedTensorType>(indices.getType());
  if (vector_dim == type.getRank()) return indices;
  llvm::SmallVector<int64_t> offsets(type.getRank(), 0), sizes(type.getShape()),
      strides(type.getRank(), 1);
  offsets[vector_dim] = k;
  sizes[vector_dim] = 1;
  Value slice = SliceOf(state, loc, indices, offsets, sizes, strides);
  // index_vector_dim joins a neighbour's group (none: rank 0).
  llvm::SmallVector<mlir::ReassociationIndices> groups;
  for (int64_t d = 0; d < type.getRank(); ++d) {
    if (d == vector_dim && !groups.empty()) {
      groups.back().push_back(d);
    } else if (d == vector_dim + 1 && vector_dim == 0) {
      groups.push_back({0, d});
    } else if (d != vector_dim) {
      groups.push_back({d});
    }
  }
  sizes.erase(sizes.begin() + vector_dim);
  return mlir::tensor::CollapseShapeOp::create(
             state.builder(), loc, mlir::RankedTensorType::get(sizes, type.getElementType()), slice,
             groups)
      .getResult();
}

// 0, 1, ..., n - 1 as i64: a loop's position handed to a generic as an input, so that the
// partitioner may split that loop (a device's linalg.index would count from 0).
Value Positions(ImportState& state, mlir::Location loc, int64_t n) {
  auto type = mlir::RankedTensorType::get({n}, state.builder().getI64Type());
  Value positions =
      BuildElementwise(state, loc, type, {}, {},
                       [](mlir::OpBuilder& b, mlir::Location l, mlir::ValueRange) -> Value {
                         return mlir::arith::IndexCastOp::create(
                             b, l, b.getI64Type(), mlir::linalg::IndexOp::create(b, l, 0));
                       });
  positions.getDefiningOp()->setAttr(kLoopPositionsAttrName, state.builder().getUnitAttr());
  return positions;
}

// stablehlo.gather as one linalg.generic over the result. Its inputs are the index vectors'
// elements (IndexComponent, read at the batch loops) and the positions of the loops the body
// places slices by (Positions: offset dimensions, batching dimensions), so that it reads no
// position of its own and the partitioner may split any of its loops: a batch-sharded lookup
// (data-parallel token ids) stays sharded. It reads only the operand whole (tensor.extract of a
// captured tensor, which ReplicatePositionalOps replicates), and the indices too where there is
// one index vector (no batch dimensions: nothing to split).
absl::Status ConvertGather(ImportState& state, mlir::Operation* op) {
  TESSERA_RETURN_IF_ERROR(ImportState::CheckArity(op, 2, 1));
  TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType operand_type, state.OperandType(op, 0));
  TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType indices_type, state.OperandType(op, 1));
  TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType result_type, state.ResultType(op, 0));
  TESSERA_ASSIGN_OR_RETURN(GatherPlan plan,
                           PlanGather(op, operand_type, indices_type, result_type));
  TESSERA_ASSIGN_OR_RETURN(Value operand, state.Operand(op, 0));
  TESSERA_ASSIGN_OR_RETURN(Value indices, state.Operand(op, 1));
  const bool is_unsigned = indices_type.getElementType().isUnsignedInteger();
  mlir::Location loc = op->getLoc();
  if (result_type.getNumElements() == 0) {
    state.Map(op->getResult(0), state.Empty(loc, ImportState::NewType(result_type)));
    return absl::OkStatus();
  }
  const int64_t rank = result_type.getRank();
  mlir::MLIRContext* context = op->getContext();
  llvm::SmallVector<mlir::AffineExpr> batch_exprs;
  for (int64_t r : plan.batch_dims) batch_exprs.push_back(mlir::getAffineDimExpr(r, context));
  const mlir::AffineMap at_batch = mlir::AffineMap::get(rank, 0, batch_exprs, context);
  // Inputs: one index component per start_index_map entry, then one position per loop used.
  llvm::SmallVector<Value> inputs;
  llvm::SmallVector<mlir::AffineMap> maps;
  // One index vector (no batch dimensions) is read whole, as a captured tensor: a rank-0 input
  // made of it would meet an MLIR 22 crash when fused (concatAffineMaps of a map of no dims).
  const bool one_vector = plan.batch_dims.empty();
  std::vector<int64_t> component_of_operand(operand_type.getRank(), -1);
  for (int64_t d = 0; d < operand_type.getRank(); ++d) {
    if (plan.start_of_operand[d] < 0 || one_vector) continue;
    component_of_operand[d] = static_cast<int64_t>(inputs.size());
    inputs.push_back(
        IndexComponent(state, loc, indices, plan.index_vector_dim, plan.start_of_operand[d]));
    maps.push_back(at_batch);
  }
  std::vector<int64_t> position_of_loop(rank, -1);
  for (int64_t d = 0; d < operand_type.getRank(); ++d) {
    for (int64_t r : {plan.batch_of_operand[d], plan.offset_of_operand[d]}) {
      if (r < 0 || position_of_loop[r] >= 0) continue;
      position_of_loop[r] = static_cast<int64_t>(inputs.size());
      inputs.push_back(Positions(state, loc, result_type.getDimSize(r)));
      maps.push_back(mlir::AffineMap::get(rank, 0, {mlir::getAffineDimExpr(r, context)}, context));
    }
  }
  Value result = BuildElementwise(
      state, loc, result_type, inputs, maps,
      [&](mlir::OpBuilder& b, mlir::Location l, mlir::ValueRange args) -> Value {
        auto loop = [&](int64_t r) -> Value {
          return mlir::arith::IndexCastOp::create(b, l, b.getIndexType(),
                                                  args[position_of_loop[r]]);
        };
        llvm::SmallVector<Value> position;
        for (int64_t d = 0; d < operand_type.getRank(); ++d) {
          Value at = mlir::arith::ConstantIndexOp::create(b, l, 0);
          if (component_of_operand[d] >= 0) {
            at = StartIndex(b, l, plan, args[component_of_operand[d]], is_unsigned, d);
          } else if (plan.start_of_operand[d] >= 0) {  // one_vector
            llvm::SmallVector<Value> element;
            if (plan.index_vector_dim < indices_type.getRank()) {
              element.push_back(
                  mlir::arith::ConstantIndexOp::create(b, l, plan.start_of_operand[d]));
            }
            Value raw = mlir::tensor::ExtractOp::create(b, l, indices, element);
            at = StartIndex(b, l, plan, raw, is_unsigned, d);
          }
          if (plan.batch_of_operand[d] >= 0) at = loop(plan.batch_of_operand[d]);
          if (plan.offset_of_operand[d] >= 0) {
            at = mlir::arith::AddIOp::create(b, l, at, loop(plan.offset_of_operand[d]));
          }
          position.push_back(at);
        }
        return mlir::tensor::ExtractOp::create(b, l, operand, position);
      });
  state.Map(op->getResult(0), result);
  return absl::OkStatus();
}

// What a scatter's body needs, checked against the op's types.
struct ScatterPlan {
  std::vector<int64_t> index_loops;       // per updates' scatter dimension, in order: its loop
  int64_t loops = 0;                      // the operand's dimensions, then the other scatter ones
  std::vector<int64_t> index_of_operand;  // per operand dimension: its k, or -1
  std::vector<bool> inserted;             // per operand dimension
  std::vector<int64_t> window_loop;       // per operand dimension that a window covers in part:
                                          // the loop of the window's offset, else -1
  std::vector<int64_t> window_size;       // per operand dimension: the update window's extent
  mlir::AffineMap updates_map;            // loops -> updates
  int64_t index_vector_dim = 0;
};

absl::StatusOr<ScatterPlan> PlanScatter(mlir::Operation* op, mlir::RankedTensorType operand,
                                        mlir::RankedTensorType indices,
                                        mlir::RankedTensorType updates,
                                        mlir::RankedTensorType result) {
  TESSERA_ASSIGN_OR_RETURN(std::string text,
                           ImportState::OpaqueAttrText(op, "scatter_dimension_numbers"));
  TESSERA_ASSIGN_OR_RETURN(GatherDimensions dims, ReadDimensions(op, text));
  const int64_t rank = operand.getRank();
  const bool implicit_vector = dims.index_vector_dim == indices.getRank();
  const int64_t vector_size = IndexVectorSize(dims.index_vector_dim, indices);
  const int64_t scatter_rank = indices.getRank() - (implicit_vector ? 0 : 1);
  ScatterPlan plan;
  plan.index_vector_dim = dims.index_vector_dim;
  std::vector<int64_t> taken = dims.inserted_window_dims;
  taken.insert(taken.end(), dims.scatter_dims_to_operand_dims.begin(),
               dims.scatter_dims_to_operand_dims.end());
  bool valid =
      vector_size >= 0 && result == operand &&
      operand.getElementType() == updates.getElementType() &&
      mlir::isa<mlir::IntegerType>(indices.getElementType()) &&
      DistinctSortedInRange(dims.update_window_dims, updates.getRank()) &&
      DistinctSortedInRange(dims.inserted_window_dims, rank) &&
      DistinctInRange(dims.scatter_dims_to_operand_dims, rank) &&
      BatchingDimsFit(dims, operand, indices, taken) &&
      static_cast<int64_t>(dims.scatter_dims_to_operand_dims.size()) == vector_size &&
      rank ==
          static_cast<int64_t>(dims.inserted_window_dims.size() + dims.update_window_dims.size() +
                               dims.operand_batching_dims.size()) &&
      updates.getRank() == static_cast<int64_t>(dims.update_window_dims.size()) + scatter_rank;
  llvm::SmallVector<mlir::AffineExpr> updates_exprs;
  mlir::MLIRContext* context = op->getContext();
  plan.index_of_operand.assign(valid ? rank : 0, -1);
  plan.inserted.assign(valid ? rank : 0, false);
  plan.window_loop.assign(valid ? rank : 0, -1);
  plan.window_size.assign(valid ? rank : 0, 1);
  std::vector<int64_t> window_operand_dims;  // the operand dimension of each window dimension
  for (int64_t d = 0; valid && d < rank; ++d) {
    plan.inserted[d] = llvm::is_contained(dims.inserted_window_dims, d);
    if (!plan.inserted[d] && !llvm::is_contained(dims.operand_batching_dims, d)) {
      window_operand_dims.push_back(d);
    }
  }
  plan.loops = rank;
  for (size_t k = 0; valid && k < dims.scatter_dims_to_operand_dims.size(); ++k) {
    plan.index_of_operand[dims.scatter_dims_to_operand_dims[k]] = static_cast<int64_t>(k);
  }
  for (int64_t u = 0, w = 0, i = 0; valid && u < updates.getRank(); ++u) {
    if (llvm::is_contained(dims.update_window_dims, u)) {
      // A window over the whole of its operand dimension is read at that dimension's loop; a
      // window over part of it has a loop of its own, its offset from the window's start.
      const int64_t d = window_operand_dims[w++];
      valid = updates.getDimSize(u) <= operand.getDimSize(d);
      plan.window_size[d] = updates.getDimSize(u);
      if (updates.getDimSize(u) != operand.getDimSize(d)) plan.window_loop[d] = plan.loops++;
      updates_exprs.push_back(
          mlir::getAffineDimExpr(plan.window_loop[d] >= 0 ? plan.window_loop[d] : d, context));
      continue;
    }
    if (!implicit_vector && i == dims.index_vector_dim) ++i;
    valid = i < indices.getRank() && updates.getDimSize(u) == indices.getDimSize(i);
    // A batching dimension's updates land in the operand's batching dimension at the same
    // position (BatchingDimsFit checked the sizes): its loop is that dimension's. Each other
    // scatter dimension gets a loop of its own, which the generic reduces.
    const auto batching = llvm::find(dims.start_indices_batching_dims, i);
    const int64_t loop =
        batching != dims.start_indices_batching_dims.end()
            ? dims.operand_batching_dims[batching - dims.start_indices_batching_dims.begin()]
            : plan.loops++;
    ++i;
    plan.index_loops.push_back(loop);
    updates_exprs.push_back(mlir::getAffineDimExpr(loop, context));
  }
  if (!valid) {
    return absl::InvalidArgumentError(
        absl::StrCat(ImportState::Where(op), ": scatter dimension numbers ", text,
                     " do not fit operand ", absl::StrJoin(operand.getShape(), "x"), ", indices ",
                     absl::StrJoin(indices.getShape(), "x"), " and updates ",
                     absl::StrJoin(updates.getShape(), "x")));
  }
  plan.updates_map = mlir::AffineMap::get(plan.loops, 0, updates_exprs, context);
  return plan;
}

// Whether the update element at the generic's loops lands on the operand element at them: for
// each operand dimension d, v[d] = start[d] + window offset, where the window offset is v[d]
// itself for a window over the whole dimension (so the start must be 0), the window loop for a
// window over part of it (the start within [0, size - window]: a window that would run past the
// operand is dropped whole, as XLA does), and 0 for an inserted dimension. A batching dimension,
// or a whole window that no index moves, matches everywhere: the updates map reads at v[d].
Value UpdateLandsHere(mlir::OpBuilder& b, mlir::Location l, const ScatterPlan& plan,
                      mlir::RankedTensorType operand, Value indices, bool is_unsigned) {
  mlir::Type i64 = b.getI64Type();
  auto constant = [&](int64_t value) -> Value {
    return mlir::arith::ConstantIntOp::create(b, l, i64, value);
  };
  auto loop = [&](int64_t loop) -> Value {
    return mlir::arith::IndexCastOp::create(b, l, i64, mlir::linalg::IndexOp::create(b, l, loop));
  };
  auto compare = [&](mlir::arith::CmpIPredicate predicate, Value lhs, Value rhs) -> Value {
    return mlir::arith::CmpIOp::create(b, l, predicate, lhs, rhs);
  };
  using mlir::arith::CmpIPredicate;
  Value match = mlir::arith::ConstantIntOp::create(b, l, b.getI1Type(), 1);
  for (int64_t d = 0; d < operand.getRank(); ++d) {
    const bool indexed = plan.index_of_operand[d] >= 0;
    if (!indexed && !plan.inserted[d] && plan.window_loop[d] < 0) continue;
    Value start = indexed ? ReadIndex(b, l, indices, plan.index_vector_dim, plan.index_loops,
                                      is_unsigned, plan.index_of_operand[d])
                          : constant(0);
    Value lands;
    if (plan.window_loop[d] >= 0) {
      Value at = mlir::arith::AddIOp::create(b, l, start, loop(plan.window_loop[d]));
      lands = compare(CmpIPredicate::eq, at, loop(d));
      if (indexed) {
        Value max_start = constant(operand.getDimSize(d) - plan.window_size[d]);
        lands = mlir::arith::AndIOp::create(b, l, lands,
                                            compare(CmpIPredicate::sge, start, constant(0)));
        lands =
            mlir::arith::AndIOp::create(b, l, lands, compare(CmpIPredicate::sle, start, max_start));
      }
    } else {
      lands = compare(CmpIPredicate::eq, start, plan.inserted[d] ? loop(d) : constant(0));
    }
    match = mlir::arith::AndIOp::create(b, l, match, lands);
  }
  return match;
}

// The kScatterAttrName description of `plan` (compiler/internal.h).
mlir::DictionaryAttr DescribeScatter(mlir::OpBuilder& b, const ScatterPlan& plan,
                                     bool is_unsigned) {
  const std::vector<int64_t> inserted(plan.inserted.begin(), plan.inserted.end());
  return b.getDictionaryAttr({
      b.getNamedAttr("index_vector_dim", b.getI64IntegerAttr(plan.index_vector_dim)),
      b.getNamedAttr("unsigned", b.getBoolAttr(is_unsigned)),
      b.getNamedAttr("index_loops", b.getDenseI64ArrayAttr(plan.index_loops)),
      b.getNamedAttr("index_of_operand", b.getDenseI64ArrayAttr(plan.index_of_operand)),
      b.getNamedAttr("inserted", b.getDenseI64ArrayAttr(inserted)),
      b.getNamedAttr("window_loop", b.getDenseI64ArrayAttr(plan.window_loop)),
      b.getNamedAttr("window_size", b.getDenseI64ArrayAttr(plan.window_size)),
  });
}

// What a scatter's body does with the operand's element (its first argument) and the update (its
// second): one elementwise op of the two, in that order (`.at[].add`, `.mul`, `.max`, `.min`, the
// gradient of a lookup), or the update itself (`.at[].set`).
struct ScatterBody {
  bool valid = false;
  mlir::Operation* combine = nullptr;  // null: the update replaces the element
};

ScatterBody ReadScatterBody(mlir::Operation* op) {
  if (op->getNumRegions() != 1 || !op->getRegion(0).hasOneBlock()) return {};
  mlir::Block& body = op->getRegion(0).front();
  mlir::Operation* ret = body.getTerminator();
  if (body.getNumArguments() != 2 || ret->getName().getStringRef() != "stablehlo.return" ||
      ret->getNumOperands() != 1) {
    return {};
  }
  if (body.getOperations().size() == 1) {
    return {ret->getOperand(0) == body.getArgument(1), nullptr};
  }
  mlir::Operation& combine = body.front();
  const bool valid =
      body.getOperations().size() == 2 && IsScalarOp(combine.getName().getStringRef()) &&
      combine.getNumOperands() == 2 && combine.getNumResults() == 1 &&
      combine.getOperand(0) == body.getArgument(0) &&
      combine.getOperand(1) == body.getArgument(1) && ret->getOperand(0) == combine.getResult(0);
  return {valid, &combine};
}

// stablehlo.scatter: one linalg.generic whose loops are the operand's dimensions (parallel), then
// the updates' scatter dimensions other than batching ones and the offsets of windows over part
// of a dimension (reduction, in the updates' order), combining into the operand each update that
// lands on the element (UpdateLandsHere): out[v] = lands ? body(out[v], update) : out[v] (a set:
// the update; of several updates of one element the last in order is written, as XLA's CPU
// backend does). A batching dimension (vmap of `.at[]`: each batch writes its own operand slice)
// has no loop of its own: its updates are read at the operand's batching dimension's loop. An index
// past the operand matches no element: that update is dropped, as XLA and JAX's default mode do.
// The op reads the indices as a captured tensor, so it runs whole on every device
// (ReplicatePositionalOps, partition.cc).
absl::Status ConvertScatter(ImportState& state, mlir::Operation* op) {
  TESSERA_RETURN_IF_ERROR(ImportState::CheckArity(op, 3, 1));
  TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType operand_type, state.OperandType(op, 0));
  TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType indices_type, state.OperandType(op, 1));
  TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType updates_type, state.OperandType(op, 2));
  TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType result_type, state.ResultType(op, 0));
  const ScatterBody scatter_body = ReadScatterBody(op);
  if (!scatter_body.valid) {
    return absl::UnimplementedError(absl::StrCat(
        ImportState::Where(op),
        ": a scatter whose body is not one elementwise op of the element and the update, or the "
        "update itself (`.at[...].set / add / mul / max / min` are supported)"));
  }
  TESSERA_ASSIGN_OR_RETURN(ScatterPlan plan,
                           PlanScatter(op, operand_type, indices_type, updates_type, result_type));
  TESSERA_ASSIGN_OR_RETURN(Value operand, state.Operand(op, 0));
  TESSERA_ASSIGN_OR_RETURN(Value indices, state.Operand(op, 1));
  TESSERA_ASSIGN_OR_RETURN(Value updates, state.Operand(op, 2));
  const bool is_unsigned = indices_type.getElementType().isUnsignedInteger();
  mlir::Type element_type = operand_type.getElementType();
  mlir::MLIRContext* context = op->getContext();
  const int64_t rank = operand_type.getRank();
  const int64_t loops = plan.loops;
  llvm::SmallVector<mlir::utils::IteratorType> iterators(loops,
                                                         mlir::utils::IteratorType::reduction);
  for (int64_t d = 0; d < rank; ++d) iterators[d] = mlir::utils::IteratorType::parallel;
  llvm::SmallVector<mlir::AffineExpr> out_exprs;
  for (int64_t d = 0; d < rank; ++d) out_exprs.push_back(mlir::getAffineDimExpr(d, context));
  llvm::SmallVector<mlir::AffineMap> maps = {plan.updates_map,
                                             mlir::AffineMap::get(loops, 0, out_exprs, context)};
  absl::Status status;
  mlir::Location loc = op->getLoc();
  auto generic = mlir::linalg::GenericOp::create(
      state.builder(), loc, mlir::TypeRange{ImportState::NewType(result_type)},
      mlir::ValueRange{updates}, mlir::ValueRange{operand}, maps, iterators,
      [&](mlir::OpBuilder& b, mlir::Location l, mlir::ValueRange args) {
        Value match = UpdateLandsHere(b, l, plan, operand_type, indices, is_unsigned);
        // args[0]: the update, args[1]: the element so far.
        absl::StatusOr<Value> written = args[0];
        if (scatter_body.combine != nullptr) {
          written = BuildScalarOp(b, l, scatter_body.combine, {args[1], args[0]},
                                  {element_type, element_type}, element_type);
        }
        if (!written.ok()) {
          status = written.status();
          mlir::linalg::YieldOp::create(b, l, args[1]);
          return;
        }
        mlir::linalg::YieldOp::create(
            b, l, Value(mlir::arith::SelectOp::create(b, l, match, *written, args[1])));
      });
  TESSERA_RETURN_IF_ERROR(status);
  generic->setAttr(kScatterAttrName, DescribeScatter(state.builder(), plan, is_unsigned));
  state.Map(op->getResult(0), generic->getResult(0));
  return absl::OkStatus();
}

}  // namespace

void AddGatherConversions(ConversionTable& table) {
  table["stablehlo.gather"] = ConvertGather;
  table["stablehlo.scatter"] = ConvertScatter;
}

}  // namespace tessera::compiler::stablehlo
