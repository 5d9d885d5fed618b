#include "guard/policy.h"

#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace tessera::guard {
namespace {

using ::tessera::testing::IsOk;
using ::tessera::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

Policy MustParse(std::string_view text) {
  absl::StatusOr<Policy> policy = Policy::Parse(text);
  EXPECT_THAT(policy, IsOk()) << text;
  return policy.ok() ? *policy : Policy{};
}

TEST(PolicyTest, DefaultAllowsEverything) {
  Policy policy;
  for (Direction d : kAllDirections) EXPECT_EQ(policy.level(d), Level::kAllow);
  EXPECT_EQ(policy.allow_below_bytes, 0);
  EXPECT_EQ(MustParse(""), policy);
  EXPECT_EQ(MustParse("   "), policy);
}

TEST(PolicyTest, LevelAndSetLevel) {
  Policy policy;
  policy.set_level(Direction::kHostToDevice, Level::kLog);
  policy.set_level(Direction::kDeviceToDevice, Level::kDisallow);
  policy.set_level(Direction::kDeviceToHost, Level::kLogExplicit);
  EXPECT_EQ(policy.host_to_device, Level::kLog);
  EXPECT_EQ(policy.device_to_device, Level::kDisallow);
  EXPECT_EQ(policy.device_to_host, Level::kLogExplicit);
  EXPECT_EQ(policy.level(Direction::kDeviceToDevice), Level::kDisallow);
  EXPECT_EQ(Policy::Uniform(Level::kLog), (Policy{.host_to_device = Level::kLog,
                                                  .device_to_device = Level::kLog,
                                                  .device_to_host = Level::kLog}));
}

TEST(PolicyTest, ParsesBareLevel) {
  EXPECT_EQ(MustParse("disallow"), Policy::Uniform(Level::kDisallow));
  EXPECT_EQ(MustParse(" LOG_EXPLICIT "), Policy::Uniform(Level::kLogExplicit));
}

TEST(PolicyTest, ParsesShortAndLongNames) {
  const Policy expected{.host_to_device = Level::kDisallow,
                        .device_to_device = Level::kLog,
                        .device_to_host = Level::kAllow};
  EXPECT_EQ(MustParse("h2d=disallow,d2d=log,d2h=allow"), expected);
  EXPECT_EQ(MustParse("host_to_device=disallow,device_to_device=log,device_to_host=allow"),
            expected);
  EXPECT_EQ(MustParse("host-to-device=disallow, device-to-device = log"), expected);
}

TEST(PolicyTest, LaterEntriesWin) {
  EXPECT_EQ(MustParse("disallow,d2h=allow"), (Policy{.host_to_device = Level::kDisallow,
                                                     .device_to_device = Level::kDisallow,
                                                     .device_to_host = Level::kAllow}));
  EXPECT_EQ(MustParse("d2h=allow,disallow"), Policy::Uniform(Level::kDisallow));
  EXPECT_EQ(MustParse("all=log,h2d=disallow"), (Policy{.host_to_device = Level::kDisallow,
                                                       .device_to_device = Level::kLog,
                                                       .device_to_host = Level::kLog}));
}

TEST(PolicyTest, ParsesAllowBelowBytes) {
  Policy policy = MustParse("disallow,allow_below_bytes=64");
  EXPECT_EQ(policy.allow_below_bytes, 64);
  EXPECT_EQ(policy.host_to_device, Level::kDisallow);
  EXPECT_EQ(MustParse("below=4096").allow_below_bytes, 4096);
  EXPECT_EQ(MustParse("allow_below_bytes=64,log").allow_below_bytes, 64);
}

struct BadPolicy {
  std::string text;
  std::string token;  // the bad token as quoted in the message
  int position;
};

TEST(PolicyTest, ErrorsNameTheBadTokenAndItsPosition) {
  const BadPolicy kBad[] = {
      {"disalow", "\"disalow\"", 0},
      {"h2d=disallow,d2d=forbid", "\"forbid\"", 17},
      {"h2d=disallow, h2x=log", "\"h2x\"", 14},
      {"h2d", "\"h2d\"", 0},
      {"h2d=", "\"h2d\"", 0},
      {"allow_below_bytes=-1", "\"-1\"", 18},
      {"below=12kb", "\"12kb\"", 6},
      {"below=99999999999999999999", "\"99999999999999999999\"", 6},
      {"log,,disallow", "empty entry", 4},
      {"log,", "empty entry", 4},
      {"=log", "\"\"", 0},
  };
  for (const BadPolicy& bad : kBad) {
    SCOPED_TRACE(bad.text);
    EXPECT_THAT(Policy::Parse(bad.text),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         AllOf(HasSubstr(bad.token), HasSubstr("\"" + bad.text + "\""),
                               HasSubstr("at position " + std::to_string(bad.position)))));
  }
  EXPECT_THAT(Policy::Parse("d2d=nope"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unknown level")));
  EXPECT_THAT(Policy::Parse("x=log"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unknown key")));
}

TEST(PolicyTest, ErrorsStayOneShortLine) {
  // Control characters and invalid UTF-8 are escaped (base::EscapeText), in the text and the token.
  EXPECT_THAT(
      Policy::Parse("d2d=nev\ner\x1b[2J\xff"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("\"d2d=nev\\ner\\x1B[2J\\xFF\": unknown level (expected allow, log, "
                         "disallow, log_explicit or disallow_explicit) "
                         "\"nev\\ner\\x1B[2J\\xFF\" at position 4")));
  // A long text keeps 60 bytes around the position; a long token its first 60 bytes.
  const std::string text =
      absl::StrCat("log,", std::string(50000, ' '), "h2d=", std::string(50000, 'z'));
  const absl::Status s = Policy::Parse(text).status();
  EXPECT_LT(s.message().size(), 400u) << s;
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kInvalidArgument,
                          AllOf(HasSubstr(absl::StrCat("\"...", std::string(26, ' '),
                                                       "h2d=", std::string(30, 'z'), "...\"")),
                                HasSubstr(absl::StrCat("\"", std::string(60, 'z'), "...\"")),
                                HasSubstr("zzz...\" at position 50008"))));
}

std::vector<Policy> AllPolicies() {
  std::vector<Policy> all;
  for (Level a : kAllLevels) {
    for (Level b : kAllLevels) {
      for (Level c : kAllLevels) {
        for (int64_t below : {int64_t{0}, int64_t{1}, int64_t{64}, int64_t{1} << 40}) {
          all.push_back(Policy{.host_to_device = a,
                               .device_to_device = b,
                               .device_to_host = c,
                               .allow_below_bytes = below});
        }
      }
    }
  }
  return all;
}

TEST(PolicyTest, ToStringRoundTripsEveryPolicy) {
  for (const Policy& policy : AllPolicies()) {
    const std::string text = policy.ToString();
    absl::StatusOr<Policy> parsed = Policy::Parse(text);
    ASSERT_THAT(parsed, IsOk()) << text;
    EXPECT_EQ(*parsed, policy) << text;
  }
}

TEST(PolicyTest, ToStringIsCanonical) {
  EXPECT_EQ(Policy{}.ToString(), "allow");
  EXPECT_EQ(Policy::Uniform(Level::kDisallow).ToString(), "disallow");
  EXPECT_EQ(
      (Policy{.host_to_device = Level::kDisallow, .device_to_device = Level::kLog}).ToString(),
      "h2d=disallow,d2d=log,d2h=allow");
  EXPECT_EQ((Policy{.allow_below_bytes = 64}).ToString(), "allow,allow_below_bytes=64");
}

// Random spellings of random policies (names, case, blanks, redundant entries)
// parse to the policy they spell.
TEST(PolicyTest, RandomSpellingsParse) {
  std::mt19937 rng(20240611);
  auto pick = [&](int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); };
  const char* kNames[3][3] = {{"h2d", "host_to_device", "host-to-device"},
                              {"d2d", "device_to_device", "device-to-device"},
                              {"d2h", "device_to_host", "device-to-host"}};
  const std::vector<Policy> all = AllPolicies();
  for (int i = 0; i < 2000; ++i) {
    const Policy policy = all[pick(static_cast<int>(all.size()))];
    auto blanks = [&] { return std::string(pick(3), ' '); };
    auto cased = [&](std::string s) { return pick(2) ? absl::AsciiStrToUpper(s) : s; };
    std::vector<std::string> entries;
    // Start from a random level for all directions, then set each one.
    entries.push_back(cased(std::string(LevelName(kAllLevels[pick(5)]))));
    for (int d = 0; d < 3; ++d) {
      entries.push_back(blanks() + cased(kNames[d][pick(3)]) + blanks() + "=" + blanks() +
                        cased(std::string(LevelName(policy.level(kAllDirections[d])))) + blanks());
    }
    entries.push_back(std::string(pick(2) ? "below" : "allow_below_bytes") + "=" +
                      std::to_string(policy.allow_below_bytes));
    std::string text;
    for (const std::string& entry : entries) text += (text.empty() ? "" : ",") + entry;
    absl::StatusOr<Policy> parsed = Policy::Parse(text);
    ASSERT_THAT(parsed, IsOk()) << text;
    EXPECT_EQ(*parsed, policy) << text;
  }
}

class PolicyEnvironmentTest : public ::testing::Test {
 protected:
  void TearDown() override { unsetenv(kTransferGuardEnvVar); }
};

TEST_F(PolicyEnvironmentTest, UnsetOrEmptyIsDefault) {
  unsetenv(kTransferGuardEnvVar);
  EXPECT_THAT(Policy::FromEnvironment(), IsOk());
  EXPECT_EQ(*Policy::FromEnvironment(), Policy{});
  setenv(kTransferGuardEnvVar, "", 1);
  EXPECT_EQ(*Policy::FromEnvironment(), Policy{});
}

TEST_F(PolicyEnvironmentTest, ReadsThePolicy) {
  setenv(kTransferGuardEnvVar, "h2d=disallow,below=128", 1);
  absl::StatusOr<Policy> policy = Policy::FromEnvironment();
  ASSERT_THAT(policy, IsOk());
  EXPECT_EQ(*policy, (Policy{.host_to_device = Level::kDisallow, .allow_below_bytes = 128}));
}

TEST_F(PolicyEnvironmentTest, MalformedIsAnError) {
  setenv(kTransferGuardEnvVar, "h2d=never", 1);
  EXPECT_THAT(Policy::FromEnvironment(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("TESSERA_TRANSFER_GUARD"), HasSubstr("\"never\""))));
}

}  // namespace
}  // namespace tessera::guard
