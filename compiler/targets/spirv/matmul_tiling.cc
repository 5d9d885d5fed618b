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

// Whether `matmul` gets the tiled kernel: default indexing maps, on static identity-layout
// memrefs of one element type, no empty dimension.
bool IsTileableMatmul(mlir::linalg::MatmulOp matmul) {
  if (matmul.hasUserDefinedMaps() || !matmul.hasPureBufferSemantics()) return false;
  mlir::Type element;
  for (mlir::Value operand : matmul->getOperands()) {
    auto type = mlir::dyn_cast<mlir::MemRefType>(operand.getType());
    if (!type || !type.hasStaticShape() || !type.getLayout().isIdentity() ||
        type.getNumElements() == 0) {
      return false;
    }
    if (element && type.getElementType() != element) return false;
    element = type.getElementType();
  }
  return mlir::isa<mlir::FloatType, mlir::IntegerType>(element);
}

// The tiled matmul's layout: tile x tile output tiles per work-group of tile x rows invocations,
// each computing tile / rows outputs of its column.
struct MatmulLayout {
  int64_t tile = 16;
  int64_t rows = 8;
};

// 32x32 tiles on 32x8 invocations (4 outputs each, fewer barriers per output) where the device
// allows 256 invocations per work-group and its subgroups are 32 wide or more (a row of the
// work-group, 32 invocations reading 32 consecutive elements of B, is one subgroup); else 16x16
// tiles on 16x8 invocations, 128, which every device allows. On lavapipe (subgroups of 8) the
// 16x16 layout measured faster: 174 ms against 188 ms for a 512^3 f32 matmul (both layouts pass
// the Vulkan program tests there).
MatmulLayout ChooseMatmulLayout(const KernelTarget& target) {
  const bool room = target.max_workgroup_invocations >= 256 &&
                    target.max_workgroup_size.size() == 3 && target.max_workgroup_size[0] >= 32 &&
                    target.max_workgroup_size[1] >= 8;
  const int64_t sg = target.subgroup_size;  // 0: unknown
  if (room && sg >= 32) return {32, 8};
  return {16, 8};
}

// Builds C += A @ B as one gpu.launch (EmitTiledMatmul).
class TiledMatmulEmitter {
 public:
  TiledMatmulEmitter(mlir::linalg::MatmulOp matmul, MatmulLayout layout)
      : b_(matmul), loc_(matmul.getLoc()), layout_(layout), per_(layout.tile / layout.rows) {
    a_ = matmul->getOperand(0);
    b_mat_ = matmul->getOperand(1);
    c_ = matmul->getOperand(2);
    auto a_type = mlir::cast<mlir::MemRefType>(a_.getType());
    m_ = a_type.getDimSize(0);
    k_ = a_type.getDimSize(1);
    n_ = mlir::cast<mlir::MemRefType>(c_.getType()).getDimSize(1);
    element_ = a_type.getElementType();
    is_float_ = mlir::isa<mlir::FloatType>(element_);
  }

