// Scatters written where their updates land (scatters_as_loops.cc).
#ifndef TESSERA_COMPILER_TARGETS_LLVM_CPU_SCATTERS_AS_LOOPS_H_
#define TESSERA_COMPILER_TARGETS_LLVM_CPU_SCATTERS_AS_LOOPS_H_

#include "absl/status/status.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace tessera::compiler {

// Each scatter of `func` the StableHLO importer made (a linalg.generic with kScatterAttrName, which
// matches every update against every operand element: operand size x updates work, 5 s for the
// gradient of an 8192-row embedding lookup of 1024 ids) becomes a loop nest over the updates (and
// the operand dimensions their windows span whole) that combines each update into the one element
// where it lands, when its window lies inside the operand: updates x window work. Per element the
// updates arrive in the same order as before (the updates' row-major order), so the results are
// the same bits. A scatter whose constant indices were folded into its body stays as it is (its
// few updates matched against every element). INTERNAL, naming the op, for a generic whose
// description, body or maps are not the importer's (a hand-written program's attribute). Before
// fusion and bufferization.
absl::Status ScattersAsLoops(mlir::func::FuncOp func);

}  // namespace tessera::compiler

#endif  // TESSERA_COMPILER_TARGETS_LLVM_CPU_SCATTERS_AS_LOOPS_H_
