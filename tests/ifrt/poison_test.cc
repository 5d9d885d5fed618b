// Poisoned arrays: a client over a CPU platform whose copies fail on demand (FailingPlatform),
// built through runtime::RuntimeClient::Create. Errors of a failed copy travel along the ready
// futures of every array made from it and never hang a waiter; pending transfers order on_done,
// readiness and Delete. (The API-contract suites that every backend runs are in
// tests/conformance/.)

// GCC 12 reports false -Wmaybe-uninitialized inside absl::InlinedVector moves
// (Shape, Index).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string_view>
#include <thread>
#include <vector>

#include "backends/cpu/cpu_platform.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ifrt/runtime/runtime_client.h"
#include "ifrt/spi/platform.h"
#include "tests/ifrt/test_util.h"

namespace tessera {
namespace {

using ::tessera::testing::Eventually;
using ::tessera::testing::IsOk;
using ::tessera::testing::MakeArray;
using ::tessera::testing::Pattern;
using ::tessera::testing::ReadBack;
using ::tessera::testing::ReplicatedSharding;
using ::tessera::testing::RowSharding;
using ::tessera::testing::StatusIs;
using ::testing::HasSubstr;

constexpr DType kS32(DType::kS32);

class FailingPlatform : public Platform {
 public:
  explicit FailingPlatform(std::unique_ptr<Platform> base) : base_(std::move(base)) {}
  std::atomic<bool> fail_host_to_buffer{false};
  std::atomic<bool> fail_buffer_to_buffer{false};

  std::string_view name() const override { return base_->name(); }
  int device_count() const override { return base_->device_count(); }
  const PlatformDeviceInfo& device_info(int device) const override {
    return base_->device_info(device);
  }
  absl::StatusOr<PlatformBufferRef> Allocate(int device, int memory, int64_t bytes) override {
    return base_->Allocate(device, memory, bytes);
  }
  int64_t BytesInUse(int device, int memory) const override {
    return base_->BytesInUse(device, memory);
  }
  absl::StatusOr<PlatformBufferRef> WrapHostMemory(int device, int memory, void* data,
                                                   int64_t bytes,
                                                   std::function<void()> on_release) override {
    return base_->WrapHostMemory(device, memory, data, bytes, std::move(on_release));
  }
  Future<> CopyHostToBuffers(int device, std::vector<HostToBufferCopy> copies,
                             absl::Span<const Future<>> after) override {
    if (fail_host_to_buffer) return MakeReadyFuture(absl::DataLossError("injected h2d failure"));
    std::vector<Future<>> deps(after.begin(), after.end());
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (gate_.valid()) deps.push_back(gate_);
    }
    return base_->CopyHostToBuffers(device, std::move(copies), deps);
  }
  // While set, host-to-buffer copies wait for `gate` as well.
  void SetGate(Future<> gate) {
    std::lock_guard<std::mutex> lock(mu_);
    gate_ = std::move(gate);
  }
  Future<> CopyBuffersToHost(int device, std::vector<BufferToHostCopy> copies,
                             absl::Span<const Future<>> after) override {
    return base_->CopyBuffersToHost(device, std::move(copies), after);
  }
  Future<> CopyBuffersToBuffers(int device, std::vector<BufferToBufferCopy> copies,
                                absl::Span<const Future<>> after) override {
    if (fail_buffer_to_buffer) return MakeReadyFuture(absl::DataLossError("injected d2d failure"));
    return base_->CopyBuffersToBuffers(device, std::move(copies), after);
  }
  Future<> EnqueueHostCallback(int device, std::function<absl::Status()> fn,
                               absl::Span<const Future<>> after) override {
    return base_->EnqueueHostCallback(device, std::move(fn), after);
  }