  void Emit() {
    const int64_t t = layout_.tile;
    auto launch =
        mlir::gpu::LaunchOp::create(b_, loc_, Index((n_ + t - 1) / t), Index((m_ + t - 1) / t),
                                    Index(1), Index(t), Index(layout_.rows), Index(1));
    b_.setInsertionPointToStart(&launch.getBody().front());
    // Allocations in workgroup memory (MLIR 22's GPU-to-SPIR-V conversion crashes on gpu.func
    // workgroup attributions; memref.alloc in workgroup memory becomes a Workgroup variable).
    auto tile_type = mlir::MemRefType::get({t, t}, element_, mlir::MemRefLayoutAttrInterface{},
                                           b_.getI64IntegerAttr(3));
    a_tile_ = mlir::memref::AllocOp::create(b_, loc_, tile_type);
    b_tile_ = mlir::memref::AllocOp::create(b_, loc_, tile_type);
    tx_ = launch.getThreadIds().x;
    mlir::Value ty = launch.getThreadIds().y;
    col_ = Add(Mul(launch.getBlockIds().x, Index(t)), tx_);
    for (int64_t r = 0; r < per_; ++r) {
      tile_rows_.push_back(Add(ty, Index(r * layout_.rows)));
      rows_.push_back(Add(Mul(launch.getBlockIds().y, Index(t)), tile_rows_.back()));
    }
    mlir::Value zero = mlir::arith::ConstantOp::create(b_, loc_, b_.getZeroAttr(element_));
    auto steps = mlir::scf::ForOp::create(b_, loc_, Index(0), Index((k_ + t - 1) / t), Index(1),
                                          std::vector<mlir::Value>(per_, zero));
    b_.setInsertionPointToStart(steps.getBody());
    EmitStep(steps.getInductionVar(), steps.getRegionIterArgs(), zero);
    b_.setInsertionPointAfter(steps);
    for (int64_t r = 0; r < per_; ++r) StoreOutput(rows_[r], steps.getResult(r));
    mlir::gpu::TerminatorOp::create(b_, loc_);
  }

 private:
  mlir::Value Index(int64_t v) { return mlir::arith::ConstantIndexOp::create(b_, loc_, v); }
  mlir::Value Add(mlir::Value x, mlir::Value y) {
    return mlir::arith::AddIOp::create(b_, loc_, x, y);
  }
  mlir::Value Mul(mlir::Value x, mlir::Value y) {
    return mlir::arith::MulIOp::create(b_, loc_, x, y);
  }
  mlir::Value Less(mlir::Value x, int64_t bound) {
    return mlir::arith::CmpIOp::create(b_, loc_, mlir::arith::CmpIPredicate::ult, x, Index(bound));
  }
  mlir::Value Fma(mlir::Value acc, mlir::Value x, mlir::Value y) {
    if (is_float_) {
      return mlir::arith::AddFOp::create(b_, loc_, acc,
                                         mlir::arith::MulFOp::create(b_, loc_, x, y));
    }
    return mlir::arith::AddIOp::create(b_, loc_, acc, mlir::arith::MulIOp::create(b_, loc_, x, y));
  }
  // mem[i][j] when both are in range, else 0 (clamped index, select: every invocation reaches
  // every barrier).
  mlir::Value LoadOrZero(mlir::Value mem, mlir::Value i, mlir::Value j, int64_t rows, int64_t cols,
                         mlir::Value zero) {
    mlir::Value inside = mlir::arith::AndIOp::create(b_, loc_, Less(i, rows), Less(j, cols));
    mlir::Value ic = mlir::arith::MinUIOp::create(b_, loc_, i, Index(rows - 1));
    mlir::Value jc = mlir::arith::MinUIOp::create(b_, loc_, j, Index(cols - 1));
    mlir::Value v = mlir::memref::LoadOp::create(b_, loc_, mem, mlir::ValueRange{ic, jc});
    return mlir::arith::SelectOp::create(b_, loc_, inside, v, zero);
  }

