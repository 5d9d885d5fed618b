#include "compiler/stablehlo/attribute_text.h"

#include <cctype>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "base/message_text.h"
#include "base/status_macros.h"
#include "base/string_view.h"

namespace tessera::compiler::stablehlo {
namespace {

bool IsIdentifierChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '$';
}

// A cursor over one attribute's text; every Eat* skips white space first and leaves the position
// unchanged when it fails.
class Lexer {
 public:
  Lexer(std::string_view what, std::string_view text) : what_(what), text_(text) {}

  bool Eat(std::string_view token) {
    SkipSpaces();
    if (text_.substr(pos_, token.size()) != token) return false;
    pos_ += token.size();
    return true;
  }
  // `word` not followed by an identifier character ("comparison_directionEQ" does not start with
  // the word "comparison_direction").
  bool EatWord(std::string_view word) {
    SkipSpaces();
    const size_t end = pos_ + word.size();
    if (text_.substr(pos_, word.size()) != word ||
        (end < text_.size() && IsIdentifierChar(text_[end]))) {
      return false;
    }
    pos_ = end;
    return true;
  }
  bool Peek(char c) {
    SkipSpaces();
    return pos_ < text_.size() && text_[pos_] == c;
  }
  // [A-Za-z_][A-Za-z0-9_.$]*
  bool EatIdentifier(std::string_view* out) {
    SkipSpaces();
    size_t end = pos_;
    while (end < text_.size() && IsIdentifierChar(text_[end])) ++end;
    if (end == pos_ || std::isdigit(static_cast<unsigned char>(text_[pos_]))) return false;
    *out = text_.substr(pos_, end - pos_);
    pos_ = end;
    return true;
  }
  // A decimal of at most 18 digits, optionally negative.
  bool EatInteger(int64_t* out) {
    SkipSpaces();
    size_t end = pos_;
    const bool negative = end < text_.size() && text_[end] == '-';
    if (negative) ++end;
    int64_t value = 0;
    size_t digits = 0;
    while (end < text_.size() && std::isdigit(static_cast<unsigned char>(text_[end]))) {
      if (++digits > 18) return false;
      value = value * 10 + (text_[end] - '0');
      ++end;
    }
    if (digits == 0) return false;
    *out = negative ? -value : value;
    pos_ = end;
    return true;
  }
  // "..."; a backslash takes the byte after it literally (\" is a quote; JAX's axis names have
  // no escapes).
  bool EatString(std::string* out) {
    SkipSpaces();
    if (pos_ >= text_.size() || text_[pos_] != '"') return false;
    size_t end = pos_ + 1;
    std::string value;
    while (end < text_.size() && text_[end] != '"') {
      if (text_[end] == '\\' && end + 1 < text_.size()) ++end;
      value += text_[end++];
    }
    if (end >= text_.size()) return false;
    *out = std::move(value);
    pos_ = end + 1;
    return true;
  }
  bool AtEnd() {
    SkipSpaces();
    return pos_ == text_.size();
  }
  // Where the next token starts (for an error about a token already eaten).
  size_t Position() {
    SkipSpaces();
    return pos_;
  }
  absl::Status Error(std::string_view expected) const { return ErrorAt(pos_, expected); }
  absl::Status ErrorAt(size_t at, std::string_view expected) const {
    absl::Status status = absl::InvalidArgumentError(
        absl::StrCat("invalid ", base::AsAbsl(what_), " ", base::QuoteExcerpt(text_, at),
                     ": expected ", base::AsAbsl(expected), " at position ", at));
    base::AttachParseLocation(status, {at, std::string(expected)});
    return status;
  }

  absl::Status Expect(std::string_view token) {
    if (Eat(token)) return absl::OkStatus();
    return Error(absl::StrCat("'", base::AsAbsl(token), "'"));
  }

