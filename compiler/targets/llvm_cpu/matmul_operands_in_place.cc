// ReadMatmulOperandsInPlace: a BLAS matmul reads a transposed or reshaped operand where it lies.
//
// The StableHLO a framework emits for a backward pass multiplies by transposed weights and
// activations (dx = dy @ W^T, dW = x^T @ dy), and the importer and ContractionsAsMatmuls spell each
// as a linalg.transpose (and reshape copies) feeding a linalg.matmul. On a CPU device each
// transpose then copies its operand through the cache in 32x32 blocks, with scatters: the
// transformer block's backward pass moved 4 MiB weights so, several times per call on every
// device. BLAS takes a transposed operand as it is (its transpose flag) at the same speed.
//
// For each operand (2-D, r x c), the chain of ops that only rearrange elements (linalg.transpose,
// a linalg.generic that copies its one input, tensor.collapse_shape / expand_shape) is followed
// back, composing each step's index map: operand[i, j] = source[map(i, j)]. The row-major offset
// of source[map(i, j)] is an affine expression in i and j; MLIR's simplification flattens the
// floordiv / mod of reshapes into it and cancels them where they describe the same memory. When
// what is left is i * c + j, the operand is the source's memory as it is; when it is i + j * r,
// it is the source's memory transposed. The farthest source that is either one is read instead.

#include "compiler/targets/llvm_cpu/matmul_operands_in_place.h"

#include <cstdint>
#include <optional>
#include <vector>

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

