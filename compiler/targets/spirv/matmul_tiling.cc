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
#include "mlir/Dialect/Vector/IR/VectorOps.h"
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

// The register-blocked matmul's layout: each invocation computes `rows` rows by `units` values of
// `lanes` lanes (vector<lanes x T> when lanes > 1) of C, on work-groups of group_x x group_y
// invocations (x along N).
struct MatmulLayout {
  int64_t lanes = 4;
  int64_t units = 1;
  int64_t rows = 4;
  int64_t group_x = 16;
  int64_t group_y = 4;
};

// 4x4 blocks of C per invocation: one vec4 of B per step of K where N is a multiple of 4 and the
// elements 32-bit (the buffers then bind as vec4 arrays), else 4 scalars; 16x4 invocations per
// work-group (64, below every device's limit; fewer rows of them where `target` allows fewer).
// No workgroup memory and no barrier: B's rows are
// read once per 4 rows of C, A's elements once per 4 columns, from the device's caches
// (lavapipe emulates barriers, expensive; it runs a work-group on SIMD lanes of one thread).
//
// On a CPU implementation (target.cpu_device: lavapipe) with vec4s, 16x32 blocks (16 rows by 8
// vec4s) on 8x4 work-groups: the SIMD lanes of one thread run the invocations, so a block is not
// bounded by registers, and each load of A or B then serves 8 or 16 times as many multiply-adds.
// Measured on lavapipe (2-core Zen 4, f32): 512^3 35.6 -> 16.2 ms, 1024^3 223 -> 104 ms, the MLP
// 256x2048x2048 381 -> 106 ms; blocks of 8x8, 8x16, 16x16 and 32x16 were between (16x32: the
// longest compile, about 0.1 s a matmul, once).
MatmulLayout ChooseMatmulLayout(mlir::linalg::MatmulOp matmul, const KernelTarget& target) {
  auto c = mlir::cast<mlir::MemRefType>(matmul->getOperand(2).getType());
  const bool vec4 = c.getDimSize(1) % 4 == 0 && c.getElementTypeBitWidth() == 32;
  MatmulLayout layout = vec4 ? MatmulLayout{4, 1, 4, 16, 4} : MatmulLayout{1, 4, 4, 16, 4};
  // Where C fills at least two such work-groups (64x256): a smaller C would compute mostly
  // clamped rows and columns (16x32 @ 32x64: 0.21 -> 0.40 ms a call).
  constexpr int64_t kCpuBlockedElements = 2 * 64 * 256;
  if (vec4 && target.cpu_device && c.getNumElements() >= kCpuBlockedElements) {
    layout = MatmulLayout{4, 8, 16, 8, 4};
  }
  while (layout.group_y > 1 && layout.group_x * layout.group_y > target.max_workgroup_invocations) {
    layout.group_y /= 2;
  }
  return layout;
}

// Builds C += A @ B as one gpu.launch (EmitRegisterBlockedMatmul).
class BlockedMatmulEmitter {
 public:
  BlockedMatmulEmitter(mlir::linalg::MatmulOp matmul, MatmulLayout layout)
      : b_(matmul), loc_(matmul.getLoc()), layout_(layout) {
    a_ = matmul->getOperand(0);
    auto a_type = mlir::cast<mlir::MemRefType>(a_.getType());
    m_ = a_type.getDimSize(0);
    k_ = a_type.getDimSize(1);
    n_ = mlir::cast<mlir::MemRefType>(matmul->getOperand(2).getType()).getDimSize(1);
    n_units_ = n_ / layout_.lanes;
    element_ = a_type.getElementType();
    unit_ = Widen(element_);
    is_float_ = mlir::isa<mlir::FloatType>(element_);
    b_mat_ = View(matmul->getOperand(1), k_, n_units_);
    c_ = View(matmul->getOperand(2), m_, n_units_);
    // A's rows as vec4s too where K allows: one load per row for 4 steps of K.
    if (layout_.lanes > 1 && k_ % layout_.lanes == 0) {
      k_lanes_ = layout_.lanes;
      a_ = View(a_, m_, k_ / k_lanes_);
    }
  }

