// A soak: several threads run random operations (make, reshard, copy, remap, delete, donate, read
// back) on one client's shared pool of arrays for TESSERA_SOAK_SECONDS seconds (default 3), on 4
// CPU devices and on 2 CPU + 2 lavapipe devices. Threads race on the same arrays: an operation on
// an array another thread has just deleted or donated must fail with FAILED_PRECONDITION
// ("deleted"), and anything else must succeed. Every read-back is compared with the bytes the
// array must hold; afterwards every memory's BytesInUse is back to its baseline. Runs under
// ThreadSanitizer too (ctest label "tsan").

// GCC 12 reports false -Wmaybe-uninitialized inside absl::InlinedVector moves (Shape, Index).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/ifrt/test_util.h"
#include "tests/testing/vulkan_icds.h"

namespace tessera {
namespace {

using ::tessera::testing::IsOk;
using ::tessera::testing::Pattern;
using ::tessera::testing::ReadBack;
using ::tessera::testing::SliceBox;

constexpr DType kS32(DType::kS32);

double SoakSeconds() {
  const char* s = std::getenv("TESSERA_SOAK_SECONDS");
  if (s == nullptr || *s == '\0') return 3.0;
  return std::atof(s);
}

struct SoakTopology {
  std::string name;
  int cpu_devices;
  VulkanMode vulkan;
};

void PrintTo(const SoakTopology& t, std::ostream* os) { *os << t.name; }

// One array of the pool and the bytes it must hold (row-major).
struct Entry {
  ArrayRef array;
  std::shared_ptr<const std::vector<uint8_t>> data;
  int row_devices = 0;  // > 0: rows split over that many devices (remappable)
};

class SoakTest : public ::testing::TestWithParam<SoakTopology> {
 protected:
  static constexpr int kThreads = 4;
  static constexpr size_t kPoolSize = 12;

  void SetUp() override {
    ::tessera::testing::SetVulkanIcdsIfUnset(TESSERA_IFRT_TEST_ICDS);
    const SoakTopology& t = GetParam();
#if defined(__SANITIZE_THREAD__)
    if (t.vulkan != VulkanMode::kOff) {
      // Run with lavapipe, TSan intermittently (about 1 run in 5) reports a read of an
      // absl::Status in a worker against the free of a JoinFutures state on a Vulkan completion
      // thread: the pattern of Debian's uninstrumented Abseil, whose Status refcount (in
      // libabsl_status) TSan cannot see. Not suppressed: confirming it needs an instrumented
      // Abseil. The Mixed soak runs in the plain and ASan builds.
      GTEST_SKIP() << "the Mixed soak is not run under ThreadSanitizer (uninstrumented Abseil "
                      "and lavapipe); it runs in the plain and ASan builds";
    }
#endif
    absl::StatusOr<std::shared_ptr<Client>> c = CreateClient({.cpu_devices = t.cpu_devices,
                                                              .cpu_threads_per_device = 1,
                                                              .vulkan = t.vulkan,
                                                              .transfer_guard = guard::Policy()});
    if (!c.ok()) GTEST_SKIP() << "cannot create a " << t.name << " client: " << c.status();
    client_ = *std::move(c);
    n_ = static_cast<int>(client_->devices().size());
    ASSERT_EQ(n_, 4);
    for (Device* d : client_->devices()) {
      for (Memory* m : d->Memories()) baseline_.push_back({m, m->BytesInUse()});
    }
    CompilePrograms();
  }

  // z = a + a over all the devices in rows, as given and donating its argument. Where this build
  // or topology runs no programs, the soak goes without them (and says so).
  void CompilePrograms() {
    const std::string t = "tensor<" + std::to_string(2 * n_) + "x6xi32>";
    const std::string attr =
        "{tessera.sharding = \"mesh{x=" + std::to_string(n_) + "} P(x,None)\"}";
    const std::string text = "func.func @main(%a: " + t + " " + attr + ") -> (" + t + " " + attr +
                             ") {\n  %z = arith.addi %a, %a : " + t + "\n  return %z : " + t +
                             "\n}";
    DeviceListRef all = Positions({0, 1, 2, 3});
    for (bool donate : {false, true}) {
      CompileOptions options{.devices = all};
      if (donate) options.donated_input_indices = {0};
      absl::StatusOr<LoadedExecutableRef> exe =
          client_->GetDefaultCompiler()->Compile(std::make_unique<MlirProgram>(text), options);
      if (!exe.ok()) {
        std::printf("soak %s: no programs (%s)\n", GetParam().name.c_str(),
                    exe.status().ToString().c_str());
        return;
      }
      (donate ? doubling_donated_ : doubling_) = *std::move(exe);
    }
  }