 private:
  std::unique_ptr<Platform> base_;
  std::mutex mu_;
  Future<> gate_;
};

class PoisonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<Platform>> cpu = CreateCpuPlatform({.num_devices = 4});
    ASSERT_THAT(cpu, IsOk());
    auto failing = std::make_unique<FailingPlatform>(*std::move(cpu));
    platform_ = failing.get();
    std::vector<std::unique_ptr<Platform>> platforms;
    platforms.push_back(std::move(failing));
    absl::StatusOr<std::shared_ptr<runtime::RuntimeClient>> c =
        runtime::RuntimeClient::Create(std::move(platforms), guard::Policy());
    ASSERT_THAT(c, IsOk());
    client_ = *std::move(c);
  }
  DeviceListRef All() { return testing::DevicesAt(*client_, {0, 1, 2, 3}); }
  DeviceListRef Reversed() { return testing::DevicesAt(*client_, {3, 2, 1, 0}); }

  FailingPlatform* platform_ = nullptr;
  std::shared_ptr<runtime::RuntimeClient> client_;
};

TEST_F(PoisonTest, PoisonedInputPropagatesItsError) {
  const Shape shape({8, 6});
  const std::vector<uint8_t> data = Pattern(8 * 6 * 4, 1);
  const auto poisoned = StatusIs(absl::StatusCode::kDataLoss, HasSubstr("injected h2d failure"));
  platform_->fail_host_to_buffer = true;
  int on_done_calls = 0;
  ASSERT_OK_AND_ASSIGN(
      ArrayRef bad, client_->MakeArrayFromHostBuffer(
                        data.data(), kS32, shape, std::nullopt, RowSharding(All()),
                        HostBufferSemantics::kImmutableOnlyDuringCall, [&] { ++on_done_calls; }));
  platform_->fail_host_to_buffer = false;
  EXPECT_EQ(on_done_calls, 1);  // even when the transfer failed
  EXPECT_THAT(bad->GetReadyFuture().Await(), poisoned);
  EXPECT_THAT(ReadBack(bad), poisoned);
  EXPECT_THAT(bad->DebugString(), HasSubstr("injected"));
  ASSERT_OK_AND_ASSIGN(ArrayRef good, MakeArray(*client_, data, kS32, shape, RowSharding(All())));
  EXPECT_THAT(client_->GetReadyFuture({good, bad}).Await(), poisoned);
  EXPECT_THAT(client_->GetReadyFuture({good}).Await(), IsOk());

  // Reshard and copy: the calls succeed, their outputs carry the error.
  std::vector<ArrayRef> in = {bad};
  std::vector<ArraySpec> specs = {{kS32, shape, ReplicatedSharding(All(), shape)}};
  ASSERT_OK_AND_ASSIGN(
      std::vector<ArrayRef> resharded,
      client_->ReshardArrays(absl::MakeSpan(in), specs, ArrayCopySemantics::kAlwaysCopy));
  EXPECT_THAT(resharded[0]->GetReadyFuture().Await(), poisoned);
  EXPECT_THAT(ReadBack(resharded[0]), poisoned);
  ASSERT_OK_AND_ASSIGN(std::vector<ArrayRef> copied,
                       client_->CopyArrays(absl::MakeSpan(in), Reversed(), std::nullopt,
                                           ArrayCopySemantics::kAlwaysCopy));
  EXPECT_THAT(ReadBack(copied[0]), poisoned);
  // A batch with one poisoned array: only its output is poisoned.
  std::vector<ArrayRef> batch = {good, bad};
  std::vector<ArraySpec> batch_specs = {specs[0], specs[0]};
  ASSERT_OK_AND_ASSIGN(
      std::vector<ArrayRef> batch_out,
      client_->ReshardArrays(absl::MakeSpan(batch), batch_specs, ArrayCopySemantics::kReuseInput));
  EXPECT_THAT(ReadBack(batch_out[0]), IsOk());
  EXPECT_TRUE(*ReadBack(batch_out[0]) == data);
  EXPECT_THAT(ReadBack(batch_out[1]), poisoned);

  // Disassembly, assembly and remapping carry the error along.
  ASSERT_OK_AND_ASSIGN(std::vector<ArrayRef> parts,
                       bad->DisassembleIntoSingleDeviceArrays(ArrayCopySemantics::kAlwaysCopy));
  for (const ArrayRef& p : parts) EXPECT_THAT(p->GetReadyFuture().Await(), poisoned);
  ASSERT_OK_AND_ASSIGN(
      ArrayRef assembled,
      client_->AssembleArrayFromSingleDeviceArrays(
          kS32, shape, RowSharding(All()), absl::MakeSpan(parts), ArrayCopySemantics::kReuseInput));
  EXPECT_THAT(assembled->GetReadyFuture().Await(), poisoned);
  RemapPlan plan;
  plan.input_specs = {{kS32, shape, RowSharding(All())}};
  plan.output_specs = {
      {kS32, Shape({2, 6}), SingleDeviceSharding::Create(client_->devices()[0], MemoryKind())}};
  plan.mappings = {{0, 0, {{0, 1, 1}}, {{0, 1, 1}}}};
  std::vector<ArrayRef> remap_in = {assembled};
  ASSERT_OK_AND_ASSIGN(
      std::vector<ArrayRef> remapped,
      client_->RemapArrays(plan, absl::MakeSpan(remap_in), ArrayCopySemantics::kDonateInput));
  EXPECT_THAT(remapped[0]->GetReadyFuture().Await(), poisoned);
  // Deleting a poisoned array is fine.
  EXPECT_THAT(bad->Delete().Await(), IsOk());
}

