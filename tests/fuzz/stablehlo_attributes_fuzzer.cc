// libFuzzer target for the parsers of StableHLO and Shardy attribute text
// (compiler/stablehlo/attribute_text.h): the first byte picks the parser (dot dimensions, gather /
// scatter dimensions, the comparison_direction or comparison_type enum, sdy mesh, sdy sharding,
// sdy sharding_per_value, a GSPMD sharding with the mesh search over it, shard_map's manual axes,
// convolution dimensions), the rest is the text.
// None may crash; each returns OK or INVALID_ARGUMENT, whose message is one printable line ending
// "at position N" with N no larger than the text's size and equal to the attached parse location; a
// parsed mesh has positive axis sizes; and what parses, printed back in the attribute's syntax,
// parses again to the same value.
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/message_text.h"
#include "compiler/stablehlo/attribute_text.h"
#include "compiler/stablehlo/gspmd_mesh.h"

namespace {

namespace sh = tessera::compiler::stablehlo;

[[noreturn]] void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "%s: %s\n", what, detail.c_str());
  std::abort();
}

// INVALID_ARGUMENT, one printable line, ending "at position N" with N <= text.size(), N attached.
void CheckError(const absl::Status& s, std::string_view text) {
  if (s.code() != absl::StatusCode::kInvalidArgument) Fail("unexpected code", s.ToString());
  const std::string_view message(s.message().data(), s.message().size());
  for (unsigned char c : message) {
    if (c < 0x20 || c == 0x7f) Fail("control character in the message", s.ToString());
  }
  constexpr std::string_view kAt = "at position ";
  const size_t at = message.rfind(kAt);
  if (at == std::string_view::npos) Fail("no position", s.ToString());
  const char* first = message.data() + at + kAt.size();
  const char* last = message.data() + message.size();
  size_t position = 0;
  const std::from_chars_result r = std::from_chars(first, last, position);
  if (r.ec != std::errc() || r.ptr != last) {
    Fail("the message does not end with a position", s.ToString());
  }
  if (position > text.size()) Fail("position past the end of the text", s.ToString());
  const std::optional<tessera::base::ParseLocation> where = tessera::base::GetParseLocation(s);
  if (!where.has_value() || where->offset != position) {
    Fail("the parse location differs from the message's position", s.ToString());
  }
}

// --- printers, in the syntax the parsers read ---

std::string Ints(const std::vector<int64_t>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(values[i]);
  }
  return out + "]";
}

// A string between double quotes; the parser keeps the byte after a backslash.
std::string Quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string AxisSet(const std::vector<std::string>& axes) {
  std::string out = "{";
  for (size_t i = 0; i < axes.size(); ++i) {
    if (i > 0) out += ", ";
    out += Quoted(axes[i]);
  }
  return out + "}";
}

std::string PrintMesh(const sh::SdyMesh& mesh) {
  std::string out = "mesh<[";
  for (size_t i = 0; i < mesh.axes.size(); ++i) {
    if (i > 0) out += ", ";
    out += Quoted(mesh.axes[i].name) + "=" + std::to_string(mesh.axes[i].size);
  }
  out += "]";
  if (!mesh.device_ids.empty()) out += ", device_ids=" + Ints(mesh.device_ids);
  return out + ">";
}

// The body between "sharding<" and ">".
std::string PrintShardingBody(const sh::SdySharding& sharding) {
  std::string out = sharding.inline_mesh.has_value() ? PrintMesh(*sharding.inline_mesh)
                                                     : "@" + sharding.mesh_name;
  out += ", [";
  for (size_t i = 0; i < sharding.dims.size(); ++i) {
    if (i > 0) out += ", ";
    out += AxisSet(sharding.dims[i]);
  }
  out += "]";
  if (!sharding.replicated.empty()) out += ", replicated=" + AxisSet(sharding.replicated);
  if (!sharding.unreduced.empty()) out += ", unreduced=" + AxisSet(sharding.unreduced);
  return out;
}

