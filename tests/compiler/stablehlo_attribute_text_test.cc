// The parsers of StableHLO and Shardy attribute text (compiler/stablehlo/attribute_text.h): the
// texts JAX 0.10 emits parse to the values the importer relies on, and malformed texts fail with
// INVALID_ARGUMENT naming what was expected and the byte position where it was expected.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "base/message_text.h"
#include "compiler/stablehlo/attribute_text.h"
#include "compiler/stablehlo/gspmd_mesh.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace tessera::compiler::stablehlo {
namespace {

using ::tessera::testing::StatusIs;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// INVALID_ARGUMENT whose message contains `expected` and ends with "at position <position>", and
// whose attached parse location has the same offset.
MATCHER_P2(FailsAt, expected, position,
           absl::StrCat("fails with INVALID_ARGUMENT expecting ", expected, " at position ",
                        position)) {
  const absl::Status& status = ::tessera::testing::GetStatus(arg);
  if (!::testing::ExplainMatchResult(
          StatusIs(absl::StatusCode::kInvalidArgument,
                   AllOf(HasSubstr(expected), EndsWith(absl::StrCat(" at position ", position)))),
          arg, result_listener)) {
    return false;
  }
  const std::optional<base::ParseLocation> where = base::GetParseLocation(status);
  if (!where.has_value()) {
    *result_listener << "whose status " << status.ToString() << " has no parse location";
    return false;
  }
  if (where->offset != static_cast<size_t>(position)) {
    *result_listener << "whose parse location is " << where->offset;
    return false;
  }
  return true;
}

std::vector<std::string> AxisNames(const SdyMesh& mesh) {
  std::vector<std::string> names;
  for (const SdyMesh::Axis& axis : mesh.axes) names.push_back(axis.name);
  return names;
}
std::vector<int64_t> AxisSizes(const SdyMesh& mesh) {
  std::vector<int64_t> sizes;
  for (const SdyMesh::Axis& axis : mesh.axes) sizes.push_back(axis.size);
  return sizes;
}

using Axes = std::vector<std::string>;

// --- dot_general --------------------------------------------------------------------------------

TEST(StablehloAttributeTextTest, DotWithBatchingAndContractingDimensions) {
  ASSERT_OK_AND_ASSIGN(
      DotDimensions dims,
      ParseDotDimensions("dot<lhs_batching_dimensions = [0, 2], rhs_batching_dimensions = [0, 2], "
                         "lhs_contracting_dimensions = [3], rhs_contracting_dimensions = [3]>"));
  EXPECT_THAT(dims.lhs_batch, ElementsAre(0, 2));
  EXPECT_THAT(dims.rhs_batch, ElementsAre(0, 2));
  EXPECT_THAT(dims.lhs_contracting, ElementsAre(3));
  EXPECT_THAT(dims.rhs_contracting, ElementsAre(3));
}

TEST(StablehloAttributeTextTest, DotWithoutBatchingLeavesThemEmpty) {
  ASSERT_OK_AND_ASSIGN(
      DotDimensions dims,
      ParseDotDimensions(
          "dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>"));
  EXPECT_THAT(dims.lhs_batch, IsEmpty());
  EXPECT_THAT(dims.rhs_batch, IsEmpty());
  EXPECT_THAT(dims.lhs_contracting, ElementsAre(1));
  EXPECT_THAT(dims.rhs_contracting, ElementsAre(0));
}

TEST(StablehloAttributeTextTest, DotWithoutTheMnemonicOrAnyField) {
  ASSERT_OK_AND_ASSIGN(
      DotDimensions dims,
      ParseDotDimensions("<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>"));
  EXPECT_THAT(dims.lhs_contracting, ElementsAre(1));
  EXPECT_THAT(dims.rhs_contracting, ElementsAre(0));
  ASSERT_OK_AND_ASSIGN(DotDimensions none, ParseDotDimensions("dot<>"));
  EXPECT_THAT(none.lhs_contracting, IsEmpty());
  EXPECT_THAT(none.rhs_contracting, IsEmpty());
}

TEST(StablehloAttributeTextTest, DotAcceptsEighteenDigitsAndNegativeIntegers) {
  ASSERT_OK_AND_ASSIGN(DotDimensions dims,
                       ParseDotDimensions("dot<lhs_contracting_dimensions = [999999999999999999], "
                                          "rhs_contracting_dimensions = [-1]>"));
  EXPECT_THAT(dims.lhs_contracting, ElementsAre(int64_t{999999999999999999}));
  EXPECT_THAT(dims.rhs_contracting, ElementsAre(-1));
}

TEST(StablehloAttributeTextTest, DotMissingClosingBracket) {
  const std::string text = "dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]";
  EXPECT_THAT(ParseDotDimensions(text), FailsAt("'>'", text.size()));
}

TEST(StablehloAttributeTextTest, DotUnknownFieldIsNamedAtItsPosition) {
  //       0    5    10   15   20   25   30   35   40
  //       dot<lhs_contracting_dimensions = [1], rhs_contract_dims = [0]>
  EXPECT_THAT(ParseDotDimensions("dot<lhs_contracting_dimensions = [1], rhs_contract_dims = [0]>"),
              FailsAt("not 'rhs_contract_dims'", 38));
  EXPECT_THAT(
      ParseDotDimensions("dot<lhs_contracting_dimensions = [1], rhs_contract_dims = [0]>"),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("rhs_contracting_dimensions")));
}