TEST_F(PoisonTest, FailedDeviceCopyPoisonsTheOutputOnly) {
  const Shape shape({8, 6});
  const std::vector<uint8_t> data = Pattern(8 * 6 * 4, 2);
  ASSERT_OK_AND_ASSIGN(ArrayRef a, MakeArray(*client_, data, kS32, shape, RowSharding(All())));
  ASSERT_THAT(a->GetReadyFuture().Await(), IsOk());
  const TransferStats before = client_->transfer_stats();
  platform_->fail_buffer_to_buffer = true;
  std::vector<ArrayRef> in = {a};
  std::vector<ArraySpec> specs = {{kS32, shape, ReplicatedSharding(All(), shape)}};
  ASSERT_OK_AND_ASSIGN(
      std::vector<ArrayRef> out,
      client_->ReshardArrays(absl::MakeSpan(in), specs, ArrayCopySemantics::kAlwaysCopy));
  EXPECT_THAT(out[0]->GetReadyFuture().Await(),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("injected d2d failure")));
  platform_->fail_buffer_to_buffer = false;
  // Failed copies are not counted as moved.
  EXPECT_EQ(client_->transfer_stats().device_to_device, before.device_to_device);
  absl::StatusOr<std::vector<uint8_t>> back = ReadBack(a);
  ASSERT_THAT(back, IsOk());
  EXPECT_TRUE(*back == data);
  // The same reshard now works.
  ASSERT_OK_AND_ASSIGN(
      out, client_->ReshardArrays(absl::MakeSpan(in), specs, ArrayCopySemantics::kAlwaysCopy));
  back = ReadBack(out[0]);
  ASSERT_THAT(back, IsOk());
  EXPECT_TRUE(*back == data);
}

