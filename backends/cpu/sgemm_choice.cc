#include "backends/cpu/sgemm_choice.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstdint>
#include <memory>
#include <new>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace tessera::cpu {
namespace {

int CeilLog2(int64_t v) { return std::bit_width(static_cast<uint64_t>(v - 1)); }

// The seconds one call of `kernel` takes.
double Seconds(SgemmKernelFn kernel, int64_t m, int64_t n, int64_t k, const float* a,
               const float* b, float* c) {
  const auto start = std::chrono::steady_clock::now();
  kernel(m, n, k, a, b, c);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

std::atomic<uint64_t> SgemmChooser::next_id_{0};

absl::StatusOr<SgemmPolicy> SgemmPolicyFromText(const char* text) {
  const std::string_view policy = text == nullptr ? "" : text;
  if (policy.empty() || policy == "measure") return SgemmPolicy::kMeasure;
  if (policy == "streaming") return SgemmPolicy::kStreaming;
  if (policy == "blas") return SgemmPolicy::kBlas;
  return absl::InvalidArgumentError(
      absl::StrCat("TESSERA_CPU_SGEMM must be \"measure\", \"streaming\" or \"blas\", got \"",
                   std::string(policy), "\""));
}

SgemmChooser::SgemmChooser(SgemmKernelFn streaming, SgemmKernelFn blas, SgemmPolicy policy)
    : id_(next_id_.fetch_add(1) + 1), streaming_(streaming), blas_(blas), policy_(policy) {}

SgemmKernel SgemmChooser::Choose(int64_t m, int64_t n, int64_t k) {
  if (policy_ == SgemmPolicy::kStreaming) return SgemmKernel::kStreaming;
  if (policy_ == SgemmPolicy::kBlas) return SgemmKernel::kBlas;
  const ShapeClass shape_class{CeilLog2(m), CeilLog2(n), CeilLog2(k)};
  // Each device thread asks again and again for its own shapes: its last answer, without a lock
  // (8 device threads on 2 cores would queue behind one preempted holder).
  struct LastChoice {
    uint64_t chooser = 0;
    ShapeClass shape_class;
    SgemmKernel kernel;
  };
  thread_local LastChoice last;
  if (last.chooser == id_ && last.shape_class == shape_class) return last.kernel;
  Choice* choice;
  {
    std::lock_guard<std::mutex> lock(mu_);
    choice = &choices_[shape_class];  // nodes are stable
  }
  std::call_once(choice->once, [&] { choice->kernel = Measure(m, n, k); });
  last = {id_, shape_class, choice->kernel};
  return choice->kernel;
}

int SgemmChooser::shape_classes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(choices_.size());
}

SgemmKernel SgemmChooser::Measure(int64_t m, int64_t n, int64_t k) const {
  n = std::min(n, kMaxMeasuredDim);
  k = std::min(k, kMaxMeasuredDim);
  m = std::min(m, kMaxMeasuredDim);
  // Inputs of small values (no denormals, no overflow); every page touched before timing. Where
  // the memory is not there, no measurement: the streaming kernel (the choice before measuring).
  std::unique_ptr<float[]> a(new (std::nothrow) float[m * k]);
  std::unique_ptr<float[]> b(new (std::nothrow) float[k * n]);
  std::unique_ptr<float[]> c(new (std::nothrow) float[m * n]);
  if (a == nullptr || b == nullptr || c == nullptr) return SgemmKernel::kStreaming;
  for (int64_t i = 0; i < m * k; ++i) a[i] = static_cast<float>(i % 7) * 0.125f - 0.375f;
  for (int64_t i = 0; i < k * n; ++i) b[i] = static_cast<float>(i % 5) * 0.25f - 0.5f;
  Seconds(streaming_, m, n, k, a.get(), b.get(), c.get());
  Seconds(blas_, m, n, k, a.get(), b.get(), c.get());
  double streaming = 1e30, blas = 1e30;
  for (int round = 0; round < kRounds; ++round) {
    streaming = std::min(streaming, Seconds(streaming_, m, n, k, a.get(), b.get(), c.get()));
    blas = std::min(blas, Seconds(blas_, m, n, k, a.get(), b.get(), c.get()));
  }
  return blas < kBlasMargin * streaming ? SgemmKernel::kBlas : SgemmKernel::kStreaming;
}

}  // namespace tessera::cpu