  // One step of the contraction: the tiles of A and B at k0 = step * tile loaded cooperatively,
  // then each invocation's outputs accumulated over them.
  void EmitStep(mlir::Value step, mlir::ValueRange accumulators, mlir::Value zero) {
    mlir::Value k0 = Mul(step, Index(layout_.tile));
    mlir::Value ka = Add(k0, tx_);
    for (int64_t r = 0; r < per_; ++r) {
      mlir::memref::StoreOp::create(b_, loc_, LoadOrZero(a_, rows_[r], ka, m_, k_, zero), a_tile_,
                                    mlir::ValueRange{tile_rows_[r], tx_});
      mlir::memref::StoreOp::create(b_, loc_,
                                    LoadOrZero(b_mat_, Add(k0, tile_rows_[r]), col_, k_, n_, zero),
                                    b_tile_, mlir::ValueRange{tile_rows_[r], tx_});
    }
    mlir::gpu::BarrierOp::create(b_, loc_);
    auto inner =
        mlir::scf::ForOp::create(b_, loc_, Index(0), Index(layout_.tile), Index(1), accumulators);
    b_.setInsertionPointToStart(inner.getBody());
    mlir::Value kk = inner.getInductionVar();
    mlir::Value bv = mlir::memref::LoadOp::create(b_, loc_, b_tile_, mlir::ValueRange{kk, tx_});
    std::vector<mlir::Value> sums;
    for (int64_t r = 0; r < per_; ++r) {
      mlir::Value av =
          mlir::memref::LoadOp::create(b_, loc_, a_tile_, mlir::ValueRange{tile_rows_[r], kk});
      sums.push_back(Fma(inner.getRegionIterArgs()[r], av, bv));
    }
    mlir::scf::YieldOp::create(b_, loc_, sums);
    b_.setInsertionPointAfter(inner);
    mlir::gpu::BarrierOp::create(b_, loc_);
    mlir::scf::YieldOp::create(b_, loc_, inner.getResults());
  }

  // c[row][col] += sum where both are in range.
  void StoreOutput(mlir::Value row, mlir::Value sum) {
    mlir::Value inside = mlir::arith::AndIOp::create(b_, loc_, Less(row, m_), Less(col_, n_));
    auto guard = mlir::scf::IfOp::create(b_, loc_, inside, /*withElseRegion=*/false);
    b_.setInsertionPointToStart(guard.thenBlock());
    mlir::Value old = mlir::memref::LoadOp::create(b_, loc_, c_, mlir::ValueRange{row, col_});
    mlir::Value total = is_float_ ? mlir::arith::AddFOp::create(b_, loc_, old, sum).getResult()
                                  : mlir::arith::AddIOp::create(b_, loc_, old, sum).getResult();
    mlir::memref::StoreOp::create(b_, loc_, total, c_, mlir::ValueRange{row, col_});
    b_.setInsertionPointAfter(guard);
  }

  mlir::OpBuilder b_;
  mlir::Location loc_;
  MatmulLayout layout_;
  int64_t per_;
  mlir::Value a_, b_mat_, c_, a_tile_, b_tile_, tx_, col_;
  std::vector<mlir::Value> tile_rows_, rows_;  // per output of an invocation
  int64_t m_ = 0, k_ = 0, n_ = 0;
  mlir::Type element_;
  bool is_float_ = false;
};

// C += A @ B as one gpu.launch (layout: ChooseMatmulLayout): the K dimension walked in
// tile-wide steps through two tiles of A and B in workgroup memory (memory space 3, which
// map-memref-spirv-storage-class maps to Workgroup for Vulkan), loaded cooperatively between
// barriers. Out-of-range elements load as 0.
void EmitTiledMatmul(mlir::linalg::MatmulOp matmul, MatmulLayout layout) {
  TiledMatmulEmitter(matmul, layout).Emit();
  matmul->erase();
}

}  // namespace

void EmitTiledMatmuls(mlir::func::FuncOp func, const KernelTarget& target) {
  // The ops and attributes built here need their dialects loaded.
  func.getContext()
      ->loadDialect<mlir::gpu::GPUDialect, mlir::scf::SCFDialect, mlir::memref::MemRefDialect,
                    mlir::arith::ArithDialect, mlir::spirv::SPIRVDialect>();
  std::vector<mlir::linalg::MatmulOp> matmuls;
  func.walk([&](mlir::linalg::MatmulOp matmul) {
    if (IsTileableMatmul(matmul)) matmuls.push_back(matmul);
  });
  for (mlir::linalg::MatmulOp matmul : matmuls) {
    EmitTiledMatmul(matmul, ChooseMatmulLayout(target));
  }
}

}  // namespace tessera::compiler::spirv
