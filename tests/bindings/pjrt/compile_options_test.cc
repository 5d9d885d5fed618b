// The PJRT plugin's reader of xla.CompileOptionsProto (bindings/pjrt/compile_options.h) on what
// JAX 0.10.2 sent to a PJRT plugin (the fuzz corpus keeps those bytes), and on malformed input.

#include "bindings/pjrt/compile_options.h"

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "bindings/pjrt/proto_writer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tessera::pjrt {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string Seed(const std::string& name) {
  std::ifstream file(
      std::string(TESSERA_TEST_SOURCE_ROOT) + "/tests/fuzz/corpus/pjrt_compile_options/" + name,
      std::ios::binary);
  EXPECT_TRUE(file.good()) << name;
  return std::string(std::istreambuf_iterator<char>(file), {});
}

std::string Field(int number, const std::string& bytes) {  // length-delimited
  return ProtoWriter().String(number, bytes).bytes();
}

std::string Count(int number, uint64_t value) {
  return ProtoWriter().Varint(number, value).bytes();
}

TEST(CompileOptionsTest, ReadsJaxsOneDeviceJit) {
  absl::StatusOr<CompileOptions> options = ParseCompileOptions(Seed("jit_one_device"));
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->num_replicas, 1);
  EXPECT_EQ(options->num_partitions, 1);
  EXPECT_THAT(options->device_ids, ElementsAre(ElementsAre(0)));
}

TEST(CompileOptionsTest, ReadsJaxsEightPartitionJits) {
  for (const char* seed : {"jit_8_partitions", "jit_2x4_mesh"}) {
    absl::StatusOr<CompileOptions> options = ParseCompileOptions(Seed(seed));
    ASSERT_TRUE(options.ok()) << seed << ": " << options.status();
    EXPECT_EQ(options->num_replicas, 1);
    EXPECT_EQ(options->num_partitions, 8);
    ASSERT_EQ(options->device_ids.size(), 8u);
    for (int p = 0; p < 8; ++p) EXPECT_THAT(options->device_ids[p], ElementsAre(p)) << seed;
  }
}

TEST(CompileOptionsTest, EmptyBytesAreOnePartitionWithoutAnAssignment) {
  absl::StatusOr<CompileOptions> options = ParseCompileOptions("");
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->num_partitions, 1);
  EXPECT_TRUE(options->device_ids.empty());
}

TEST(CompileOptionsTest, SerializedDeviceAssignmentsReadBack) {
  const std::vector<int64_t> ids = {3, 1, 200, 0};
  absl::StatusOr<CompileOptions> options = ParseCompileOptions(
      Field(3, Count(5, ids.size()) + Field(9, SerializeDeviceAssignment(ids))));
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_THAT(options->device_ids,
              ElementsAre(ElementsAre(3), ElementsAre(1), ElementsAre(200), ElementsAre(0)));
}

// jax.jit(f, compiler_options={...}): env_option_overrides entries (1: key, 2: value). XLA's
// debug options are taken (and ignored); any other name is refused by name, as XLA does.
TEST(CompileOptionsTest, CompilerOptionsOutsideXlasDebugOptionsAreRefusedByName) {
  auto option = [](const std::string& key, const std::string& value) {
    return Field(7, Field(1, key) + Field(2, value));
  };
  const std::string bool_true = Count(2, 1), text = Field(1, "v");
  const std::string jit = Seed("jit_8_partitions");
  absl::StatusOr<CompileOptions> taken =
      ParseCompileOptions(jit + option("xla_embed_ir_in_executable", bool_true));
  ASSERT_TRUE(taken.ok()) << taken.status();
  EXPECT_EQ(taken->num_partitions, 8);
  for (const std::string& key :
       {std::string("invalid_key"), std::string("exec_time_effort"), std::string("xl\x01a")}) {
    absl::StatusOr<CompileOptions> refused =
        ParseCompileOptions(option("xla_dump_to", text) + option(key, text) + jit);
    ASSERT_FALSE(refused.ok()) << key;
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(refused.status().message(),
                HasSubstr("No such compile option: '" + absl::CHexEscape(key) + "'"));
  }
  // JAX's own bytes for compiler_options={"xla_embed_ir_in_executable": True, "invalid_key": ...}.
  absl::StatusOr<CompileOptions> from_jax = ParseCompileOptions(Seed("jit_compiler_options"));
  ASSERT_FALSE(from_jax.ok());
  EXPECT_THAT(from_jax.status().message(), HasSubstr("No such compile option: 'invalid_key'"));
  // An entry whose key is not a string.
  absl::StatusOr<CompileOptions> malformed = ParseCompileOptions(Field(7, Count(1, 3)));
  ASSERT_FALSE(malformed.ok());
  EXPECT_THAT(malformed.status().message(), HasSubstr("an option's key has wire type 0"));
}

TEST(CompileOptionsTest, RefusesMalformedBytesNamingWhatIsWrong) {
  struct Case {
    std::string bytes;
    std::string message;
  };
  const std::string jit = Seed("jit_8_partitions");
  const std::vector<Case> cases = {
      {jit.substr(0, jit.size() / 2), "longer than the message"},
      {"\x1a\x05\x20", "longer than the message"},
      {Field(3, Count(4, 0)), "num_replicas is 0"},
      {Field(3, Count(5, 65537)), "num_partitions is 65537"},
      {Field(3, Count(5, 2) + Field(9, SerializeDeviceAssignment({0, 1, 2}))),
       "the device assignment has 3 partitions"},
      {Field(3, Field(5, "")), "num_partitions has wire type 2"},
      {std::string("\x0b", 1), "wire type 3"},
      {std::string("\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 12), "varint"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<CompileOptions> options = ParseCompileOptions(c.bytes);
    ASSERT_FALSE(options.ok()) << c.message;
    EXPECT_EQ(options.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(options.status().message(), HasSubstr(c.message));
  }
}

}  // namespace
}  // namespace tessera::pjrt
