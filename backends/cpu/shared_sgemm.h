#ifndef TESSERA_BACKENDS_CPU_SHARED_SGEMM_H_
#define TESSERA_BACKENDS_CPU_SHARED_SGEMM_H_

// SharedStreamingSgemm: the streaming sgemm (streaming_sgemm.h) cut into blocks that the CPU
// devices' idle threads may take (shared_blocks.h): panels of 64 columns, each cut into bands of
// rows (multiples of 6, the kernel's tile height) of about 16 MFLOP, about 0.2 ms on one core.
//
// Results: bit-identical to one StreamingSgemm (accumulate) or StreamingSgemmOverwrite call of the
// whole product, whichever threads run the blocks: each element of C is its initial value
// (+0.0 when overwriting) followed by one fused multiply-add per k in k order, whatever the
// blocking (streaming_sgemm.h).
//
// Thread-safety: as StreamingSgemm; returns once every block has run.

#include <cstdint>

namespace tessera::cpu {

// C (+)= A @ B, row-major, leading dimensions in elements. Precondition: StreamingSgemmUsable(m, n,
// k); the buffers hold the rows they describe and C overlaps neither A nor B.
void SharedStreamingSgemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                          const float* b, int64_t ldb, float* c, int64_t ldc, bool accumulate);

}  // namespace tessera::cpu

#endif  // TESSERA_BACKENDS_CPU_SHARED_SGEMM_H_