TEST(StablehloAttributeTextTest, DotIntegerOfNineteenDigits) {
  // The '[' is at 33, the integer at 34.
  EXPECT_THAT(ParseDotDimensions("dot<lhs_contracting_dimensions = [1234567890123456789], "
                                 "rhs_contracting_dimensions = [0]>"),
              FailsAt("an integer", 34));
}

TEST(StablehloAttributeTextTest, DotErrors) {
  EXPECT_THAT(ParseDotDimensions(""), FailsAt("'<'", 0));
  EXPECT_THAT(ParseDotDimensions("   "), FailsAt("'<'", 3));
  // A list without its '['.
  EXPECT_THAT(ParseDotDimensions("dot<lhs_contracting_dimensions = 1>"), FailsAt("'['", 33));
  // A missing '=' after a known name.
  EXPECT_THAT(ParseDotDimensions("dot<lhs_contracting_dimensions [1]>"), FailsAt("'='", 31));
  // An unclosed list, and a trailing comma.
  EXPECT_THAT(ParseDotDimensions("dot<lhs_contracting_dimensions = [1 2]>"), FailsAt("']'", 36));
  EXPECT_THAT(ParseDotDimensions("dot<lhs_contracting_dimensions = [1,]>"),
              FailsAt("an integer", 36));
  // Something after the closing '>'.
  EXPECT_THAT(ParseDotDimensions("dot<> x"), FailsAt("the end of the attribute", 6));
  // A mnemonic other than "dot" is not skipped.
  EXPECT_THAT(ParseDotDimensions("gather<>"), FailsAt("'<'", 0));
}

// --- gather / scatter ---------------------------------------------------------------------------

// --- convolution
// ----------------------------------------------------------------------------------

TEST(StablehloAttributeTextTest, ConvCompactFormNamesEachDimension) {
  // NCHW x OIHW -> NCHW, and NHWC x HWIO -> NHWC as JAX prints them.
  ASSERT_OK_AND_ASSIGN(ConvDimensions nchw,
                       ParseConvDimensions("conv<[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]>"));
  EXPECT_EQ(nchw.input_batch, 0);
  EXPECT_EQ(nchw.input_feature, 1);
  EXPECT_THAT(nchw.input_spatial, ElementsAre(2, 3));
  EXPECT_EQ(nchw.kernel_output_feature, 0);
  EXPECT_EQ(nchw.kernel_input_feature, 1);
  EXPECT_THAT(nchw.kernel_spatial, ElementsAre(2, 3));
  ASSERT_OK_AND_ASSIGN(ConvDimensions odd,
                       ParseConvDimensions("<[f, 1, 0, b]x[i, 1, 0, o]->[1, 0, b, f]>"));
  EXPECT_EQ(odd.input_batch, 3);
  EXPECT_EQ(odd.input_feature, 0);
  EXPECT_THAT(odd.input_spatial, ElementsAre(2, 1));
  EXPECT_EQ(odd.kernel_input_feature, 0);
  EXPECT_EQ(odd.kernel_output_feature, 3);
  EXPECT_EQ(odd.output_batch, 2);
  EXPECT_EQ(odd.output_feature, 3);
  EXPECT_THAT(odd.output_spatial, ElementsAre(1, 0));
  ASSERT_OK_AND_ASSIGN(ConvDimensions none, ParseConvDimensions("conv<[b, f]x[i, o]->[b, f]>"));
  EXPECT_THAT(none.input_spatial, IsEmpty());
}

