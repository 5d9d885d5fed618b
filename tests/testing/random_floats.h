#ifndef TESSERA_TESTS_TESTING_RANDOM_FLOATS_H_
#define TESSERA_TESTS_TESTING_RANDOM_FLOATS_H_

// Reproducible test operands: floats from a fixed seed (tests print the seed they use).

#include <cstdint>
#include <random>
#include <vector>

namespace tessera::testing {

// `n` floats uniform in [-1, 1), the same for the same seed.
inline std::vector<float> Random(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

}  // namespace tessera::testing

#endif  // TESSERA_TESTS_TESTING_RANDOM_FLOATS_H_
