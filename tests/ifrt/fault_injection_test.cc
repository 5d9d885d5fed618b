// Faults injected through the SPI (tests/ifrt/faulty_platform.h) into clients of 4 CPU devices,
// 2 lavapipe devices, and 2 CPU + 2 lavapipe devices: failed allocations (partial allocations are
// released), failed copies of every kind (every output future resolves, with the error where the
// copy fed it), copies that fail midway through a batch, lost devices, and std::bad_alloc thrown
// inside the runtime (RESOURCE_EXHAUSTED naming the call). After each: no waiter hangs (every wait
// has a timeout), every input reads back bit-exactly, and every memory's BytesInUse returns to its
// baseline once the arrays are dropped. Also: a null ArrayRef, ShardingRef or DeviceListRef
// argument of each entry point is INVALID_ARGUMENT naming it.

// GCC 12 reports false -Wmaybe-uninitialized inside absl::InlinedVector moves (Shape, Index).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cpu/cpu_platform.h"
#include "backends/vulkan/vulkan_platform.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ifrt/introspection.h"
#include "ifrt/runtime/plan_executor.h"
#include "ifrt/runtime/runtime_array.h"
#include "ifrt/runtime/runtime_client.h"
#include "tests/ifrt/faulty_platform.h"
#include "tests/ifrt/test_util.h"
#include "tests/testing/vulkan_icds.h"

namespace tessera {
namespace {

using ::tessera::testing::FaultyPlatform;
using ::tessera::testing::IsOk;
using ::tessera::testing::MakeArray;
using ::tessera::testing::Pattern;
using ::tessera::testing::ReadBack;
using ::tessera::testing::SliceBox;
using ::tessera::testing::StatusIs;
using ::testing::AllOf;
using ::testing::AnyOf;
using ::testing::HasSubstr;

constexpr DType kS32(DType::kS32);
using testing::AwaitWithin;

#define ASSERT_RESOLVES(future, status_var)                                  \
  std::optional<absl::Status> status_var = AwaitWithin(future);              \
  ASSERT_TRUE(status_var.has_value()) << "a future did not resolve in time"; \
  static_assert(true)

struct FaultTopology {
  std::string name;
  int cpu_devices;
  bool vulkan;
};

void PrintTo(const FaultTopology& t, std::ostream* os) { *os << t.name; }

// One call of an entry point on fresh inputs.
struct Operation {
  std::string name;
  std::vector<ArrayRef> inputs;
  std::vector<std::vector<uint8_t>> input_data;
  // The call; its outputs (arrays, or the future of a copy to the host) and their contents.
  std::function<absl::StatusOr<std::vector<ArrayRef>>()> call;
  std::vector<std::vector<uint8_t>> expected;
  std::shared_ptr<std::vector<uint8_t>> host;  // CopyToHostBuffer's destination
  std::shared_ptr<Future<>> host_done;         // and its future
  std::shared_ptr<std::atomic<int>> on_done_calls = std::make_shared<std::atomic<int>>(0);
};

enum class Op { kMake, kReshard, kCopyArrays, kDisassemble, kAssemble, kCopyToHost };
const Op kAllocatingOps[] = {Op::kMake, Op::kReshard, Op::kCopyArrays, Op::kDisassemble,
                             Op::kAssemble};
const Op kCopyingOps[] = {Op::kMake, Op::kReshard, Op::kCopyArrays, Op::kDisassemble,
                          Op::kCopyToHost};

class FaultTest : public ::testing::TestWithParam<FaultTopology> {
 protected:
  void SetUp() override {
    ::tessera::testing::SetVulkanIcdsIfUnset(TESSERA_IFRT_TEST_ICDS);
    const FaultTopology& t = GetParam();
    std::vector<std::unique_ptr<Platform>> platforms;
    if (t.cpu_devices > 0) {
      absl::StatusOr<std::unique_ptr<Platform>> cpu =
          CreateCpuPlatform({.num_devices = t.cpu_devices, .threads_per_device = 1});
      ASSERT_THAT(cpu, IsOk());
      platforms.push_back(std::make_unique<FaultyPlatform>(*std::move(cpu)));
    }
    if (t.vulkan) {
      const char* validation = std::getenv("TESSERA_VULKAN_VALIDATION");
      absl::StatusOr<std::unique_ptr<VulkanPlatform>> vk = CreateVulkanPlatform(
          {.enable_validation = validation != nullptr && std::string(validation) == "1"});
      if (!vk.ok()) GTEST_SKIP() << "no Vulkan platform: " << vk.status();
      platforms.push_back(std::make_unique<FaultyPlatform>(*std::move(vk)));
    }
    for (auto& p : platforms) faulty_.push_back(static_cast<FaultyPlatform*>(p.get()));
    absl::StatusOr<std::shared_ptr<runtime::RuntimeClient>> c =
        runtime::RuntimeClient::Create(std::move(platforms), guard::Policy());
    ASSERT_THAT(c, IsOk());
    client_ = *std::move(c);
    client_->transfer_guard().SetDefaultLogSinkEnabled(false);
    n_ = static_cast<int>(client_->devices().size());
    ASSERT_GE(n_, 2);
    for (Device* d : client_->devices()) {
      for (Memory* m : d->Memories()) baseline_.push_back({m, m->BytesInUse()});
    }
    validation_messages_ = VulkanValidationMessageCount();
  }