TEST(StablehloAttributeTextTest, ConvRawForm) {
  ASSERT_OK_AND_ASSIGN(
      ConvDimensions dims,
      ParseConvDimensions("conv<raw input_batch_dimension = 0, input_feature_dimension = 2, "
                          "input_spatial_dimensions = [1], kernel_input_feature_dimension = 1, "
                          "kernel_output_feature_dimension = 2, kernel_spatial_dimensions = [0], "
                          "output_batch_dimension = 0, output_feature_dimension = 2, "
                          "output_spatial_dimensions = [1]>"));
  EXPECT_EQ(dims.input_feature, 2);
  EXPECT_THAT(dims.input_spatial, ElementsAre(1));
  EXPECT_EQ(dims.kernel_output_feature, 2);
  EXPECT_THAT(dims.output_spatial, ElementsAre(1));
}

TEST(StablehloAttributeTextTest, ConvErrors) {
  //                                0    5    10   15   20
  EXPECT_THAT(ParseConvDimensions("conv<[b, f, 0, 0]x[o, i, 0, 1]->[b, f, 0, 1]>"),
              FailsAt("spatial indices 0 to 1 once each", 17));
  EXPECT_THAT(ParseConvDimensions("conv<[b, q, 0]x[o, i, 0]->[b, f, 0]>"),
              FailsAt("'b', 'f' or a spatial dimension's index", 9));
  EXPECT_THAT(ParseConvDimensions("conv<[b, 0]x[o, i, 0]->[b, f, 0]>"),
              FailsAt("one 'b' and one 'f'", 11));
  EXPECT_THAT(ParseConvDimensions("conv<[b, f, 0]x[o, i]->[b, f, 0]>"),
              FailsAt("as many spatial dimensions", 32));
  EXPECT_THAT(ParseConvDimensions("conv<[b, f, 64]x[o, i, 0]->[b, f, 0]>"),
              FailsAt("a spatial index in [0, 64)", 12));
  EXPECT_THAT(ParseConvDimensions("conv<[b, f, 0]x[o, i, 0]->[b, f, 0]"), FailsAt("'>'", 35));
  EXPECT_THAT(ParseConvDimensions("conv<raw input_batch = 0>"), FailsAt("not 'input_batch'", 9));
}

TEST(StablehloAttributeTextTest, Gather) {
  ASSERT_OK_AND_ASSIGN(GatherDimensions dims,
                       ParseGatherDimensions("gather<offset_dims = [1], collapsed_slice_dims = "
                                             "[0], start_index_map = [0], index_vector_dim = 1>"));
  EXPECT_THAT(dims.offset_dims, ElementsAre(1));
  EXPECT_THAT(dims.collapsed_slice_dims, ElementsAre(0));
  EXPECT_THAT(dims.start_index_map, ElementsAre(0));
  EXPECT_EQ(dims.index_vector_dim, 1);
  EXPECT_THAT(dims.operand_batching_dims, IsEmpty());
  EXPECT_THAT(dims.start_indices_batching_dims, IsEmpty());
  EXPECT_THAT(dims.update_window_dims, IsEmpty());
  EXPECT_THAT(dims.inserted_window_dims, IsEmpty());
  EXPECT_THAT(dims.scatter_dims_to_operand_dims, IsEmpty());
}

TEST(StablehloAttributeTextTest, Scatter) {
  ASSERT_OK_AND_ASSIGN(
      GatherDimensions dims,
      ParseGatherDimensions("scatter<update_window_dims = [1], inserted_window_dims = [0], "
                            "scatter_dims_to_operand_dims = [0], index_vector_dim = 1>"));
  EXPECT_THAT(dims.update_window_dims, ElementsAre(1));
  EXPECT_THAT(dims.inserted_window_dims, ElementsAre(0));
  EXPECT_THAT(dims.scatter_dims_to_operand_dims, ElementsAre(0));
  EXPECT_EQ(dims.index_vector_dim, 1);
  EXPECT_THAT(dims.offset_dims, IsEmpty());
  EXPECT_THAT(dims.start_index_map, IsEmpty());
}

