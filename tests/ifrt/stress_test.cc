// Many threads on one CPU client: concurrent reshards, read-backs and
// deletions, and concurrent Make/Read/Delete. Meant to run clean under
// ThreadSanitizer (-DTESSERA_SANITIZE=thread).

// GCC 12 reports false -Wmaybe-uninitialized inside absl::InlinedVector moves
// (Shape, Index).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/ifrt/test_util.h"

namespace tessera {
namespace {

using ::tessera::testing::IsOk;
using ::tessera::testing::Pattern;
using ::tessera::testing::ReadBack;

constexpr int kThreads = 8;

// Collects the first few failures of worker threads.
class Failures {
 public:
  void Add(std::string what) {
    std::lock_guard<std::mutex> lock(mu_);
    ++count_;
    if (messages_.size() < 10) messages_.push_back(std::move(what));
  }
  void Check(const absl::Status& s, const std::string& what) {
    if (!s.ok()) Add(absl::StrCat(what, ": ", s.ToString()));
  }
  int count() const {
    std::lock_guard<std::mutex> lock(mu_);
    return count_;
  }
  std::string Summary() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::string out;
    for (const std::string& m : messages_) absl::StrAppend(&out, m, "\n");
    return out;
  }

 private:
  mutable std::mutex mu_;
  int count_ = 0;
  std::vector<std::string> messages_;
};

class StressTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::shared_ptr<Client>> c = CreateClient(
        {.cpu_devices = 4, .vulkan = VulkanMode::kOff, .transfer_guard = guard::Policy()});
    ASSERT_THAT(c, IsOk());
    client_ = *std::move(c);
  }
  DeviceListRef At(const std::vector<int>& p) { return testing::DevicesAt(*client_, p); }

  std::shared_ptr<Client> client_;
};

TEST_F(StressTest, ConcurrentReshardsReadsAndDeletes) {
  const Shape shape({24, 10});
  const int64_t bytes = 24 * 10 * 4;
  const std::vector<ShardingRef> shardings = {
      testing::ReplicatedSharding(At({0, 1, 2, 3}), shape),
      testing::RowSharding(At({0, 1, 2, 3})),
      testing::RowSharding(At({3, 1, 0, 2})),
      testing::Named("mesh{x=2,y=2}", "P(x,y)", At({2, 3, 0, 1})),
      testing::Named("mesh{x=2}", "P(None,x)", At({1, 2})),
      SingleDeviceSharding::Create(client_->devices()[3], MemoryKind()),
      testing::ParamSharding("2x1 to [0,1] on 2x2", At({0, 2, 1, 3})),
  };
  for (const ShardingRef& s : shardings) ASSERT_NE(s, nullptr);
  const std::vector<uint8_t> shared_data = Pattern(bytes, 999);
  absl::StatusOr<ArrayRef> shared =
      testing::MakeArray(*client_, shared_data, DType(DType::kS32), shape, shardings[0]);
  ASSERT_THAT(shared, IsOk());

  Failures failures;
  std::atomic<int64_t> iterations{0};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(1000);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 3 || std::chrono::steady_clock::now() < deadline; ++i) {
        const std::vector<uint8_t> data = Pattern(bytes, t * 1000 + i);
        const ShardingRef& from = shardings[(t + i) % shardings.size()];
        const ShardingRef& to = shardings[(t + 2 * i + 1) % shardings.size()];
        const auto sem = static_cast<ArrayCopySemantics>(i % 3);
        absl::StatusOr<ArrayRef> a =
            testing::MakeArray(*client_, data, DType(DType::kS32), shape, from);
        if (!a.ok()) {
          failures.Check(a.status(), "make");
          continue;
        }
        std::vector<ArrayRef> in = {*a};
        std::vector<ArraySpec> specs = {{DType(DType::kS32), shape, to}};
        absl::StatusOr<std::vector<ArrayRef>> out =
            client_->ReshardArrays(absl::MakeSpan(in), specs, sem);
        if (!out.ok()) {
          failures.Check(out.status(), "reshard");
          continue;
        }
        // Delete the input at once: the reshard in flight holds its buffers.
        static_cast<void>((*a)->Delete());
        in.clear();
        a->reset();
        absl::StatusOr<std::vector<uint8_t>> back = ReadBack((*out)[0]);
        failures.Check(back.status(), "read back");
        if (back.ok() && *back != data) failures.Add(absl::StrCat("thread ", t, ": wrong data"));

        // The shared array, resharded (aliasing or copying) and read by
        // everyone at once.
        std::vector<ArrayRef> shared_in = {*shared};
        std::vector<ArraySpec> shared_specs = {{DType(DType::kS32), shape, to}};
        absl::StatusOr<std::vector<ArrayRef>> view = client_->ReshardArrays(
            absl::MakeSpan(shared_in), shared_specs,
            i % 2 == 0 ? ArrayCopySemantics::kReuseInput : ArrayCopySemantics::kAlwaysCopy);
        failures.Check(view.status(), "reshard shared");
        if (view.ok()) {
          absl::StatusOr<std::vector<uint8_t>> v = ReadBack((*view)[0]);
          failures.Check(v.status(), "read shared view");
          if (v.ok() && *v != shared_data) failures.Add("shared view: wrong data");
          static_cast<void>((*view)[0]->Delete());
        }
        absl::StatusOr<std::vector<uint8_t>> s = ReadBack(*shared);
        failures.Check(s.status(), "read shared");
        if (s.ok() && *s != shared_data) failures.Add("shared: wrong data");
        failures.Check((*out)[0]->Delete().Await(), "delete");
        ++iterations;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures.count(), 0) << failures.Summary();
  EXPECT_GE(iterations.load(), 3 * kThreads);
  EXPECT_TRUE(*ReadBack(*shared) == shared_data);
}