  Shape ArrayShape() const { return Shape({2 * n_, 6}); }
  int64_t ArrayBytes() const { return 2 * n_ * 6 * 4; }
  DeviceListRef Positions(std::vector<int> p) { return testing::DevicesAt(*client_, p); }

  // A random sharding of the array; *row_devices as in Entry.
  ShardingRef RandomSharding(std::mt19937& rng, int* row_devices) {
    const int start = static_cast<int>(rng() % n_);
    auto run = [&](int m) {
      std::vector<int> p;
      for (int i = 0; i < m; ++i) p.push_back((start + i) % n_);
      return Positions(p);
    };
    *row_devices = 0;
    switch (rng() % 5) {
      case 0:
        *row_devices = n_;
        return testing::RowSharding(run(n_));
      case 1:
        *row_devices = n_ / 2;
        return testing::RowSharding(run(n_ / 2));
      case 2:
        return testing::ReplicatedSharding(run(n_), ArrayShape());
      case 3:
        *row_devices = 1;
        return SingleDeviceSharding::Create(client_->devices()[start], MemoryKind());
      default:
        return testing::Named("mesh{x=2,y=2}", "P(x,None)", run(n_));
    }
  }

  // A random entry of the pool (a copy), or none.
  std::optional<Entry> Pick(std::mt19937& rng) {
    std::lock_guard<std::mutex> lock(mu_);
    if (pool_.empty()) return std::nullopt;
    return pool_[rng() % pool_.size()];
  }
  void Put(std::mt19937& rng, Entry e) {
    std::lock_guard<std::mutex> lock(mu_);
    if (pool_.size() < kPoolSize) {
      pool_.push_back(std::move(e));
    } else {
      pool_[rng() % pool_.size()] = std::move(e);
    }
  }
  void Remove(const ArrayRef& array) {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < pool_.size(); ++i) {
      if (pool_[i].array == array) {
        pool_.erase(pool_.begin() + i);
        return;
      }
    }
  }

  // OK, or the input was deleted or donated by another thread meanwhile.
  void ExpectOkOrDeleted(const absl::Status& s, const std::string& what) {
    if (s.ok()) return;
    if (s.code() == absl::StatusCode::kFailedPrecondition &&
        s.message().find("deleted") != std::string_view::npos) {
      raced_.fetch_add(1);
      return;
    }
    ADD_FAILURE() << what << ": " << s;
  }

  void Make(std::mt19937& rng);
  void Reshard(std::mt19937& rng);
  void Copy(std::mt19937& rng);
  void Remap(std::mt19937& rng);
  void Delete(std::mt19937& rng);
  void Read(std::mt19937& rng);
  void Execute(std::mt19937& rng);
  void Worker(uint32_t seed, std::chrono::steady_clock::time_point deadline);