  // "[a, b, ...]" of integers.
  absl::StatusOr<std::vector<int64_t>> IntegerList() {
    TESSERA_RETURN_IF_ERROR(Expect("["));
    std::vector<int64_t> values;
    if (Eat("]")) return values;
    do {
      int64_t value = 0;
      if (!EatInteger(&value)) return Error("an integer");
      values.push_back(value);
    } while (Eat(","));
    TESSERA_RETURN_IF_ERROR(Expect("]"));
    return values;
  }

  // The mnemonic `name` when the text starts with it (OpaqueAttr keeps "dot<...>" for
  // `#stablehlo.dot<...>`), then '<'.
  absl::Status Open(std::string_view mnemonic) {
    (void)Eat(mnemonic);
    return Expect("<");
  }
  absl::Status Close() {
    TESSERA_RETURN_IF_ERROR(Expect(">"));
    if (!AtEnd()) return Error("the end of the attribute");
    return absl::OkStatus();
  }

 private:
  void SkipSpaces() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }

  std::string_view what_;
  std::string_view text_;
  size_t pos_ = 0;
};

// `name = [..]` fields separated by commas until '>', each stored by `field`; an unknown name is
// an error at the name, naming the known ones.
template <typename Field>
absl::Status ParseFields(Lexer& lexer, std::string_view known, Field field) {
  if (lexer.Peek('>')) return absl::OkStatus();
  do {
    const size_t at = lexer.Position();
    std::string_view name;
    if (!lexer.EatIdentifier(&name)) {
      return lexer.Error(absl::StrCat("one of ", base::AsAbsl(known)));
    }
    TESSERA_RETURN_IF_ERROR(lexer.Expect("="));
    bool found = false;
    TESSERA_RETURN_IF_ERROR(field(name, found));
    if (!found) {
      return lexer.ErrorAt(
          at, absl::StrCat("one of ", base::AsAbsl(known), " (not '", base::AsAbsl(name), "')"));
    }
  } while (lexer.Eat(","));
  return absl::OkStatus();
}

absl::StatusOr<SdyMesh> ParseMeshBody(Lexer& lexer) {
  SdyMesh mesh;
  TESSERA_RETURN_IF_ERROR(lexer.Expect("["));
  if (!lexer.Eat("]")) {
    do {
      SdyMesh::Axis axis;
      if (!lexer.EatString(&axis.name)) return lexer.Error("an axis name in double quotes");
      TESSERA_RETURN_IF_ERROR(lexer.Expect("="));
      const size_t at = lexer.Position();
      if (!lexer.EatInteger(&axis.size) || axis.size < 1) {
        return lexer.ErrorAt(at, "a positive axis size");
      }
      mesh.axes.push_back(std::move(axis));
    } while (lexer.Eat(","));
    TESSERA_RETURN_IF_ERROR(lexer.Expect("]"));
  }
  if (lexer.Eat(",")) {
    TESSERA_RETURN_IF_ERROR(lexer.Expect("device_ids"));
    TESSERA_RETURN_IF_ERROR(lexer.Expect("="));
    TESSERA_ASSIGN_OR_RETURN(mesh.device_ids, lexer.IntegerList());
  }
  return mesh;
}

// `{"a", "b"}` (a dimension's axes; "?" marks it open, which Tessera reads as closed) or
// `{"a"}p1` (a priority, ignored).
absl::StatusOr<std::vector<std::string>> ParseAxisSet(Lexer& lexer) {
  TESSERA_RETURN_IF_ERROR(lexer.Expect("{"));
  std::vector<std::string> axes;
  if (!lexer.Eat("}")) {
    do {
      if (lexer.Eat("?")) continue;
      std::string axis;
      if (!lexer.EatString(&axis)) return lexer.Error("an axis name in double quotes or '?'");
      if (lexer.Peek(':')) {
        return lexer.Error("the end of the axis name (sub-axes \"x\":(1)2 are not supported)");
      }
      axes.push_back(std::move(axis));
    } while (lexer.Eat(","));
    TESSERA_RETURN_IF_ERROR(lexer.Expect("}"));
  }
  std::string_view priority;
  if (lexer.Peek('p')) (void)lexer.EatIdentifier(&priority);
  return axes;
}

