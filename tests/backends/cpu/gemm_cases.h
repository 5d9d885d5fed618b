#ifndef TESSERA_TESTS_BACKENDS_CPU_GEMM_CASES_H_
#define TESSERA_TESTS_BACKENDS_CPU_GEMM_CASES_H_

// What the f32 matmul kernels' tests share: a product's sizes with the padding of its leading
// dimensions (their operands: tests/testing/random_floats.h).

#include <cstdint>

namespace tessera::cpu::testing {

struct GemmCase {
  int64_t m, n, k;
  int64_t pad;  // added to each leading dimension
};

}  // namespace tessera::cpu::testing

#endif  // TESSERA_TESTS_BACKENDS_CPU_GEMM_CASES_H_