TEST(StablehloAttributeTextTest, ScatterBatchingDimensionsUnderTheirScatterNames) {
  ASSERT_OK_AND_ASSIGN(
      GatherDimensions dims,
      ParseGatherDimensions("scatter<update_window_dims = [2], inserted_window_dims = [1], "
                            "input_batching_dims = [0], scatter_indices_batching_dims = [0], "
                            "scatter_dims_to_operand_dims = [1], index_vector_dim = 1>"));
  EXPECT_THAT(dims.operand_batching_dims, ElementsAre(0));
  EXPECT_THAT(dims.start_indices_batching_dims, ElementsAre(0));
}

TEST(StablehloAttributeTextTest, GatherWithoutIndexVectorDimHasItZero) {
  // StableHLO prints no index_vector_dim when it is 0 (jaxlib's GatherDimensionNumbers.get with
  // index_vector_dim=0 prints "#stablehlo.gather<offset_dims = [0, 1], start_index_map = [0, 1]>").
  ASSERT_OK_AND_ASSIGN(
      GatherDimensions dims,
      ParseGatherDimensions("gather<offset_dims = [0, 1], start_index_map = [0, 1]>"));
  EXPECT_EQ(dims.index_vector_dim, 0);
  ASSERT_OK_AND_ASSIGN(
      dims, ParseGatherDimensions(
                "scatter<update_window_dims = [0], scatter_dims_to_operand_dims = [0]>"));
  EXPECT_EQ(dims.index_vector_dim, 0);
}

TEST(StablehloAttributeTextTest, GatherErrors) {
  EXPECT_THAT(ParseGatherDimensions(""), FailsAt("'<'", 0));
  //          0    5    10   15   20   25
  //          gather<offset_dims = [1], slice_sizes = [1]>
  EXPECT_THAT(ParseGatherDimensions("gather<offset_dims = [1], slice_sizes = [1]>"),
              FailsAt("not 'slice_sizes'", 26));
  EXPECT_THAT(ParseGatherDimensions("gather<index_vector_dim = x>"), FailsAt("an integer", 26));
  EXPECT_THAT(ParseGatherDimensions("gather<index_vector_dim = 1"), FailsAt("'>'", 27));
  EXPECT_THAT(ParseGatherDimensions("gather<index_vector_dim = 1>>"),
              FailsAt("the end of the attribute", 28));
}

// --- enums --------------------------------------------------------------------------------------

TEST(StablehloAttributeTextTest, EnumInBothForms) {
  EXPECT_THAT(ParseEnumAttr("<comparison_direction EQ>", "comparison_direction"),
              ::tessera::testing::IsOk());
  ASSERT_OK_AND_ASSIGN(std::string bracketed,
                       ParseEnumAttr("<comparison_direction EQ>", "comparison_direction"));
  EXPECT_EQ(bracketed, "EQ");
  ASSERT_OK_AND_ASSIGN(std::string bare,
                       ParseEnumAttr("comparison_direction EQ", "comparison_direction"));
  EXPECT_EQ(bare, "EQ");
  ASSERT_OK_AND_ASSIGN(std::string type,
                       ParseEnumAttr("<comparison_type FLOAT>", "comparison_type"));
  EXPECT_EQ(type, "FLOAT");
  ASSERT_OK_AND_ASSIGN(std::string spaced,
                       ParseEnumAttr("  < comparison_direction  GE >  ", "comparison_direction"));
  EXPECT_EQ(spaced, "GE");
}