  void TearDown() override {
    if (client_ == nullptr) return;
    for (FaultyPlatform* p : faulty_) p->Disarm();
    // Every array of the test is gone; copies in flight may still hold buffers for a moment.
    ExpectMemoriesAtBaseline();
    EXPECT_EQ(VulkanValidationMessageCount(), validation_messages_)
        << "the Vulkan validation layer reported problems";
  }

  void ExpectMemoriesAtBaseline() {
    for (const auto& [memory, bytes] : baseline_) {
      for (int i = 0; i < 2000 && memory->BytesInUse() != bytes; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
      EXPECT_EQ(memory->BytesInUse(), bytes) << memory->DebugString() << " leaks";
    }
  }
  int64_t TotalBytesInUse() const {
    int64_t total = 0;
    for (const auto& [memory, bytes] : baseline_) total += memory->BytesInUse();
    return total;
  }

  Client& client() { return *client_; }
  DeviceListRef Positions(int from, int to, bool reversed = false) {
    std::vector<int> p;
    for (int i = from; i < to; ++i) p.push_back(i);
    if (reversed) std::reverse(p.begin(), p.end());
    return testing::DevicesAt(client(), p);
  }
  DeviceListRef All() { return Positions(0, n_); }
  Shape ArrayShape() const { return Shape({2 * n_, 6}); }
  int64_t ArrayBytes() const { return 2 * n_ * 6 * 4; }
  std::vector<uint8_t> Rows(const std::vector<uint8_t>& data, int i) {
    return SliceBox(data, ArrayShape().dims(), 4, {2 * i, 0}, {2, 6});
  }
  ArrayRef Make(const std::vector<uint8_t>& data, const Shape& shape, ShardingRef sharding) {
    absl::StatusOr<ArrayRef> a = MakeArray(client(), data, kS32, shape, std::move(sharding));
    EXPECT_THAT(a, IsOk());
    if (!a.ok()) return nullptr;
    EXPECT_THAT((*a)->GetReadyFuture().Await(), IsOk());
    return *a;
  }

  Operation MakeOperation(Op op, uint32_t seed, ArrayCopySemantics semantics);

  // Every input is live and reads back bit-exactly.
  void ExpectInputsIntact(const Operation& o) {
    for (size_t i = 0; i < o.inputs.size(); ++i) {
      ASSERT_FALSE(o.inputs[i]->IsDeleted()) << "input " << i << " was deleted";
      absl::StatusOr<std::vector<uint8_t>> back = ReadBack(o.inputs[i]);
      ASSERT_THAT(back, IsOk());
      EXPECT_TRUE(*back == o.input_data[i]) << "input " << i << " differs";
    }
  }
  // Every output resolves in time; returns how many carry an error matching `error`; the others
  // read back bit-exactly.
  int CheckOutputs(const Operation& o, const std::vector<ArrayRef>& out,
                   const ::testing::Matcher<absl::Status>& error) {
    int failed = 0;
    if (o.host_done != nullptr) {
      std::optional<absl::Status> s = AwaitWithin(*o.host_done);
      EXPECT_TRUE(s.has_value()) << "CopyToHostBuffer's future did not resolve";
      if (!s.has_value()) return -1;
      if (!s->ok()) {
        EXPECT_THAT(*s, error);
        return 1;
      }
      EXPECT_TRUE(*o.host == o.expected[0]) << "the host buffer differs";
      return 0;
    }
    EXPECT_EQ(out.size(), o.expected.size());
    for (size_t i = 0; i < out.size() && i < o.expected.size(); ++i) {
      std::optional<absl::Status> s = AwaitWithin(out[i]->GetReadyFuture());
      EXPECT_TRUE(s.has_value()) << "output " << i << " did not resolve";
      if (!s.has_value()) return -1;
      if (!s->ok()) {
        EXPECT_THAT(*s, error) << "output " << i;
        // A poisoned array reports its error to every reader.
        EXPECT_THAT(ReadBack(out[i]).status(), error);
        ++failed;
        continue;
      }
      // A ready output may still be unreadable (its device was lost since): the same error.
      absl::StatusOr<std::vector<uint8_t>> back = ReadBack(out[i]);
      if (!back.ok()) {
        EXPECT_THAT(back.status(), error) << "reading output " << i;
        ++failed;
        continue;
      }
      EXPECT_TRUE(*back == o.expected[i]) << "output " << i << " differs";
    }
    return failed;
  }

  std::shared_ptr<runtime::RuntimeClient> client_;
  std::vector<FaultyPlatform*> faulty_;
  std::vector<std::pair<Memory*, int64_t>> baseline_;
  int n_ = 0;
  int64_t validation_messages_ = 0;
};

Operation FaultTest::MakeOperation(Op op, uint32_t seed, ArrayCopySemantics semantics) {
  Operation o;
  const std::vector<uint8_t> data = Pattern(ArrayBytes(), seed);
  ShardingRef rows = testing::RowSharding(All());
  switch (op) {
    case Op::kMake: {
      o.name = "MakeArrayFromHostBuffer";
      auto host = std::make_shared<std::vector<uint8_t>>(data);
      ShardingRef replicated = testing::ReplicatedSharding(All(), ArrayShape());
      o.call = [this, host, replicated, calls = o.on_done_calls] {
        absl::StatusOr<ArrayRef> a = client().MakeArrayFromHostBuffer(
            host->data(), kS32, ArrayShape(), std::nullopt, replicated,
            HostBufferSemantics::kImmutableOnlyDuringCall, [calls] { ++*calls; });
        if (!a.ok()) return absl::StatusOr<std::vector<ArrayRef>>(a.status());
        return absl::StatusOr<std::vector<ArrayRef>>(std::vector<ArrayRef>{*a});
      };
      o.expected = {data};
      break;
    }
    case Op::kReshard:
    case Op::kCopyArrays: {
      o.name = op == Op::kReshard ? "ReshardArrays" : "CopyArrays";
      DeviceListRef from = op == Op::kReshard ? All() : Positions(0, n_ / 2);
      for (uint32_t k = 0; k < 2; ++k) {
        o.input_data.push_back(Pattern(ArrayBytes(), seed + 100 * (k + 1)));
        o.inputs.push_back(Make(o.input_data.back(), ArrayShape(), testing::RowSharding(from)));
      }
      o.expected = o.input_data;
      if (op == Op::kReshard) {
        ShardingRef to = testing::RowSharding(Positions(0, n_, /*reversed=*/true));
        o.call = [this, inputs = o.inputs, to, semantics] {
          std::vector<ArrayRef> in = inputs;
          std::vector<ArraySpec> specs = {{kS32, ArrayShape(), to}, {kS32, ArrayShape(), to}};
          return client().ReshardArrays(absl::MakeSpan(in), specs, semantics);
        };
      } else {
        DeviceListRef to = Positions(n_ / 2, n_);
        o.call = [this, inputs = o.inputs, to, semantics] {
          std::vector<ArrayRef> in = inputs;
          return client().CopyArrays(absl::MakeSpan(in), to, std::nullopt, semantics);
        };
      }
      break;
    }
    case Op::kDisassemble: {
      o.name = "DisassembleIntoSingleDeviceArrays";
      o.input_data = {data};
      o.inputs = {Make(data, ArrayShape(), rows)};
      for (int i = 0; i < n_; ++i) o.expected.push_back(Rows(data, i));
      o.call = [array = o.inputs[0]] {
        return array->DisassembleIntoSingleDeviceArrays(ArrayCopySemantics::kAlwaysCopy);
      };
      break;
    }
    case Op::kAssemble: {
      o.name = "AssembleArrayFromSingleDeviceArrays";
      for (int i = 0; i < n_; ++i) {
        o.input_data.push_back(Rows(data, i));
        o.inputs.push_back(Make(o.input_data.back(), Shape({2, 6}),
                                SingleDeviceSharding::Create(client().devices()[i], MemoryKind())));
      }
      o.expected = {data};
      o.call = [this, inputs = o.inputs, rows] {
        std::vector<ArrayRef> in = inputs;
        absl::StatusOr<ArrayRef> a = client().AssembleArrayFromSingleDeviceArrays(
            kS32, ArrayShape(), rows, absl::MakeSpan(in), ArrayCopySemantics::kAlwaysCopy);
        if (!a.ok()) return absl::StatusOr<std::vector<ArrayRef>>(a.status());
        return absl::StatusOr<std::vector<ArrayRef>>(std::vector<ArrayRef>{*a});
      };
      break;
    }
    case Op::kCopyToHost: {
      o.name = "CopyToHostBuffer";
      o.input_data = {data};
      o.inputs = {Make(data, ArrayShape(), rows)};
      o.expected = {data};
      o.host = std::make_shared<std::vector<uint8_t>>(ArrayBytes(), 0);
      o.host_done = std::make_shared<Future<>>();
      o.call = [array = o.inputs[0], host = o.host, done = o.host_done] {
        *done =
            array->CopyToHostBuffer(host->data(), std::nullopt, ArrayCopySemantics::kAlwaysCopy);
        return absl::StatusOr<std::vector<ArrayRef>>(std::vector<ArrayRef>{});
      };
      break;
    }
  }
  return o;
}

std::string OpName(Op op) {
  switch (op) {
    case Op::kMake:
      return "Make";
    case Op::kReshard:
      return "Reshard";
    case Op::kCopyArrays:
      return "CopyArrays";
    case Op::kDisassemble:
      return "Disassemble";
    case Op::kAssemble:
      return "Assemble";
    case Op::kCopyToHost:
      return "CopyToHost";
  }
  return "";
}

// ---------------------------------------------------------------------------------------------
// Allocation failures

TEST_P(FaultTest, EveryFailedAllocationFailsTheCallAndReleasesThePartialOnes) {
  for (Op op : kAllocatingOps) {
    for (FaultyPlatform* p : faulty_) {
      // How many allocations the call makes on this platform.
      int64_t allocations = 0;
      {
        Operation clean = MakeOperation(op, 1, ArrayCopySemantics::kDonateInput);
        const int64_t calls_before = p->allocation_calls();
        ASSERT_THAT(clean.call(), IsOk());
        allocations = p->allocation_calls() - calls_before;
      }
      for (int k = 1; k <= allocations; ++k) {
        SCOPED_TRACE(absl::StrCat(OpName(op), " on ", std::string(p->name()), ": allocation ", k,
                                  " of ", allocations, " fails"));
        // The arrays of the previous call are gone, but a device frees their buffers when its
        // last command on them completes: measure from a settled state.
        ExpectMemoriesAtBaseline();
        Operation o = MakeOperation(op, 10 + k, ArrayCopySemantics::kDonateInput);
        const int64_t in_use = TotalBytesInUse();
        p->FailAllocation(k);
        EXPECT_THAT(o.call(),
                    StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("injected")));
        p->Disarm();
        EXPECT_EQ(TotalBytesInUse(), in_use) << "the call's other allocations are still held";
        if (op == Op::kMake) {
          EXPECT_EQ(*o.on_done_calls, 1);
        }
        ExpectInputsIntact(o);
      }
    }
  }
}

TEST_P(FaultTest, BadAllocAnywhereIsResourceExhaustedNamingTheCall) {
  for (Op op : kAllocatingOps) {
    SCOPED_TRACE(OpName(op));
    ExpectMemoriesAtBaseline();
    Operation o = MakeOperation(op, 2, ArrayCopySemantics::kDonateInput);
    const int64_t in_use = TotalBytesInUse();
    faulty_.back()->FailAllocation(1, /*throw_bad_alloc=*/true);
    EXPECT_THAT(o.call(), StatusIs(absl::StatusCode::kResourceExhausted,
                                   AllOf(HasSubstr(o.name), HasSubstr("out of host memory"))));
    faulty_.back()->Disarm();
    EXPECT_EQ(TotalBytesInUse(), in_use);
    if (op == Op::kMake) {
      EXPECT_EQ(*o.on_done_calls, 1);
    }
    ExpectInputsIntact(o);
  }
}

TEST_P(FaultTest, BadAllocWhileEnqueueingWaitsForTheCopiesAlreadyEnqueued) {
  for (Op op : kCopyingOps) {
    for (FaultyPlatform* p : faulty_) {
      Operation clean = MakeOperation(op, 3, ArrayCopySemantics::kAlwaysCopy);
      const int64_t calls_before = p->copy_calls();
      ASSERT_THAT(clean.call(), IsOk());
      if (clean.host_done != nullptr) {
        ASSERT_THAT(clean.host_done->Await(), IsOk());
      }
      const int64_t copies = p->copy_calls() - calls_before;
      for (int k = 1; k <= copies; ++k) {
        SCOPED_TRACE(absl::StrCat(OpName(op), " on ", std::string(p->name()), ": copy call ", k,
                                  " of ", copies, " throws"));
        Operation o = MakeOperation(op, 20 + k, ArrayCopySemantics::kDonateInput);
        p->ThrowOnCopy(k, testing::kAnyCopy);
        absl::StatusOr<std::vector<ArrayRef>> out = o.call();
        p->Disarm();
        const auto error = StatusIs(absl::StatusCode::kResourceExhausted,
                                    AllOf(HasSubstr(o.name), HasSubstr("out of host memory")));
        if (o.host_done != nullptr) {
          ASSERT_RESOLVES(*o.host_done, s);
          EXPECT_THAT(*s, error);
        } else {
          EXPECT_THAT(out, error);
        }
        if (op == Op::kMake) {
          EXPECT_EQ(*o.on_done_calls, 1);
        }
        ExpectInputsIntact(o);  // not even a donated one is deleted
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Copy failures

TEST_P(FaultTest, FailedCopyReachesTheOutputsItFeedsAndNothingElse) {
  for (size_t succeed : {size_t{0}, size_t{1}}) {  // the whole batch fails, or fails midway
    for (Op op : kCopyingOps) {
      for (FaultyPlatform* p : faulty_) {
        Operation clean = MakeOperation(op, 4, ArrayCopySemantics::kAlwaysCopy);
        const int64_t calls_before = p->copy_calls();
        ASSERT_THAT(clean.call(), IsOk());
        if (clean.host_done != nullptr) {
          ASSERT_THAT(clean.host_done->Await(), IsOk());
        }
        const int64_t copies = p->copy_calls() - calls_before;
        for (int k = 1; k <= copies; ++k) {
          SCOPED_TRACE(absl::StrCat(OpName(op), " on ", std::string(p->name()), ": copy call ", k,
                                    " of ", copies, " fails after ", succeed, " copies"));
          Operation o = MakeOperation(op, 30 + k, ArrayCopySemantics::kAlwaysCopy);
          const int64_t injected = p->injected_faults();
          p->FailCopy(k, testing::kAnyCopy, succeed);
          absl::StatusOr<std::vector<ArrayRef>> out = o.call();
          ASSERT_THAT(out, IsOk());  // an execution error travels on the futures
          const int failed = CheckOutputs(
              o, *out, StatusIs(absl::StatusCode::kDataLoss, HasSubstr("injected copy failure")));
          p->Disarm();
          EXPECT_EQ(p->injected_faults(), injected + 1);
          EXPECT_GE(failed, 1) << "no output carries the failed copy's error";
          ExpectInputsIntact(o);
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Lost devices

TEST_P(FaultTest, LostDeviceFailsWhatTouchesItAndNeverHangs) {
  FaultyPlatform* p = faulty_.back();
  const int lost = p->device_count() - 1;
  for (int after_ops : {0, 1, 2, 3, 5, 8, 13}) {
    SCOPED_TRACE(
        absl::StrCat(std::string(p->name()), " device ", lost, " lost after ", after_ops, " ops"));
    std::vector<Operation> ops;
    for (Op op : kCopyingOps)
      ops.push_back(MakeOperation(op, 40 + after_ops, ArrayCopySemantics::kAlwaysCopy));
    p->LoseDeviceAfter(lost, after_ops);
    const auto error = StatusIs(absl::StatusCode::kUnavailable, HasSubstr("device lost"));
    for (Operation& o : ops) {
      SCOPED_TRACE(o.name);
      absl::StatusOr<std::vector<ArrayRef>> out = o.call();
      if (!out.ok()) {
        EXPECT_THAT(out, error);
        continue;
      }
      EXPECT_GE(CheckOutputs(o, *out, error), 0);
    }
    // The device comes back: nothing the loss touched was corrupted.
    p->Disarm();
    for (const Operation& o : ops) ExpectInputsIntact(o);
  }
}

// ---------------------------------------------------------------------------------------------
// Allocation failure in the executor's stream callbacks

TEST_P(FaultTest, BadAllocInAStreamCallbackBecomesTheFuturesError) {
  const std::vector<uint8_t> data = Pattern(ArrayBytes(), 5);
  ArrayRef a = Make(data, ArrayShape(), testing::RowSharding(All()));
  ASSERT_NE(a, nullptr);
  const ArraySpec spec{kS32, ArrayShape(),
                       testing::RowSharding(Positions(0, n_, /*reversed=*/true))};
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<const sharding::ReshardPlan> plan,
                       client_->PlanReshard(*a, spec));
  auto* array = dynamic_cast<runtime::RuntimeArray*>(a.get());
  ASSERT_NE(array, nullptr);
  ASSERT_OK_AND_ASSIGN(std::vector<runtime::Shard> shards, array->shards());
  std::vector<runtime::PlanEndpoint> src(n_), dst(n_);
  ASSERT_OK_AND_ASSIGN(sharding::ShardLayout layout, spec.sharding->Layout(spec.shape));
  for (int i = 0; i < n_; ++i) {
    src[i] = {.memory = array->memories()[i],
              .buffer = shards[i].buffer,
              .ready = shards[i].ready,
              .shard_shape = array->layout().shard_shape(i)};
    auto* device = static_cast<runtime::RuntimeDevice*>(spec.sharding->devices()->devices()[i]);
    ASSERT_OK_AND_ASSIGN(runtime::RuntimeMemory * memory, device->ResolveMemory(MemoryKind()));
    ASSERT_OK_AND_ASSIGN(PlatformBufferRef buffer,
                         memory->Allocate(layout.slot_box(i).num_elements() * 4));
    dst[i] = {.memory = memory, .buffer = buffer, .shard_shape = layout.shard_shape(i)};
  }
  runtime::PlanContext context;
  context.record = [](const runtime::TransferTraffic&) { throw std::bad_alloc(); };
  context.operation = "test";
  runtime::PlanExecution exec = runtime::ExecutePlan(*plan, 4, src, dst, context);
  ASSERT_THAT(exec.status, IsOk());
  ASSERT_RESOLVES(exec.all_done, s);
  EXPECT_THAT(
      *s, StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("counting a finished copy")));
  for (const Future<>& f : exec.dst_ready) {
    ASSERT_RESOLVES(f, slot);
    EXPECT_THAT(*slot, StatusIs(absl::StatusCode::kResourceExhausted, ::testing::_));
  }
  absl::StatusOr<std::vector<uint8_t>> back = ReadBack(a);
  ASSERT_THAT(back, IsOk());
  EXPECT_TRUE(*back == data);
}

INSTANTIATE_TEST_SUITE_P(Topologies, FaultTest,
                         ::testing::Values(FaultTopology{"Cpu", 4, false},
                                           FaultTopology{"Vulkan", 0, true},
                                           FaultTopology{"Mixed", 2, true}),
                         [](const ::testing::TestParamInfo<FaultTopology>& info) {
                           return info.param.name;
                         });

// ---------------------------------------------------------------------------------------------
// Null arguments

class NullArgumentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(client_, testing::CreateCpuTestClient(2));
    devices_ = testing::DevicesAt(*client_, {0, 1});
    rows_ = testing::RowSharding(devices_);
    ASSERT_OK_AND_ASSIGN(a_, MakeArray(*client_, data_, kS32, shape_, rows_));
  }
  std::shared_ptr<Client> client_;
  DeviceListRef devices_;
  ShardingRef rows_;
  const Shape shape_ = Shape({4, 2});
  const std::vector<uint8_t> data_ = Pattern(4 * 2 * 4, 7);
  ArrayRef a_;
};

auto NullError(const std::string& what) {
  return StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(what));
}

TEST_F(NullArgumentTest, MakeArrayFromHostBuffer) {
  int calls = 0;
  EXPECT_THAT(client_->MakeArrayFromHostBuffer(data_.data(), kS32, shape_, std::nullopt, nullptr,
                                               HostBufferSemantics::kImmutableOnlyDuringCall,
                                               [&calls] { ++calls; }),
              NullError("MakeArrayFromHostBuffer: argument 4 (sharding) is null"));
  EXPECT_EQ(calls, 1);
}

TEST_F(NullArgumentTest, AssembleArrayFromSingleDeviceArrays) {
  ASSERT_OK_AND_ASSIGN(std::vector<ArrayRef> parts,
                       a_->DisassembleIntoSingleDeviceArrays(ArrayCopySemantics::kReuseInput));
  EXPECT_THAT(client_->AssembleArrayFromSingleDeviceArrays(
                  kS32, shape_, nullptr, absl::MakeSpan(parts), ArrayCopySemantics::kAlwaysCopy),
              NullError("AssembleArrayFromSingleDeviceArrays: argument 2 (sharding) is null"));
  parts[1] = nullptr;
  EXPECT_THAT(client_->AssembleArrayFromSingleDeviceArrays(
                  kS32, shape_, rows_, absl::MakeSpan(parts), ArrayCopySemantics::kAlwaysCopy),
              NullError("AssembleArrayFromSingleDeviceArrays: array 1 is null"));
}

TEST_F(NullArgumentTest, CopyArrays) {
  std::vector<ArrayRef> in = {a_, nullptr};
  EXPECT_THAT(client_->CopyArrays(absl::MakeSpan(in), std::nullopt, std::nullopt,
                                  ArrayCopySemantics::kAlwaysCopy),
              NullError("CopyArrays: array 1 is null"));
  in = {a_};
  EXPECT_THAT(client_->CopyArrays(absl::MakeSpan(in), DeviceListRef(nullptr), std::nullopt,
                                  ArrayCopySemantics::kAlwaysCopy),
              NullError("CopyArrays: argument 1 (devices) is null"));
}

TEST_F(NullArgumentTest, ReshardArrays) {
  std::vector<ArrayRef> in = {a_, nullptr};
  std::vector<ArraySpec> specs = {{kS32, shape_, rows_}, {kS32, shape_, rows_}};
  EXPECT_THAT(client_->ReshardArrays(absl::MakeSpan(in), specs, ArrayCopySemantics::kAlwaysCopy),
              NullError("ReshardArrays: array 1 is null"));
  in = {a_, a_};
  specs[1].sharding = nullptr;
  EXPECT_THAT(client_->ReshardArrays(absl::MakeSpan(in), specs, ArrayCopySemantics::kAlwaysCopy),
              NullError("ReshardArrays: specs[1].sharding is null"));
  EXPECT_THAT(client_->introspection()->PlanReshard(*a_, specs[1]),
              NullError("PlanReshard: spec.sharding is null"));
}

TEST_F(NullArgumentTest, RemapArrays) {
  RemapPlan plan;
  plan.input_specs = {{kS32, shape_, rows_}};
  plan.output_specs = {{kS32, shape_, rows_}};
  plan.mappings = {{0, 0, {{0, 2, 1}}, {{0, 2, 1}}}};
  std::vector<ArrayRef> in = {nullptr};
  EXPECT_THAT(client_->RemapArrays(plan, absl::MakeSpan(in), ArrayCopySemantics::kDonateInput),
              NullError("RemapArrays: array 0 is null"));
  plan.output_specs[0].sharding = nullptr;
  in = {a_};
  EXPECT_THAT(client_->RemapArrays(plan, absl::MakeSpan(in), ArrayCopySemantics::kDonateInput),
              NullError("output spec 0 has no sharding"));
  EXPECT_FALSE(a_->IsDeleted());
}

TEST_F(NullArgumentTest, GetReadyFutureAndMakeDeviceList) {
  std::vector<ArrayRef> in = {a_, nullptr};
  EXPECT_THAT(client_->GetReadyFuture(in).Await(), NullError("GetReadyFuture: array 1 is null"));
  std::vector<Device*> devices = {client_->devices()[0], nullptr};
  EXPECT_THAT(client_->MakeDeviceList(devices), NullError("device list entry 1 is null"));
  // The input survived every refused call.
  absl::StatusOr<std::vector<uint8_t>> back = ReadBack(a_);
  ASSERT_THAT(back, IsOk());
  EXPECT_TRUE(*back == data_);
}

}  // namespace
}  // namespace tessera
