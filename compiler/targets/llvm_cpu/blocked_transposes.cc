// Transposes on the CPU in square blocks. Lowered as it is, a linalg.transpose is a loop nest over
// its output: the innermost loop writes the output contiguously but reads the input with the
// stride of a whole row, a new cache line (and, for rows of 4 KiB and more, a new page) per
// element. The transformer block's backward pass transposes 512x2048 weights: about 5 ms each
// on one CPU device, memory bound at a few hundred MB/s. BlockTransposes tiles each transpose
// whose innermost output dimension is not the input's innermost one into kBlock x kBlock blocks
// over those two dimensions (every other dimension by 1), on tensors before bufferization:
// within a block the rows read and written stay in the cache and the TLB. The same element
// copies, in another order: results are bit-identical.

#include "compiler/targets/llvm_cpu/blocked_transposes.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/TilingInterface.h"

namespace tessera::compiler {
namespace {

// Elements per side of a block: 32 f32 rows of 128 bytes (two cache lines each) read and written.
constexpr int64_t kBlock = 32;

// The output dimension that is the input's innermost one, or -1 where the transpose keeps the
// innermost dimension (it then copies contiguous rows and needs no blocks).
int64_t InputInnermostInOutput(mlir::linalg::TransposeOp op) {
  llvm::ArrayRef<int64_t> permutation = op.getPermutation();
  const int64_t innermost = static_cast<int64_t>(permutation.size()) - 1;
  for (int64_t d = 0; d < innermost; ++d) {
    if (permutation[d] == innermost) return d;
  }
  return -1;
}

}  // namespace

absl::Status BlockTransposes(mlir::ModuleOp kernel, const std::string& name) {
  std::vector<mlir::linalg::TransposeOp> transposes;
  kernel.walk([&](mlir::linalg::TransposeOp op) {
    if (op.hasPureTensorSemantics() && !op.hasDynamicShape() && InputInnermostInOutput(op) >= 0) {
      transposes.push_back(op);
    }
  });
  mlir::MLIRContext* context = kernel.getContext();
  context->loadDialect<mlir::scf::SCFDialect, mlir::tensor::TensorDialect>();
  mlir::IRRewriter rewriter(context);
  for (mlir::linalg::TransposeOp op : transposes) {
    llvm::SmallVector<int64_t> shape = op.getStaticLoopRanges();
    const int64_t rank = static_cast<int64_t>(shape.size());
    const int64_t across = InputInnermostInOutput(op);
    // A transpose with fewer than two blocks' worth of either dimension gains nothing.
    if (shape[across] <= kBlock && shape[rank - 1] <= kBlock) continue;
    std::vector<mlir::OpFoldResult> sizes(rank, rewriter.getIndexAttr(1));
    sizes[across] = rewriter.getIndexAttr(std::min(kBlock, std::max<int64_t>(shape[across], 1)));
    sizes[rank - 1] =
        rewriter.getIndexAttr(std::min(kBlock, std::max<int64_t>(shape[rank - 1], 1)));
    mlir::scf::SCFTilingOptions options;
    options.setTileSizes(sizes);
    rewriter.setInsertionPoint(op);
    auto tiled = mlir::scf::tileUsingSCF(
        rewriter, mlir::cast<mlir::TilingInterface>(op.getOperation()), options);
    if (mlir::failed(tiled)) {
      return absl::InternalError(absl::StrCat("tiling a transpose of ", name));
    }
    rewriter.replaceOp(op, tiled->replacements);
  }
  return absl::OkStatus();
}

}  // namespace tessera::compiler