  std::shared_ptr<Client> client_;
  int n_ = 0;
  std::vector<std::pair<Memory*, int64_t>> baseline_;
  std::mutex mu_;
  std::vector<Entry> pool_;
  LoadedExecutableRef doubling_, doubling_donated_;  // null: no programs here
  std::atomic<int64_t> operations_{0}, reads_{0}, raced_{0}, executions_{0};
};

void SoakTest::Make(std::mt19937& rng) {
  auto data = std::make_shared<const std::vector<uint8_t>>(Pattern(ArrayBytes(), rng()));
  Entry e{nullptr, data, 0};
  ShardingRef sharding = RandomSharding(rng, &e.row_devices);
  const HostBufferSemantics semantics = rng() % 2 == 0
                                            ? HostBufferSemantics::kImmutableOnlyDuringCall
                                            : HostBufferSemantics::kImmutableUntilTransferCompletes;
  // The data outlives the transfer: the callback holds it.
  absl::StatusOr<ArrayRef> a = client_->MakeArrayFromHostBuffer(
      data->data(), kS32, ArrayShape(), std::nullopt, sharding, semantics, [data] {});
  ASSERT_THAT(a, IsOk());
  e.array = *a;
  Put(rng, std::move(e));
}

void SoakTest::Reshard(std::mt19937& rng) {
  std::optional<Entry> in = Pick(rng);
  if (!in.has_value()) return;
  Entry out{nullptr, in->data, 0};
  std::vector<ArraySpec> specs = {{kS32, ArrayShape(), RandomSharding(rng, &out.row_devices)}};
  const ArrayCopySemantics semantics = static_cast<ArrayCopySemantics>(rng() % 3);
  std::vector<ArrayRef> arrays = {in->array};
  absl::StatusOr<std::vector<ArrayRef>> r =
      client_->ReshardArrays(absl::MakeSpan(arrays), specs, semantics);
  ExpectOkOrDeleted(r.status(), "ReshardArrays");
  if (!r.ok()) return;
  if (semantics == ArrayCopySemantics::kDonateInput) Remove(in->array);
  out.array = (*r)[0];
  Put(rng, std::move(out));
}

void SoakTest::Copy(std::mt19937& rng) {
  std::optional<Entry> in = Pick(rng);
  if (!in.has_value()) return;
  // The same number of devices, starting elsewhere.
  const int m = in->array->sharding().devices()->size();
  const int start = static_cast<int>(rng() % n_);
  std::vector<int> p;
  for (int i = 0; i < m; ++i) p.push_back((start + i) % n_);
  std::vector<ArrayRef> arrays = {in->array};
  const ArrayCopySemantics semantics = static_cast<ArrayCopySemantics>(rng() % 3);
  absl::StatusOr<std::vector<ArrayRef>> r =
      client_->CopyArrays(absl::MakeSpan(arrays), Positions(p), std::nullopt, semantics);
  ExpectOkOrDeleted(r.status(), "CopyArrays");
  if (!r.ok()) return;
  if (semantics == ArrayCopySemantics::kDonateInput) Remove(in->array);
  Put(rng, Entry{(*r)[0], in->data, in->row_devices});
}

void SoakTest::Remap(std::mt19937& rng) {
  std::optional<Entry> in = Pick(rng);
  if (!in.has_value() || in->row_devices == 0) return;
  // Shard j of an array whose rows are split over m devices, as a single-device array.
  const int m = in->row_devices;
  const int j = static_cast<int>(rng() % m);
  const int64_t rows = 2 * n_ / m;
  const Sharding& sharding = in->array->sharding();
  RemapPlan plan;
  plan.input_specs = {{kS32, ArrayShape(), in->array->shared_ptr_sharding()}};
  plan.output_specs = {
      {kS32, Shape({rows, 6}),
       SingleDeviceSharding::Create(sharding.devices()->devices()[j], sharding.memory_kind())}};
  plan.mappings = {{0, 0, {{j, j + 1, 1}}, {{0, 1, 1}}}};
  std::vector<ArrayRef> arrays = {in->array};
  absl::StatusOr<std::vector<ArrayRef>> r =
      client_->RemapArrays(plan, absl::MakeSpan(arrays), ArrayCopySemantics::kDonateInput);
  ExpectOkOrDeleted(r.status(), "RemapArrays");
  if (!r.ok()) return;
  Remove(in->array);
  auto slice = std::make_shared<const std::vector<uint8_t>>(
      SliceBox(*in->data, ArrayShape().dims(), 4, {j * rows, 0}, {rows, 6}));
  // A part is not in the pool (the pool holds whole arrays): read it back here.
  absl::StatusOr<std::vector<uint8_t>> back = ReadBack((*r)[0]);
  ASSERT_THAT(back, IsOk());
  EXPECT_TRUE(*back == *slice) << "remapped shard " << j << " of " << m << " differs";
  reads_.fetch_add(1);
}

void SoakTest::Delete(std::mt19937& rng) {
  std::optional<Entry> in = Pick(rng);
  if (!in.has_value()) return;
  Remove(in->array);
  ASSERT_THAT(in->array->Delete().Await(), IsOk());
}

void SoakTest::Read(std::mt19937& rng) {
  std::optional<Entry> in = Pick(rng);
  if (!in.has_value()) return;
  absl::StatusOr<std::vector<uint8_t>> back = ReadBack(in->array);
  ExpectOkOrDeleted(back.status(), "CopyToHostBuffer");
  if (!back.ok()) return;
  EXPECT_TRUE(*back == *in->data) << in->array->DebugString() << " reads back wrong bytes";
  reads_.fetch_add(1);
}

// Runs a + a on a random array (resharded first where it is not in rows over all devices, perhaps
// donated); the result joins the pool with its expected bytes: each s32 doubled, wrapping.
void SoakTest::Execute(std::mt19937& rng) {
  if (doubling_ == nullptr) return;
  std::optional<Entry> in = Pick(rng);
  if (!in.has_value()) return;
  const bool donate = rng() % 2 == 0;
  std::vector<ArrayRef> args = {in->array};
  absl::StatusOr<ExecuteResult> r =
      (donate ? doubling_donated_ : doubling_)->Execute(absl::MakeSpan(args));
  ExpectOkOrDeleted(r.status(), "Execute");
  if (!r.ok()) return;
  if (donate) Remove(in->array);
  ASSERT_THAT(r->status.Await(), IsOk());
  auto doubled = std::make_shared<std::vector<uint8_t>>(*in->data);
  for (size_t i = 0; i + 4 <= doubled->size(); i += 4) {
    uint32_t v;
    std::memcpy(&v, doubled->data() + i, 4);
    v *= 2;
    std::memcpy(doubled->data() + i, &v, 4);
  }
  executions_.fetch_add(1);
  Put(rng, Entry{r->outputs[0], std::move(doubled), n_});
}

void SoakTest::Worker(uint32_t seed, std::chrono::steady_clock::time_point deadline) {
  std::mt19937 rng(seed);
  while (std::chrono::steady_clock::now() < deadline) {
    switch (rng() % 9) {
      case 0:
      case 1:
        Make(rng);
        break;
      case 2:
        Reshard(rng);
        break;
      case 3:
        Copy(rng);
        break;
      case 4:
        Remap(rng);
        break;
      case 5:
        Delete(rng);
        break;
      case 6:
        Execute(rng);
        break;
      default:
        Read(rng);
        break;
    }
    operations_.fetch_add(1);
    if (::testing::Test::HasFailure()) return;
  }
}

TEST_P(SoakTest, RandomOperationsFromManyThreads) {
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<int64_t>(SoakSeconds() * 1000));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([this, t, deadline] { Worker(1234 + t, deadline); });
  }
  for (std::thread& t : threads) t.join();
  // Whatever is left reads back right.
  for (const Entry& e : pool_) {
    absl::StatusOr<std::vector<uint8_t>> back = ReadBack(e.array);
    ASSERT_THAT(back, IsOk());
    EXPECT_TRUE(*back == *e.data);
  }
  pool_.clear();
  for (const auto& [memory, bytes] : baseline_) {
    for (int i = 0; i < 2000 && memory->BytesInUse() != bytes; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    EXPECT_EQ(memory->BytesInUse(), bytes) << memory->DebugString() << " leaks";
  }
  EXPECT_GT(reads_.load(), 0);
  if (doubling_ != nullptr) {
    EXPECT_GT(executions_.load(), 0);
  }
  std::printf(
      "soak %s: %lld operations, %lld programs run, %lld verified read-backs, %lld raced with a "
      "deletion\n",
      GetParam().name.c_str(), static_cast<long long>(operations_.load()),
      static_cast<long long>(executions_.load()), static_cast<long long>(reads_.load()),
      static_cast<long long>(raced_.load()));
}

INSTANTIATE_TEST_SUITE_P(Topologies, SoakTest,
                         ::testing::Values(SoakTopology{"Cpu", 4, VulkanMode::kOff},
                                           SoakTopology{"Mixed", 2, VulkanMode::kRequired}),
                         [](const ::testing::TestParamInfo<SoakTopology>& info) {
                           return info.param.name;
                         });

}  // namespace
}  // namespace tessera
