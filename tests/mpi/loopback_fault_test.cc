// tests/mpi/loopback_fault_test.cc: transport faults midway through cross-process collective
// calls, with the "processes" as threads joined by a loopback hub (tests/mpi/loopback_transport.h)
// that fails the k-th send or receive of one process, truncates its k-th message, or fails an
// agreement. For 2 and 3 processes, a batched rows -> columns ReshardArrays and a batched
// CopyArrays onto the devices in reverse order, and every message of each in turn: the call
// returns (the fault comes after the agreement); every process's outputs resolve in time, one of
// them with the failure on the process that receives the broken message, all exact elsewhere; the
// inputs are intact (kAlwaysCopy) or deleted (a successful kDonateInput); every memory's
// BytesInUse returns to its baseline; the next call is exact. A failed agreement fails the call
// on every process, before any byte moves, and keeps even a donated input. A process that runs
// out of memory enqueueing its part (each of its copy calls in turn throws std::bad_alloc) fails
// its own call; no other process is left waiting for its messages.

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/registry.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ifrt/runtime/runtime_client.h"
#include "tessera.h"
#include "tests/ifrt/faulty_platform.h"
#include "tests/ifrt/test_util.h"
#include "tests/mpi/loopback_transport.h"
#include "tests/mpi/shard_checks.h"
#include "tests/testing/status_matchers.h"

namespace tessera {
namespace {

using ::testing::AllOf;
using testing::ExpectShards;
using ::testing::HasSubstr;
using testing::LoopbackFault;
using testing::LoopbackHub;
using testing::Split;
using testing::StatusIs;

using testing::AwaitWithin;

// Process p's client: p + 1 CPU devices of one thread each, behind a FaultyPlatform (its
// `faulty`), over the loopback hub.
absl::StatusOr<std::shared_ptr<Client>> LoopbackClient(LoopbackHub& hub, int p,
                                                       testing::FaultyPlatform*& faulty) {
  ClientOptions options{
      .cpu_devices = p + 1, .cpu_threads_per_device = 1, .vulkan = VulkanMode::kOff};
  std::vector<std::unique_ptr<Platform>> platforms;
  for (const PlatformFactory& f : PlatformRegistry::Default().Factories()) {
    if (f.name != "cpu") continue;
    absl::StatusOr<std::unique_ptr<Platform>> platform = f.create(options);
    if (!platform.ok()) return platform.status();
    auto wrapped = std::make_unique<testing::FaultyPlatform>(*std::move(platform));
    faulty = wrapped.get();
    platforms.push_back(std::move(wrapped));
  }
  if (faulty == nullptr) return absl::NotFoundError("no cpu platform");
  absl::StatusOr<std::shared_ptr<runtime::RuntimeClient>> client = runtime::RuntimeClient::Create(
      std::move(platforms), guard::Policy(), nullptr, hub.Transport(p));
  if (!client.ok()) return client.status();
  return std::shared_ptr<Client>(*std::move(client));
}

// One process (thread) of a test: its client, its memories' baseline, and a barrier with the
// others (a round of the hub's AllGather, outside any transport call).
class Process {
 public:
  Process(LoopbackHub& hub, int index, std::shared_ptr<Client> client,
          testing::FaultyPlatform* faulty)
      : hub_(hub), index_(index), client_(std::move(client)), faulty_(faulty) {
    for (Device* d : client_->addressable_devices()) {
      for (Memory* m : d->Memories()) baseline_.push_back({m, m->BytesInUse()});
    }
  }
  Client& client() { return *client_; }
  testing::FaultyPlatform& faulty() { return *faulty_; }
  int index() const { return index_; }
  void Barrier() { hub_.AllGather(index_, ""); }

