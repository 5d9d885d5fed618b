#include "backends/cpu/streaming_sgemm.h"

#include <algorithm>
#include <cstdint>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define TESSERA_STREAMING_SGEMM_X86 1
#include <immintrin.h>
#endif

namespace tessera::cpu {

#ifdef TESSERA_STREAMING_SGEMM_X86
namespace {

// Rows of B per K block: a 64-wide panel of 512 rows (128 KiB) stays in L2 while the tiles of rows
// of A take their turns on it.
constexpr int64_t kBlockK = 512;
// How many rows ahead the first tile of rows prefetches B (found by a sweep: 16-32 were best).
constexpr int64_t kPrefetchRows = 24;

#define TESSERA_AVX512 __attribute__((target("avx512f")))

// The 16 lanes of a vector of C's columns that exist: all but in the last vector of a tail panel.
TESSERA_AVX512 inline __m512 Load(const float* p, __mmask16 mask, bool masked) {
  return masked ? _mm512_maskz_loadu_ps(mask, p) : _mm512_loadu_ps(p);
}

// One step of the K loop: acc[MR x 16*NV] += A[:, p] (x) B[p, :].
template <int MR, int NV>
TESSERA_AVX512 inline void Step(__m512 (&acc)[MR][NV], int64_t p, const float* a, int64_t lda,
                                const float* b, int64_t ldb, __mmask16 mask) {
  __m512 row[NV];
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) row[v] = Load(b + p * ldb + 16 * v, mask, v == NV - 1);
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) {
    const __m512 x = _mm512_set1_ps(a[i * lda + p]);
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[i][v] = _mm512_fmadd_ps(x, row[v], acc[i][v]);
  }
}

// C[MR x 16*NV] += A[MR x kc] @ B[kc x 16*NV] (with `load_c` false: C = A @ B, C not read); the
// last vector of each row holds the lanes in `mask`. The first `prefetched` steps of the K loop
// also prefetch B `kPrefetchRows` rows ahead.
template <int MR, int NV>
TESSERA_AVX512 void Tile(int64_t kc, int64_t prefetched, const float* a, int64_t lda,
                         const float* b, int64_t ldb, float* c, int64_t ldc, __mmask16 mask,
                         bool load_c) {
  __m512 acc[MR][NV];
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      acc[i][v] = load_c ? Load(c + i * ldc + 16 * v, mask, v == NV - 1) : _mm512_setzero_ps();
    }
  }
  int64_t p = 0;
  for (; p < prefetched; ++p) {
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      _mm_prefetch(reinterpret_cast<const char*>(b + (p + kPrefetchRows) * ldb + 16 * v),
                   _MM_HINT_T0);
    }
    Step<MR, NV>(acc, p, a, lda, b, ldb, mask);
  }
  for (; p < kc; ++p) Step<MR, NV>(acc, p, a, lda, b, ldb, mask);
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      if (v == NV - 1) {
        _mm512_mask_storeu_ps(c + i * ldc + 16 * v, mask, acc[i][v]);
      } else {
        _mm512_storeu_ps(c + i * ldc + 16 * v, acc[i][v]);
      }
    }
  }
}

// Tile<rows, NV> for the tail of rows < MR rows.
template <int MR, int NV>
TESSERA_AVX512 void TailTile(int64_t rows, int64_t kc, int64_t prefetched, const float* a,
                             int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc,
                             __mmask16 mask, bool load_c) {
  if constexpr (MR > 1) {
    if (rows == MR - 1) {
      return Tile<MR - 1, NV>(kc, prefetched, a, lda, b, ldb, c, ldc, mask, load_c);
    }
    return TailTile<MR - 1, NV>(rows, kc, prefetched, a, lda, b, ldb, c, ldc, mask, load_c);
  }
}

// All m rows of one panel of 16*NV columns over one K block: tiles of MR rows, the first of which
// prefetches the panel's next rows of B (`rows_after` rows of B follow this block's first).
template <int MR, int NV>
TESSERA_AVX512 void Panel(int64_t m, int64_t kc, int64_t rows_after, const float* a, int64_t lda,
                          const float* b, int64_t ldb, float* c, int64_t ldc, __mmask16 mask,
                          bool load_c) {
  const int64_t prefetched = std::clamp<int64_t>(rows_after - kPrefetchRows, 0, kc);
  int64_t i = 0;
  for (; i + MR <= m; i += MR) {
    Tile<MR, NV>(kc, i == 0 ? prefetched : 0, a + i * lda, lda, b, ldb, c + i * ldc, ldc, mask,
                 load_c);
  }
  if (i < m) {
    TailTile<MR, NV>(m - i, kc, i == 0 ? prefetched : 0, a + i * lda, lda, b, ldb, c + i * ldc, ldc,
                     mask, load_c);
  }
}

// C += A @ B, or with `accumulate` false C = A @ B (the first K block does not read C).
TESSERA_AVX512 void StreamingSgemmAvx512(int64_t m, int64_t n, int64_t k, const float* a,
                                         int64_t lda, const float* b, int64_t ldb, float* c,
                                         int64_t ldc, bool accumulate) {
  for (int64_t k0 = 0; k0 < k; k0 += kBlockK) {
    const int64_t kc = std::min(kBlockK, k - k0);
    const float* a_block = a + k0;
    const float* b_block = b + k0 * ldb;
    const bool load_c = accumulate || k0 > 0;
    int64_t j = 0;
    // Panels of 64 columns: 6x64 tiles, 24 accumulators.
    for (; j + 64 <= n; j += 64) {
      Panel<6, 4>(m, kc, k - k0, a_block, lda, b_block + j, ldb, c + j, ldc, 0xFFFF, load_c);
    }
    // The remaining columns, 16 at a time (the last masked): 8x16 tiles.
    for (; j < n; j += 16) {
      const int64_t width = std::min<int64_t>(16, n - j);
      const auto mask = static_cast<__mmask16>((1u << width) - 1);
      Panel<8, 1>(m, kc, k - k0, a_block, lda, b_block + j, ldb, c + j, ldc, mask, load_c);
    }
  }
}

#undef TESSERA_AVX512

}  // namespace

bool StreamingSgemmSupported() {
  static const bool supported = __builtin_cpu_supports("avx512f");
  return supported;
}

void StreamingSgemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
                    int64_t ldb, float* c, int64_t ldc) {
  StreamingSgemmAvx512(m, n, k, a, lda, b, ldb, c, ldc, /*accumulate=*/true);
}

void StreamingSgemmOverwrite(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                             const float* b, int64_t ldb, float* c, int64_t ldc) {
  StreamingSgemmAvx512(m, n, k, a, lda, b, ldb, c, ldc, /*accumulate=*/false);
}

#else  // not x86-64

bool StreamingSgemmSupported() { return false; }

void StreamingSgemm(int64_t, int64_t, int64_t, const float*, int64_t, const float*, int64_t, float*,
                    int64_t) {}

void StreamingSgemmOverwrite(int64_t, int64_t, int64_t, const float*, int64_t, const float*,
                             int64_t, float*, int64_t) {}

#endif

bool StreamingSgemmUsable(int64_t m, int64_t n, int64_t k) {
  return m > 0 && n > 0 && k > 0 && m <= kStreamingSgemmMaxRows && StreamingSgemmSupported();
}

}  // namespace tessera::cpu
