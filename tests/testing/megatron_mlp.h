// tests/testing/megatron_mlp.h: the Megatron MLP program that the program tests run, its reference
// result, and the random data they feed it.
//
// kMegatron computes y = relu(x @ w1) @ w2 on a mesh of 4 devices, x f32[4x12] replicated, w1
// f32[12x16] column-sharded and w2 f32[16x8] row-sharded: two matmul kernels per device and one
// all-reduce of f32[4x8] between them. MegatronReference computes the same in double.
//
// Header-only; everything here is a constant or a pure function (thread-safe).

#ifndef TESSERA_TESTS_TESTING_MEGATRON_MLP_H_
#define TESSERA_TESTS_TESTING_MEGATRON_MLP_H_

#include <algorithm>
#include <cstdint>
#include <vector>

#include "tests/testing/random_floats.h"

namespace tessera::testing {

// y = relu(x @ w1) @ w2 with w1 column- and w2 row-sharded: an all-reduce of f32[4x8].
inline constexpr char kMegatron[] = R"mlir(
func.func @main(%x: tensor<4x12xf32> {tessera.sharding = "mesh{x=4} P()"},
                %w1: tensor<12x16xf32> {tessera.sharding = "mesh{x=4} P(None,x)"},
                %w2: tensor<16x8xf32> {tessera.sharding = "mesh{x=4} P(x,None)"})
    -> (tensor<4x8xf32> {tessera.sharding = "mesh{x=4} P()"}) {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<4x16xf32>
  %a1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4x16xf32>) -> tensor<4x16xf32>
  %h = linalg.matmul ins(%x, %w1 : tensor<4x12xf32>, tensor<12x16xf32>)
                     outs(%a1 : tensor<4x16xf32>) -> tensor<4x16xf32>
  %r = linalg.map { arith.maximumf } ins(%h, %a1 : tensor<4x16xf32>, tensor<4x16xf32>)
                     outs(%e1 : tensor<4x16xf32>)
  %e2 = tensor.empty() : tensor<4x8xf32>
  %a2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = linalg.matmul ins(%r, %w2 : tensor<4x16xf32>, tensor<16x8xf32>)
                     outs(%a2 : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
)mlir";

// kMegatron's result for x f32[4x12], w1 f32[12x16], w2 f32[16x8] (row-major), in double.
inline std::vector<float> MegatronReference(const std::vector<float>& x,
                                            const std::vector<float>& w1,
                                            const std::vector<float>& w2) {
  std::vector<double> h(4 * 16, 0.0);
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 16; ++j) {
      for (int k = 0; k < 12; ++k) h[i * 16 + j] += double{x[i * 12 + k]} * w1[k * 16 + j];
      h[i * 16 + j] = std::max(h[i * 16 + j], 0.0);
    }
  }
  std::vector<float> y(4 * 8);
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 8; ++j) {
      double sum = 0;
      for (int k = 0; k < 16; ++k) sum += h[i * 16 + k] * w2[k * 8 + j];
      y[i * 8 + j] = static_cast<float>(sum);
    }
  }
  return y;
}

}  // namespace tessera::testing

#endif  // TESSERA_TESTS_TESTING_MEGATRON_MLP_H_