TEST(StablehloAttributeTextTest, EnumErrors) {
  EXPECT_THAT(ParseEnumAttr("", "comparison_direction"), FailsAt("'comparison_direction'", 0));
  // Another enum's text.
  EXPECT_THAT(ParseEnumAttr("<comparison_type FLOAT>", "comparison_direction"),
              FailsAt("'comparison_direction'", 1));
  // No value.
  EXPECT_THAT(ParseEnumAttr("<comparison_direction>", "comparison_direction"),
              FailsAt("the comparison_direction", 21));
  // The name runs into the value.
  EXPECT_THAT(ParseEnumAttr("comparison_directionEQ", "comparison_direction"),
              FailsAt("'comparison_direction'", 0));
  // The bracketed form unclosed, the bare form closed, two values.
  EXPECT_THAT(ParseEnumAttr("<comparison_direction EQ", "comparison_direction"),
              FailsAt("'>'", 24));
  EXPECT_THAT(ParseEnumAttr("comparison_direction EQ>", "comparison_direction"),
              FailsAt("the end of the attribute", 23));
  EXPECT_THAT(ParseEnumAttr("<comparison_direction EQ NE>", "comparison_direction"),
              FailsAt("'>'", 25));
}

// --- sdy.mesh -----------------------------------------------------------------------------------

TEST(StablehloAttributeTextTest, MeshAxesInOrder) {
  ASSERT_OK_AND_ASSIGN(SdyMesh mesh, ParseSdyMesh(R"(mesh<["dp"=2, "tp"=4]>)"));
  EXPECT_THAT(AxisNames(mesh), ElementsAre("dp", "tp"));
  EXPECT_THAT(AxisSizes(mesh), ElementsAre(2, 4));
  EXPECT_THAT(mesh.device_ids, IsEmpty());
}

TEST(StablehloAttributeTextTest, EmptyMesh) {
  ASSERT_OK_AND_ASSIGN(SdyMesh mesh, ParseSdyMesh("mesh<[]>"));
  EXPECT_THAT(mesh.axes, IsEmpty());
  EXPECT_THAT(mesh.device_ids, IsEmpty());
}

TEST(StablehloAttributeTextTest, MeshWithDeviceIds) {
  ASSERT_OK_AND_ASSIGN(SdyMesh mesh, ParseSdyMesh(R"(mesh<["x"=4], device_ids=[3, 2, 1, 0]>)"));
  EXPECT_THAT(AxisNames(mesh), ElementsAre("x"));
  EXPECT_THAT(AxisSizes(mesh), ElementsAre(4));
  EXPECT_THAT(mesh.device_ids, ElementsAre(3, 2, 1, 0));
}

TEST(StablehloAttributeTextTest, MeshWithoutTheMnemonic) {
  ASSERT_OK_AND_ASSIGN(SdyMesh mesh, ParseSdyMesh(R"(<["a"=8]>)"));
  EXPECT_THAT(AxisNames(mesh), ElementsAre("a"));
  EXPECT_THAT(AxisSizes(mesh), ElementsAre(8));
}

TEST(StablehloAttributeTextTest, MeshMissingClosingBracket) {
  const std::string text = R"(mesh<["dp"=2, "tp"=4])";
  EXPECT_THAT(ParseSdyMesh(text), FailsAt("'>'", text.size()));
}

TEST(StablehloAttributeTextTest, MeshAxisSizeMustBePositive) {
  // The size is at 10 in the first two, at 18 in the third.
  EXPECT_THAT(ParseSdyMesh(R"(mesh<["x"=-2]>)"), FailsAt("a positive axis size", 10));
  EXPECT_THAT(ParseSdyMesh(R"(mesh<["x"=0]>)"), FailsAt("a positive axis size", 10));
  EXPECT_THAT(ParseSdyMesh(R"(mesh<["x"=4, "y"= 0]>)"), FailsAt("a positive axis size", 18));
}

TEST(StablehloAttributeTextTest, MeshErrors) {
  EXPECT_THAT(ParseSdyMesh(""), FailsAt("'<'", 0));
  EXPECT_THAT(ParseSdyMesh(R"(mesh<["x"=4]> extra)"), FailsAt("the end of the attribute", 14));
  EXPECT_THAT(ParseSdyMesh(R"(mesh<[x=4]>)"), FailsAt("an axis name in double quotes", 6));
  EXPECT_THAT(ParseSdyMesh(R"(mesh<["x=4]>)"), FailsAt("an axis name in double quotes", 6));
  EXPECT_THAT(ParseSdyMesh(R"(mesh<["x"=12345678901234567890]>)"),
              FailsAt("a positive axis size", 10));
  EXPECT_THAT(ParseSdyMesh(R"(mesh<["x"=4], devices=[0]>)"), FailsAt("'device_ids'", 14));
}