std::string PrintDot(const sh::DotDimensions& d) {
  return "dot<lhs_batching_dimensions = " + Ints(d.lhs_batch) +
         ", rhs_batching_dimensions = " + Ints(d.rhs_batch) +
         ", lhs_contracting_dimensions = " + Ints(d.lhs_contracting) +
         ", rhs_contracting_dimensions = " + Ints(d.rhs_contracting) + ">";
}

std::string PrintGather(const sh::GatherDimensions& d) {
  return "gather<offset_dims = " + Ints(d.offset_dims) +
         ", collapsed_slice_dims = " + Ints(d.collapsed_slice_dims) +
         ", operand_batching_dims = " + Ints(d.operand_batching_dims) +
         ", start_indices_batching_dims = " + Ints(d.start_indices_batching_dims) +
         ", start_index_map = " + Ints(d.start_index_map) +
         ", update_window_dims = " + Ints(d.update_window_dims) +
         ", inserted_window_dims = " + Ints(d.inserted_window_dims) +
         ", scatter_dims_to_operand_dims = " + Ints(d.scatter_dims_to_operand_dims) +
         ", index_vector_dim = " + std::to_string(d.index_vector_dim) + ">";
}

// --- equality ---

bool Same(const sh::SdyMesh& a, const sh::SdyMesh& b) {
  if (a.axes.size() != b.axes.size() || a.device_ids != b.device_ids) return false;
  for (size_t i = 0; i < a.axes.size(); ++i) {
    if (a.axes[i].name != b.axes[i].name || a.axes[i].size != b.axes[i].size) return false;
  }
  return true;
}

bool Same(const sh::SdySharding& a, const sh::SdySharding& b) {
  if (a.mesh_name != b.mesh_name || a.inline_mesh.has_value() != b.inline_mesh.has_value() ||
      a.dims != b.dims || a.replicated != b.replicated || a.unreduced != b.unreduced) {
    return false;
  }
  return !a.inline_mesh.has_value() || Same(*a.inline_mesh, *b.inline_mesh);
}

void CheckMesh(const sh::SdyMesh& mesh) {
  for (const sh::SdyMesh::Axis& axis : mesh.axes) {
    if (axis.size < 1) Fail("a non-positive axis size", PrintMesh(mesh));
  }
}

// --- one target per parser ---

void FuzzDot(std::string_view text) {
  absl::StatusOr<sh::DotDimensions> r = sh::ParseDotDimensions(text);
  if (!r.ok()) return CheckError(r.status(), text);
  const std::string printed = PrintDot(*r);
  absl::StatusOr<sh::DotDimensions> again = sh::ParseDotDimensions(printed);
  if (!again.ok() || again->lhs_batch != r->lhs_batch || again->rhs_batch != r->rhs_batch ||
      again->lhs_contracting != r->lhs_contracting ||
      again->rhs_contracting != r->rhs_contracting) {
    Fail("dot round trip", printed);
  }
}

void FuzzGather(std::string_view text) {
  absl::StatusOr<sh::GatherDimensions> r = sh::ParseGatherDimensions(text);
  if (!r.ok()) return CheckError(r.status(), text);
  const std::string printed = PrintGather(*r);
  absl::StatusOr<sh::GatherDimensions> again = sh::ParseGatherDimensions(printed);
  if (!again.ok() || PrintGather(*again) != printed) Fail("gather round trip", printed);
}

void FuzzEnum(std::string_view text, const std::string& name) {
  absl::StatusOr<std::string> r = sh::ParseEnumAttr(text, name);
  if (!r.ok()) return CheckError(r.status(), text);
  for (const std::string& printed : {"<" + name + " " + *r + ">", name + " " + *r}) {
    absl::StatusOr<std::string> again = sh::ParseEnumAttr(printed, name);
    if (!again.ok() || *again != *r) Fail("enum round trip", printed);
  }
}

