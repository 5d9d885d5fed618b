// Every public entry point that can move bytes, on every topology (4 CPU devices; 2 lavapipe
// devices; 2 CPU + 2 lavapipe), against the transfer guard (docs/transfer-guard.md, "What each call
// of the client API moves"):
//
//   - under a policy that refuses the call's direction (disallow with an implicit call,
//     disallow_explicit with either), the call fails with the documented message before any byte
//     moves (transfer_stats unchanged), counts one refusal, and leaves its inputs readable (not
//     even a donated input is deleted);
//   - under log_explicit, exactly one event per call and direction reaches a
//     RecordingTransferSink, with the bytes counted independently here; the trace's direction and
//     guard_action and transfer_stats agree with it;
//   - calls that copy within devices only (kAlwaysCopy assembly, disassembly,
//     FullyReplicatedShard) and RemapArrays are never asked, even under disallow_explicit.
//
// The Vulkan instances need VK_DRIVER_FILES to name two lavapipe ICD manifests (ctest sets it; the
// binary sets it itself when unset).

// GCC 12 reports false -Wmaybe-uninitialized inside absl::InlinedVector moves (Shape, Index).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <atomic>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/vulkan/vulkan_platform.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "guard/recording_transfer_sink.h"
#include "ifrt/introspection.h"
#include "ifrt/transfer_trace.h"
#include "tests/ifrt/test_util.h"
#include "tests/testing/vulkan_icds.h"

namespace tessera {
namespace {

using ::tessera::testing::IsOk;
using ::tessera::testing::MakeArray;
using ::tessera::testing::Pattern;
using ::tessera::testing::ReadBack;
using ::tessera::testing::SliceBox;
using ::tessera::testing::StatusIs;
using ::testing::HasSubstr;

constexpr DType kS32(DType::kS32);

struct Topology {
  std::string name;
  int cpu_devices;
  VulkanMode vulkan;
  int expected_devices;
};

enum class Entry {
  kMakeArrayReplicated,
  kMakeArrayPartiallyReplicated,
  kCopyToHostBuffer,
  kReshardArrays,
  kCopyArrays,
  kAssembleAlwaysCopy,
  kDisassembleAlwaysCopy,
  kFullyReplicatedShardAlwaysCopy,
  kRemapArrays,
};

void PrintTo(const Topology& t, std::ostream* os) { *os << t.name; }

std::string EntryName(Entry e) {
  switch (e) {
    case Entry::kMakeArrayReplicated:
      return "MakeArrayFromHostBufferReplicated";
    case Entry::kMakeArrayPartiallyReplicated:
      return "MakeArrayFromHostBufferPartiallyReplicated";
    case Entry::kCopyToHostBuffer:
      return "CopyToHostBuffer";
    case Entry::kReshardArrays:
      return "ReshardArrays";
    case Entry::kCopyArrays:
      return "CopyArrays";
    case Entry::kAssembleAlwaysCopy:
      return "AssembleAlwaysCopy";
    case Entry::kDisassembleAlwaysCopy:
      return "DisassembleAlwaysCopy";
    case Entry::kFullyReplicatedShardAlwaysCopy:
      return "FullyReplicatedShardAlwaysCopy";
    case Entry::kRemapArrays:
      return "RemapArrays";
  }
  return "unknown";
}

void PrintTo(Entry e, std::ostream* os) { *os << EntryName(e); }

const char* TraceDirection(guard::Direction d) {
  switch (d) {
    case guard::Direction::kHostToDevice:
      return "host_to_device";
    case guard::Direction::kDeviceToDevice:
      return "device_to_device";
    case guard::Direction::kDeviceToHost:
      return "device_to_host";
  }
  return "";
}

TransferStats::Counter StatsOf(const TransferStats& s, std::optional<guard::Direction> d) {
  if (!d.has_value()) return s.local;
  switch (*d) {
    case guard::Direction::kHostToDevice:
      return s.host_to_device;
    case guard::Direction::kDeviceToDevice:
      return s.device_to_device;
    case guard::Direction::kDeviceToHost:
      return s.device_to_host;
  }
  return {};
}

// One call of one entry point, with fresh inputs and what it must do. Every expected number is
// computed here from the geometry, never read from the runtime.
struct Scenario {
  std::string op;                             // the operation the guard's event names
  std::optional<guard::Direction> direction;  // none: the call is never a transfer
  int64_t guarded_bytes = 0;                  // the event's bytes
  int64_t local_bytes = 0;                    // bytes copied within devices
  bool donates = false;                       // the call is made with kDonateInput
  std::vector<ArrayRef> inputs;
  std::vector<std::vector<uint8_t>> input_data;
  // Runs the call (awaiting nothing but a CopyToHostBuffer future).
  std::function<absl::StatusOr<std::vector<ArrayRef>>(TransferOptions)> call;
  // Checks the outputs' contents once they are ready.
  std::function<void(const std::vector<ArrayRef>&)> verify;
  std::shared_ptr<std::atomic<int>> on_done_calls = std::make_shared<std::atomic<int>>(0);
};

class GuardPathsTest : public ::testing::TestWithParam<std::tuple<Topology, Entry>> {
 protected:
  void SetUp() override {
    ::tessera::testing::SetVulkanIcdsIfUnset(TESSERA_IFRT_TEST_ICDS);
    const Topology& t = std::get<0>(GetParam());
    absl::StatusOr<std::shared_ptr<Client>> c = CreateClient({.cpu_devices = t.cpu_devices,
                                                              .cpu_threads_per_device = 1,
                                                              .vulkan = t.vulkan,
                                                              .transfer_guard = guard::Policy()});
    if (!c.ok()) GTEST_SKIP() << "cannot create a " << t.name << " client: " << c.status();
    client_ = *std::move(c);
    client_->transfer_guard().SetDefaultLogSinkEnabled(false);
    n_ = static_cast<int>(client_->devices().size());
    ASSERT_EQ(n_, t.expected_devices);
    validation_messages_ = VulkanValidationMessageCount();
  }
  void TearDown() override {
    EXPECT_EQ(VulkanValidationMessageCount(), validation_messages_)
        << "the Vulkan validation layer reported problems";
  }