// `@mesh, [{..}, ..] (replicated={..})? (unreduced={..})?` or with `mesh<[...]>` inline.
absl::StatusOr<SdySharding> ParseShardingBody(Lexer& lexer) {
  SdySharding sharding;
  if (lexer.Eat("@")) {
    std::string_view name;
    if (!lexer.EatIdentifier(&name)) return lexer.Error("a mesh name after '@'");
    sharding.mesh_name = std::string(name);
  } else {
    TESSERA_RETURN_IF_ERROR(lexer.Open("mesh"));
    TESSERA_ASSIGN_OR_RETURN(sharding.inline_mesh, ParseMeshBody(lexer));
    TESSERA_RETURN_IF_ERROR(lexer.Expect(">"));
  }
  TESSERA_RETURN_IF_ERROR(lexer.Expect(","));
  TESSERA_RETURN_IF_ERROR(lexer.Expect("["));
  if (!lexer.Eat("]")) {
    do {
      TESSERA_ASSIGN_OR_RETURN(std::vector<std::string> axes, ParseAxisSet(lexer));
      sharding.dims.push_back(std::move(axes));
    } while (lexer.Eat(","));
    TESSERA_RETURN_IF_ERROR(lexer.Expect("]"));
  }
  while (lexer.Eat(",")) {
    const size_t at = lexer.Position();
    std::string_view field;
    if (!lexer.EatIdentifier(&field) || (field != "replicated" && field != "unreduced")) {
      return lexer.ErrorAt(at, "replicated= or unreduced=");
    }
    TESSERA_RETURN_IF_ERROR(lexer.Expect("="));
    TESSERA_ASSIGN_OR_RETURN(std::vector<std::string> axes, ParseAxisSet(lexer));
    (field == "replicated" ? sharding.replicated : sharding.unreduced) = std::move(axes);
  }
  return sharding;
}

}  // namespace

absl::StatusOr<DotDimensions> ParseDotDimensions(std::string_view text) {
  Lexer lexer("dot_dimension_numbers", text);
  TESSERA_RETURN_IF_ERROR(lexer.Open("dot"));
  DotDimensions dims;
  TESSERA_RETURN_IF_ERROR(ParseFields(
      lexer,
      "lhs_batching_dimensions, rhs_batching_dimensions, lhs_contracting_dimensions, "
      "rhs_contracting_dimensions",
      [&](std::string_view name, bool& found) -> absl::Status {
        std::vector<int64_t>* list = name == "lhs_batching_dimensions"      ? &dims.lhs_batch
                                     : name == "rhs_batching_dimensions"    ? &dims.rhs_batch
                                     : name == "lhs_contracting_dimensions" ? &dims.lhs_contracting
                                     : name == "rhs_contracting_dimensions" ? &dims.rhs_contracting
                                                                            : nullptr;
        if (list == nullptr) return absl::OkStatus();
        found = true;
        TESSERA_ASSIGN_OR_RETURN(*list, lexer.IntegerList());
        return absl::OkStatus();
      }));
  TESSERA_RETURN_IF_ERROR(lexer.Close());
  return dims;
}

