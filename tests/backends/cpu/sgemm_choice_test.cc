// SgemmChooser: the faster kernel is chosen, once per shape class, the same answer for every
// thread that asks at once, and TESSERA_CPU_SGEMM's policies are obeyed. The kernels are fakes
// whose speed the test sets (one does the same arithmetic eight times over), and which count their
// calls.

#include "backends/cpu/sgemm_choice.h"

#include <atomic>
#include <cstdint>
#include <string_view>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace tessera::cpu {
namespace {

std::atomic<int> fast_calls{0};
std::atomic<int> slow_calls{0};

// C = A @ B, `times` times over (the last pass's result kept).
void Matmul(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c, int times) {
  for (int t = 0; t < times; ++t) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        float sum = 0.0f;
        for (int64_t p = 0; p < k; ++p) sum += a[i * k + p] * b[p * n + j];
        c[i * n + j] = sum;
      }
    }
  }
}

void Fast(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c) {
  ++fast_calls;
  Matmul(m, n, k, a, b, c, 1);
}

void Slow(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c) {
  ++slow_calls;
  Matmul(m, n, k, a, b, c, 8);
}

class SgemmChooserTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fast_calls = 0;
    slow_calls = 0;
  }
};

TEST_F(SgemmChooserTest, ChoosesTheFasterKernelWhicheverItIs) {
  SgemmChooser blas_fast(&Slow, &Fast, SgemmPolicy::kMeasure);
  EXPECT_EQ(blas_fast.Choose(32, 64, 64), SgemmKernel::kBlas);
  SgemmChooser streaming_fast(&Fast, &Slow, SgemmPolicy::kMeasure);
  EXPECT_EQ(streaming_fast.Choose(32, 64, 64), SgemmKernel::kStreaming);
}

TEST_F(SgemmChooserTest, MeasuresOncePerShapeClass) {
  SgemmChooser chooser(&Slow, &Fast, SgemmPolicy::kMeasure);
  EXPECT_EQ(chooser.Choose(32, 64, 64), SgemmKernel::kBlas);
  const int calls = fast_calls + slow_calls;
  EXPECT_EQ(calls, 2 * (1 + SgemmChooser::kRounds));  // a warm-up and the rounds, each kernel
  // The same class (sizes rounded up to powers of two): no new measurement.
  EXPECT_EQ(chooser.Choose(17, 33, 50), SgemmKernel::kBlas);
  EXPECT_EQ(chooser.Choose(32, 64, 64), SgemmKernel::kBlas);
  EXPECT_EQ(fast_calls + slow_calls, calls);
  EXPECT_EQ(chooser.shape_classes(), 1);
  // Another class is measured for itself.
  chooser.Choose(8, 64, 64);
  EXPECT_EQ(fast_calls + slow_calls, 2 * calls);
  EXPECT_EQ(chooser.shape_classes(), 2);
}

TEST_F(SgemmChooserTest, ThreadsAskingAtOnceGetOneMeasurementAndOneAnswer) {
  SgemmChooser chooser(&Slow, &Fast, SgemmPolicy::kMeasure);
  constexpr int kThreads = 8;
  std::vector<SgemmKernel> answers(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] { answers[t] = chooser.Choose(16, 128, 128); });
  }
  for (std::thread& thread : threads) thread.join();
  for (SgemmKernel answer : answers) EXPECT_EQ(answer, SgemmKernel::kBlas);
  EXPECT_EQ(fast_calls + slow_calls, 2 * (1 + SgemmChooser::kRounds));
}

TEST_F(SgemmChooserTest, FixedPoliciesNeverMeasure) {
  SgemmChooser streaming(&Slow, &Fast, SgemmPolicy::kStreaming);
  EXPECT_EQ(streaming.Choose(32, 64, 64), SgemmKernel::kStreaming);
  SgemmChooser blas(&Fast, &Slow, SgemmPolicy::kBlas);
  EXPECT_EQ(blas.Choose(32, 64, 64), SgemmKernel::kBlas);
  EXPECT_EQ(fast_calls + slow_calls, 0);
}

TEST(SgemmPolicyTest, FromTheEnvironmentsText) {
  EXPECT_EQ(*SgemmPolicyFromText(nullptr), SgemmPolicy::kMeasure);
  EXPECT_EQ(*SgemmPolicyFromText(""), SgemmPolicy::kMeasure);
  EXPECT_EQ(*SgemmPolicyFromText("measure"), SgemmPolicy::kMeasure);
  EXPECT_EQ(*SgemmPolicyFromText("streaming"), SgemmPolicy::kStreaming);
  EXPECT_EQ(*SgemmPolicyFromText("blas"), SgemmPolicy::kBlas);
  absl::StatusOr<SgemmPolicy> typo = SgemmPolicyFromText("BLAS!");
  ASSERT_FALSE(typo.ok());
  EXPECT_EQ(typo.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(typo.status().message().find("TESSERA_CPU_SGEMM"), std::string_view::npos);
  EXPECT_NE(typo.status().message().find("\"BLAS!\""), std::string_view::npos);
}

}  // namespace
}  // namespace tessera::cpu