  Client& client() { return *client_; }
  DeviceListRef Positions(int from, int to, bool reversed = false) {
    std::vector<int> p;
    for (int i = from; i < to; ++i) p.push_back(i);
    if (reversed) std::reverse(p.begin(), p.end());
    return testing::DevicesAt(client(), p);
  }
  DeviceListRef All() { return Positions(0, n_); }
  // The buffers an upload writes when the devices at each of `groups` hold one region: one per
  // device, but one for all the CPU devices of a group (their host buffers serve every CPU device,
  // so the replicas share one).
  int BuffersWritten(const std::vector<std::vector<int>>& groups) {
    int buffers = 0;
    for (const std::vector<int>& group : groups) {
      bool cpu_written = false;
      for (int p : group) {
        const bool cpu = client().devices()[p]->Kind() == "cpu";
        if (!cpu || !cpu_written) ++buffers;
        cpu_written = cpu_written || cpu;
      }
    }
    return buffers;
  }
  Shape ArrayShape() const { return Shape({2 * n_, 6}); }
  int64_t ArrayBytes() const { return 2 * n_ * 6 * 4; }
  // Rows [2i, 2i+2) of `data`: shard i of a row sharding over n devices.
  std::vector<uint8_t> Rows(const std::vector<uint8_t>& data, int i, int rows = 2) {
    return SliceBox(data, ArrayShape().dims(), 4, {i * rows, 0}, {rows, 6});
  }
  // Made under the default policy (allow), ready.
  ArrayRef Make(const std::vector<uint8_t>& data, const Shape& shape, ShardingRef sharding) {
    absl::StatusOr<ArrayRef> a = MakeArray(client(), data, kS32, shape, std::move(sharding));
    EXPECT_THAT(a, IsOk());
    if (!a.ok()) return nullptr;
    EXPECT_THAT((*a)->GetReadyFuture().Await(), IsOk());
    return *a;
  }
  void ExpectOutputs(const std::vector<ArrayRef>& out,
                     const std::vector<std::vector<uint8_t>>& expected) {
    ASSERT_EQ(out.size(), expected.size());
    for (size_t i = 0; i < out.size(); ++i) {
      absl::StatusOr<std::vector<uint8_t>> back = ReadBack(out[i]);
      ASSERT_THAT(back, IsOk());
      EXPECT_TRUE(*back == expected[i]) << "output " << i << " differs";
    }
  }

