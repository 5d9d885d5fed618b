// ContractionsAsMatmuls: a kernel's contractions with batch dimensions, or with their dimensions in
// any order (attention's `bhsd,bhtd->bhst`), become one matmul per batch element, which the CPU
// code generator calls BLAS for (or tiles and vectorizes). A linalg.generic contraction otherwise
// lowers to a scalar loop nest; linalg.batch_matmul too.
//
// For C[batch, m, n] += A[batch, m, k] * B[batch, k, n], each dimension group possibly several
// dimensions in any order: A, B and C are transposed into (batch, m, k), (batch, k, n) and
// (batch, m, n), collapsed into rank 3, and an scf.for over the batch runs a linalg.matmul on
// each element's slices; the result is expanded and transposed back. On local shapes, after
// partitioning: the collapses never cross a device's boundary.

#include <cstdint>
#include <vector>

#include "compiler/internal.h"
#include "llvm/ADT/STLExtras.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

namespace tessera::compiler {
namespace {

// The loop dimensions of one operand in the order the matmul wants them (its group's dimensions
// in loop order, the groups in the order given).
std::vector<unsigned> Concat(std::initializer_list<const llvm::SmallVector<unsigned, 2>*> groups) {
  std::vector<unsigned> dims;
  for (const auto* group : groups) dims.insert(dims.end(), group->begin(), group->end());
  return dims;
}

// The permutation taking `map`'s results (loop dimensions) to `wanted`'s order: result i of the
// transpose is the operand's dimension permutation[i]. Empty when `map` does not hold exactly the
// dimensions of `wanted`.
std::vector<int64_t> PermutationFor(mlir::AffineMap map, const std::vector<unsigned>& wanted) {
  if (map.getNumResults() != wanted.size()) return {};
  std::vector<int64_t> permutation;
  for (unsigned loop : wanted) {
    std::optional<unsigned> position =
        map.getResultPosition(mlir::getAffineDimExpr(loop, map.getContext()));
    if (!position) return {};
    permutation.push_back(*position);
  }
  return permutation;
}

bool IsIdentity(const std::vector<int64_t>& permutation) {
  for (size_t i = 0; i < permutation.size(); ++i) {
    if (permutation[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

// `value` transposed by `permutation` (no op when it is the identity).
mlir::Value Transpose(mlir::OpBuilder& builder, mlir::Location loc, mlir::Value value,
                      const std::vector<int64_t>& permutation) {
  if (IsIdentity(permutation)) return value;
  auto type = mlir::cast<mlir::RankedTensorType>(value.getType());
  std::vector<int64_t> shape;
  for (int64_t d : permutation) shape.push_back(type.getDimSize(d));
  mlir::Value init =
      mlir::tensor::EmptyOp::create(builder, loc, shape, type.getElementType()).getResult();
  return mlir::linalg::TransposeOp::create(builder, loc, value, init, permutation).getResult()[0];
}

// Reassociation of a rank sum(sizes) tensor into sizes.size() groups of consecutive dimensions.
llvm::SmallVector<mlir::ReassociationIndices> Groups(const std::vector<size_t>& sizes) {
  llvm::SmallVector<mlir::ReassociationIndices> groups;
  int64_t next = 0;
  for (size_t size : sizes) {
    mlir::ReassociationIndices group;
    for (size_t i = 0; i < size; ++i) group.push_back(next++);
    groups.push_back(group);
  }
  return groups;
}

// The sizes of the groups that hold dimensions.
std::vector<size_t> NonEmpty(const std::vector<size_t>& sizes) {
  std::vector<size_t> nonempty;
  for (size_t size : sizes) {
    if (size > 0) nonempty.push_back(size);
  }
  return nonempty;
}

// `value` (rank sum(sizes)) collapsed into one dimension per group of `sizes` (batch, rows,
// columns). Only the batch group may hold no dimensions: it becomes a leading dimension of 1.
mlir::Value CollapseInto(mlir::OpBuilder& builder, mlir::Location loc, mlir::Value value,
                         const std::vector<size_t>& sizes) {
  auto type = mlir::cast<mlir::RankedTensorType>(value.getType());
  std::vector<int64_t> shape;
  int64_t next = 0;
  for (size_t size : sizes) {
    int64_t product = 1;
    for (size_t i = 0; i < size; ++i) product *= type.getDimSize(next++);
    shape.push_back(product);
  }
  const std::vector<size_t> nonempty = NonEmpty(sizes);
  mlir::Value collapsed = value;
  if (nonempty.size() != static_cast<size_t>(type.getRank())) {
    std::vector<int64_t> collapsed_shape;
    for (size_t i = 0; i < sizes.size(); ++i) {
      if (sizes[i] > 0) collapsed_shape.push_back(shape[i]);
    }
    collapsed =
        mlir::tensor::CollapseShapeOp::create(
            builder, loc, mlir::RankedTensorType::get(collapsed_shape, type.getElementType()),
            value, Groups(nonempty))
            .getResult();
  }
  if (nonempty.size() == sizes.size()) return collapsed;
  llvm::SmallVector<mlir::ReassociationIndices> expand = {{0, 1}};
  for (size_t i = 2; i < sizes.size(); ++i) expand.push_back({static_cast<int64_t>(i)});
  return mlir::tensor::ExpandShapeOp::create(
             builder, loc, mlir::RankedTensorType::get(shape, type.getElementType()), collapsed,
             expand)
      .getResult();
}

// The inverse of CollapseInto: `value` (one dimension per group) back to `type`.
mlir::Value ExpandFrom(mlir::OpBuilder& builder, mlir::Location loc, mlir::Value value,
                       const std::vector<size_t>& sizes, mlir::RankedTensorType type) {
  auto source = mlir::cast<mlir::RankedTensorType>(value.getType());
  if (sizes[0] == 0) {  // the unit batch CollapseInto added: dropped
    llvm::SmallVector<mlir::ReassociationIndices> drop = {{0, 1}};
    for (int64_t i = 2; i < source.getRank(); ++i) drop.push_back({i});
    source = mlir::RankedTensorType::get(source.getShape().drop_front(), source.getElementType());
    value = mlir::tensor::CollapseShapeOp::create(builder, loc, source, value, drop).getResult();
  }
  if (source == type) return value;
  return mlir::tensor::ExpandShapeOp::create(builder, loc, type, value, Groups(NonEmpty(sizes)))
      .getResult();
}

// C3 += A3 @ B3 per batch element: an scf.for over the batch of linalg.matmul on rank-reduced
// slices, inserted back into C3.
mlir::Value MatmulPerBatch(mlir::OpBuilder& builder, mlir::Location loc, mlir::Value a,
                           mlir::Value b, mlir::Value c) {
  auto a_type = mlir::cast<mlir::RankedTensorType>(a.getType());
  auto b_type = mlir::cast<mlir::RankedTensorType>(b.getType());
  auto c_type = mlir::cast<mlir::RankedTensorType>(c.getType());
  const int64_t batch = c_type.getDimSize(0);
  mlir::Value zero = mlir::arith::ConstantIndexOp::create(builder, loc, 0);
  mlir::Value one = mlir::arith::ConstantIndexOp::create(builder, loc, 1);
  mlir::Value count = mlir::arith::ConstantIndexOp::create(builder, loc, batch);
  auto slice = [&](mlir::OpBuilder& b2, mlir::Value tensor, mlir::RankedTensorType type,
                   mlir::Value index) {
    llvm::SmallVector<mlir::OpFoldResult> offsets = {index, b2.getIndexAttr(0), b2.getIndexAttr(0)};
    llvm::SmallVector<mlir::OpFoldResult> sizes = {b2.getIndexAttr(1),
                                                   b2.getIndexAttr(type.getDimSize(1)),
                                                   b2.getIndexAttr(type.getDimSize(2))};
    llvm::SmallVector<mlir::OpFoldResult> strides(3, b2.getIndexAttr(1));
    auto reduced = mlir::RankedTensorType::get({type.getDimSize(1), type.getDimSize(2)},
                                               type.getElementType());
    return mlir::tensor::ExtractSliceOp::create(b2, loc, reduced, tensor, offsets, sizes, strides)
        .getResult();
  };
  auto loop = mlir::scf::ForOp::create(
      builder, loc, zero, count, one, mlir::ValueRange{c},
      [&](mlir::OpBuilder& body, mlir::Location, mlir::Value index, mlir::ValueRange carried) {
        mlir::Value acc = carried[0];
        mlir::Value a2 = slice(body, a, a_type, index);
        mlir::Value b2 = slice(body, b, b_type, index);
        mlir::Value c2 = slice(body, acc, c_type, index);
        mlir::Value product = mlir::linalg::MatmulOp::create(body, loc, mlir::ValueRange{a2, b2},
                                                             mlir::ValueRange{c2})
                                  .getResult(0);
        llvm::SmallVector<mlir::OpFoldResult> offsets = {index, body.getIndexAttr(0),
                                                         body.getIndexAttr(0)};
        llvm::SmallVector<mlir::OpFoldResult> sizes = {body.getIndexAttr(1),
                                                       body.getIndexAttr(c_type.getDimSize(1)),
                                                       body.getIndexAttr(c_type.getDimSize(2))};
        llvm::SmallVector<mlir::OpFoldResult> strides(3, body.getIndexAttr(1));
        mlir::Value updated =
            mlir::tensor::InsertSliceOp::create(body, loc, product, acc, offsets, sizes, strides)
                .getResult();
        mlir::scf::YieldOp::create(body, loc, updated);
      });
  return loop.getResult(0);
}

// Whether `op` is a contraction this rewrite takes: on tensors, static shapes, one float element
// type (f32 or f64) throughout, at least one m, n and k dimension, and not a plain linalg.matmul
// (already one; a matmul with transposing indexing maps is taken).
bool IsRewritable(mlir::linalg::LinalgOp op, mlir::linalg::ContractionDimensions& dims) {
  auto matmul = mlir::dyn_cast<mlir::linalg::MatmulOp>(op.getOperation());
  if ((matmul && !matmul.hasUserDefinedMaps()) || !op.hasPureTensorSemantics() ||
      op->getNumResults() != 1 || op.getNumDpsInputs() != 2 ||
      !mlir::linalg::isaContractionOpInterface(op)) {
    return false;
  }
  mlir::Type element = mlir::getElementTypeOrSelf(op->getResult(0).getType());
  if (!element.isF32() && !element.isF64()) return false;
  for (mlir::Value operand : op->getOperands()) {
    auto type = mlir::dyn_cast<mlir::RankedTensorType>(operand.getType());
    if (!type || !type.hasStaticShape() || type.getElementType() != element) return false;
    if (type.getNumElements() == 0) return false;
  }
  mlir::FailureOr<mlir::linalg::ContractionDimensions> inferred =
      mlir::linalg::inferContractionDims(op);
  if (mlir::failed(inferred) || inferred->m.empty() || inferred->n.empty() || inferred->k.empty()) {
    return false;
  }
  dims = *inferred;
  return true;
}

}  // namespace

void ContractionsAsMatmuls(mlir::func::FuncOp func) {
  std::vector<mlir::linalg::LinalgOp> ops;
  func.walk([&](mlir::linalg::LinalgOp op) { ops.push_back(op); });
  for (mlir::linalg::LinalgOp op : ops) {
    mlir::linalg::ContractionDimensions dims;
    if (!IsRewritable(op, dims)) continue;
    llvm::SmallVector<mlir::AffineMap> maps = op.getIndexingMapsArray();
    const std::vector<unsigned> a_order = Concat({&dims.batch, &dims.m, &dims.k});
    const std::vector<unsigned> b_order = Concat({&dims.batch, &dims.k, &dims.n});
    const std::vector<unsigned> c_order = Concat({&dims.batch, &dims.m, &dims.n});
    const std::vector<int64_t> a_perm = PermutationFor(maps[0], a_order);
    const std::vector<int64_t> b_perm = PermutationFor(maps[1], b_order);
    const std::vector<int64_t> c_perm = PermutationFor(maps[2], c_order);
    if (a_perm.empty() || b_perm.empty() || c_perm.empty()) continue;

    mlir::OpBuilder builder(op);
    mlir::Location loc = op.getLoc();
    mlir::Value a = Transpose(builder, loc, op->getOperand(0), a_perm);
    mlir::Value b = Transpose(builder, loc, op->getOperand(1), b_perm);
    mlir::Value c = Transpose(builder, loc, op->getOperand(2), c_perm);
    const size_t nb = dims.batch.size();
    mlir::Value a3 = CollapseInto(builder, loc, a, {nb, dims.m.size(), dims.k.size()});
    mlir::Value b3 = CollapseInto(builder, loc, b, {nb, dims.k.size(), dims.n.size()});
    mlir::Value c3 = CollapseInto(builder, loc, c, {nb, dims.m.size(), dims.n.size()});
    mlir::Value r3 = MatmulPerBatch(builder, loc, a3, b3, c3);
    mlir::Value r = ExpandFrom(builder, loc, r3, {nb, dims.m.size(), dims.n.size()},
                               mlir::cast<mlir::RankedTensorType>(c.getType()));
    // Back to C's order: the inverse of c_perm.
    std::vector<int64_t> inverse(c_perm.size());
    for (size_t i = 0; i < c_perm.size(); ++i) inverse[c_perm[i]] = static_cast<int64_t>(i);
    r = Transpose(builder, loc, r, inverse);
    op->getResult(0).replaceAllUsesWith(r);
    op->erase();
  }
}

}  // namespace tessera::compiler