TEST_F(PoisonTest, PendingTransfersOrderOnDoneReadinessAndDelete) {
  const Shape shape({8, 6});
  const std::vector<uint8_t> data = Pattern(8 * 6 * 4, 3);
  Promise<> gate;
  platform_->SetGate(gate.future());
  auto calls = std::make_shared<std::atomic<int>>(0);
  ASSERT_OK_AND_ASSIGN(ArrayRef a, client_->MakeArrayFromHostBuffer(
                                       data.data(), kS32, shape, std::nullopt, RowSharding(All()),
                                       HostBufferSemantics::kImmutableUntilTransferCompletes,
                                       [calls] { ++*calls; }));
  platform_->SetGate(Future<>());
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(calls->load(), 0) << "on_done ran before the transfer completed";
  EXPECT_FALSE(a->GetReadyFuture().IsReady());
  EXPECT_THAT(a->DebugString(), HasSubstr("pending"));
  // Work enqueued on a pending array waits for it.
  std::vector<ArrayRef> in = {a};
  std::vector<ArraySpec> specs = {{kS32, shape, ReplicatedSharding(Reversed(), shape)}};
  ASSERT_OK_AND_ASSIGN(
      std::vector<ArrayRef> out,
      client_->ReshardArrays(absl::MakeSpan(in), specs, ArrayCopySemantics::kDonateInput));
  EXPECT_TRUE(a->IsDeleted());
  std::vector<uint8_t> host(data.size());
  Future<> read =
      out[0]->CopyToHostBuffer(host.data(), std::nullopt, ArrayCopySemantics::kAlwaysCopy);
  // Delete's future waits for the array's pending writes.
  platform_->SetGate(gate.future());
  ASSERT_OK_AND_ASSIGN(ArrayRef c,
                       client_->MakeArrayFromHostBuffer(
                           data.data(), kS32, shape, std::nullopt, RowSharding(All()),
                           HostBufferSemantics::kImmutableUntilTransferCompletes, nullptr));
  platform_->SetGate(Future<>());
  Future<> deleted = c->Delete();
  EXPECT_TRUE(c->IsDeleted());
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_FALSE(deleted.IsReady());
  EXPECT_FALSE(read.IsReady());
  gate.Set(absl::OkStatus());
  EXPECT_THAT(deleted.Await(), IsOk());
  EXPECT_THAT(read.Await(), IsOk());
  EXPECT_TRUE(host == data);
  EXPECT_TRUE(Eventually([&] { return calls->load() == 1; }));
}

TEST_F(PoisonTest, ZeroCopyKeepsTheHostBufferUntilTheLastUser) {
  // The CPU platform can use a compact, 64-byte aligned host buffer in place.
  struct alignas(64) Block {
    uint8_t bytes[8 * 8 * 4];
  };
  auto block = std::make_unique<Block>();
  const std::vector<uint8_t> data = Pattern(sizeof(Block::bytes), 4);
  std::memcpy(block->bytes, data.data(), data.size());
  auto calls = std::make_shared<std::atomic<int>>(0);
  const Shape shape({8, 8});
  ShardingRef single = SingleDeviceSharding::Create(client_->devices()[2], MemoryKind());
  const TransferStats before = client_->transfer_stats();
  ASSERT_OK_AND_ASSIGN(
      ArrayRef a, client_->MakeArrayFromHostBuffer(block->bytes, kS32, shape, std::nullopt, single,
                                                   HostBufferSemantics::kImmutableZeroCopy,
                                                   [calls] { ++*calls; }));
  EXPECT_THAT(a->GetReadyFuture().Await(), IsOk());
  EXPECT_EQ(client_->transfer_stats().host_to_device,
            before.host_to_device);  // nothing copied
  // An aliasing reshard shares the buffer: the host buffer is needed until both
  // are gone.
  std::vector<ArrayRef> in = {a};
  std::vector<ArraySpec> specs = {{kS32, shape, single}};
  ASSERT_OK_AND_ASSIGN(
      std::vector<ArrayRef> alias,
      client_->ReshardArrays(absl::MakeSpan(in), specs, ArrayCopySemantics::kReuseInput));
  absl::StatusOr<std::vector<uint8_t>> back = ReadBack(alias[0]);
  ASSERT_THAT(back, IsOk());
  EXPECT_TRUE(*back == data);
  static_cast<void>(a->Delete());
  in.clear();
  a.reset();
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(calls->load(), 0);
  back = ReadBack(alias[0]);
  ASSERT_THAT(back, IsOk());
  EXPECT_TRUE(*back == data);
  alias.clear();
  EXPECT_TRUE(Eventually([&] { return calls->load() == 1; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  EXPECT_EQ(calls->load(), 1);
}

}  // namespace
}  // namespace tessera