// --- sdy.sharding -------------------------------------------------------------------------------

TEST(StablehloAttributeTextTest, ShardingOfOneDimension) {
  ASSERT_OK_AND_ASSIGN(SdySharding sharding, ParseSdySharding(R"(sharding<@mesh, [{"dp"}, {}]>)"));
  EXPECT_EQ(sharding.mesh_name, "mesh");
  EXPECT_FALSE(sharding.inline_mesh.has_value());
  EXPECT_THAT(sharding.dims, ElementsAre(Axes{"dp"}, Axes{}));
  EXPECT_THAT(sharding.replicated, IsEmpty());
  EXPECT_THAT(sharding.unreduced, IsEmpty());
}

TEST(StablehloAttributeTextTest, ShardingOverTwoAxesMajorToMinor) {
  ASSERT_OK_AND_ASSIGN(SdySharding sharding,
                       ParseSdySharding(R"(sharding<@mesh, [{"dp", "tp"}, {}]>)"));
  EXPECT_THAT(sharding.dims, ElementsAre(Axes{"dp", "tp"}, Axes{}));
}

TEST(StablehloAttributeTextTest, ShardingWithPriorityOpenDimensionAndReplicatedAxes) {
  ASSERT_OK_AND_ASSIGN(SdySharding sharding,
                       ParseSdySharding(R"(sharding<@mesh, [{"dp"}p1, {?}], replicated={"tp"}>)"));
  EXPECT_EQ(sharding.mesh_name, "mesh");
  EXPECT_THAT(sharding.dims, ElementsAre(Axes{"dp"}, Axes{}));
  EXPECT_THAT(sharding.replicated, ElementsAre("tp"));
  EXPECT_THAT(sharding.unreduced, IsEmpty());
}

TEST(StablehloAttributeTextTest, ShardingWithUnreducedAxes) {
  ASSERT_OK_AND_ASSIGN(
      SdySharding sharding,
      ParseSdySharding(R"(sharding<@mesh, [{}, {}], replicated={"a"}, unreduced={"b", "c"}>)"));
  EXPECT_THAT(sharding.dims, ElementsAre(Axes{}, Axes{}));
  EXPECT_THAT(sharding.replicated, ElementsAre("a"));
  EXPECT_THAT(sharding.unreduced, ElementsAre("b", "c"));
}

TEST(StablehloAttributeTextTest, ShardingOfAScalar) {
  ASSERT_OK_AND_ASSIGN(SdySharding sharding, ParseSdySharding("sharding<@mesh, []>"));
  EXPECT_THAT(sharding.dims, IsEmpty());
}

TEST(StablehloAttributeTextTest, ShardingWithAnInlineMesh) {
  ASSERT_OK_AND_ASSIGN(SdySharding sharding,
                       ParseSdySharding(R"(sharding<mesh<["a"=2]>, [{"a"}]>)"));
  EXPECT_EQ(sharding.mesh_name, "");
  ASSERT_TRUE(sharding.inline_mesh.has_value());
  EXPECT_THAT(AxisNames(*sharding.inline_mesh), ElementsAre("a"));
  EXPECT_THAT(AxisSizes(*sharding.inline_mesh), ElementsAre(2));
  EXPECT_THAT(sharding.dims, ElementsAre(Axes{"a"}));
}

TEST(StablehloAttributeTextTest, ShardingSubAxesAreRejected) {
  //          0    5    10   15   20
  //          sharding<@mesh, [{"x":(1)2}]>
  EXPECT_THAT(ParseSdySharding(R"(sharding<@mesh, [{"x":(1)2}]>)"), FailsAt("sub-axes", 21));
}

