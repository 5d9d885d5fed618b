// Unit tests of the option parsers and formatting helpers of the `tessera`
// tool.

#include "tools/cli.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tessera::tools {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string Message(const absl::Status& s) { return std::string(s.message()); }

TEST(ParseDevices, OrderAndCounts) {
  absl::StatusOr<std::vector<DeviceRequest>> d = ParseDevices("vulkan:2, cpu:4");
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_EQ(d->size(), 2u);
  EXPECT_EQ((*d)[0].platform, "vulkan");
  EXPECT_EQ((*d)[0].count, 2);
  EXPECT_EQ((*d)[1].platform, "cpu");
  EXPECT_EQ((*d)[1].count, 4);
}

TEST(ParseDevices, Errors) {
  EXPECT_THAT(Message(ParseDevices("").status()), HasSubstr("empty device list"));
  EXPECT_THAT(Message(ParseDevices("tpu:1").status()),
              HasSubstr("invalid --devices \"tpu:1\": unknown platform"));
  EXPECT_THAT(Message(ParseDevices("cpu:0").status()), HasSubstr("at position 4"));
  EXPECT_THAT(Message(ParseDevices("cpu:1,").status()), HasSubstr("missing ':'"));
  EXPECT_THAT(Message(ParseDevices("cpu:1,cpu:2").status()), HasSubstr("given twice"));
}

TEST(ParseShape, Forms) {
  EXPECT_THAT(*ParseShape("8192x8192"), ElementsAre(8192, 8192));
  EXPECT_THAT(*ParseShape("2,3,0"), ElementsAre(2, 3, 0));
  EXPECT_TRUE(ParseShape("scalar")->empty());
  EXPECT_TRUE(ParseShape("")->empty());
  EXPECT_THAT(Message(ParseShape("8xx8").status()),
              HasSubstr("invalid --shape \"8xx8\": dimension 1 is not a non-negative integer of at "
                        "most 18 digits at position 2"));
  EXPECT_THAT(Message(ParseShape("8x-1").status()), HasSubstr("dimension 1 is not"));
}

TEST(ParseErrors, PositionsCountFromTheOptionsText) {
  EXPECT_THAT(Message(ParseShape("  8x?").status()), HasSubstr("at position 4"));
  EXPECT_THAT(Message(ParseDevices("cpu:2,  vulkan:x").status()), HasSubstr("at position 15"));
  EXPECT_THAT(Message(ParseDevices("cpu:2,cpu:1").status()),
              HasSubstr("platform cpu given twice at position 6"));
  // In the PartitionSpec after the mesh: offset 8 of "P(x,None", position 21 of the option.
  EXPECT_THAT(Message(ParseSharding("--from", "  mesh{x=4}  P(x,None").status()),
              HasSubstr("in the PartitionSpec: expected ')' at position 21"));
  EXPECT_THAT(Message(ParseSharding("--from", "mesh{x:4} P(x)").status()),
              HasSubstr("in the mesh: expected '=' at position 6"));
  EXPECT_THAT(Message(ParseSharding("--to", " 2x1 to [0] 2").status()),
              HasSubstr("nor a ShardingParam: expected 'on' at position 12"));
}

TEST(ParseErrors, TheTextIsQuotedOnceEscapedAndShort) {
  const std::string message = Message(ParseSharding("--from", "mesh{x=4} P(x,\n\x1b[0m").status());
  EXPECT_EQ(message,
            "invalid --from \"mesh{x=4} P(x,\\n\\x1B[0m\": in the PartitionSpec: expected None, an "
            "axis name or a tuple of names at position 15");
  const std::string huge = "mesh{x=4} P(" + std::string(100000, 'x') + "?)";
  const std::string long_message = Message(ParseSharding("--from", huge).status());
  EXPECT_LT(long_message.size(), 200u);
  EXPECT_THAT(long_message, HasSubstr("xxx?)\": in the PartitionSpec: expected ')' at position "
                                      "100012"));
  EXPECT_THAT(Message(ParseDType("f3\xff").status()), HasSubstr("invalid --dtype \"f3\\xFF\""));
}

