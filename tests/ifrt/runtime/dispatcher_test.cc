// The dispatcher's own contract (ifrt/runtime/dispatcher.h), without devices: the one guard door
// (a refusal before anything is counted, no action for a call that moves no bytes), the transfer
// statistics by direction and device pair, the processes' call frame (none for a single process;
// one per call, and a late refusal, for several), and the enqueue order's lock. Every movement
// through a client is tested end to end by the conformance suites.

#include "ifrt/runtime/dispatcher.h"

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace tessera::runtime {
namespace {

using ::tessera::testing::StatusIs;
using ::testing::HasSubstr;

// An implicit device-to-device transfer (as an Execute's argument reshard is): the levels
// "log" and "disallow" apply to it (JAX's table: explicit ones need log_explicit,
// disallow_explicit).
guard::TransferEvent DeviceToDevice(int64_t bytes) {
  guard::TransferEvent event;
  event.direction = guard::Direction::kDeviceToDevice;
  event.is_explicit = false;
  event.operation = "ReshardArrays";
  event.bytes = bytes;
  event.src_devices = {0};
  event.dst_devices = {1};
  return event;
}

TEST(DispatcherGuard, RefusesBeforeAnyByteAndCountsTheRefusal) {
  Dispatcher dispatcher(*guard::Policy::Parse("d2d=disallow"), nullptr, {});
  EXPECT_THAT(dispatcher.GuardTransfer(DeviceToDevice(4096)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("ReshardArrays")));
  EXPECT_EQ(dispatcher.guard().counters(guard::Direction::kDeviceToDevice).refused_events, 1);
  EXPECT_EQ(dispatcher.transfer_stats().device_to_device.bytes, 0);
}

TEST(DispatcherGuard, NamesTheActionOfATransferAndNoneOfACallThatMovesNothing) {
  Dispatcher dispatcher(*guard::Policy::Parse("d2d=log"), nullptr, {});
  absl::StatusOr<std::string> logged = dispatcher.GuardTransfer(DeviceToDevice(64));
  ASSERT_TRUE(logged.ok()) << logged.status();
  EXPECT_EQ(*logged, "log");
  absl::StatusOr<std::string> nothing = dispatcher.GuardTransfer(DeviceToDevice(0));
  ASSERT_TRUE(nothing.ok()) << nothing.status();
  EXPECT_EQ(*nothing, "");
  // The policy is the client's: changing it through guard() changes the door's verdict.
  dispatcher.guard().SetPolicy(*guard::Policy::Parse("d2d=disallow"));
  EXPECT_FALSE(dispatcher.GuardTransfer(DeviceToDevice(64)).ok());
}

TEST(DispatcherStats, CountsEachDirectionAndDevicePair) {
  Dispatcher dispatcher(guard::Policy(), nullptr, {});
  dispatcher.Record(TransferStats::kHost, 0, 100, 1);
  dispatcher.Record(1, TransferStats::kHost, 30, 2);
  dispatcher.Record(0, 1, 7, 1);
  dispatcher.Record(0, 1, 5, 1);
  dispatcher.Record(2, 2, 11, 3);
  const TransferStats stats = dispatcher.transfer_stats();
  EXPECT_EQ(stats.host_to_device.bytes, 100);
  EXPECT_EQ(stats.device_to_host.bytes, 30);
  EXPECT_EQ(stats.device_to_host.copies, 2);
  EXPECT_EQ(stats.device_to_device.bytes, 12);
  EXPECT_EQ(stats.device_to_device.copies, 2);
  EXPECT_EQ(stats.local.bytes, 11);
  EXPECT_EQ(stats.local.copies, 3);
  EXPECT_EQ(stats.per_device_pair.at({0, 1}).bytes, 12);
}

TEST(DispatcherProcesses, ASingleProcessRunsEachCallAsItIsWithoutAFrame) {
  Dispatcher dispatcher(guard::Policy(), nullptr, {});
  EXPECT_EQ(dispatcher.processes().transport(), nullptr);
  EXPECT_FALSE(dispatcher.processes().PlansItsPart());
  EXPECT_EQ(dispatcher.process_index(), 0);
  EXPECT_EQ(dispatcher.process_count(), 1);
  int calls = 0;
  absl::StatusOr<int> result =
      dispatcher.RunCall("ReshardArrays", [&](CollectiveCall* call) -> absl::StatusOr<int> {
        ++calls;
        EXPECT_EQ(call, nullptr);
        return 7;
      });
  EXPECT_EQ(calls, 1);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(*result, 7);
  absl::StatusOr<int64_t> tag = dispatcher.processes().AgreeOnCall(nullptr, "ReshardArrays", 0, {});
  ASSERT_TRUE(tag.ok()) << tag.status();
  EXPECT_EQ(*tag, -1);         // a local call: no tags
  dispatcher.StopProcesses();  // nothing to wait for
  EXPECT_EQ(dispatcher.process_count(), 1);
}

// Several processes, as far as RunCall sees them: a frame per call, and a late agreement that
// another process refused when the body never reached the agreement itself.
class TwoProcesses final : public Processes {
 public:
  int process_index() const override { return 0; }
  int process_count() const override { return 2; }
  Transport* transport() override { return nullptr; }
  bool PlansItsPart() const override { return true; }
  absl::Status RunCall(std::string_view op,
                       absl::FunctionRef<absl::Status(CollectiveCall*)> body) override {
    CollectiveCall call;
    const absl::Status status = body(&call);
    ++calls;
    if (call.agreed() || !status.ok()) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(std::string(op), ": process 1 refused"));
  }
  absl::StatusOr<int64_t> AgreeOnCall(CollectiveCall* call, std::string_view, int,
                                      absl::Span<const CollectivePart>) override {
    call->MarkAgreed();
    return 100;
  }
  absl::StatusOr<int64_t> AgreeOnFingerprint(CollectiveCall* call, std::string_view, uint64_t,
                                             int64_t) override {
    call->MarkAgreed();
    return 100;
  }
  PlanExecution Execute(const sharding::ReshardPlan& plan, int64_t element_bytes,
                        absl::Span<const PlanEndpoint> sources,
                        absl::Span<const PlanEndpoint> destinations, const PlanContext& context,
                        int64_t) override {
    return ExecutePlan(plan, element_bytes, sources, destinations, context);
  }
  void Abandon(const sharding::ReshardPlan&, int64_t, absl::Span<const PlanEndpoint>,
               absl::Span<const PlanEndpoint>, const absl::Status&, int64_t) override {}
  int calls = 0;
};

TEST(DispatcherProcesses, EachCallGetsAFrameAndALateRefusalFailsIt) {
  auto owned = std::make_unique<TwoProcesses>();
  TwoProcesses* processes = owned.get();
  Dispatcher dispatcher(guard::Policy(), std::move(owned), {});
  EXPECT_EQ(dispatcher.process_count(), 2);
  // The body agrees: its result stands.
  absl::StatusOr<int> agreed =
      dispatcher.RunCall("CopyArrays", [&](CollectiveCall* call) -> absl::StatusOr<int> {
        EXPECT_NE(call, nullptr);
        absl::StatusOr<int64_t> tag = dispatcher.processes().AgreeOnCall(call, "CopyArrays", 0, {});
        if (!tag.ok()) return tag.status();
        return static_cast<int>(*tag);
      });
  ASSERT_TRUE(agreed.ok()) << agreed.status();
  EXPECT_EQ(*agreed, 100);
  // The body succeeds without agreeing (nothing to move) and another process refused: the call
  // fails with that refusal.
  absl::StatusOr<int> late =
      dispatcher.RunCall("ReshardArrays", [](CollectiveCall*) -> absl::StatusOr<int> { return 1; });
  EXPECT_THAT(late, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("process 1 refused")));
  // The body's own error stands.
  absl::StatusOr<int> failed = dispatcher.RunCall("ReshardArrays", [](CollectiveCall*) {
    return absl::StatusOr<int>(absl::NotFoundError("no such array"));
  });
  EXPECT_THAT(failed, StatusIs(absl::StatusCode::kNotFound, HasSubstr("no such array")));
  EXPECT_EQ(processes->calls, 3);
}

TEST(DispatcherOrder, OneCallerEnqueuesAtATime) {
  Dispatcher dispatcher(guard::Policy(), nullptr, {});
  std::unique_lock<std::mutex> first = dispatcher.LockEnqueueOrder();
  std::atomic<bool> second_entered{false};
  std::thread other([&] {
    std::unique_lock<std::mutex> second = dispatcher.LockEnqueueOrder();
    second_entered = true;
  });
  // The other caller waits for the first to release the order (if it has not started yet, it
  // has not entered either).
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(second_entered);
  first.unlock();
  other.join();
  EXPECT_TRUE(second_entered);
}

}  // namespace
}  // namespace tessera::runtime