TEST(StablehloAttributeTextTest, ShardingErrors) {
  EXPECT_THAT(ParseSdySharding(""), FailsAt("'<'", 0));
  const std::string unclosed = R"(sharding<@mesh, [{"dp"}, {}])";
  EXPECT_THAT(ParseSdySharding(unclosed), FailsAt("'>'", unclosed.size()));
  EXPECT_THAT(ParseSdySharding(R"(sharding<@mesh, [{"dp"}, {}]>>)"),
              FailsAt("the end of the attribute", 29));
  EXPECT_THAT(ParseSdySharding(R"(sharding<@, [{}]>)"), FailsAt("a mesh name after '@'", 10));
  EXPECT_THAT(ParseSdySharding(R"(sharding<@mesh [{}]>)"), FailsAt("','", 15));
  EXPECT_THAT(ParseSdySharding(R"(sharding<@mesh, [{dp}]>)"),
              FailsAt("an axis name in double quotes or '?'", 18));
  EXPECT_THAT(ParseSdySharding(R"(sharding<@mesh, [{"dp"]>)"), FailsAt("'}'", 22));
  //          0    5    10   15   20
  //          sharding<@mesh, [{}], replicate={"x"}>
  EXPECT_THAT(ParseSdySharding(R"(sharding<@mesh, [{}], replicate={"x"}>)"),
              FailsAt("replicated= or unreduced=", 22));
  EXPECT_THAT(ParseSdySharding(R"(sharding<mesh<["a"=0]>, [{"a"}]>)"),
              FailsAt("a positive axis size", 19));
}

// --- sdy.sharding_per_value ---------------------------------------------------------------------

TEST(StablehloAttributeTextTest, ShardingPerValue) {
  ASSERT_OK_AND_ASSIGN(
      std::vector<SdySharding> shardings,
      ParseSdyShardingPerValue(R"(sharding_per_value<[<@mesh, [{"dp"}, {"tp"}]>]>)"));
  ASSERT_EQ(shardings.size(), 1u);
  EXPECT_EQ(shardings[0].mesh_name, "mesh");
  EXPECT_THAT(shardings[0].dims, ElementsAre(Axes{"dp"}, Axes{"tp"}));
}

TEST(StablehloAttributeTextTest, ShardingPerValueOfSeveralValues) {
  ASSERT_OK_AND_ASSIGN(
      std::vector<SdySharding> shardings,
      ParseSdyShardingPerValue(
          R"(sharding_per_value<[<@mesh, [{"dp"}, {}], replicated={"tp"}>, <@other, []>]>)"));
  ASSERT_EQ(shardings.size(), 2u);
  EXPECT_THAT(shardings[0].dims, ElementsAre(Axes{"dp"}, Axes{}));
  EXPECT_THAT(shardings[0].replicated, ElementsAre("tp"));
  EXPECT_EQ(shardings[1].mesh_name, "other");
  EXPECT_THAT(shardings[1].dims, IsEmpty());
  ASSERT_OK_AND_ASSIGN(std::vector<SdySharding> none,
                       ParseSdyShardingPerValue("sharding_per_value<[]>"));
  EXPECT_THAT(none, IsEmpty());
}

TEST(StablehloAttributeTextTest, ShardingPerValueErrors) {
  EXPECT_THAT(ParseSdyShardingPerValue(""), FailsAt("'<'", 0));
  //          0    5    10   15   20
  //          sharding_per_value<[@mesh, [{}]]>
  EXPECT_THAT(ParseSdyShardingPerValue(R"(sharding_per_value<[@mesh, [{}]]>)"), FailsAt("'<'", 20));
  const std::string unclosed = R"(sharding_per_value<[<@mesh, [{"dp"}, {"tp"}]>])";
  EXPECT_THAT(ParseSdyShardingPerValue(unclosed), FailsAt("'>'", unclosed.size()));
  EXPECT_THAT(ParseSdyShardingPerValue(R"(sharding_per_value<[<@mesh, [{}]>]> x)"),
              FailsAt("the end of the attribute", 36));
  // A single sharding is not a list of them.
  EXPECT_THAT(ParseSdyShardingPerValue(R"(sharding<@mesh, [{}]>)"), FailsAt("'<'", 0));
}

TEST(StablehloAttributeTextTest, ErrorMessagesQuoteTheText) {
  EXPECT_THAT(ParseSdyMesh("mesh<[\"x\"=0]>\n"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("sdy mesh"), HasSubstr(R"(mesh<[\"x\"=0]>\n)"))));
}