  Scenario MakeScenario(Entry entry, uint32_t seed);
  Scenario UploadScenario(ShardingRef sharding, int64_t bytes, uint32_t seed);
  Scenario DownloadScenario(uint32_t seed);
  Scenario ReshardScenario(bool copy_arrays, uint32_t seed);
  Scenario LocalCopyScenario(Entry entry, uint32_t seed);
  Scenario RemapScenario(uint32_t seed);

  std::shared_ptr<Client> client_;
  int n_ = 0;
  int64_t validation_messages_ = 0;
};

Scenario GuardPathsTest::UploadScenario(ShardingRef sharding, int64_t bytes, uint32_t seed) {
  Scenario s;
  s.op = "MakeArrayFromHostBuffer";
  s.direction = guard::Direction::kHostToDevice;
  s.guarded_bytes = bytes;
  auto data = std::make_shared<std::vector<uint8_t>>(Pattern(ArrayBytes(), seed));
  s.call = [this, data, sharding, calls = s.on_done_calls](TransferOptions options) {
    absl::StatusOr<ArrayRef> a = client().MakeArrayFromHostBuffer(
        data->data(), kS32, ArrayShape(), std::nullopt, sharding,
        HostBufferSemantics::kImmutableUntilTransferCompletes, [calls] { ++*calls; }, options);
    if (!a.ok()) return absl::StatusOr<std::vector<ArrayRef>>(a.status());
    return absl::StatusOr<std::vector<ArrayRef>>(std::vector<ArrayRef>{*a});
  };
  s.verify = [this, data](const std::vector<ArrayRef>& out) { ExpectOutputs(out, {*data}); };
  return s;
}

Scenario GuardPathsTest::DownloadScenario(uint32_t seed) {
  // Half the rows on each half of the mesh, replicated across its other axis: each region is read
  // from one replica only, so the host receives the array once.
  Scenario s;
  s.op = "CopyToHostBuffer";
  s.direction = guard::Direction::kDeviceToHost;
  s.guarded_bytes = ArrayBytes();
  s.input_data = {Pattern(ArrayBytes(), seed)};
  s.inputs = {Make(s.input_data[0], ArrayShape(),
                   testing::Named(absl::StrCat("mesh{x=2,y=", n_ / 2, "}"), "P(x,None)", All()))};
  auto host = std::make_shared<std::vector<uint8_t>>(ArrayBytes(), 0);
  s.call = [array = s.inputs[0], host](TransferOptions options) {
    absl::Status st =
        array
            ->CopyToHostBuffer(host->data(), std::nullopt, ArrayCopySemantics::kAlwaysCopy, options)
            .Await();
    if (!st.ok()) return absl::StatusOr<std::vector<ArrayRef>>(st);
    return absl::StatusOr<std::vector<ArrayRef>>(std::vector<ArrayRef>{});
  };
  s.verify = [host, expected = s.input_data[0]](const std::vector<ArrayRef>&) {
    EXPECT_TRUE(*host == expected) << "the host buffer differs";
  };
  return s;
}

Scenario GuardPathsTest::ReshardScenario(bool copy_arrays, uint32_t seed) {
  // Two arrays in one call: one event for both. Rows over all devices to rows over the devices
  // reversed (n is even: every device needs another's rows), or rows over the first half copied to
  // the second half: every byte moves between devices.
  Scenario s;
  s.op = copy_arrays ? "CopyArrays (2 arrays; the first)" : "ReshardArrays (2 arrays; the first)";
  s.direction = guard::Direction::kDeviceToDevice;
  s.guarded_bytes = 2 * ArrayBytes();
  s.donates = true;
  DeviceListRef from = copy_arrays ? Positions(0, n_ / 2) : All();
  for (uint32_t k = 0; k < 2; ++k) {
    s.input_data.push_back(Pattern(ArrayBytes(), seed + k));
    s.inputs.push_back(Make(s.input_data.back(), ArrayShape(), testing::RowSharding(from)));
  }
  if (copy_arrays) {
    DeviceListRef to = Positions(n_ / 2, n_);
    s.call = [this, inputs = s.inputs, to](TransferOptions options) {
      std::vector<ArrayRef> in = inputs;
      return client().CopyArrays(absl::MakeSpan(in), to, std::nullopt,
                                 ArrayCopySemantics::kDonateInput, options);
    };
  } else {
    ShardingRef to = testing::RowSharding(Positions(0, n_, /*reversed=*/true));
    s.call = [this, inputs = s.inputs, to](TransferOptions options) {
      std::vector<ArrayRef> in = inputs;
      std::vector<ArraySpec> specs = {{kS32, ArrayShape(), to}, {kS32, ArrayShape(), to}};
      return client().ReshardArrays(absl::MakeSpan(in), specs, ArrayCopySemantics::kDonateInput,
                                    options);
    };
  }
  s.verify = [this, expected = s.input_data](const std::vector<ArrayRef>& out) {
    ExpectOutputs(out, expected);
  };
  return s;
}

Scenario GuardPathsTest::LocalCopyScenario(Entry entry, uint32_t seed) {
  Scenario s;
  const std::vector<uint8_t> data = Pattern(ArrayBytes(), seed);
  std::vector<std::vector<uint8_t>> rows;
  for (int i = 0; i < n_; ++i) rows.push_back(Rows(data, i));
  if (entry == Entry::kAssembleAlwaysCopy) {
    s.op = "AssembleArrayFromSingleDeviceArrays";
    s.local_bytes = ArrayBytes();
    for (int i = 0; i < n_; ++i) {
      s.input_data.push_back(rows[i]);
      s.inputs.push_back(Make(rows[i], Shape({2, 6}),
                              SingleDeviceSharding::Create(client().devices()[i], MemoryKind())));
    }
    ShardingRef sharding = testing::RowSharding(All());
    s.call = [this, inputs = s.inputs, sharding](TransferOptions) {
      std::vector<ArrayRef> in = inputs;
      absl::StatusOr<ArrayRef> a = client().AssembleArrayFromSingleDeviceArrays(
          kS32, ArrayShape(), sharding, absl::MakeSpan(in), ArrayCopySemantics::kAlwaysCopy);
      if (!a.ok()) return absl::StatusOr<std::vector<ArrayRef>>(a.status());
      return absl::StatusOr<std::vector<ArrayRef>>(std::vector<ArrayRef>{*a});
    };
    s.verify = [this, data](const std::vector<ArrayRef>& out) { ExpectOutputs(out, {data}); };
  } else if (entry == Entry::kDisassembleAlwaysCopy) {
    s.op = "DisassembleIntoSingleDeviceArrays";
    s.local_bytes = ArrayBytes();
    s.input_data = {data};
    s.inputs = {Make(data, ArrayShape(), testing::RowSharding(All()))};
    s.call = [array = s.inputs[0]](TransferOptions) {
      return array->DisassembleIntoSingleDeviceArrays(ArrayCopySemantics::kAlwaysCopy);
    };
    s.verify = [this, rows](const std::vector<ArrayRef>& out) { ExpectOutputs(out, rows); };
  } else {
    s.op = "FullyReplicatedShard";
    s.local_bytes = ArrayBytes();  // one replica, not n
    s.input_data = {data};
    s.inputs = {Make(data, ArrayShape(), testing::ReplicatedSharding(All(), ArrayShape()))};
    s.call = [array = s.inputs[0]](TransferOptions) {
      absl::StatusOr<ArrayRef> a = array->FullyReplicatedShard(ArrayCopySemantics::kAlwaysCopy);
      if (!a.ok()) return absl::StatusOr<std::vector<ArrayRef>>(a.status());
      return absl::StatusOr<std::vector<ArrayRef>>(std::vector<ArrayRef>{*a});
    };
    s.verify = [this, data](const std::vector<ArrayRef>& out) { ExpectOutputs(out, {data}); };
  }
  return s;
}

Scenario GuardPathsTest::RemapScenario(uint32_t seed) {
  Scenario s;
  s.op = "RemapArrays";
  s.donates = true;
  const std::vector<uint8_t> data = Pattern(ArrayBytes(), seed);
  ShardingRef rows = testing::RowSharding(All());
  s.input_data = {data};
  s.inputs = {Make(data, ArrayShape(), rows)};
  auto plan = std::make_shared<RemapPlan>();
  plan->input_specs = {{kS32, ArrayShape(), rows}};
  plan->output_specs = {
      {kS32, Shape({2, 6}), SingleDeviceSharding::Create(client().devices()[1], MemoryKind())}};
  plan->mappings = {{0, 0, {{1, 2, 1}}, {{0, 1, 1}}}};
  s.call = [this, inputs = s.inputs, plan](TransferOptions) {
    std::vector<ArrayRef> in = inputs;
    return client().RemapArrays(*plan, absl::MakeSpan(in), ArrayCopySemantics::kDonateInput);
  };
  s.verify = [this, slice = Rows(data, 1)](const std::vector<ArrayRef>& out) {
    ExpectOutputs(out, {slice});
  };
  return s;
}

Scenario GuardPathsTest::MakeScenario(Entry entry, uint32_t seed) {
  switch (entry) {
    case Entry::kMakeArrayReplicated: {
      // Every device receives the whole array (the forwards included), the CPU devices in one
      // buffer.
      std::vector<int> all(n_);
      for (int p = 0; p < n_; ++p) all[p] = p;
      return UploadScenario(testing::ReplicatedSharding(All(), ArrayShape()),
                            BuffersWritten({all}) * ArrayBytes(), seed);
    }
    case Entry::kMakeArrayPartiallyReplicated: {
      // Every device receives half the rows: the first half of the devices the first half.
      std::vector<int> first, second;
      for (int p = 0; p < n_; ++p) (p < n_ / 2 ? first : second).push_back(p);
      return UploadScenario(
          testing::Named(absl::StrCat("mesh{x=2,y=", n_ / 2, "}"), "P(x,None)", All()),
          BuffersWritten({first, second}) * ArrayBytes() / 2, seed);
    }
    case Entry::kCopyToHostBuffer:
      return DownloadScenario(seed);
    case Entry::kReshardArrays:
      return ReshardScenario(/*copy_arrays=*/false, seed);
    case Entry::kCopyArrays:
      return ReshardScenario(/*copy_arrays=*/true, seed);
    case Entry::kRemapArrays:
      return RemapScenario(seed);
    default:
      return LocalCopyScenario(entry, seed);
  }
}

// ---------------------------------------------------------------------------------------------

// The entry points that transfer, and those that never do.
class TransferPathsTest : public GuardPathsTest {};
class LocalPathsTest : public GuardPathsTest {};

TEST_P(TransferPathsTest, RefusedBeforeAnyByteMovesAndInputsStayReadable) {
  const Entry entry = std::get<1>(GetParam());
  Scenario probe = MakeScenario(entry, 1);
  ASSERT_TRUE(probe.direction.has_value());
  const guard::Direction direction = *probe.direction;
  struct Variant {
    guard::Level level;
    bool is_explicit;
  };
  uint32_t seed = 10;
  for (const Variant& v :
       {Variant{guard::Level::kDisallow, false}, Variant{guard::Level::kDisallowExplicit, true},
        Variant{guard::Level::kDisallowExplicit, false}}) {
    SCOPED_TRACE(absl::StrCat(std::string(guard::LevelName(v.level)),
                              v.is_explicit ? " explicit" : " implicit"));
    Scenario s = MakeScenario(entry, ++seed);
    for (const ArrayRef& in : s.inputs) ASSERT_THAT(in->GetReadyFuture().Await(), IsOk());
    guard::Policy policy;
    policy.set_level(direction, v.level);
    client().transfer_guard().SetPolicy(policy);
    client().transfer_guard().ResetCounters();
    const TransferStats before = client().transfer_stats();

    absl::StatusOr<std::vector<ArrayRef>> out = s.call({.is_explicit = v.is_explicit});
    EXPECT_THAT(
        out,
        StatusIs(absl::StatusCode::kInvalidArgument,
                 HasSubstr(absl::StrCat("Disallowed ", std::string(guard::DirectionName(direction)),
                                        " transfer: ", s.op, " of s32", ArrayShape().DebugString(),
                                        " (", s.guarded_bytes, " bytes, ",
                                        v.is_explicit ? "explicit" : "implicit", ")"))));
    // Nothing moved, now or later.
    for (const ArrayRef& in : s.inputs) ASSERT_THAT(in->GetReadyFuture().Await(), IsOk());
    EXPECT_EQ(client().transfer_stats(), before);
    const guard::TransferGuard::DirectionCounters c = client().transfer_guard().counters(direction);
    EXPECT_EQ(c.refused_events, 1);
    EXPECT_EQ(c.refused_bytes, s.guarded_bytes);
    EXPECT_EQ(*s.on_done_calls, s.op == "MakeArrayFromHostBuffer" ? 1 : 0);

    // The inputs are intact, even those the call was to donate.
    client().transfer_guard().SetPolicy(guard::Policy());
    for (size_t i = 0; i < s.inputs.size(); ++i) {
      EXPECT_FALSE(s.inputs[i]->IsDeleted());
      absl::StatusOr<std::vector<uint8_t>> back = ReadBack(s.inputs[i]);
      ASSERT_THAT(back, IsOk());
      EXPECT_TRUE(*back == s.input_data[i]) << "input " << i << " differs";
    }
  }

  // `disallow` lets explicit calls through.
  Scenario s = MakeScenario(entry, 99);
  guard::Policy policy;
  policy.set_level(direction, guard::Level::kDisallow);
  client().transfer_guard().SetPolicy(policy);
  absl::StatusOr<std::vector<ArrayRef>> out = s.call({.is_explicit = true});
  ASSERT_THAT(out, IsOk());
  client().transfer_guard().SetPolicy(guard::Policy());
  for (const ArrayRef& a : *out) ASSERT_THAT(a->GetReadyFuture().Await(), IsOk());
  s.verify(*out);
}

TEST_P(GuardPathsTest, LoggedOnceWithBytesThatTheTraceAndTheStatsAgreeWith) {
  const Entry entry = std::get<1>(GetParam());
  Scenario s = MakeScenario(entry, 3);
  for (const ArrayRef& in : s.inputs) ASSERT_THAT(in->GetReadyFuture().Await(), IsOk());
  auto sink = std::make_shared<guard::RecordingTransferSink>();
  const int id = client().transfer_guard().AddSink(sink);
  client().transfer_guard().SetPolicy(guard::Policy::Uniform(guard::Level::kLogExplicit));
  auto trace = std::make_shared<TransferTrace>();
  client().introspection()->SetTransferTrace(trace);
  const TransferStats before = client().transfer_stats();

  absl::StatusOr<std::vector<ArrayRef>> out = s.call({.is_explicit = true});
  ASSERT_THAT(out, IsOk());
  for (const ArrayRef& a : *out) ASSERT_THAT(a->GetReadyFuture().Await(), IsOk());
  client().introspection()->SetTransferTrace(nullptr);
  client().transfer_guard().RemoveSink(id);
  client().transfer_guard().SetPolicy(guard::Policy());
  const TransferStats after = client().transfer_stats();

  // The guard: one event per call and direction, with the bytes counted above.
  const std::vector<guard::RecordingTransferSink::Record> records = sink->records();
  if (s.direction.has_value()) {
    ASSERT_EQ(records.size(), 1u);
    EXPECT_EQ(records[0].event.direction, *s.direction);
    EXPECT_EQ(records[0].event.operation, s.op);
    EXPECT_EQ(records[0].event.bytes, s.guarded_bytes);
    EXPECT_TRUE(records[0].event.is_explicit);
    EXPECT_EQ(records[0].action, guard::Action::kLog);
  } else {
    EXPECT_TRUE(records.empty()) << records[0].event.Description();
  }

  // The trace: every copy between the host and a device or between devices is in the call's
  // direction with its action, and they add up to the event's bytes; copies within a device
  // carry no action.
  int64_t traced_guarded = 0, traced_local = 0;
  for (const TransferTraceEvent& e : trace->events()) {
    SCOPED_TRACE(absl::StrCat(e.operation, " ", e.direction, " ", e.src_device, "->", e.dst_device,
                              " ", e.bytes));
    EXPECT_TRUE(e.ok);
    if (e.direction == "local") {
      EXPECT_EQ(e.guard_action, "");
      EXPECT_EQ(e.src_device, e.dst_device);
      traced_local += e.bytes;
      continue;
    }
    ASSERT_TRUE(s.direction.has_value()) << "a transfer in a call that is never asked";
    EXPECT_EQ(e.direction, TraceDirection(*s.direction));
    EXPECT_EQ(e.guard_action, "log");
    if (*s.direction == guard::Direction::kHostToDevice) {
      EXPECT_EQ(e.src_device, TransferStats::kHost);
    }
    traced_guarded += e.bytes;
  }
  EXPECT_EQ(traced_guarded, s.guarded_bytes);
  EXPECT_EQ(traced_local, s.local_bytes);

  // The statistics: the same bytes in the same direction, nothing in the others.
  const std::optional<guard::Direction> all[] = {guard::Direction::kHostToDevice,
                                                 guard::Direction::kDeviceToDevice,
                                                 guard::Direction::kDeviceToHost, std::nullopt};
  for (const std::optional<guard::Direction>& d : all) {
    const int64_t moved = StatsOf(after, d).bytes - StatsOf(before, d).bytes;
    if (!d.has_value()) {
      EXPECT_EQ(moved, s.local_bytes) << "local";
    } else if (d == s.direction) {
      EXPECT_EQ(moved, s.guarded_bytes) << guard::DirectionName(*d);
    } else {
      EXPECT_EQ(moved, 0) << guard::DirectionName(*d);
    }
  }
  // An upload's per-pair counts name the host as the source of every byte.
  if (s.direction == guard::Direction::kHostToDevice) {
    int64_t from_host = 0;
    for (const auto& [pair, counter] : after.per_device_pair) {
      auto it = before.per_device_pair.find(pair);
      const int64_t delta =
          counter.bytes - (it == before.per_device_pair.end() ? 0 : it->second.bytes);
      if (pair.first == TransferStats::kHost) from_host += delta;
    }
    EXPECT_EQ(from_host, s.guarded_bytes);
  }
  s.verify(*out);
}

TEST_P(LocalPathsTest, NeverAskedEvenUnderDisallowExplicit) {
  const Entry entry = std::get<1>(GetParam());
  Scenario s = MakeScenario(entry, 5);
  ASSERT_FALSE(s.direction.has_value());
  for (const ArrayRef& in : s.inputs) ASSERT_THAT(in->GetReadyFuture().Await(), IsOk());
  client().transfer_guard().SetPolicy(guard::Policy::Uniform(guard::Level::kDisallowExplicit));
  client().transfer_guard().ResetCounters();
  absl::StatusOr<std::vector<ArrayRef>> out = s.call({.is_explicit = false});
  ASSERT_THAT(out, IsOk());
  for (const ArrayRef& a : *out) ASSERT_THAT(a->GetReadyFuture().Await(), IsOk());
  for (guard::Direction d : {guard::Direction::kHostToDevice, guard::Direction::kDeviceToDevice,
                             guard::Direction::kDeviceToHost}) {
    const guard::TransferGuard::DirectionCounters c = client().transfer_guard().counters(d);
    EXPECT_EQ(c.allowed_events + c.logged_events + c.refused_events, 0) << guard::DirectionName(d);
  }
  client().transfer_guard().SetPolicy(guard::Policy());
  s.verify(*out);
}

const Topology kTopologies[] = {{"Cpu", 4, VulkanMode::kOff, 4},
                                {"Vulkan", 0, VulkanMode::kRequired, 2},
                                {"Mixed", 2, VulkanMode::kRequired, 4}};
const Entry kTransferEntries[] = {Entry::kMakeArrayReplicated, Entry::kMakeArrayPartiallyReplicated,
                                  Entry::kCopyToHostBuffer, Entry::kReshardArrays,
                                  Entry::kCopyArrays};
const Entry kLocalEntries[] = {Entry::kAssembleAlwaysCopy, Entry::kDisassembleAlwaysCopy,
                               Entry::kFullyReplicatedShardAlwaysCopy, Entry::kRemapArrays};

std::string CaseName(const ::testing::TestParamInfo<std::tuple<Topology, Entry>>& info) {
  return absl::StrCat(std::get<0>(info.param).name, "_", EntryName(std::get<1>(info.param)));
}

INSTANTIATE_TEST_SUITE_P(EntryPoints, GuardPathsTest,
                         ::testing::Combine(::testing::ValuesIn(kTopologies),
                                            ::testing::ValuesIn(kTransferEntries)),
                         CaseName);
INSTANTIATE_TEST_SUITE_P(LocalEntryPoints, GuardPathsTest,
                         ::testing::Combine(::testing::ValuesIn(kTopologies),
                                            ::testing::ValuesIn(kLocalEntries)),
                         CaseName);
INSTANTIATE_TEST_SUITE_P(EntryPoints, TransferPathsTest,
                         ::testing::Combine(::testing::ValuesIn(kTopologies),
                                            ::testing::ValuesIn(kTransferEntries)),
                         CaseName);
INSTANTIATE_TEST_SUITE_P(EntryPoints, LocalPathsTest,
                         ::testing::Combine(::testing::ValuesIn(kTopologies),
                                            ::testing::ValuesIn(kLocalEntries)),
                         CaseName);

}  // namespace
}  // namespace tessera
