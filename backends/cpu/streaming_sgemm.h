#ifndef TESSERA_BACKENDS_CPU_STREAMING_SGEMM_H_
#define TESSERA_BACKENDS_CPU_STREAMING_SGEMM_H_

// StreamingSgemm: C += A @ B in f32 for few rows of A (a row-sharded batch: 32 rows per device in
// the 256-row MLP over 8 devices; the 256-row batch of the Megatron MLP's per-device matmuls),
// reading B straight from its buffer instead of packing it first. StreamingSgemmOverwrite: C = A @
// B (a matmul into a zero fill), without reading C or a pass to zero it first.
//
// Why: a BLAS packs B (K x N) into a scratch buffer on every call, then computes on the packed
// copy. With few rows, the packing (one pass over all of B, from memory: a replicated 2048x2048
// weight is 16 MiB per device) costs as much as the arithmetic; OpenBLAS 0.3.21 spent as long in
// sgemm_itcopy as in sgemm_kernel for 32x2048x2048. Here each 6x64 tile of C stays in 24 AVX-512
// registers while the K loop streams 64-wide rows of B (software-prefetched 24 rows ahead by the
// first tile of rows; the following tiles find them in L2) and broadcasts elements of A: memory
// traffic overlaps the arithmetic, and no byte of B is copied.
//
// Results: each C[i][j] is its initial value (+0.0 for StreamingSgemmOverwrite) followed by one
// fused multiply-add per k, in k order (0 .. K-1), whatever the blocking: bit-identical to that
// sequential std::fma loop (and so Overwrite to a zero fill followed by StreamingSgemm).
//
// Thread-safety: pure functions of their arguments; calls on disjoint C may run at once.
//
//   if (StreamingSgemmUsable(m, n, k)) {
//     StreamingSgemm(m, n, k, a, lda, b, ldb, c, ldc);  // row-major, C += A @ B
//   }

#include <cstdint>

namespace tessera::cpu {

// At most this many rows may take the streaming path (the kernel loader then chooses between it
// and OpenBLAS by timing both on the machine: sgemm_choice.h). Measured on a 2-core AMD EPYC
// (Zen 5, AVX-512), one thread, against OpenBLAS 0.3.21's Cooper Lake kernels: 32x2048x2048 2.0-2.3
// ms against 2.6-2.8 ms, 128x2048x2048 4.8-5.0 against 5.8-5.9 ms, 256x2048x256 1.13
// against 1.16-1.30 ms, 256x256x2048 1.10 against 1.18-1.19 ms.
inline constexpr int64_t kStreamingSgemmMaxRows = 256;

// Whether this CPU can run the streaming kernel (x86-64 with AVX-512F); false elsewhere.
bool StreamingSgemmSupported();

// Whether StreamingSgemm should take C (m x n) += A (m x k) @ B (k x n): the CPU supports it,
// every size is positive and m <= kStreamingSgemmMaxRows.
bool StreamingSgemmUsable(int64_t m, int64_t n, int64_t k);

// C += A @ B, row-major with leading dimensions lda >= k, ldb >= n, ldc >= n (elements).
// Precondition: StreamingSgemmUsable(m, n, k); the buffers hold the rows they describe and C does
// not overlap A or B.
void StreamingSgemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
                    int64_t ldb, float* c, int64_t ldc);

// C = A @ B, same layout and precondition; C's previous contents are not read.
void StreamingSgemmOverwrite(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                             const float* b, int64_t ldb, float* c, int64_t ldc);

}  // namespace tessera::cpu

#endif  // TESSERA_BACKENDS_CPU_STREAMING_SGEMM_H_