  void Emit() {
    const int64_t cols = layout_.group_x * layout_.units, rows = layout_.group_y * layout_.rows;
    auto launch = mlir::gpu::LaunchOp::create(
        b_, loc_, Index((n_units_ + cols - 1) / cols), Index((m_ + rows - 1) / rows), Index(1),
        Index(layout_.group_x), Index(layout_.group_y), Index(1));
    b_.setInsertionPointToStart(&launch.getBody().front());
    mlir::Value unit0 =
        Mul(Add(Mul(launch.getBlockIds().x, Index(layout_.group_x)), launch.getThreadIds().x),
            Index(layout_.units));
    mlir::Value row0 =
        Mul(Add(Mul(launch.getBlockIds().y, Index(layout_.group_y)), launch.getThreadIds().y),
            Index(layout_.rows));
    for (int64_t r = 0; r < layout_.rows; ++r) rows_.push_back(Add(row0, Index(r)));
    for (int64_t u = 0; u < layout_.units; ++u) units_.push_back(Add(unit0, Index(u)));
    mlir::Value zero = mlir::arith::ConstantOp::create(b_, loc_, b_.getZeroAttr(unit_));
    const std::vector<mlir::Value> init(layout_.rows * layout_.units, zero);
    auto steps = mlir::scf::ForOp::create(b_, loc_, Index(0), Index(k_ / k_lanes_), Index(1), init);
    b_.setInsertionPointToStart(steps.getBody());
    mlir::scf::YieldOp::create(b_, loc_,
                               EmitStep(steps.getInductionVar(), steps.getRegionIterArgs()));
    b_.setInsertionPointAfter(steps);
    for (int64_t r = 0; r < layout_.rows; ++r) {
      for (int64_t u = 0; u < layout_.units; ++u) {
        StoreOutput(rows_[r], units_[u], steps.getResult(r * layout_.units + u));
      }
    }
    mlir::gpu::TerminatorOp::create(b_, loc_);
  }

 private:
  mlir::Type Widen(mlir::Type element) {
    return layout_.lanes == 1 ? element : mlir::VectorType::get({layout_.lanes}, element);
  }
  // `matrix` as rows x units values of `lanes` lanes: itself when lanes is 1, else a cast in the
  // host function that CollectDispatches binds as the buffer itself.
  mlir::Value View(mlir::Value matrix, int64_t rows, int64_t units) {
    if (layout_.lanes == 1) return matrix;
    auto type = mlir::MemRefType::get({rows, units}, unit_);
    return mlir::UnrealizedConversionCastOp::create(b_, loc_, mlir::TypeRange{type}, matrix)
        .getResult(0);
  }
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
  mlir::Value Clamp(mlir::Value x, int64_t bound) {
    return mlir::arith::MinUIOp::create(b_, loc_, x, Index(bound - 1));
  }
  // acc + x * y, unfused (as linalg.matmul's body: the same rounding on every target).
  mlir::Value MulAdd(mlir::Value acc, mlir::Value x, mlir::Value y) {
    if (is_float_) {
      return mlir::arith::AddFOp::create(b_, loc_, acc,
                                         mlir::arith::MulFOp::create(b_, loc_, x, y));
    }
    return mlir::arith::AddIOp::create(b_, loc_, acc, mlir::arith::MulIOp::create(b_, loc_, x, y));
  }