TEST(OneLine, EscapesWhatTheLibraryDidNot) {
  EXPECT_EQ(OneLine("a\nb\x1b[1m\xc3\x97\xff \"q\" \\"), "a\\nb\\x1B[1m\xc3\x97\\xFF \"q\" \\");
  const std::string cut = OneLine(std::string(10000, 'z'));
  EXPECT_EQ(cut, std::string(4096, 'z') + "... (5904 more bytes)");
}

TEST(ParseSharding, BothNotations) {
  absl::StatusOr<ShardingText> named = ParseSharding("--from", " mesh{x=2,y=4} P(x,(y)) ");
  ASSERT_TRUE(named.ok()) << named.status();
  EXPECT_EQ(named->num_devices(), 8);
  EXPECT_EQ(named->ToString(), "mesh{x=2,y=4} P(x,y)");
  absl::StatusOr<ShardingText> param = ParseSharding("--to", "2x1 to [0] on 2");
  ASSERT_TRUE(param.ok()) << param.status();
  EXPECT_EQ(param->num_devices(), 2);
  EXPECT_EQ(param->ToString(), "2x1 to [0] on 2");
}

TEST(ParseSharding, ErrorsNameTheOption) {
  EXPECT_THAT(Message(ParseSharding("--to", "mesh{x=2}").status()),
              HasSubstr("invalid --to \"mesh{x=2}\": a PartitionSpec must follow the mesh"));
  EXPECT_THAT(Message(ParseSharding("--from", "mesh{x=0} P()").status()),
              HasSubstr("invalid --from \"mesh{x=0} P()\": in the mesh: "));
  EXPECT_THAT(Message(ParseSharding("--from", "mesh{x=32,y=576460752303423489} P(x)").status()),
              HasSubstr("in the mesh: Mesh has more than 16777216 devices"));
  EXPECT_THAT(Message(ParseSharding("--from", "P(x)").status()),
              HasSubstr("neither 'mesh{...} P(...)' nor a ShardingParam"));
}

TEST(Format, Units) {
  EXPECT_EQ(FormatBytes(0), "0 B");
  EXPECT_EQ(FormatBytes(1023), "1023 B");
  EXPECT_EQ(FormatBytes(4096), "4.0 KiB");
  EXPECT_EQ(FormatBytes(64 << 20), "64.0 MiB");
  EXPECT_EQ(FormatBytes(int64_t{3} << 29), "1.50 GiB");
  EXPECT_EQ(FormatDuration(0.0005), "500 us");
  EXPECT_EQ(FormatDuration(0.0123), "12.30 ms");
  EXPECT_EQ(FormatRate(0, 1), "-");
  EXPECT_EQ(FormatRate(int64_t{1} << 30, 0.5), "2.00");
  EXPECT_EQ(JsonString("a\"b\\\n"), "\"a\\\"b\\\\\\n\"");
}

TEST(Table, AlignsColumns) {
  Table t({"name", "n"});
  t.AddRow({"a", "10"});
  t.AddRow({"long name", "2"});
  std::ostringstream out;
  t.Print(out, 0);
  EXPECT_EQ(out.str(),
            "name        n\n"
            "-------------\n"
            "a          10\n"
            "long name   2\n");
}

