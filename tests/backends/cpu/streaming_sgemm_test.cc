// StreamingSgemm (backends/cpu/streaming_sgemm.h): C += A @ B bit-identical to one fused
// multiply-add per k in k order (StreamingSgemmOverwrite: the same from +0.0, C never read), over
// the tile shapes' edges (rows around the 6- and 8-row tiles, columns around the 64- and 16-wide
// panels, K around the 512-row block), with padded leading dimensions; and which sizes take the
// streaming path.

#include "backends/cpu/streaming_sgemm.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/backends/cpu/gemm_cases.h"
#include "tests/testing/random_floats.h"

namespace tessera::cpu {
namespace {

using ::tessera::testing::Random;
using testing::GemmCase;

class StreamingSgemmTest : public ::testing::TestWithParam<GemmCase> {};

TEST_P(StreamingSgemmTest, BitIdenticalToSequentialFma) {
  if (!StreamingSgemmSupported()) GTEST_SKIP() << "this CPU has no AVX-512F";
  const auto [m, n, k, pad] = GetParam();
  const int64_t lda = k + pad, ldb = n + pad, ldc = n + pad;
  const std::vector<float> a = Random(m * lda, 1), b = Random(k * ldb, 2);
  std::vector<float> c = Random(m * ldc, 3);
  std::vector<float> want = c;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      float sum = want[i * ldc + j];
      for (int64_t p = 0; p < k; ++p) sum = std::fma(a[i * lda + p], b[p * ldb + j], sum);
      want[i * ldc + j] = sum;
    }
  }
  ASSERT_TRUE(StreamingSgemmUsable(m, n, k));
  StreamingSgemm(m, n, k, a.data(), lda, b.data(), ldb, c.data(), ldc);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < ldc; ++j) {
      // Bit-exact inside C; the padding columns are untouched (still the seed-3 values).
      ASSERT_EQ(c[i * ldc + j], want[i * ldc + j]) << "C[" << i << "][" << j << "]";
    }
  }
}

TEST_P(StreamingSgemmTest, OverwriteIsBitIdenticalToAZeroFillThenSequentialFma) {
  if (!StreamingSgemmSupported()) GTEST_SKIP() << "this CPU has no AVX-512F";
  const auto [m, n, k, pad] = GetParam();
  const int64_t lda = k + pad, ldb = n + pad, ldc = n + pad;
  const std::vector<float> a = Random(m * lda, 4), b = Random(k * ldb, 5);
  // C's previous contents (NaN inside, seed-6 values in the padding) must not be read.
  std::vector<float> c = Random(m * ldc, 6);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = std::nanf("");
  }
  std::vector<float> want = Random(m * ldc, 6);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      float sum = 0.0f;
      for (int64_t p = 0; p < k; ++p) sum = std::fma(a[i * lda + p], b[p * ldb + j], sum);
      want[i * ldc + j] = sum;
    }
  }
  ASSERT_TRUE(StreamingSgemmUsable(m, n, k));
  StreamingSgemmOverwrite(m, n, k, a.data(), lda, b.data(), ldb, c.data(), ldc);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < ldc; ++j) {
      ASSERT_EQ(std::bit_cast<uint32_t>(c[i * ldc + j]), std::bit_cast<uint32_t>(want[i * ldc + j]))
          << "C[" << i << "][" << j << "]";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, StreamingSgemmTest,
                         ::testing::Values(GemmCase{1, 1, 1, 0}, GemmCase{1, 64, 1, 0},
                                           GemmCase{5, 17, 7, 0}, GemmCase{6, 64, 24, 0},
                                           GemmCase{7, 65, 25, 3}, GemmCase{8, 16, 512, 0},
                                           GemmCase{13, 130, 513, 1}, GemmCase{32, 192, 1100, 0},
                                           GemmCase{3, 15, 40, 16}, GemmCase{128, 80, 33, 0},
                                           GemmCase{256, 70, 1030, 2}),
                         [](const ::testing::TestParamInfo<GemmCase>& info) {
                           const GemmCase& c = info.param;
                           return absl::StrCat("m", c.m, "n", c.n, "k", c.k, "pad", c.pad);
                         });

TEST(StreamingSgemmUsableTest, FewRowsAndNoEmptyDimension) {
  if (!StreamingSgemmSupported()) {
    EXPECT_FALSE(StreamingSgemmUsable(32, 2048, 2048));
    GTEST_SKIP() << "this CPU has no AVX-512F";
  }
  EXPECT_TRUE(StreamingSgemmUsable(1, 1, 1));
  EXPECT_TRUE(StreamingSgemmUsable(32, 2048, 2048));
  EXPECT_TRUE(StreamingSgemmUsable(kStreamingSgemmMaxRows, 7, 7));
  EXPECT_FALSE(StreamingSgemmUsable(kStreamingSgemmMaxRows + 1, 7, 7));
  EXPECT_FALSE(StreamingSgemmUsable(0, 7, 7));
  EXPECT_FALSE(StreamingSgemmUsable(7, 0, 7));
  EXPECT_FALSE(StreamingSgemmUsable(7, 7, 0));
}

}  // namespace
}  // namespace tessera::cpu
