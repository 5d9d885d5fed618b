// Compiles and runs every guard-only example of docs/transfer-guard.md (its
// ```cpp blocks; those marked ```cpp (client) need a client and are compiled
// elsewhere). Each example is copied below between "// docs:" markers, and
// DocsExamplesTest.EveryExampleIsHere checks, ignoring whitespace, that every
// ```cpp block of the document appears in this file, so the two cannot drift
// apart.

#include <atomic>
#include <cstdint>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "guard/recording_transfer_sink.h"
#include "guard/transfer_guard.h"
#include "tests/testing/status_matchers.h"

namespace tessera::guard {
namespace {

using ::tessera::testing::IsOk;
using ::tessera::testing::StatusIs;
using ::testing::HasSubstr;

// docs: sinks (class)
// Counts refused bytes per direction; thread-safe as every sink must be.
class RefusedBytesSink : public TransferSink {
 public:
  void OnTransfer(const TransferEvent& event, Action action) override {
    if (action == Action::kDisallow) {
      refused_bytes[static_cast<int>(event.direction)].fetch_add(event.bytes);
    }
  }
  std::atomic<int64_t> refused_bytes[3] = {};
};
// end docs

TEST(DocsExamplesTest, Decide) {
  // docs: levels
  Action implicit_action = Decide(Level::kDisallow, /*is_explicit=*/false);  // Action::kDisallow
  Action explicit_action = Decide(Level::kDisallow, /*is_explicit=*/true);   // Action::kAllow
  // end docs
  EXPECT_EQ(implicit_action, Action::kDisallow);
  EXPECT_EQ(explicit_action, Action::kAllow);
}

TEST(DocsExamplesTest, Policy) {
  // docs: policy
  Policy policy;  // every direction: allow
  policy.set_level(Direction::kHostToDevice, Level::kDisallow);
  policy.device_to_host = Level::kLog;  // the fields are public too
  policy.allow_below_bytes = 64;        // smaller movements pass silently
  TransferGuard guard(policy);
  guard.SetPolicy(Policy::Uniform(Level::kLogExplicit));  // replaceable, from any thread
  // end docs
  EXPECT_EQ(policy, (Policy{.host_to_device = Level::kDisallow,
                            .device_to_host = Level::kLog,
                            .allow_below_bytes = 64}));
  EXPECT_EQ(guard.policy(), Policy::Uniform(Level::kLogExplicit));
}

absl::Status ParseExample() {
  // docs: parse
  absl::StatusOr<Policy> parsed = Policy::Parse("h2d=disallow,d2h=log,allow_below_bytes=4096");
  if (!parsed.ok()) return parsed.status();
  std::string canonical = parsed->ToString();
  // canonical == "h2d=disallow,d2d=allow,d2h=log,allow_below_bytes=4096"

  absl::StatusOr<Policy> bad = Policy::Parse("h2d=disallow,d2d=forbid");
  // bad.status(): INVALID_ARGUMENT: invalid transfer guard policy
  //   "h2d=disallow,d2d=forbid": unknown level (expected allow, log,
  //   disallow, log_explicit or disallow_explicit) "forbid" at position 17
  // end docs
  EXPECT_EQ(canonical, "h2d=disallow,d2d=allow,d2h=log,allow_below_bytes=4096");
  EXPECT_EQ(bad.status().ToString(),
            "INVALID_ARGUMENT: invalid transfer guard policy "
            "\"h2d=disallow,d2d=forbid\": unknown "
            "level (expected allow, log, disallow, log_explicit or "
            "disallow_explicit) \"forbid\" at "
            "position 17");
  return absl::OkStatus();
}

TEST(DocsExamplesTest, Parse) { EXPECT_THAT(ParseExample(), IsOk()); }

absl::Status EnvironmentExample() {
  // docs: environment
  absl::StatusOr<Policy> from_env = Policy::FromEnvironment();
  if (!from_env.ok()) return from_env.status();  // e.g. TESSERA_TRANSFER_GUARD=h2d=never
  TransferGuard env_guard(*from_env);
  // end docs
  EXPECT_EQ(env_guard.policy(), Policy::Parse("h2d=log_explicit,below=1024").value());
  return absl::OkStatus();
}

TEST(DocsExamplesTest, Environment) {
  setenv(kTransferGuardEnvVar, "h2d=log_explicit,below=1024", 1);
  EXPECT_THAT(EnvironmentExample(), IsOk());
  setenv(kTransferGuardEnvVar, "h2d=never", 1);
  EXPECT_THAT(EnvironmentExample(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("TESSERA_TRANSFER_GUARD")));
  unsetenv(kTransferGuardEnvVar);
}

TEST(DocsExamplesTest, Scopes) {
  // docs: scopes
  TransferGuard guard(Policy::Uniform(Level::kLog));
  {
    ScopedTransferGuard strict(Level::kDisallow);  // every direction, every guard of the process
    {
      ScopedTransferGuard but(Direction::kDeviceToHost,
                              Level::kAllow);  // one direction
      // here: h2d and d2d disallow, d2h allow
    }
    // here: disallow everywhere
  }
  // here: the policy again (log)
  // end docs
  EXPECT_EQ(guard.EffectiveLevel(Direction::kDeviceToHost), Level::kLog);
}

TEST(DocsExamplesTest, Error) {
  // docs: error
  TransferGuard strict_guard(Policy::Uniform(Level::kDisallow));
  TransferEvent event{.direction = Direction::kHostToDevice,
                      .is_explicit = false,
                      .operation = "MakeArrayFromHostBuffer",
                      .dtype = "f32",
                      .shape = {1024},
                      .bytes = 4096,
                      .dst_devices = {0}};
  absl::Status status = strict_guard.Check(event);
  // status.code() == absl::StatusCode::kInvalidArgument
  // status.message() == "Disallowed host-to-device transfer:
  //   MakeArrayFromHostBuffer of f32[1024] (4096 bytes, implicit) from host
  //   to devices [0]"
  // end docs
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "Disallowed host-to-device transfer: MakeArrayFromHostBuffer of "
            "f32[1024] (4096 bytes, "
            "implicit) from host to devices [0]");
}

TEST(DocsExamplesTest, Enforce) {
  // docs: enforce
  TransferGuard enforcing_guard(Policy{.device_to_device = Level::kLog});
  enforcing_guard.SetDefaultLogSinkEnabled(false);
  TransferEvent reshard{.direction = Direction::kDeviceToDevice,
                        .is_explicit = false,
                        .operation = "ReshardArrays",
                        .dtype = "f32",
                        .shape = {1024},
                        .bytes = 4096,
                        .src_devices = {0},
                        .dst_devices = {1}};
  TransferGuard::Decision decision = enforcing_guard.Enforce(reshard);
  // decision.action == Action::kLog, decision.status is OK; counted as logged.
  // decision.status is OK exactly when decision.action is kAllow or kLog.
  // end docs
  EXPECT_EQ(decision.action, Action::kLog);
  EXPECT_THAT(decision.status, IsOk());
  EXPECT_EQ(enforcing_guard.counters(Direction::kDeviceToDevice),
            (TransferGuard::DirectionCounters{.logged_events = 1, .logged_bytes = 4096}));
}

TEST(DocsExamplesTest, Sinks) {
  // docs: sinks
  TransferGuard sink_guard(Policy::Uniform(Level::kDisallow));
  sink_guard.SetDefaultLogSinkEnabled(false);
  auto refused = std::make_shared<RefusedBytesSink>();
  int id = sink_guard.AddSink(refused);
  auto recorder = std::make_shared<RecordingTransferSink>();  // keeps every (event, action)
  sink_guard.AddSink(recorder);
  // ... run ...
  sink_guard.RemoveSink(id);
  // end docs
  EXPECT_FALSE(
      sink_guard.Check({.direction = Direction::kDeviceToDevice, .is_explicit = false, .bytes = 10})
          .ok());
  EXPECT_EQ(refused->refused_bytes[1].load(), 0);  // removed
  EXPECT_EQ(recorder->records().size(), 1u);
}

TEST(DocsExamplesTest, Counters) {
  // docs: counters
  TransferGuard counting_guard(Policy{.device_to_host = Level::kLogExplicit});
  counting_guard.SetDefaultLogSinkEnabled(false);
  TransferEvent download{.direction = Direction::kDeviceToHost,
                         .operation = "CopyToHostBuffer",
                         .dtype = "f32",
                         .shape = {256},
                         .bytes = 1024,
                         .src_devices = {0}};
  absl::Status logged = counting_guard.Check(download);  // OK, logged
  TransferGuard::DirectionCounters c = counting_guard.counters(Direction::kDeviceToHost);
  // c.logged_events == 1, c.logged_bytes == 1024, everything else 0
  counting_guard.ResetCounters();
  // end docs
  EXPECT_THAT(logged, IsOk());
  EXPECT_EQ(c, (TransferGuard::DirectionCounters{.logged_events = 1, .logged_bytes = 1024}));
  EXPECT_EQ(counting_guard.counters(Direction::kDeviceToHost), TransferGuard::DirectionCounters{});
}

std::string ReadFile(const std::string& path) {
  std::ifstream file(path);
  std::stringstream contents;
  contents << file.rdbuf();
  return contents.str();
}

std::string WithoutWhitespace(std::string_view text) {
  std::string out;
  for (char ch : text) {
    if (ch != ' ' && ch != '\n' && ch != '\t' && ch != '\r') out += ch;
  }
  return out;
}

TEST(DocsExamplesTest, EveryExampleIsHere) {
  const std::string doc = ReadFile(TESSERA_GUARD_DOC_PATH);
  const std::string self = WithoutWhitespace(ReadFile(TESSERA_GUARD_DOCS_TEST_PATH));
  ASSERT_FALSE(doc.empty());
  ASSERT_FALSE(self.empty());
  std::vector<std::string> blocks;
  std::string current;
  enum { kText, kGuardBlock, kOtherBlock } state = kText;
  for (absl::string_view line : absl::StrSplit(doc, '\n')) {
    if (state == kText && absl::StartsWith(line, "```")) {
      state = line == "```cpp" ? kGuardBlock : kOtherBlock;
      current.clear();
    } else if (state != kText && line == "```") {
      if (state == kGuardBlock) blocks.push_back(current);
      state = kText;
    } else if (state == kGuardBlock) {
      current.append(line.data(), line.size()).append("\n");
    }
  }
  EXPECT_EQ(state, kText) << "unterminated code block";
  EXPECT_GE(blocks.size(), 9u);
  for (const std::string& block : blocks) {
    EXPECT_TRUE(absl::StrContains(self, WithoutWhitespace(block)))
        << "this example of docs/transfer-guard.md is not in "
           "docs_examples_test.cc:\n"
        << block;
  }
}

}  // namespace
}  // namespace tessera::guard
