// TransferTrace attached to a runtime client: one event per copy the plan
// moves, with its endpoints, boxes and bytes; copies on one stream in order and
// not overlapping; nothing recorded once the trace is detached.

#include "ifrt/transfer_trace.h"

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ifrt/introspection.h"
#include "tessera.h"
#include "tests/ifrt/test_util.h"

namespace tessera {
namespace {

using ::tessera::testing::IsOk;
using ::testing::UnorderedElementsAreArray;

// (src device, dst device, bytes, src box, dst box) of a copy.
using CopyKey = std::tuple<int64_t, int64_t, int64_t, std::string, std::string>;

class TransferTraceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::shared_ptr<Client>> c = testing::CreateCpuTestClient(4);
    ASSERT_THAT(c, IsOk());
    client_ = *std::move(c);
    runtime_ = client_->introspection();
    ASSERT_NE(runtime_, nullptr);
    devices_ = *client_->MakeDeviceList(client_->devices());
  }

  ShardingRef Named(const std::string& spec) {
    return *NamedSharding::Create(*sharding::Mesh::Parse("mesh{x=2,y=2}"),
                                  *sharding::PartitionSpec::Parse(spec), devices_, MemoryKind());
  }

  std::shared_ptr<Client> client_;
  ClientIntrospection* runtime_ = nullptr;
  DeviceListRef devices_;
  const DType f32_{DType::kF32};
  const Shape shape_{{96, 64}};
};

TEST_F(TransferTraceTest, RecordsEveryCopyOfThePlanInStreamOrder) {
  std::vector<uint8_t> data = testing::Pattern(96 * 64 * 4, 3);
  auto made = client_->MakeArrayFromHostBuffer(data.data(), f32_, shape_, std::nullopt,
                                               Named("P((x,y),None)"),
                                               HostBufferSemantics::kImmutableOnlyDuringCall, {});
  ASSERT_THAT(made, IsOk());
  ASSERT_THAT((*made)->GetReadyFuture().Await(), IsOk());
  const ArraySpec spec{f32_, shape_, Named("P(None,(x,y))")};
  auto plan = runtime_->PlanReshard(**made, spec);
  ASSERT_THAT(plan, IsOk());
  // The plan's locations are memory ids; the trace names devices.
  std::map<int64_t, int32_t> device_of;  // memory id -> device id
  for (Device* d : client_->devices()) {
    for (Memory* m : d->Memories()) device_of[m->Id().value] = d->Id().value;
  }
  std::vector<CopyKey> expected;
  for (const sharding::BoxCopy& c : (*plan)->copies) {
    if (c.kind == sharding::BoxCopy::Kind::kAlias || c.bytes == 0) continue;
    ASSERT_TRUE(device_of.contains(c.src_location) && device_of.contains(c.dst_location));
    expected.emplace_back(device_of[c.src_location], device_of[c.dst_location], c.bytes,
                          c.src_box.ToString(), c.dst_box.ToString());
  }
  ASSERT_EQ(expected.size(), 16u);  // 4 local + 12 cross-location

  auto trace = std::make_shared<TransferTrace>();
  runtime_->SetTransferTrace(trace);
  std::vector<ArrayRef> in = {*made};
  auto out = client_->ReshardArrays(absl::MakeSpan(in), {spec}, ArrayCopySemantics::kAlwaysCopy);
  ASSERT_THAT(out, IsOk());
  ASSERT_THAT((*out)[0]->GetReadyFuture().Await(), IsOk());
  runtime_->SetTransferTrace(nullptr);

  const std::vector<TransferTraceEvent> events = trace->events();
  std::vector<CopyKey> got;
  std::map<int32_t, std::vector<const TransferTraceEvent*>> by_stream;
  for (const TransferTraceEvent& e : events) {
    SCOPED_TRACE(e.src_box + " -> " + e.dst_box);
    EXPECT_EQ(e.operation, "ReshardArrays");
    EXPECT_EQ(e.copies, 1);
    EXPECT_TRUE(e.ok);
    EXPECT_EQ(e.device,
              e.dst_device);  // device-to-device: the receiver runs it
    EXPECT_EQ(e.direction, e.src_device == e.dst_device ? "local" : "device_to_device");
    EXPECT_EQ(e.guard_action, e.direction == "local" ? "" : "allow");
    EXPECT_LE(e.start_ns, e.end_ns);
    got.emplace_back(e.src_device, e.dst_device, e.bytes, e.src_box, e.dst_box);
    by_stream[e.device].push_back(&e);
  }
  EXPECT_THAT(got, UnorderedElementsAreArray(expected));
  for (auto& [device, stream] : by_stream) {
    std::sort(stream.begin(), stream.end(),
              [](const auto* a, const auto* b) { return a->start_ns < b->start_ns; });
    for (size_t i = 1; i < stream.size(); ++i) {
      EXPECT_GE(stream[i]->start_ns, stream[i - 1]->end_ns)
          << "copies overlap on device " << device << "'s stream";
    }
  }
  const std::string json = trace->ToChromeTraceJson();
  size_t slices = 0;
  for (size_t at = json.find("\"ph\":\"X\""); at != std::string::npos;
       at = json.find("\"ph\":\"X\"", at + 1)) {
    ++slices;
  }
  EXPECT_EQ(slices, events.size());
  EXPECT_NE(json.find("\"src_box\":\"["), std::string::npos);

  // Detached: the next reshard records nothing.
  auto again = client_->ReshardArrays(absl::MakeSpan(in), {spec}, ArrayCopySemantics::kAlwaysCopy);
  ASSERT_THAT(again, IsOk());
  ASSERT_THAT((*again)[0]->GetReadyFuture().Await(), IsOk());
  EXPECT_EQ(trace->events().size(), events.size());
}