namespace {

// One tensor's list of the compact form: `[b, 0, 1, f]`, `first` / `second` its two feature-like
// labels ("b", "f" or "i", "o"), each position a label or a spatial index.
absl::Status ParseConvList(Lexer& lexer, char first, char second, int64_t* first_dim,
                           int64_t* second_dim, std::vector<int64_t>* spatial) {
  TESSERA_RETURN_IF_ERROR(lexer.Expect("["));
  constexpr int64_t kMaxDims = 64;
  std::vector<int64_t> spatial_at;  // spatial index at each position, -1 for a label
  int64_t firsts = 0, seconds = 0;
  if (!lexer.Peek(']')) {
    do {
      const size_t at = lexer.Position();
      if (static_cast<int64_t>(spatial_at.size()) >= kMaxDims) {
        return lexer.ErrorAt(at, "at most 64 dimensions");
      }
      std::string_view label;
      int64_t index = 0;
      const std::string expected =
          absl::StrCat("'", std::string(1, first), "', '", std::string(1, second),
                       "' or a spatial dimension's index");
      if (lexer.EatIdentifier(&label)) {
        if (label.size() != 1 || (label[0] != first && label[0] != second)) {
          return lexer.ErrorAt(at, expected);
        }
        int64_t& count = label[0] == first ? firsts : seconds;
        if (++count > 1)
          return lexer.ErrorAt(
              at, absl::StrCat(expected, " (not a second '", base::AsAbsl(label), "')"));
        *(label[0] == first ? first_dim : second_dim) = static_cast<int64_t>(spatial_at.size());
        spatial_at.push_back(-1);
      } else if (lexer.EatInteger(&index)) {
        if (index < 0 || index >= kMaxDims) return lexer.ErrorAt(at, "a spatial index in [0, 64)");
        spatial_at.push_back(index);
      } else {
        return lexer.Error(expected);
      }
    } while (lexer.Eat(","));
  }
  TESSERA_RETURN_IF_ERROR(lexer.Expect("]"));
  if (firsts != 1 || seconds != 1) {
    return lexer.Error(absl::StrCat("(before this) a list with one '", std::string(1, first),
                                    "' and one '", std::string(1, second), "'"));
  }
  const int64_t count = static_cast<int64_t>(spatial_at.size()) - 2;
  spatial->assign(count, -1);
  for (int64_t position = 0; position < static_cast<int64_t>(spatial_at.size()); ++position) {
    const int64_t s = spatial_at[position];
    if (s < 0) continue;
    if (s >= count || (*spatial)[s] != -1) {
      return lexer.Error(
          absl::StrCat("(before this) spatial indices 0 to ", count - 1, " once each"));
    }
    (*spatial)[s] = position;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ConvDimensions> ParseConvDimensions(std::string_view text) {
  Lexer lexer("convolution dimension numbers", text);
  TESSERA_RETURN_IF_ERROR(lexer.Open("conv"));
  ConvDimensions dims;
  if (lexer.EatWord("raw")) {
    TESSERA_RETURN_IF_ERROR(ParseFields(
        lexer,
        "input_batch_dimension, input_feature_dimension, input_spatial_dimensions, "
        "kernel_input_feature_dimension, kernel_output_feature_dimension, "
        "kernel_spatial_dimensions, output_batch_dimension, output_feature_dimension, "
        "output_spatial_dimensions",
        [&](std::string_view name, bool& found) -> absl::Status {
          std::vector<int64_t>* list = name == "input_spatial_dimensions"    ? &dims.input_spatial
                                       : name == "kernel_spatial_dimensions" ? &dims.kernel_spatial
                                       : name == "output_spatial_dimensions" ? &dims.output_spatial
                                                                             : nullptr;
          int64_t* single = name == "input_batch_dimension"            ? &dims.input_batch
                            : name == "input_feature_dimension"        ? &dims.input_feature
                            : name == "kernel_input_feature_dimension" ? &dims.kernel_input_feature
                            : name == "kernel_output_feature_dimension"
                                ? &dims.kernel_output_feature
                            : name == "output_batch_dimension"   ? &dims.output_batch
                            : name == "output_feature_dimension" ? &dims.output_feature
                                                                 : nullptr;
          if (list != nullptr) {
            found = true;
            TESSERA_ASSIGN_OR_RETURN(*list, lexer.IntegerList());
          } else if (single != nullptr) {
            found = true;
            if (!lexer.EatInteger(single)) return lexer.Error("an integer");
          }
          return absl::OkStatus();
        }));
    TESSERA_RETURN_IF_ERROR(lexer.Close());
    if (dims.input_spatial.size() != dims.kernel_spatial.size() ||
        dims.input_spatial.size() != dims.output_spatial.size()) {
      return lexer.Error("(before this) as many spatial dimensions in input, kernel and output");
    }
    return dims;
  }
  TESSERA_RETURN_IF_ERROR(
      ParseConvList(lexer, 'b', 'f', &dims.input_batch, &dims.input_feature, &dims.input_spatial));
  TESSERA_RETURN_IF_ERROR(lexer.Expect("x"));
  TESSERA_RETURN_IF_ERROR(ParseConvList(lexer, 'i', 'o', &dims.kernel_input_feature,
                                        &dims.kernel_output_feature, &dims.kernel_spatial));
  TESSERA_RETURN_IF_ERROR(lexer.Expect("->"));
  TESSERA_RETURN_IF_ERROR(ParseConvList(lexer, 'b', 'f', &dims.output_batch, &dims.output_feature,
                                        &dims.output_spatial));
  if (dims.input_spatial.size() != dims.kernel_spatial.size() ||
      dims.input_spatial.size() != dims.output_spatial.size()) {
    return lexer.Error("(before this) as many spatial dimensions in input, kernel and output");
  }
  TESSERA_RETURN_IF_ERROR(lexer.Close());
  return dims;
}

absl::StatusOr<GatherDimensions> ParseGatherDimensions(std::string_view text) {
  Lexer lexer("gather / scatter dimension numbers", text);
  std::string_view mnemonic;
  (void)lexer.EatIdentifier(&mnemonic);  // "gather" or "scatter"
  TESSERA_RETURN_IF_ERROR(lexer.Expect("<"));
  GatherDimensions dims;
  TESSERA_RETURN_IF_ERROR(ParseFields(
      lexer,
      "offset_dims, collapsed_slice_dims, operand_batching_dims, start_indices_batching_dims, "
      "start_index_map, update_window_dims, inserted_window_dims, input_batching_dims, "
      "scatter_indices_batching_dims, scatter_dims_to_operand_dims, index_vector_dim",
      [&](std::string_view name, bool& found) -> absl::Status {
        if (name == "index_vector_dim") {
          found = true;
          if (!lexer.EatInteger(&dims.index_vector_dim)) return lexer.Error("an integer");
          return absl::OkStatus();
        }
        std::vector<int64_t>* list =
            name == "offset_dims"                     ? &dims.offset_dims
            : name == "collapsed_slice_dims"          ? &dims.collapsed_slice_dims
            : name == "operand_batching_dims"         ? &dims.operand_batching_dims
            : name == "input_batching_dims"           ? &dims.operand_batching_dims
            : name == "start_indices_batching_dims"   ? &dims.start_indices_batching_dims
            : name == "scatter_indices_batching_dims" ? &dims.start_indices_batching_dims
            : name == "start_index_map"               ? &dims.start_index_map
            : name == "update_window_dims"            ? &dims.update_window_dims
            : name == "inserted_window_dims"          ? &dims.inserted_window_dims
            : name == "scatter_dims_to_operand_dims"  ? &dims.scatter_dims_to_operand_dims
                                                      : nullptr;
        if (list == nullptr) return absl::OkStatus();
        found = true;
        TESSERA_ASSIGN_OR_RETURN(*list, lexer.IntegerList());
        return absl::OkStatus();
      }));
  TESSERA_RETURN_IF_ERROR(lexer.Close());
  return dims;
}

absl::StatusOr<std::string> ParseEnumAttr(std::string_view text, std::string_view name) {
  Lexer lexer(name, text);
  const bool bracketed = lexer.Eat("<");  // OpaqueAttr keeps "<name VALUE>" or "name VALUE"
  if (!lexer.EatWord(name)) return lexer.Error(absl::StrCat("'", base::AsAbsl(name), "'"));
  std::string_view value;
  if (!lexer.EatIdentifier(&value)) return lexer.Error(absl::StrCat("the ", base::AsAbsl(name)));
  if (bracketed) TESSERA_RETURN_IF_ERROR(lexer.Expect(">"));
  if (!lexer.AtEnd()) return lexer.Error("the end of the attribute");
  return std::string(value);
}

absl::StatusOr<SdyMesh> ParseSdyMesh(std::string_view text) {
  Lexer lexer("sdy mesh", text);
  TESSERA_RETURN_IF_ERROR(lexer.Open("mesh"));
  TESSERA_ASSIGN_OR_RETURN(SdyMesh mesh, ParseMeshBody(lexer));
  TESSERA_RETURN_IF_ERROR(lexer.Close());
  return mesh;
}

absl::StatusOr<SdySharding> ParseSdySharding(std::string_view text) {
  Lexer lexer("sdy sharding", text);
  TESSERA_RETURN_IF_ERROR(lexer.Open("sharding"));
  TESSERA_ASSIGN_OR_RETURN(SdySharding sharding, ParseShardingBody(lexer));
  TESSERA_RETURN_IF_ERROR(lexer.Close());
  return sharding;
}

absl::StatusOr<std::vector<SdySharding>> ParseSdyShardingPerValue(std::string_view text) {
  Lexer lexer("sdy sharding_per_value", text);
  TESSERA_RETURN_IF_ERROR(lexer.Open("sharding_per_value"));
  TESSERA_RETURN_IF_ERROR(lexer.Expect("["));
  std::vector<SdySharding> shardings;
  if (!lexer.Eat("]")) {
    do {
      TESSERA_RETURN_IF_ERROR(lexer.Expect("<"));
      TESSERA_ASSIGN_OR_RETURN(SdySharding sharding, ParseShardingBody(lexer));
      TESSERA_RETURN_IF_ERROR(lexer.Expect(">"));
      shardings.push_back(std::move(sharding));
    } while (lexer.Eat(","));
    TESSERA_RETURN_IF_ERROR(lexer.Expect("]"));
  }
  TESSERA_RETURN_IF_ERROR(lexer.Close());
  return shardings;
}

absl::StatusOr<std::vector<std::string>> ParseSdyManualAxes(std::string_view text) {
  Lexer lexer("sdy manual_axes", text);
  std::string_view keyword;
  if (!lexer.EatIdentifier(&keyword) || keyword != "manual_axes") return lexer.Error("manual_axes");
  TESSERA_ASSIGN_OR_RETURN(std::vector<std::string> axes, ParseAxisSet(lexer));
  if (!lexer.AtEnd()) return lexer.Error("the end of the attribute");
  return axes;
}

namespace {

constexpr int64_t kMaxGspmdDevices = 65536;

// The product of `dims` (each in [1, kMaxGspmdDevices]) if at most kMaxGspmdDevices, else -1.
int64_t BoundedProduct(const std::vector<int64_t>& dims) {
  int64_t product = 1;
  for (int64_t d : dims) {
    if (d < 1 || d > kMaxGspmdDevices) return -1;
    product *= d;
    if (product > kMaxGspmdDevices) return -1;
  }
  return product;
}

// iota(product(reshape)) reshaped to `reshape`, transposed by `permutation`, flattened.
std::vector<int64_t> IotaDevices(const std::vector<int64_t>& reshape,
                                 const std::vector<int64_t>& permutation, int64_t count) {
  const size_t rank = reshape.size();
  std::vector<int64_t> strides(rank, 1);  // of the reshaped iota
  for (size_t d = rank; d-- > 1;) strides[d - 1] = strides[d] * reshape[d];
  std::vector<int64_t> devices;
  devices.reserve(count);
  std::vector<int64_t> index(rank, 0);  // over the transposed shape
  for (int64_t i = 0; i < count; ++i) {
    int64_t device = 0;
    for (size_t d = 0; d < rank; ++d) device += index[d] * strides[permutation[d]];
    devices.push_back(device);
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < reshape[permutation[d]]) break;
      index[d] = 0;
    }
  }
  return devices;
}

}  // namespace

absl::StatusOr<GspmdSharding> ParseGspmdSharding(std::string_view text) {
  Lexer lexer("GSPMD sharding", text);
  GspmdSharding sharding;
  TESSERA_RETURN_IF_ERROR(lexer.Expect("{"));
  if (lexer.Eat("}") || (lexer.EatWord("replicated") && lexer.Eat("}"))) {
    sharding.replicated = true;
    if (!lexer.AtEnd()) return lexer.Error("the end");
    return sharding;
  }
  if (lexer.EatWord("maximal") || lexer.EatWord("manual")) {
    return absl::UnimplementedError(
        absl::StrCat("GSPMD sharding ", base::QuoteExcerpt(text, 0),
                     ": maximal (one-device) and manual shardings are not supported"));
  }
  TESSERA_RETURN_IF_ERROR(lexer.Expect("devices="));
  TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> tiles, lexer.IntegerList());
  const int64_t count = BoundedProduct(tiles);
  if (tiles.empty() || count < 0) {
    return lexer.Error("tile counts from 1 whose product is at most 65536");
  }
  if (lexer.Eat("<=")) {
    const size_t at = lexer.Position();
    TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> reshape, lexer.IntegerList());
    if (BoundedProduct(reshape) != count) {
      return lexer.ErrorAt(at, absl::StrCat("an iota of ", count, " devices"));
    }
    std::vector<int64_t> permutation(reshape.size());
    for (size_t i = 0; i < permutation.size(); ++i) permutation[i] = static_cast<int64_t>(i);
    if (lexer.Eat("T")) {
      const size_t perm_at = lexer.Position();
      TESSERA_RETURN_IF_ERROR(lexer.Expect("("));
      std::vector<int64_t> given;
      do {
        int64_t value = 0;
        if (!lexer.EatInteger(&value)) return lexer.Error("an integer");
        given.push_back(value);
      } while (lexer.Eat(","));
      TESSERA_RETURN_IF_ERROR(lexer.Expect(")"));
      std::vector<bool> seen(reshape.size(), false);
      bool valid = given.size() == reshape.size();
      for (size_t i = 0; valid && i < given.size(); ++i) {
        valid = given[i] >= 0 && given[i] < static_cast<int64_t>(given.size()) && !seen[given[i]];
        if (valid) seen[given[i]] = true;
      }
      if (!valid) return lexer.ErrorAt(perm_at, "a permutation of the iota's dimensions");
      permutation = given;
    }
    sharding.devices = IotaDevices(reshape, permutation, count);
  } else {
    const size_t at = lexer.Position();
    std::vector<bool> seen(count, false);
    do {
      int64_t device = 0;
      if (!lexer.EatInteger(&device)) return lexer.Error("a device id");
      if (device < 0 || device >= count || seen[device] ||
          static_cast<int64_t>(sharding.devices.size()) >= count) {
        return lexer.ErrorAt(at, absl::StrCat("a permutation of 0 ... ", count - 1));
      }
      seen[device] = true;
      sharding.devices.push_back(device);
    } while (lexer.Eat(","));
    if (static_cast<int64_t>(sharding.devices.size()) != count) {
      return lexer.ErrorAt(at, absl::StrCat(count, " device ids"));
    }
  }
  if (lexer.EatWord("last_tile_dim_replicate") ||
      (lexer.EatWord("last_tile_dims") && lexer.Eat("=") && lexer.Eat("{") &&
       lexer.EatWord("replicated") && lexer.Eat("}"))) {
    if (tiles.size() < 2) return lexer.Error("a tensor dimension before the replicate one");
    sharding.replicas = tiles.back();
    tiles.pop_back();
  }
  sharding.tiles = std::move(tiles);
  TESSERA_RETURN_IF_ERROR(lexer.Expect("}"));
  if (!lexer.AtEnd()) {
    return absl::UnimplementedError(absl::StrCat(
        "GSPMD sharding ", base::QuoteExcerpt(text, lexer.Position()),
        ": only devices=[...] with an iota or a device list, and last_tile_dim_replicate, are "
        "supported"));
  }
  return sharding;
}

}  // namespace tessera::compiler::stablehlo