  // Polls (bounded) until every memory of this process is back at its baseline.
  void ExpectMemoriesAtBaseline() {
    for (const auto& [memory, bytes] : baseline_) {
      for (int i = 0; i < 2000 && memory->BytesInUse() != bytes; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
      EXPECT_EQ(memory->BytesInUse(), bytes) << memory->DebugString() << " leaks";
    }
  }

 private:
  LoopbackHub& hub_;
  int index_;
  std::shared_ptr<Client> client_;
  testing::FaultyPlatform* faulty_;
  std::vector<std::pair<Memory*, int64_t>> baseline_;
};

// Runs `body` on `n` processes (threads) at once over one hub. A body must reach every barrier
// the others do: it uses EXPECT, not ASSERT, between barriers.
void OnEveryProcess(int n, const std::function<void(LoopbackHub&, Process&)>& body) {
  LoopbackHub hub(n);
  std::vector<std::thread> threads;
  for (int p = 0; p < n; ++p) {
    threads.emplace_back([&, p] {
      testing::FaultyPlatform* faulty = nullptr;
      absl::StatusOr<std::shared_ptr<Client>> client = LoopbackClient(hub, p, faulty);
      ASSERT_TRUE(client.ok()) << client.status();
      Process process(hub, p, *std::move(client), faulty);
      body(hub, process);
    });
  }
  for (std::thread& t : threads) t.join();
}

// The collective calls faulted: a batched rows -> columns ReshardArrays of two arrays, and a
// batched CopyArrays of two arrays onto the devices in reverse order (every shard but a middle
// one changes process).
enum class Call { kReshard, kCopy };

std::string CallName(Call call) { return call == Call::kReshard ? "ReshardArrays" : "CopyArrays"; }

// Uneven columns; rows that divide over 3 and 6 devices (CopyArrays needs one device list).
const Shape kShapes[] = {Shape({30, 31}), Shape({12, 7})};
const DType kF32(DType::kF32);

// One call on fresh inputs (array i holds data[i]): the inputs and the call's result.
struct Batch {
  std::vector<std::vector<uint8_t>> data;
  std::vector<ArrayRef> inputs;
  absl::StatusOr<std::vector<ArrayRef>> out = absl::UnknownError("not called");
};

// `before_call` runs once the inputs are made, right before the call.
Batch RunCall(Client& client, Call call, ArrayCopySemantics semantics, uint32_t seed,
              const std::function<void()>& before_call = nullptr) {
  Batch b;
  std::vector<ArraySpec> specs;
  for (const Shape& shape : kShapes) {
    b.data.push_back(testing::Pattern(shape.dims()[0] * shape.dims()[1] * 4, seed++));
    absl::StatusOr<ArrayRef> a =
        testing::MakeArray(client, b.data.back(), kF32, shape, Split(client, shape, 0));
    EXPECT_TRUE(a.ok()) << a.status();
    if (!a.ok()) return b;  // every process fails alike here, before any collective call
    b.inputs.push_back(*a);
    specs.push_back(ArraySpec{kF32, shape, Split(client, shape, 1)});
  }
  std::vector<ArrayRef> in = b.inputs;
  if (before_call) before_call();
  if (call == Call::kReshard) {
    b.out = client.ReshardArrays(absl::MakeSpan(in), specs, semantics);
  } else {
    std::vector<Device*> reversed(client.devices().rbegin(), client.devices().rend());
    b.out = client.CopyArrays(absl::MakeSpan(in), *client.MakeDeviceList(reversed), std::nullopt,
                              semantics);
  }
  return b;
}

// Each output's ready status, nullopt for one that did not resolve in time.
std::vector<std::optional<absl::Status>> AwaitOutputs(const Batch& b) {
  std::vector<std::optional<absl::Status>> ready;
  if (!b.out.ok()) return ready;
  for (const ArrayRef& a : *b.out) {
    ready.push_back(AwaitWithin(a->GetReadyFuture()));
    EXPECT_TRUE(ready.back().has_value()) << "an output did not resolve";
  }
  return ready;
}

// A clean call, exact on every process.
void ExpectCleanCall(Process& p, Call call) {
  Batch b = RunCall(p.client(), call, ArrayCopySemantics::kAlwaysCopy, 100);
  EXPECT_TRUE(b.out.ok()) << b.out.status();
  std::vector<std::optional<absl::Status>> ready = AwaitOutputs(b);
  for (size_t i = 0; i < ready.size(); ++i) {
    EXPECT_TRUE(ready[i].has_value() && ready[i]->ok())
        << "output " << i << ": " << ready[i].value_or(absl::OkStatus());
    if (ready[i].has_value() && ready[i]->ok()) ExpectShards((*b.out)[i], b.data[i]);
  }
}

// The inputs after a call: deleted when a successful call took them, else intact.
void ExpectInputs(const Batch& b, bool donated) {
  for (size_t i = 0; i < b.inputs.size(); ++i) {
    if (donated) {
      EXPECT_TRUE(b.inputs[i]->IsDeleted()) << "the call succeeded: donated input " << i;
    } else {
      EXPECT_FALSE(b.inputs[i]->IsDeleted()) << "input " << i;
      ExpectShards(b.inputs[i], b.data[i]);
    }
  }
}

std::string KindName(LoopbackFault::Kind kind) {
  switch (kind) {
    case LoopbackFault::Kind::kFailSend:
      return "failed send";
    case LoopbackFault::Kind::kTruncateSend:
      return "truncated message";
    case LoopbackFault::Kind::kFailReceive:
      return "failed receive";
    case LoopbackFault::Kind::kFailAgreement:
      return "failed agreement";
  }
  return "";
}

// The error the receiver of the broken message `hit` sees.
::testing::Matcher<absl::Status> BrokenMessageError(LoopbackFault::Kind kind,
                                                    const LoopbackHub::Key& hit) {
  const int sender = std::get<0>(hit);
  if (kind == LoopbackFault::Kind::kFailReceive) {
    return StatusIs(absl::StatusCode::kUnavailable,
                    AllOf(HasSubstr("injected transport failure"),
                          HasSubstr(absl::StrCat("from process ", sender))));
  }
  // The empty message of a failed send, or a message of another size.
  return StatusIs(absl::StatusCode::kInternal,
                  HasSubstr(absl::StrCat("the part sent by process ", sender, " (tag ",
                                         std::get<2>(hit), ") did not arrive")));
}

// On the receiver of the broken message: exactly one output (the message's array) fails with
// `error`, and a reader of its shards gets an error too; elsewhere every output is exact.
void ExpectOutputs(Process& p, const Batch& b,
                   const std::vector<std::optional<absl::Status>>& ready, int receiver,
                   const ::testing::Matcher<absl::Status>& error) {
  int failed = 0;
  for (size_t i = 0; i < ready.size(); ++i) {
    if (!ready[i].has_value()) continue;
    if (ready[i]->ok()) {
      ExpectShards((*b.out)[i], b.data[i]);
      continue;
    }
    ++failed;
    EXPECT_EQ(p.index(), receiver) << "output " << i << " failed on a process the broken "
                                   << "message did not go to: " << *ready[i];
    EXPECT_THAT(*ready[i], error) << "output " << i;
    absl::StatusOr<std::vector<ArrayRef>> shards =
        (*b.out)[i]->DisassembleIntoSingleDeviceArrays(ArrayCopySemantics::kReuseInput);
    EXPECT_TRUE(shards.ok()) << shards.status();
    int unreadable = 0;
    for (const ArrayRef& shard : shards.value_or(std::vector<ArrayRef>{})) {
      absl::StatusOr<std::vector<uint8_t>> back = testing::ReadBack(shard);
      if (back.ok()) continue;
      ++unreadable;
      EXPECT_THAT(back.status(), error);
    }
    EXPECT_GE(unreadable, 1) << "no shard of output " << i << " carries the error";
  }
  EXPECT_EQ(failed, p.index() == receiver ? 1 : 0);
}

// One faulted call on process `p`: `fault` is armed (by process 0) for the call only. Afterwards
// every memory is back at its baseline and the next call is exact.
void FaultedCall(LoopbackHub& hub, Process& p, Call call, const LoopbackFault& fault,
                 ArrayCopySemantics semantics) {
  p.Barrier();
  if (p.index() == 0) hub.InjectFault(fault);
  p.Barrier();
  const int64_t injected = hub.injected();
  {
    Batch b = RunCall(p.client(), call, semantics, 10 + static_cast<uint32_t>(fault.k));
    EXPECT_TRUE(b.out.ok()) << "an error after the agreement travels on the futures: "
                            << b.out.status();
    std::vector<std::optional<absl::Status>> ready = AwaitOutputs(b);
    p.Barrier();  // every process has made its sends and receives: the fault has fired
    EXPECT_EQ(hub.injected(), injected + 1) << "the fault did not fire once";
    const std::optional<LoopbackHub::Key> hit = hub.faulted();
    EXPECT_TRUE(hit.has_value());
    if (hit.has_value()) {
      ExpectOutputs(p, b, ready, std::get<1>(*hit), BrokenMessageError(fault.kind, *hit));
    }
    ExpectInputs(b, /*donated=*/b.out.ok() && semantics == ArrayCopySemantics::kDonateInput);
  }
  p.ExpectMemoriesAtBaseline();
  p.Barrier();
  if (p.index() == 0) hub.ClearFault();
  p.Barrier();
  ExpectCleanCall(p, call);
}

class LoopbackFaultTest : public ::testing::TestWithParam<int> {};

// Every message of each call in turn, broken on its sending or its receiving side.
TEST_P(LoopbackFaultTest, EachBrokenMessageFailsItsReceiverAndNothingElse) {
  const int n = GetParam();
  OnEveryProcess(n, [&](LoopbackHub& hub, Process& p) {
    for (Call call : {Call::kReshard, Call::kCopy}) {
      // How many messages each process sends and receives in the call.
      p.Barrier();
      if (p.index() == 0) hub.ClearFault();
      p.Barrier();
      ExpectCleanCall(p, call);
      p.Barrier();
      std::vector<int64_t> sends(n), receives(n);
      for (int q = 0; q < n; ++q) {
        sends[q] = hub.sends(q);
        receives[q] = hub.receives(q);
        EXPECT_GE(sends[q], 1) << CallName(call) << ": process " << q << " sends nothing";
      }
      for (LoopbackFault::Kind kind :
           {LoopbackFault::Kind::kFailSend, LoopbackFault::Kind::kTruncateSend,
            LoopbackFault::Kind::kFailReceive}) {
        for (int q = 0; q < n; ++q) {
          const int64_t count = kind == LoopbackFault::Kind::kFailReceive ? receives[q] : sends[q];
          for (int64_t k = 1; k <= count; ++k) {
            const ArrayCopySemantics semantics =
                k % 2 == 1 ? ArrayCopySemantics::kAlwaysCopy : ArrayCopySemantics::kDonateInput;
            SCOPED_TRACE(absl::StrCat(CallName(call), " on process ", p.index(), " of ", n, ": ",
                                      KindName(kind), " ", k, " of ", count, " of process ", q,
                                      k % 2 == 1 ? ", copying" : ", donating"));
            FaultedCall(hub, p, call, LoopbackFault{kind, q, k}, semantics);
          }
        }
      }
    }
  });
}

// The agreement fails on every process: the call fails there, before any byte moves, and keeps
// even a donated input.
TEST_P(LoopbackFaultTest, AFailedAgreementFailsTheCallEverywhereAndKeepsTheInputs) {
  const int n = GetParam();
  OnEveryProcess(n, [&](LoopbackHub& hub, Process& p) {
    for (Call call : {Call::kReshard, Call::kCopy}) {
      for (ArrayCopySemantics semantics :
           {ArrayCopySemantics::kAlwaysCopy, ArrayCopySemantics::kDonateInput}) {
        SCOPED_TRACE(absl::StrCat(CallName(call), " on process ", p.index(), " of ", n));
        p.Barrier();
        if (p.index() == 0) hub.InjectFault({LoopbackFault::Kind::kFailAgreement, 0, 1});
        p.Barrier();
        {
          Batch b = RunCall(p.client(), call, semantics, 20);
          EXPECT_THAT(b.out, StatusIs(absl::StatusCode::kUnavailable,
                                      AllOf(HasSubstr("injected transport failure"),
                                            HasSubstr(CallName(call)))));
          ExpectInputs(b, /*donated=*/false);
        }
        p.ExpectMemoriesAtBaseline();
        p.Barrier();
        if (p.index() == 0) hub.ClearFault();
        p.Barrier();
        ExpectCleanCall(p, call);
      }
    }
  });
}

// One call in which process q's k-th copy call throws std::bad_alloc (module comment of the
// test below), and the clean call after it.
void OutOfMemoryCall(Process& p, Call call, ArrayCopySemantics semantics, int q, int64_t k) {
  p.Barrier();
  const int64_t injected = p.faulty().injected_faults();
  {
    Batch b = RunCall(p.client(), call, semantics, 40 + static_cast<uint32_t>(k), [&] {
      if (p.index() == q) p.faulty().ThrowOnCopy(static_cast<int>(k), testing::kAnyCopy);
    });
    EXPECT_EQ(p.faulty().injected_faults() - injected, p.index() == q ? 1 : 0)
        << "the fault did not fire once";
    p.faulty().Disarm();
    std::vector<std::optional<absl::Status>> ready = AwaitOutputs(b);
    if (p.index() == q) {
      EXPECT_THAT(b.out,
                  StatusIs(absl::StatusCode::kResourceExhausted,
                           AllOf(HasSubstr(CallName(call)), HasSubstr("out of host memory"))));
    } else {
      EXPECT_TRUE(b.out.ok()) << b.out.status();
    }
    const auto error = StatusIs(absl::StatusCode::kInternal,
                                HasSubstr(absl::StrCat("the part sent by process ", q)));
    for (size_t i = 0; i < ready.size(); ++i) {
      if (!ready[i].has_value()) continue;
      if (!ready[i]->ok()) {
        EXPECT_THAT(*ready[i], error) << "output " << i;
        continue;
      }
      ExpectShards((*b.out)[i], b.data[i]);
    }
    ExpectInputs(b, b.out.ok() && semantics == ArrayCopySemantics::kDonateInput);
  }
  p.ExpectMemoriesAtBaseline();
  p.Barrier();
  ExpectCleanCall(p, call);
}

// Process q runs out of host memory enqueueing its part of a call, after the agreement (each of
// its copy calls in turn throws std::bad_alloc): the call fails there with RESOURCE_EXHAUSTED and
// keeps its inputs; on the other processes it returns, and each output resolves in time, exact or
// failed by q's missing messages; nothing is left waiting for q, nothing leaks, and the next
// call is exact everywhere.
TEST_P(LoopbackFaultTest, RunningOutOfMemoryAfterTheAgreementLeavesNoProcessWaiting) {
  const int n = GetParam();
  OnEveryProcess(n, [&](LoopbackHub& hub, Process& p) {
    for (Call call : {Call::kReshard, Call::kCopy}) {
      for (ArrayCopySemantics semantics :
           {ArrayCopySemantics::kAlwaysCopy, ArrayCopySemantics::kDonateInput}) {
        const bool donating = semantics == ArrayCopySemantics::kDonateInput;
        // How many copy calls each process makes on its platform in the call (a donation
        // aliases what stays on its device).
        int64_t before = 0;
        RunCall(p.client(), call, semantics, 30, [&] { before = p.faulty().copy_calls(); });
        const std::vector<std::string> counts =
            hub.AllGather(p.index(), absl::StrCat(p.faulty().copy_calls() - before));
        for (int q = 0; q < n; ++q) {
          const int64_t copies = std::stoll(counts[q]);
          for (int64_t k = 1; k <= copies; ++k) {
            SCOPED_TRACE(absl::StrCat(CallName(call), " on process ", p.index(), " of ", n,
                                      ": copy call ", k, " of ", copies, " of process ", q,
                                      " throws", donating ? ", donating" : ", copying"));
            OutOfMemoryCall(p, call, semantics, q, k);
          }
        }
      }
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Processes, LoopbackFaultTest, ::testing::Values(2, 3),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return absl::StrCat(info.param, "Processes");
                         });

}  // namespace
}  // namespace tessera