TEST(Pattern, DeterministicAndMedian) {
  EXPECT_EQ(MakePattern(37), MakePattern(37));
  EXPECT_NE(MakePattern(64, 1), MakePattern(64, 2));
  EXPECT_DOUBLE_EQ(Median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(Median({4, 1, 2, 3}), 2.5);
  std::vector<uint8_t> src = MakePattern(1000), dst(1000);
  ParallelMemcpy(dst.data(), src.data(), 1000, 3);
  EXPECT_EQ(src, dst);
}

TEST(CheckRepeat, NamesTheOptionAndItsRange) {
  EXPECT_TRUE(CheckRepeat("--repeat", 1).ok());
  EXPECT_TRUE(CheckRepeat("--repeat", kMaxRepeat).ok());
  for (int bad : {0, -1, kMaxRepeat + 1}) {
    const absl::Status s = CheckRepeat("--repeat", bad);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(Message(s), absl::StrCat("--repeat must be in 1..1000000, got ", bad));
  }
}

template <typename T>
std::vector<uint8_t> Bytes(std::vector<T> values) {
  std::vector<uint8_t> out(values.size() * sizeof(T));
  // An empty vector's data() may be null, and memcpy from null is undefined even for 0 bytes.
  if (!out.empty()) std::memcpy(out.data(), values.data(), out.size());
  return out;
}

TEST(CompareElements, NanMatchesOnlyNan) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const DType f32(DType::kF32);
  // The reference is NaN where the sharded output is a number: a mismatch at that element.
  ElementComparison c =
      CompareElements(f32, Bytes<float>({1, 0.5f, 2}), Bytes<float>({1, nan, 2}), 1e-4);
  EXPECT_EQ(c.mismatches, 1);
  EXPECT_EQ(c.first_mismatch, 1);
  EXPECT_EQ(c.got_value, "0.5");
  EXPECT_EQ(c.want_value, "nan");
  EXPECT_TRUE(std::isinf(c.max_relative_error));
  // And the other way round.
  c = CompareElements(f32, Bytes<float>({nan, 3}), Bytes<float>({0, 3}), 1e-4);
  EXPECT_EQ(c.first_mismatch, 0);
  EXPECT_EQ(c.got_value, "nan");
  // NaN against NaN and equal infinities match; unequal infinities and inf vs a number do not.
  c = CompareElements(f32, Bytes<float>({nan, inf, -inf}), Bytes<float>({nan, inf, -inf}), 1e-4);
  EXPECT_EQ(c.mismatches, 0);
  EXPECT_EQ(c.first_mismatch, -1);
  EXPECT_EQ(c.max_relative_error, 0);
  c = CompareElements(f32, Bytes<float>({inf, 1e30f}), Bytes<float>({-inf, inf}), 1e-4);
  EXPECT_EQ(c.mismatches, 2);
  EXPECT_EQ(c.want_value, "-inf");
}

TEST(CompareElements, ToleranceIsRelativeToMaxOfOneAndTheReference) {
  const DType f64(DType::kF64);
  ElementComparison c =
      CompareElements(f64, Bytes<double>({1000.05, 0.00005}), Bytes<double>({1000, 0}), 1e-4);
  EXPECT_EQ(c.mismatches, 0);
  EXPECT_NEAR(c.max_relative_error, 5e-5, 1e-9);
  c = CompareElements(f64, Bytes<double>({0, 0.5, 0.25}), Bytes<double>({0, 0.5, 0.2503}), 1e-4);
  EXPECT_EQ(c.first_mismatch, 2);
  EXPECT_EQ(c.got_value, "0.25");
  EXPECT_EQ(c.want_value, "0.25030000000000002");
}

TEST(CompareElements, IntegersAndOtherDTypesBitForBit) {
  ElementComparison c = CompareElements(DType(DType::kS32), Bytes<int32_t>({1, -3, 7, 9}),
                                        Bytes<int32_t>({1, -3, 8, 10}), 1e-4);
  EXPECT_EQ(c.mismatches, 2);
  EXPECT_EQ(c.first_mismatch, 2);
  EXPECT_EQ(c.got_value, "7");
  EXPECT_EQ(c.want_value, "8");
  c = CompareElements(DType(DType::kBF16), Bytes<uint16_t>({0x3f80, 0x7fc0}),
                      Bytes<uint16_t>({0x3f80, 0x7fc1}), 1e-4);
  EXPECT_EQ(c.first_mismatch, 1);
  EXPECT_EQ(c.got_value, "0x7fc0");
  EXPECT_EQ(c.want_value, "0x7fc1");
  c = CompareElements(DType(DType::kU8), Bytes<uint8_t>({}), Bytes<uint8_t>({}), 1e-4);
  EXPECT_EQ(c.first_mismatch, -1);
}

}  // namespace
}  // namespace tessera::tools