TEST(StablehloAttributeTextTest, GspmdShardings) {
  ASSERT_OK_AND_ASSIGN(GspmdSharding replicated, ParseGspmdSharding("{replicated}"));
  EXPECT_TRUE(replicated.replicated);
  ASSERT_OK_AND_ASSIGN(GspmdSharding rows,
                       ParseGspmdSharding("{devices=[2,1,4]<=[8] last_tile_dim_replicate}"));
  EXPECT_THAT(rows.tiles, ElementsAre(2, 1));
  EXPECT_EQ(rows.replicas, 4);
  EXPECT_THAT(rows.devices, ElementsAre(0, 1, 2, 3, 4, 5, 6, 7));
  // iota [2, 4] transposed: columns of [[0, 1, 2, 3], [4, 5, 6, 7]].
  ASSERT_OK_AND_ASSIGN(
      GspmdSharding transposed,
      ParseGspmdSharding("{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}"));
  EXPECT_THAT(transposed.tiles, ElementsAre(1, 4));
  EXPECT_THAT(transposed.devices, ElementsAre(0, 4, 1, 5, 2, 6, 3, 7));
  ASSERT_OK_AND_ASSIGN(GspmdSharding listed, ParseGspmdSharding("{devices=[2,2]0,2,1,3}"));
  EXPECT_THAT(listed.devices, ElementsAre(0, 2, 1, 3));
  EXPECT_EQ(listed.replicas, 1);

  EXPECT_THAT(ParseGspmdSharding("{maximal device=0}"),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("maximal")));
  EXPECT_THAT(ParseGspmdSharding("{devices=[2,2]0,1,1,3}"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("a permutation of 0 ... 3")));
  EXPECT_THAT(ParseGspmdSharding("{devices=[2,2]<=[8]}"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("an iota of 4 devices")));
  EXPECT_THAT(ParseGspmdSharding("{devices=[2,4]<=[2,4]T(0,0)}"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("a permutation")));
  EXPECT_THAT(ParseGspmdSharding("{devices=[65536,2]<=[131072]}"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("at most 65536")));
  EXPECT_THAT(ParseGspmdSharding("{devices=[2]<=[2] last_tile_dims={manual}}"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("position")));
}

TEST(StablehloAttributeTextTest, GspmdShardingsFindTheirMesh) {
  auto parse = [](const std::string& text) {
    absl::StatusOr<GspmdSharding> s = ParseGspmdSharding(text);
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? *s : GspmdSharding{};
  };
  // JAX's Megatron MLP over mesh (dp=2, tp=4), written as GSPMD.
  ASSERT_OK_AND_ASSIGN(
      std::vector<std::string> texts,
      GspmdShardingTexts({parse("{devices=[2,1,4]<=[8] last_tile_dim_replicate}"),
                          parse("{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}"),
                          parse("{devices=[4,1,2]<=[2,4]T(1,0) last_tile_dim_replicate}"),
                          parse("{devices=[8,1]<=[8]}"), parse("{replicated}")},
                         {2, 2, 2, 2, 1}));
  EXPECT_THAT(texts, ElementsAre("mesh{x=2,y=4} P(x,None)", "mesh{x=2,y=4} P(None,y)",
                                 "mesh{x=2,y=4} P(y,None)", "mesh{x=2,y=4} P((x,y),None)",
                                 "mesh{x=2,y=4} P()"));
  // One axis when one is enough.
  ASSERT_OK_AND_ASSIGN(texts, GspmdShardingTexts({parse("{devices=[1,8]<=[8]}")}, {2}));
  EXPECT_THAT(texts, ElementsAre("mesh{x=8} P(None,x)"));
  // Nothing sharded: nothing to say.
  ASSERT_OK_AND_ASSIGN(texts, GspmdShardingTexts({parse("{replicated}")}, {3}));
  EXPECT_THAT(texts, ElementsAre(""));
  // Devices in an order no mesh has; tiles that do not fit the value; two device counts.
  EXPECT_THAT(GspmdShardingTexts({parse("{devices=[4]0,2,3,1}")}, {1}),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("no mesh")));
  EXPECT_THAT(GspmdShardingTexts({parse("{devices=[2,2]<=[4]}")}, {3}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("rank 3")));
  EXPECT_THAT(
      GspmdShardingTexts({parse("{devices=[2]<=[2]}"), parse("{devices=[4]<=[4]}")}, {1, 1}),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("2 and 4 devices")));
}

}  // namespace
}  // namespace tessera::compiler::stablehlo
