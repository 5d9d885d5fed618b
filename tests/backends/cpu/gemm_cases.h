#ifndef TESSERA_TESTS_BACKENDS_CPU_GEMM_CASES_H_
#define TESSERA_TESTS_BACKENDS_CPU_GEMM_CASES_H_

// What the f32 matmul kernels' tests share: a product's sizes with the padding of its leading
// dimensions, and reproducible operands (a fixed seed, printed by the tests that use one).

#include <cstdint>
#include <random>
#include <vector>

namespace tessera::cpu::testing {

struct GemmCase {
  int64_t m, n, k;
  int64_t pad;  // added to each leading dimension
};

// `count` values uniform in [-1, 1) from std::mt19937(seed).
inline std::vector<float> RandomFloats(int64_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(count);
  for (float& x : v) x = dist(rng);
  return v;
}

}  // namespace tessera::cpu::testing

#endif  // TESSERA_TESTS_BACKENDS_CPU_GEMM_CASES_H_