void FuzzMesh(std::string_view text) {
  absl::StatusOr<sh::SdyMesh> r = sh::ParseSdyMesh(text);
  if (!r.ok()) return CheckError(r.status(), text);
  CheckMesh(*r);
  const std::string printed = PrintMesh(*r);
  absl::StatusOr<sh::SdyMesh> again = sh::ParseSdyMesh(printed);
  if (!again.ok() || !Same(*again, *r)) Fail("mesh round trip", printed);
}

void FuzzSharding(std::string_view text) {
  absl::StatusOr<sh::SdySharding> r = sh::ParseSdySharding(text);
  if (!r.ok()) return CheckError(r.status(), text);
  if (r->inline_mesh.has_value()) CheckMesh(*r->inline_mesh);
  const std::string printed = "sharding<" + PrintShardingBody(*r) + ">";
  absl::StatusOr<sh::SdySharding> again = sh::ParseSdySharding(printed);
  if (!again.ok() || !Same(*again, *r)) Fail("sharding round trip", printed);
}

void FuzzShardingPerValue(std::string_view text) {
  absl::StatusOr<std::vector<sh::SdySharding>> r = sh::ParseSdyShardingPerValue(text);
  if (!r.ok()) return CheckError(r.status(), text);
  std::string printed = "sharding_per_value<[";
  for (size_t i = 0; i < r->size(); ++i) {
    if ((*r)[i].inline_mesh.has_value()) CheckMesh(*(*r)[i].inline_mesh);
    if (i > 0) printed += ", ";
    printed += "<" + PrintShardingBody((*r)[i]) + ">";
  }
  printed += "]>";
  absl::StatusOr<std::vector<sh::SdySharding>> again = sh::ParseSdyShardingPerValue(printed);
  if (!again.ok() || again->size() != r->size()) Fail("sharding_per_value round trip", printed);
  for (size_t i = 0; i < r->size(); ++i) {
    if (!Same((*again)[i], (*r)[i])) Fail("sharding_per_value round trip", printed);
  }
}

// Convolution dimension numbers in the raw form (any values) and, where every list is a
// permutation of its tensor's dimensions, the compact form.
std::string PrintConvRaw(const sh::ConvDimensions& d) {
  return "conv<raw input_batch_dimension = " + std::to_string(d.input_batch) +
         ", input_feature_dimension = " + std::to_string(d.input_feature) +
         ", input_spatial_dimensions = " + Ints(d.input_spatial) +
         ", kernel_input_feature_dimension = " + std::to_string(d.kernel_input_feature) +
         ", kernel_output_feature_dimension = " + std::to_string(d.kernel_output_feature) +
         ", kernel_spatial_dimensions = " + Ints(d.kernel_spatial) +
         ", output_batch_dimension = " + std::to_string(d.output_batch) +
         ", output_feature_dimension = " + std::to_string(d.output_feature) +
         ", output_spatial_dimensions = " + Ints(d.output_spatial) + ">";
}

// "[b, 0, 1, f]" for one tensor; nullopt when the dimensions are not a permutation.
std::optional<std::string> PrintConvList(int64_t first, char first_label, int64_t second,
                                         char second_label, const std::vector<int64_t>& spatial) {
  const int64_t rank = static_cast<int64_t>(spatial.size()) + 2;
  std::vector<std::string> labels(rank);
  auto place = [&](int64_t at, const std::string& label) {
    if (at < 0 || at >= rank || !labels[at].empty()) return false;
    labels[at] = label;
    return true;
  };
  if (!place(first, std::string(1, first_label)) || !place(second, std::string(1, second_label))) {
    return std::nullopt;
  }
  for (size_t s = 0; s < spatial.size(); ++s) {
    if (!place(spatial[s], std::to_string(s))) return std::nullopt;
  }
  std::string out = "[";
  for (int64_t i = 0; i < rank; ++i) out += (i > 0 ? ", " : "") + labels[i];
  return out + "]";
}

