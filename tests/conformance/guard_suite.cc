// The transfer guard as wired into the client: policies, scopes, sinks and statistics.
// Part of the API-contract suite (tests/conformance/client_conformance.h), instantiated for every
// registered client factory.

// GCC 12 reports false -Wmaybe-uninitialized inside absl::InlinedVector moves (Shape, Index).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "guard/recording_transfer_sink.h"
#include "tessera.h"
#include "tests/conformance/client_conformance.h"
#include "tests/ifrt/test_util.h"

namespace tessera::conformance {
namespace {

using ::tessera::testing::IsOk;
using ::tessera::testing::MakeArray;
using ::tessera::testing::Pattern;
using ::tessera::testing::ReadBack;
using ::tessera::testing::ReplicatedSharding;
using ::tessera::testing::RowSharding;
using ::tessera::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class GuardTest : public ClientConformanceTest {};

// Transfer guard wiring

TEST_P(GuardTest, GuardRefusesImplicitDeviceToDevice) {
  const Shape shape({8, 6});
  const std::vector<uint8_t> data = Pattern(8 * 6 * 4, 2);
  ASSERT_OK_AND_ASSIGN(ArrayRef a, MakeArray(client(), data, kS32, shape, RowSharding(All())));
  ASSERT_THAT(a->GetReadyFuture().Await(), IsOk());
  guard::Policy policy;
  policy.device_to_device = guard::Level::kDisallow;
  client().transfer_guard().SetPolicy(policy);

  std::vector<ArrayRef> in = {a};
  std::vector<ArraySpec> specs = {{kS32, shape, ReplicatedSharding(All(), shape)}};
  const TransferStats before = client().transfer_stats();
  EXPECT_THAT(client().ReshardArrays(absl::MakeSpan(in), specs, ArrayCopySemantics::kDonateInput,
                                     {.is_explicit = false}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Disallowed device-to-device transfer")));
  EXPECT_THAT(client().CopyArrays(absl::MakeSpan(in), Reversed(), std::nullopt,
                                  ArrayCopySemantics::kDonateInput, {.is_explicit = false}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Disallowed device-to-device transfer")));
  EXPECT_EQ(client().transfer_stats(), before);
  EXPECT_FALSE(a->IsDeleted());
  ExpectContents(a, data);
  EXPECT_EQ(client().transfer_guard().counters(guard::Direction::kDeviceToDevice).refused_events,
            2);

  // Explicit: allowed.
  ASSERT_OK_AND_ASSIGN(
      std::vector<ArrayRef> out,
      client().ReshardArrays(absl::MakeSpan(in), specs, ArrayCopySemantics::kAlwaysCopy));
  ExpectContents(out[0], data);
  EXPECT_GT(client().transfer_stats().device_to_device.bytes, before.device_to_device.bytes);
  client().transfer_guard().SetPolicy(guard::Policy());
}

TEST_P(GuardTest, GuardNeverRefusesPureAliasing) {
  const Shape shape({8, 6});
  const std::vector<uint8_t> data = Pattern(8 * 6 * 4, 3);
  ShardingRef rows = RowSharding(All());
  ASSERT_OK_AND_ASSIGN(ArrayRef a, MakeArray(client(), data, kS32, shape, rows));
  client().transfer_guard().SetPolicy(guard::Policy::Uniform(guard::Level::kDisallowExplicit));
  std::vector<ArrayRef> in = {a};
  std::vector<ArraySpec> same = {{kS32, shape, rows}};
  ASSERT_OK_AND_ASSIGN(
      std::vector<ArrayRef> out,
      client().ReshardArrays(absl::MakeSpan(in), same, ArrayCopySemantics::kReuseInput,
                             {.is_explicit = false}));
  ASSERT_OK_AND_ASSIGN(std::vector<ArrayRef> copied,
                       client().CopyArrays(absl::MakeSpan(in), std::nullopt, std::nullopt,
                                           ArrayCopySemantics::kReuseInput));
  // Copies within a device are not transfers either.
  ASSERT_OK_AND_ASSIGN(
      std::vector<ArrayRef> local,
      client().ReshardArrays(absl::MakeSpan(in), same, ArrayCopySemantics::kAlwaysCopy));
  ASSERT_THAT(client().GetReadyFuture(local).Await(), IsOk());
  // Zero-sized arrays move nothing.
  ASSERT_OK_AND_ASSIGN(ArrayRef empty, client().MakeArrayFromHostBuffer(
                                           nullptr, kS32, Shape({0, 5}), std::nullopt, rows,
                                           HostBufferSemantics::kImmutableOnlyDuringCall, nullptr,
                                           {.is_explicit = false}));
  EXPECT_THAT(
      empty->CopyToHostBuffer(nullptr, std::nullopt, ArrayCopySemantics::kAlwaysCopy).Await(),
      IsOk());
  client().transfer_guard().SetPolicy(guard::Policy());
  ExpectContents(out[0], data);
  ExpectContents(copied[0], data);
  ExpectContents(local[0], data);
}

TEST_P(GuardTest, GuardHostToDeviceAndDeviceToHost) {
  const Shape shape({8, 6});
  const std::vector<uint8_t> data = Pattern(8 * 6 * 4, 4);
  ShardingRef rows = RowSharding(All());
  ASSERT_OK_AND_ASSIGN(ArrayRef a, MakeArray(client(), data, kS32, shape, rows));
  guard::Policy policy;
  policy.host_to_device = guard::Level::kDisallow;
  policy.device_to_host = guard::Level::kDisallow;
  client().transfer_guard().SetPolicy(policy);
  const TransferStats before = client().transfer_stats();
  int on_done_calls = 0;
  EXPECT_THAT(client().MakeArrayFromHostBuffer(data.data(), kS32, shape, std::nullopt, rows,
                                               HostBufferSemantics::kImmutableOnlyDuringCall,
                                               [&] { ++on_done_calls; }, {.is_explicit = false}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Disallowed host-to-device transfer")));
  // A failed call is done with the host buffer: on_done still runs, once.
  EXPECT_EQ(on_done_calls, 1);
  std::vector<uint8_t> out(data.size(), 0);
  EXPECT_THAT(a->CopyToHostBuffer(out.data(), std::nullopt, ArrayCopySemantics::kAlwaysCopy,
                                  {.is_explicit = false})
                  .Await(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Disallowed device-to-host transfer")));
  EXPECT_EQ(client().transfer_stats(), before);
  EXPECT_TRUE(std::all_of(out.begin(), out.end(), [](uint8_t b) { return b == 0; }));
  // Explicit ones pass.
  ASSERT_OK_AND_ASSIGN(ArrayRef b, MakeArray(client(), data, kS32, shape, rows));
  ExpectContents(b, data);
  client().transfer_guard().SetPolicy(guard::Policy());
}

TEST_P(GuardTest, ScopedGuardIsPerThread) {
  const Shape shape({4, 4});
  const std::vector<uint8_t> data = Pattern(64, 5);
  ShardingRef rows = RowSharding(All());
  guard::ScopedTransferGuard scope(guard::Level::kDisallow);
  EXPECT_THAT(MakeArray(client(), data, kS32, shape, rows, {.is_explicit = false}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Disallowed host-to-device transfer")));
  absl::Status other_thread = absl::UnknownError("not run");
  std::thread t([&] {
    absl::StatusOr<ArrayRef> a =
        MakeArray(client(), data, kS32, shape, rows, {.is_explicit = false});
    other_thread = a.status();
    if (a.ok()) {
      absl::StatusOr<std::vector<uint8_t>> out = ReadBack(*a, {.is_explicit = false});
      other_thread = out.status();
      if (out.ok() && *out != data) other_thread = absl::DataLossError("wrong data");
    }
  });
  t.join();
  EXPECT_THAT(other_thread, IsOk());
  // Explicit transfers pass the scope's `disallow`.
  ASSERT_OK_AND_ASSIGN(ArrayRef b, MakeArray(client(), data, kS32, shape, rows));
  ExpectContents(b, data);
}

TEST_P(GuardTest, RecordingSinkSeesOneEventPerCallAndDirection) {
  const Shape shape({8, 6});
  const int64_t bytes = 8 * 6 * 4;
  const std::vector<uint8_t> data = Pattern(bytes, 6);
  auto sink = std::make_shared<guard::RecordingTransferSink>();
  const int id = client().transfer_guard().AddSink(sink);
  client().transfer_guard().SetPolicy(guard::Policy::Uniform(guard::Level::kLogExplicit));

  // Host to device: every region read once, replicas forwarded on the devices; the forwards are
  // legs of the upload (docs/transfer-guard.md): the event and host_to_device count every byte
  // written to every replica. The CPU devices' replicas share one buffer, written once.
  ShardingRef replicated = ReplicatedSharding(All(), shape);
  const int64_t cpu = static_cast<int64_t>(OfKind("cpu").size());
  const int64_t buffers = n_ - cpu + (cpu > 0 ? 1 : 0);
  TransferStats before = client().transfer_stats();
  ASSERT_OK_AND_ASSIGN(ArrayRef a, MakeArray(client(), data, kS32, shape, replicated));
  ASSERT_THAT(a->GetReadyFuture().Await(), IsOk());
  std::vector<guard::TransferEvent> events = sink->events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].direction, guard::Direction::kHostToDevice);
  EXPECT_EQ(events[0].operation, "MakeArrayFromHostBuffer");
  EXPECT_EQ(events[0].bytes, bytes * buffers);
  EXPECT_EQ(events[0].dtype, "s32");
  EXPECT_THAT(events[0].shape, ElementsAre(8, 6));
  EXPECT_TRUE(events[0].is_explicit);
  EXPECT_EQ(client().transfer_stats().host_to_device.bytes - before.host_to_device.bytes,
            bytes * buffers);
  EXPECT_EQ(client().transfer_stats().device_to_device, before.device_to_device);
  EXPECT_EQ(sink->records()[0].action, guard::Action::kLog);

  // Device to device.
  sink->Clear();
  std::vector<ArrayRef> in = {a};
  ShardingRef rows = RowSharding(Reversed());
  std::vector<ArraySpec> specs = {{kS32, shape, rows}};
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<const sharding::ReshardPlan> plan,
                       runtime().PlanReshard(*a, specs[0]));
  before = client().transfer_stats();
  ASSERT_OK_AND_ASSIGN(
      std::vector<ArrayRef> out,
      client().ReshardArrays(absl::MakeSpan(in), specs, ArrayCopySemantics::kAlwaysCopy,
                             {.is_explicit = false}));
  ASSERT_THAT(out[0]->GetReadyFuture().Await(), IsOk());
  events = sink->events();
  // From a replicated source every destination box is already on its device: no
  // d2d at all.
  EXPECT_EQ(plan->cross_location_bytes, 0);
  EXPECT_TRUE(events.empty());
  // Replicated from rows: every device needs the other rows.
  in = {out[0]};
  specs = {{kS32, shape, replicated}};
  ASSERT_OK_AND_ASSIGN(plan, runtime().PlanReshard(*out[0], specs[0]));
  ASSERT_OK_AND_ASSIGN(
      out, client().ReshardArrays(absl::MakeSpan(in), specs, ArrayCopySemantics::kAlwaysCopy,
                                  {.is_explicit = false}));
  ASSERT_THAT(out[0]->GetReadyFuture().Await(), IsOk());
  events = sink->events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].direction, guard::Direction::kDeviceToDevice);
  EXPECT_EQ(events[0].operation, "ReshardArrays");
  EXPECT_FALSE(events[0].is_explicit);
  EXPECT_EQ(events[0].bytes, plan->cross_location_bytes);
  EXPECT_EQ(plan->cross_location_bytes, bytes * (n_ - 1));
  // Every device sends its rows and receives the others': each named once, ascending, as is each
  // memory kind, however many copies the plan has.
  const DeviceListRef all = All();
  std::vector<int> ids;
  for (Device* d : all->devices()) ids.push_back(d->Id().value);
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(events[0].src_devices, ids);
  EXPECT_EQ(events[0].dst_devices, ids);
  std::set<std::string> kinds;
  for (Device* d : all->devices()) {
    ASSERT_OK_AND_ASSIGN(Memory * m, d->DefaultMemory());
    kinds.insert(m->Kind().DebugString());
  }
  EXPECT_EQ(events[0].src_memory_kind, absl::StrJoin(kinds, ","));
  EXPECT_EQ(events[0].dst_memory_kind, absl::StrJoin(kinds, ","));
  EXPECT_EQ(client().transfer_stats().device_to_device.bytes - before.device_to_device.bytes,
            plan->cross_location_bytes);
  // Internal legs (host staging between platforms) count as the movement they
  // serve: device to device, never host to device or device to host.
  EXPECT_EQ(client().transfer_stats().host_to_device, before.host_to_device);
  EXPECT_EQ(client().transfer_stats().device_to_host, before.device_to_host);

  // Device to host.
  sink->Clear();
  before = client().transfer_stats();
  ASSERT_THAT(ReadBack(out[0]), IsOk());
  events = sink->events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].direction, guard::Direction::kDeviceToHost);
  EXPECT_EQ(events[0].operation, "CopyToHostBuffer");
  EXPECT_EQ(events[0].bytes, bytes);
  EXPECT_EQ(client().transfer_stats().device_to_host.bytes - before.device_to_host.bytes, bytes);

  client().transfer_guard().RemoveSink(id);
  client().transfer_guard().SetPolicy(guard::Policy());
}

TESSERA_INSTANTIATE_CLIENT_SUITE(GuardTest);

}  // namespace
}  // namespace tessera::conformance