namespace tessera::compiler {
namespace {

mlir::AffineMap MatmulMap(mlir::MLIRContext* context, unsigned first, unsigned second) {
  return mlir::AffineMap::get(
      3, 0, {mlir::getAffineDimExpr(first, context), mlir::getAffineDimExpr(second, context)},
      context);
}

// (m, n, k): A (m, k) or transposed (k, m); B (k, n) or transposed (n, k); C (m, n).
constexpr unsigned kM = 0, kN = 1, kK = 2;

// One step back along a chain of element rearrangements: the tensor `value`'s elements are taken
// from, and the map from `value`'s indices to that tensor's.
struct Rearrangement {
  mlir::Value from;
  mlir::AffineMap map;
};

// The product of `sizes[begin:end]`.
int64_t Product(llvm::ArrayRef<int64_t> sizes, size_t begin, size_t end) {
  int64_t product = 1;
  for (size_t i = begin; i < end; ++i) product *= sizes[i];
  return product;
}

// collapse_shape: result dimension g is the source dimensions of group g, row-major.
mlir::AffineMap CollapseMap(mlir::tensor::CollapseShapeOp op) {
  mlir::MLIRContext* context = op.getContext();
  llvm::ArrayRef<int64_t> source = op.getSrcType().getShape();
  llvm::SmallVector<mlir::AffineExpr> results;
  for (auto [g, group] : llvm::enumerate(op.getReassociationIndices())) {
    for (int64_t k : group) {
      const int64_t inner = Product(source, k + 1, group.back() + 1);
      results.push_back(mlir::getAffineDimExpr(g, context).floorDiv(inner) % source[k]);
    }
  }
  return mlir::AffineMap::get(op.getResultType().getRank(), 0, results, context);
}

// expand_shape: source dimension g is the result dimensions of group g, row-major.
mlir::AffineMap ExpandMap(mlir::tensor::ExpandShapeOp op) {
  mlir::MLIRContext* context = op.getContext();
  llvm::ArrayRef<int64_t> result = op.getResultType().getShape();
  llvm::SmallVector<mlir::AffineExpr> results;
  for (const mlir::ReassociationIndices& group : op.getReassociationIndices()) {
    mlir::AffineExpr index = mlir::getAffineConstantExpr(0, context);
    for (int64_t k : group) {
      index = index + mlir::getAffineDimExpr(k, context) * Product(result, k + 1, group.back() + 1);
    }
    results.push_back(index);
  }
  return mlir::AffineMap::get(op.getResultType().getRank(), 0, results, context);
}

// A linalg.generic that only copies its one input: every loop parallel, the output's map a
// permutation, the body `yield %in`. The map from output to input indices, or nullopt.
std::optional<mlir::AffineMap> CopyMap(mlir::linalg::GenericOp op) {
  if (op.getNumDpsInputs() != 1 || op.getNumDpsInits() != 1 || op.getNumReductionLoops() != 0) {
    return std::nullopt;
  }
  mlir::Block& body = op.getRegion().front();
  auto yield = mlir::dyn_cast<mlir::linalg::YieldOp>(body.getTerminator());
  if (&body.front() != yield.getOperation() || yield.getNumOperands() != 1 ||
      yield.getOperand(0) != body.getArgument(0)) {
    return std::nullopt;
  }
  llvm::SmallVector<mlir::AffineMap> maps = op.getIndexingMapsArray();
  if (!maps[1].isPermutation()) return std::nullopt;
  return maps[0].compose(mlir::inversePermutation(maps[1]));
}

std::optional<Rearrangement> RearrangedFrom(mlir::Value value) {
  mlir::Operation* op = value.getDefiningOp();
  if (op == nullptr) return std::nullopt;
  if (auto transpose = mlir::dyn_cast<mlir::linalg::TransposeOp>(op)) {
    if (!transpose.hasPureTensorSemantics()) return std::nullopt;
    // result[o] = input[x] with x[permutation[i]] = o[i].
    llvm::SmallVector<unsigned> inverse(transpose.getPermutation().size());
    for (auto [i, p] : llvm::enumerate(transpose.getPermutation())) inverse[p] = i;
    return Rearrangement{transpose.getInput(),
                         mlir::AffineMap::getPermutationMap(inverse, op->getContext())};
  }
  if (auto generic = mlir::dyn_cast<mlir::linalg::GenericOp>(op)) {
    if (!generic.hasPureTensorSemantics()) return std::nullopt;
    std::optional<mlir::AffineMap> map = CopyMap(generic);
    if (!map) return std::nullopt;
    return Rearrangement{generic.getDpsInputs()[0], *map};
  }
  if (auto collapse = mlir::dyn_cast<mlir::tensor::CollapseShapeOp>(op)) {
    if (!collapse.getSrcType().hasStaticShape()) return std::nullopt;
    return Rearrangement{collapse.getSrc(), CollapseMap(collapse)};
  }
  if (auto expand = mlir::dyn_cast<mlir::tensor::ExpandShapeOp>(op)) {
    if (!expand.getResultType().hasStaticShape()) return std::nullopt;
    return Rearrangement{expand.getSrc(), ExpandMap(expand)};
  }
  return std::nullopt;
}

// The constant `expr` (in two dimensions) takes at (i, j), or nullopt.
std::optional<int64_t> ValueAt(mlir::AffineExpr expr, int64_t i, int64_t j) {
  mlir::MLIRContext* context = expr.getContext();
  mlir::AffineExpr at =
      mlir::simplifyAffineExpr(expr.replaceDims({mlir::getAffineConstantExpr(i, context),
                                                 mlir::getAffineConstantExpr(j, context)}),
                               0, 0);
  auto constant = mlir::dyn_cast<mlir::AffineConstantExpr>(at);
  if (!constant) return std::nullopt;
  return constant.getValue();
}

enum class Memory { kAsIs, kTransposed };

// How the r x c operand `operand[i, j] = source[map(i, j)]` lies in the row-major memory of
// `source` (static shape), or nullopt where it is not all of it in either order.
std::optional<Memory> MemoryOf(mlir::AffineMap map, llvm::ArrayRef<int64_t> source, int64_t r,
                               int64_t c) {
  if (source.empty() || Product(source, 0, source.size()) != r * c || r * c == 0) {
    return std::nullopt;
  }
  mlir::MLIRContext* context = map.getContext();
  mlir::AffineExpr offset = mlir::getAffineConstantExpr(0, context);
  int64_t stride = 1;
  for (size_t k = source.size(); k-- > 0;) {
    offset = offset + map.getResult(k) * stride;
    stride *= source[k];
  }
  offset = mlir::simplifyAffineExpr(offset, 2, 0);
  // Only sums of multiples of i and j are linear; a floordiv or mod left over is not.
  bool linear = true;
  offset.walk([&](mlir::AffineExpr e) {
    linear &= e.getKind() != mlir::AffineExprKind::FloorDiv &&
              e.getKind() != mlir::AffineExprKind::CeilDiv &&
              e.getKind() != mlir::AffineExprKind::Mod;
  });
  if (!linear) return std::nullopt;
  std::optional<int64_t> origin = ValueAt(offset, 0, 0), down = ValueAt(offset, 1, 0),
                         right = ValueAt(offset, 0, 1);
  if (!origin || !down || !right || *origin != 0) return std::nullopt;
  const int64_t row_step = *down, column_step = *right;
  if ((r == 1 || row_step == c) && (c == 1 || column_step == 1)) return Memory::kAsIs;
  if ((r == 1 || row_step == 1) && (c == 1 || column_step == r)) return Memory::kTransposed;
  return std::nullopt;
}

// `source` as a static 2-D tensor of `shape` (row-major): itself, or collapsed and expanded.
mlir::Value Reshaped(mlir::OpBuilder& builder, mlir::Location loc, mlir::Value source,
                     llvm::ArrayRef<int64_t> shape) {
  auto type = mlir::cast<mlir::RankedTensorType>(source.getType());
  if (type.getShape() == shape) return source;
  mlir::Value flat = source;
  if (type.getRank() != 1) {
    mlir::ReassociationIndices all;
    for (int64_t d = 0; d < type.getRank(); ++d) all.push_back(d);
    flat = mlir::tensor::CollapseShapeOp::create(builder, loc, source,
                                                 llvm::ArrayRef<mlir::ReassociationIndices>{all});
  }
  return mlir::tensor::ExpandShapeOp::create(
      builder, loc, mlir::RankedTensorType::get(shape, type.getElementType()), flat,
      llvm::ArrayRef<mlir::ReassociationIndices>{{0, 1}});
}

// Where operand `index` of `matmul` can be read instead: the farthest tensor of its chain whose
// memory is the operand's or its transpose, and which. nullopt where the operand is read as it is.
struct InPlace {
  mlir::Value source;
  Memory memory;
};
std::optional<InPlace> InPlaceOperand(mlir::linalg::MatmulOp matmul, unsigned index) {
  mlir::Value operand = matmul->getOperand(index);
  llvm::ArrayRef<int64_t> shape = mlir::cast<mlir::RankedTensorType>(operand.getType()).getShape();
  std::vector<Rearrangement> chain;
  mlir::AffineMap map = mlir::AffineMap::getMultiDimIdentityMap(2, matmul.getContext());
  for (mlir::Value at = operand;;) {
    std::optional<Rearrangement> step = RearrangedFrom(at);
    if (!step) break;
    auto type = mlir::dyn_cast<mlir::RankedTensorType>(step->from.getType());
    if (!type || !type.hasStaticShape()) break;
    map = step->map.compose(map);
    chain.push_back({step->from, map});
    at = step->from;
  }
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    llvm::ArrayRef<int64_t> source =
        mlir::cast<mlir::RankedTensorType>(it->from.getType()).getShape();
    if (std::optional<Memory> memory = MemoryOf(it->map, source, shape[0], shape[1])) {
      return InPlace{it->from, *memory};
    }
  }
  return std::nullopt;
}

// Erases `value`'s producer and then, in turn, the ones it read from, while nothing reads them
// (with the tensor.empty each wrote into).
void EraseUnusedChain(mlir::Value value) {
  while (mlir::Operation* op = value.getDefiningOp()) {
    std::optional<Rearrangement> step = RearrangedFrom(value);
    if (!op->use_empty() || !step) return;
    llvm::SmallVector<mlir::Value> operands(op->getOperands());
    op->erase();
    for (mlir::Value operand : operands) {
      auto empty = operand.getDefiningOp<mlir::tensor::EmptyOp>();
      if (empty && empty->use_empty()) empty->erase();
    }
    value = step->from;
  }
}

}  // namespace

