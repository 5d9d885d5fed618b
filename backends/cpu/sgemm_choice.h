#ifndef TESSERA_BACKENDS_CPU_SGEMM_CHOICE_H_
#define TESSERA_BACKENDS_CPU_SGEMM_CHOICE_H_

// SgemmChooser: which of two f32 matmul kernels, the streaming kernel (streaming_sgemm.h) or the
// BLAS, takes C (m x n) = A (m x k) @ B (k x n) on this machine, decided by timing both once per
// shape class in the process and remembered.
//
// Why: which one is faster depends on the CPU, not only on the shape. On a Zen 5 the streaming
// kernel beat OpenBLAS up to 256 rows (K = N = 2048); on an AVX-512 Xeon it reached 86-90 GFLOP/s
// at 128-256 rows where OpenBLAS reached 133-164, and they tied at 32 rows. A constant tuned on one
// machine is wrong on the next.
//
// How: the first Choose of a shape class (m, n and k each rounded up to a power of two) runs both
// kernels on buffers of its own, of that call's sizes (n and k capped at kMaxMeasuredDim: the
// rate, not the whole product, is what is compared), once to warm up and then kRounds times each,
// alternating; the BLAS is chosen when its best time is below kBlasMargin of the streaming
// kernel's. The margin is there because the measurement flatters the BLAS: alone, with B warm in
// the cache, it packs B from cache; in an Execute, each device reads its own B from memory while
// the others do too, and packing costs a pass over memory. Measured on an AVX-512 Xeon, 2 cores:
// 32x2048x2048 alone 3.8 ms BLAS against 4.6 streaming (0.83), yet the 8-device MLP ran 5-10%
// faster streaming; 256x2048x2048 alone 0.56 (the 1-device MLP: 16 ms BLAS against 28 streaming).
// Other threads asking for the same class meanwhile wait for that answer, so that every device of
// one Execute uses the same kernel. A measurement costs some tens of milliseconds once per class
// and process.
//
// The CPU kernel loader keeps one for the process; TESSERA_CPU_SGEMM (read once; a value not
// listed here fails every kernel load with INVALID_ARGUMENT) sets its policy:
// "measure" (the default), "streaming" or "blas" (always that kernel: reproducible results from run
// to run; the two kernels add in different orders, so their results may differ in the last bits).
//
// Thread-safety: Choose may be called from any thread at once.
//
//   SgemmChooser chooser(&StreamingOverwrite, &BlasOverwrite, SgemmPolicy::kMeasure);
//   if (chooser.Choose(m, n, k) == SgemmKernel::kStreaming) { ... }

#include <atomic>
#include <cstdint>
#include <mutex>
#include <tuple>

#include "absl/base/thread_annotations.h"
#include "absl/container/node_hash_map.h"
#include "absl/status/statusor.h"

namespace tessera::cpu {

enum class SgemmKernel { kStreaming, kBlas };

enum class SgemmPolicy { kMeasure, kStreaming, kBlas };

// C = A @ B, row-major, packed (lda = k, ldb = ldc = n), C not read.
using SgemmKernelFn = void (*)(int64_t m, int64_t n, int64_t k, const float* a, const float* b,
                               float* c);

class SgemmChooser {
 public:
  static constexpr int64_t kMaxMeasuredDim = 2048;
  static constexpr int kRounds = 3;
  static constexpr double kBlasMargin = 0.8;

  SgemmChooser(SgemmKernelFn streaming, SgemmKernelFn blas, SgemmPolicy policy);

  // The kernel for C (m x n) = A (m x k) @ B (k x n); sizes positive.
  SgemmKernel Choose(int64_t m, int64_t n, int64_t k);

  // How many shape classes have a choice (tests).
  int shape_classes() const;

 private:
  using ShapeClass = std::tuple<int, int, int>;  // log2 of m, n, k rounded up
  struct Choice {
    std::once_flag once;
    SgemmKernel kernel = SgemmKernel::kStreaming;
  };

  SgemmKernel Measure(int64_t m, int64_t n, int64_t k) const;

  // Tells choosers apart in each thread's cache of its last answer (an address may be reused).
  static std::atomic<uint64_t> next_id_;
  const uint64_t id_;
  const SgemmKernelFn streaming_;
  const SgemmKernelFn blas_;
  const SgemmPolicy policy_;
  // std::mutex and std::call_once, not Abseil's: ThreadSanitizer sees these (Debian's Abseil
  // is not built with its annotations).
  mutable std::mutex mu_;
  absl::node_hash_map<ShapeClass, Choice> choices_ ABSL_GUARDED_BY(mu_);
};

// The policy TESSERA_CPU_SGEMM names: unset or empty (nullptr, "") or "measure", "streaming",
// "blas"; INVALID_ARGUMENT naming the variable and the text otherwise.
absl::StatusOr<SgemmPolicy> SgemmPolicyFromText(const char* text);

}  // namespace tessera::cpu

#endif  // TESSERA_BACKENDS_CPU_SGEMM_CHOICE_H_