  // One step of the contraction: k_lanes_ consecutive k (A's rows loaded as one vec4 per row
  // when k_lanes_ is 4), each in order: A's element of each row (clamped in range, broadcast to
  // the lanes) times B's values of each unit (clamped), added to the accumulators (row-major over
  // rows x units). Clamped rows and columns compute values StoreOutput drops.
  std::vector<mlir::Value> EmitStep(mlir::Value step, mlir::ValueRange accumulators) {
    std::vector<mlir::Value> a_rows;
    for (int64_t r = 0; r < layout_.rows; ++r) {
      a_rows.push_back(
          mlir::memref::LoadOp::create(b_, loc_, a_, mlir::ValueRange{Clamp(rows_[r], m_), step}));
    }
    std::vector<mlir::Value> sums(accumulators.begin(), accumulators.end());
    for (int64_t j = 0; j < k_lanes_; ++j) {
      mlir::Value k = k_lanes_ == 1 ? step : Add(Mul(step, Index(k_lanes_)), Index(j));
      std::vector<mlir::Value> b_values;
      for (mlir::Value unit : units_) {
        b_values.push_back(mlir::memref::LoadOp::create(
            b_, loc_, b_mat_, mlir::ValueRange{k, Clamp(unit, n_units_)}));
      }
      for (int64_t r = 0; r < layout_.rows; ++r) {
        mlir::Value a = a_rows[r];
        if (k_lanes_ > 1) a = mlir::vector::ExtractOp::create(b_, loc_, a, j);
        if (layout_.lanes > 1) a = mlir::vector::BroadcastOp::create(b_, loc_, unit_, a);
        for (int64_t u = 0; u < layout_.units; ++u) {
          mlir::Value& sum = sums[r * layout_.units + u];
          sum = MulAdd(sum, a, b_values[u]);
        }
      }
    }
    return sums;
  }

  // c[row][unit] += sum where both are in range.
  void StoreOutput(mlir::Value row, mlir::Value unit, mlir::Value sum) {
    mlir::Value inside = mlir::arith::AndIOp::create(b_, loc_, Less(row, m_), Less(unit, n_units_));
    auto guard = mlir::scf::IfOp::create(b_, loc_, inside, /*withElseRegion=*/false);
    b_.setInsertionPointToStart(guard.thenBlock());
    mlir::Value old = mlir::memref::LoadOp::create(b_, loc_, c_, mlir::ValueRange{row, unit});
    mlir::Value total = is_float_ ? mlir::arith::AddFOp::create(b_, loc_, old, sum).getResult()
                                  : mlir::arith::AddIOp::create(b_, loc_, old, sum).getResult();
    mlir::memref::StoreOp::create(b_, loc_, total, c_, mlir::ValueRange{row, unit});
    b_.setInsertionPointAfter(guard);
  }

  mlir::OpBuilder b_;
  mlir::Location loc_;
  MatmulLayout layout_;
  mlir::Value a_, b_mat_, c_;              // B and C as units (View)
  std::vector<mlir::Value> rows_, units_;  // an invocation's rows of C and units of its rows
  int64_t m_ = 0, k_ = 0, n_ = 0, n_units_ = 0;
  int64_t k_lanes_ = 1;  // steps of K per iteration: 4 where A binds as vec4s
  mlir::Type element_, unit_;
  bool is_float_ = false;
};

// C += A @ B as one gpu.launch (layout: ChooseMatmulLayout): each invocation keeps its block of C
// in registers over the whole K dimension, in order (the sums of linalg.matmul's loop nest), and
// adds it to C at the end. Out-of-range rows and columns are clamped loads and dropped stores.
void EmitRegisterBlockedMatmul(mlir::linalg::MatmulOp matmul, const KernelTarget& target) {
  BlockedMatmulEmitter(matmul, ChooseMatmulLayout(matmul, target)).Emit();
  matmul->erase();
}

}  // namespace

void EmitTiledMatmuls(mlir::func::FuncOp func, const KernelTarget& target) {
  // The ops and attributes built here need their dialects loaded.
  func.getContext()
      ->loadDialect<mlir::gpu::GPUDialect, mlir::scf::SCFDialect, mlir::memref::MemRefDialect,
                    mlir::arith::ArithDialect, mlir::spirv::SPIRVDialect,
                    mlir::vector::VectorDialect>();
  std::vector<mlir::linalg::MatmulOp> matmuls;
  func.walk([&](mlir::linalg::MatmulOp matmul) {
    if (IsTileableMatmul(matmul)) matmuls.push_back(matmul);
  });
  for (mlir::linalg::MatmulOp matmul : matmuls) EmitRegisterBlockedMatmul(matmul, target);
}

}  // namespace tessera::compiler::spirv