TEST_F(StressTest, ManyThreadsMakeReadDelete) {
  const std::vector<ShardingRef> shardings = {
      testing::RowSharding(At({0, 1, 2, 3})),
      SingleDeviceSharding::Create(client_->devices()[1], MemoryKind()),
      testing::ReplicatedSharding(At({3, 2}), Shape({13, 7})),
  };
  Failures failures;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 40; ++i) {
        const ShardingRef& s = shardings[(t + i) % shardings.size()];
        const Shape shape = s->devices()->size() == 2 ? Shape({13, 7}) : Shape({16, 7});
        const std::vector<uint8_t> data = Pattern(shape.num_elements() * 4, t * 100 + i);
        const auto semantics = static_cast<HostBufferSemantics>(i % 3);
        auto calls = std::make_shared<std::atomic<int>>(0);
        absl::StatusOr<ArrayRef> a =
            client_->MakeArrayFromHostBuffer(data.data(), DType(DType::kF32), shape, std::nullopt,
                                             s, semantics, [calls] { ++*calls; });
        if (!a.ok()) {
          failures.Check(a.status(), "make");
          continue;
        }
        absl::StatusOr<std::vector<uint8_t>> back = ReadBack(*a);
        failures.Check(back.status(), "read back");
        if (back.ok() && *back != data) failures.Add("wrong data");
        failures.Check((*a)->Delete().Await(), "delete");
        if (!(*a)->IsDeleted()) failures.Add("not deleted");
        absl::StatusOr<std::vector<uint8_t>> after = ReadBack(*a);
        if (after.ok() || after.status().code() != absl::StatusCode::kFailedPrecondition) {
          failures.Add(absl::StrCat("read after delete: ", after.status().ToString()));
        }
        a->reset();
        // `data` dies at the end of this iteration: on_done must have run by
        // the time the array is gone and its transfer is over.
        for (int w = 0; w < 2000 && calls->load() == 0; ++w) {
          std::this_thread::sleep_for(std::chrono::microseconds(100));
        }
        if (calls->load() != 1) failures.Add(absl::StrCat("on_done ran ", calls->load(), " times"));
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures.count(), 0) << failures.Summary();
}

}  // namespace
}  // namespace tessera