std::optional<BlasTransposes> BlasTransposesOf(mlir::linalg::MatmulOp matmul) {
  if (!matmul.hasUserDefinedMaps()) return BlasTransposes{};
  mlir::MLIRContext* context = matmul.getContext();
  llvm::SmallVector<mlir::AffineMap> maps = matmul.getIndexingMapsArray();
  if (maps.size() != 3 || maps[2] != MatmulMap(context, kM, kN)) return std::nullopt;
  BlasTransposes transposes;
  if (maps[0] == MatmulMap(context, kK, kM)) {
    transposes.a = true;
  } else if (maps[0] != MatmulMap(context, kM, kK)) {
    return std::nullopt;
  }
  if (maps[1] == MatmulMap(context, kN, kK)) {
    transposes.b = true;
  } else if (maps[1] != MatmulMap(context, kK, kN)) {
    return std::nullopt;
  }
  return transposes;
}

void ReadMatmulOperandsInPlace(mlir::func::FuncOp func) {
  std::vector<mlir::linalg::MatmulOp> matmuls;
  func.walk([&](mlir::linalg::MatmulOp matmul) {
    if (!matmul.hasPureTensorSemantics() || matmul.hasUserDefinedMaps()) return;
    mlir::Type element = mlir::getElementTypeOrSelf(matmul->getOperand(0).getType());
    if (!element.isF32() && !element.isF64()) return;
    for (mlir::Value operand : matmul->getOperands()) {
      auto type = mlir::dyn_cast<mlir::RankedTensorType>(operand.getType());
      if (!type || !type.hasStaticShape() || type.getElementType() != element) return;
    }
    matmuls.push_back(matmul);
  });
  for (mlir::linalg::MatmulOp matmul : matmuls) {
    mlir::MLIRContext* context = matmul.getContext();
    mlir::OpBuilder builder(matmul);
    llvm::SmallVector<mlir::AffineMap> maps = {
        MatmulMap(context, kM, kK), MatmulMap(context, kK, kN), MatmulMap(context, kM, kN)};
    bool transposed = false;
    for (unsigned index : {0u, 1u}) {
      std::optional<InPlace> in_place = InPlaceOperand(matmul, index);
      if (!in_place) continue;
      mlir::Value operand = matmul->getOperand(index);
      llvm::ArrayRef<int64_t> shape =
          mlir::cast<mlir::RankedTensorType>(operand.getType()).getShape();
      const bool transpose = in_place->memory == Memory::kTransposed;
      const int64_t rows = transpose ? shape[1] : shape[0], cols = transpose ? shape[0] : shape[1];
      matmul->setOperand(index, Reshaped(builder, matmul.getLoc(), in_place->source, {rows, cols}));
      if (transpose) {
        maps[index] = index == 0 ? MatmulMap(context, kK, kM) : MatmulMap(context, kN, kK);
        transposed = true;
      }
      EraseUnusedChain(operand);
    }
    if (transposed) matmul.setIndexingMapsAttr(builder.getAffineMapArrayAttr(maps));
  }
}

}  // namespace tessera::compiler
