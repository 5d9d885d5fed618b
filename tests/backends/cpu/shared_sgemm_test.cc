// SharedStreamingSgemm (backends/cpu/shared_sgemm.h): bit-identical to one StreamingSgemm /
// StreamingSgemmOverwrite call of the whole product while helper threads take some of its blocks,
// over shapes around its panels (64 columns), its bands of rows (multiples of 6) and the kernel's
// K block (512), with padded leading dimensions; the columns and rows outside C untouched.

#include "backends/cpu/shared_sgemm.h"

#include <atomic>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cpu/shared_blocks.h"
#include "backends/cpu/streaming_sgemm.h"
#include "gtest/gtest.h"
#include "tests/backends/cpu/gemm_cases.h"
#include "tests/testing/random_floats.h"

namespace tessera::cpu {
namespace {

using ::tessera::testing::Random;
using testing::GemmCase;

// Threads calling HelpSharedBlocks for the test's lifetime, as idle device threads do.
class Helpers {
 public:
  explicit Helpers(int count) {
    for (int i = 0; i < count; ++i) {
      threads_.emplace_back([this] {
        while (!done_.load()) {
          if (!HelpSharedBlocks([] { return false; })) std::this_thread::yield();
        }
      });
    }
  }
  ~Helpers() {
    done_ = true;
    for (std::thread& t : threads_) t.join();
  }

 private:
  std::atomic<bool> done_{false};
  std::vector<std::thread> threads_;
};

class SharedStreamingSgemmTest : public ::testing::TestWithParam<GemmCase> {};

TEST_P(SharedStreamingSgemmTest, BitIdenticalToTheWholeProductWhileHelped) {
  if (!StreamingSgemmSupported()) GTEST_SKIP() << "this CPU has no AVX-512F";
  const auto [m, n, k, pad] = GetParam();
  const int64_t lda = k + pad, ldb = n + pad, ldc = n + pad;
  const uint32_t seed = static_cast<uint32_t>(m * 1000003 + n * 1009 + k);
  SCOPED_TRACE(absl::StrCat("seed ", seed));
  const std::vector<float> a = Random(m * lda, seed), b = Random(k * ldb, seed + 1);
  const std::vector<float> c0 = Random(m * ldc, seed + 2);
  Helpers helpers(2);
  for (bool accumulate : {true, false}) {
    SCOPED_TRACE(accumulate ? "C += A @ B" : "C = A @ B");
    std::vector<float> want = c0, got = c0;
    (accumulate ? StreamingSgemm : StreamingSgemmOverwrite)(m, n, k, a.data(), lda, b.data(), ldb,
                                                            want.data(), ldc);
    SharedStreamingSgemm(m, n, k, a.data(), lda, b.data(), ldb, got.data(), ldc, accumulate);
    for (int64_t i = 0; i < m; ++i) {
      // Bit-exact, padding columns included (untouched by both).
      ASSERT_EQ(std::memcmp(&got[i * ldc], &want[i * ldc], ldc * sizeof(float)), 0) << "row " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, SharedStreamingSgemmTest,
                         ::testing::Values(GemmCase{1, 1, 1, 0}, GemmCase{5, 63, 7, 3},
                                           GemmCase{7, 65, 513, 1}, GemmCase{32, 2048, 256, 0},
                                           GemmCase{66, 130, 1024, 5}, GemmCase{255, 64, 2048, 0},
                                           GemmCase{256, 256, 2048, 0}, GemmCase{256, 200, 600, 2},
                                           GemmCase{97, 2048, 300, 0}));

// A product large enough to be shared (16 blocks of 256x64x2048) does get blocks run by helpers,
// so the cases above test helped blocks and not only the owner's.
TEST(SharedStreamingSgemmHelpersTest, ALargeProductIsHelped) {
  if (!StreamingSgemmSupported()) GTEST_SKIP() << "this CPU has no AVX-512F";
  const int64_t m = 256, n = 1024, k = 2048;
  const std::vector<float> a = Random(m * k, 7), b = Random(k * n, 8);
  std::vector<float> c(m * n);
  const int64_t before = HelpedBlocks();
  Helpers helpers(2);
  for (int round = 0; round < 5 && HelpedBlocks() == before; ++round) {
    SharedStreamingSgemm(m, n, k, a.data(), k, b.data(), n, c.data(), n, /*accumulate=*/false);
  }
  EXPECT_GT(HelpedBlocks(), before);
}

}  // namespace
}  // namespace tessera::cpu