// This process's side of the parts a multi-process client exchanges with another process: each
// on the row of that process, named for which way it went.
TEST(TransferTraceJsonTest, PartsExchangedWithAnotherProcessAreOnItsRow) {
  TransferTrace trace;
  TransferTraceEvent received{.operation = "ReshardArrays",
                              .device = 1,
                              .src_device = 3,
                              .dst_device = 1,
                              .bytes = 1536,
                              .copies = 1,
                              .direction = "device_to_device",
                              .guard_action = "allow",
                              .start_ns = 1000,
                              .end_ns = 5000,
                              .peer_process = 1};
  TransferTraceEvent sent = received;
  sent.device = sent.src_device = 0;
  sent.dst_device = 2;
  TransferTraceEvent local = received;
  local.src_device = 0;
  local.peer_process = -1;
  trace.Add(received);
  trace.Add(sent);
  trace.Add(local);
  const std::string json = trace.ToChromeTraceJson();
  const std::string row = absl::StrCat("\"tid\":", TransferTrace::kPeerProcessRow + 1, ",");
  EXPECT_THAT(json,
              ::testing::HasSubstr(absl::StrCat(
                  "{\"name\":\"ReshardArrays device 3 -> device 1 (received from process 1)\","
                  "\"cat\":\"device_to_device\",\"ph\":\"X\",\"pid\":0,",
                  row)));
  EXPECT_THAT(json, ::testing::HasSubstr(absl::StrCat(
                        "{\"name\":\"ReshardArrays device 0 -> device 2 (sent to process 1)\","
                        "\"cat\":\"device_to_device\",\"ph\":\"X\",\"pid\":0,",
                        row)));
  EXPECT_THAT(json, ::testing::HasSubstr("\"dst_device\":1,\"peer_process\":1,"));
  // A copy this process ran: on its device's row, no peer.
  EXPECT_THAT(json, ::testing::HasSubstr("{\"name\":\"ReshardArrays device 0 -> device 1\","
                                         "\"cat\":\"device_to_device\",\"ph\":\"X\",\"pid\":0,"
                                         "\"tid\":1,"));
  size_t peers = 0;
  for (size_t at = json.find("peer_process"); at != std::string::npos;
       at = json.find("peer_process", at + 1)) {
    ++peers;
  }
  EXPECT_EQ(peers, 2u);
}

}  // namespace
}  // namespace tessera