bool SameConv(const sh::ConvDimensions& a, const sh::ConvDimensions& b) {
  return a.input_batch == b.input_batch && a.input_feature == b.input_feature &&
         a.input_spatial == b.input_spatial && a.kernel_input_feature == b.kernel_input_feature &&
         a.kernel_output_feature == b.kernel_output_feature &&
         a.kernel_spatial == b.kernel_spatial && a.output_batch == b.output_batch &&
         a.output_feature == b.output_feature && a.output_spatial == b.output_spatial;
}

void FuzzConv(std::string_view text) {
  absl::StatusOr<sh::ConvDimensions> r = sh::ParseConvDimensions(text);
  if (!r.ok()) return CheckError(r.status(), text);
  std::vector<std::string> printed = {PrintConvRaw(*r)};
  std::optional<std::string> in =
      PrintConvList(r->input_batch, 'b', r->input_feature, 'f', r->input_spatial);
  std::optional<std::string> kernel =
      PrintConvList(r->kernel_input_feature, 'i', r->kernel_output_feature, 'o', r->kernel_spatial);
  std::optional<std::string> out =
      PrintConvList(r->output_batch, 'b', r->output_feature, 'f', r->output_spatial);
  if (in && kernel && out) printed.push_back("conv<" + *in + "x" + *kernel + "->" + *out + ">");
  for (const std::string& again_text : printed) {
    absl::StatusOr<sh::ConvDimensions> again = sh::ParseConvDimensions(again_text);
    if (!again.ok() || !SameConv(*again, *r)) Fail("conv round trip", again_text);
  }
}

// shard_map's manual axes: what parses prints and parses back to the same axes.
void FuzzManualAxes(std::string_view text) {
  absl::StatusOr<std::vector<std::string>> r = sh::ParseSdyManualAxes(text);
  if (!r.ok()) return CheckError(r.status(), text);
  const std::string printed = "manual_axes" + AxisSet(*r);
  absl::StatusOr<std::vector<std::string>> again = sh::ParseSdyManualAxes(printed);
  if (!again.ok() || *again != *r) Fail("manual_axes round trip", printed);
}

}  // namespace

// A GSPMD sharding: INVALID_ARGUMENT as the other parsers, or UNIMPLEMENTED (a kind Tessera does
// not take); what parses has one device per tile and replica, each once, and the mesh search over
// it returns OK (a text per value, "" only when replicated) or an error, never a crash.
void FuzzGspmd(std::string_view text) {
  absl::StatusOr<sh::GspmdSharding> parsed = sh::ParseGspmdSharding(text);
  if (!parsed.ok()) {
    if (parsed.status().code() != absl::StatusCode::kUnimplemented)
      CheckError(parsed.status(), text);
    return;
  }
  if (parsed->replicated) return;
  int64_t count = parsed->replicas;
  for (int64_t t : parsed->tiles) count *= t;
  std::vector<bool> seen(parsed->devices.size(), false);
  if (count != static_cast<int64_t>(parsed->devices.size()))
    Fail("device count", std::string(text));
  for (int64_t d : parsed->devices) {
    if (d < 0 || d >= count || seen[d]) Fail("not a permutation", std::string(text));
    seen[d] = true;
  }
  absl::StatusOr<std::vector<std::string>> texts =
      sh::GspmdShardingTexts({*parsed, sh::GspmdSharding{.replicated = true}},
                             {static_cast<int64_t>(parsed->tiles.size()), 0});
  if (texts.ok() && (texts->size() != 2 || (count > 1 && (*texts)[0].empty()))) {
    Fail("mesh texts", std::string(text));
  }
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  switch (data[0] % 10) {
    case 0:
      FuzzDot(text);
      break;
    case 1:
      FuzzGather(text);
      break;
    case 2:
      FuzzEnum(text, "comparison_direction");
      break;
    case 3:
      FuzzEnum(text, "comparison_type");
      break;
    case 4:
      FuzzMesh(text);
      break;
    case 5:
      FuzzSharding(text);
      break;
    case 6:
      FuzzShardingPerValue(text);
      break;
    case 7:
      FuzzGspmd(text);
      break;
    case 8:
      FuzzManualAxes(text);
      break;
    default:
      FuzzConv(text);
      break;
  }
  return 0;
}
