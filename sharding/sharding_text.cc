#include "sharding/sharding_text.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "base/message_text.h"
#include "base/string_view.h"

namespace tessera::sharding {
namespace {

constexpr std::string_view kExample = " (expected e.g. mesh{x=8} P(x,None))";

// Where `part` (a view into `whole`) starts in `whole`.
size_t OffsetIn(std::string_view whole, std::string_view part) {
  return static_cast<size_t>(part.data() - whole.data());
}

std::string_view Strip(std::string_view s) {
  return base::AsStd(absl::StripAsciiWhitespace(base::AsAbsl(s)));
}

// "invalid <what> "<text>": <problem> at position <position>", the position attached.
absl::Status ErrorAt(std::string_view what, std::string_view text, size_t position,
                     std::string_view problem, std::string_view expected = {},
                     std::string_view suffix = {}) {
  absl::Status status = absl::InvalidArgumentError(
      absl::StrCat("invalid ", base::AsAbsl(what), " ", base::QuoteExcerpt(text, position), ": ",
                   base::AsAbsl(problem), " at position ", position, base::AsAbsl(suffix)));
  base::AttachParseLocation(status, base::ParseLocation{position, std::string(expected)});
  return status;
}

// A failure of the parser of `part` (a view into `text`) under the heading `where`: at the
// parser's position, counted in `text`, when it reports one; else its message.
absl::Status PartError(std::string_view what, std::string_view text, std::string_view where,
                       std::string_view part, const absl::Status& inner) {
  if (std::optional<base::ParseLocation> at = base::GetParseLocation(inner)) {
    return ErrorAt(what, text, OffsetIn(text, part) + at->offset,
                   absl::StrCat(base::AsAbsl(where), ": expected ", at->expected), at->expected);
  }
  return absl::InvalidArgumentError(absl::StrCat("invalid ", base::AsAbsl(what), " ",
                                                 base::QuoteExcerpt(text), ": ",
                                                 base::AsAbsl(where), ": ", inner.message()));
}

}  // namespace

int64_t ShardingText::num_devices() const {
  return mesh.has_value() ? mesh->num_devices() : param->NumDevices();
}

std::string ShardingText::ToString() const {
  return mesh.has_value() ? absl::StrCat(mesh->ToString(), " ", spec.ToString())
                          : param->ToString();
}

absl::StatusOr<ShardingText> ParseShardingText(std::string_view text, std::string_view what) {
  const std::string_view t = Strip(text);
  ShardingText out;
  if (t.substr(0, 4) != "mesh") {
    absl::StatusOr<ShardingParam> param = ShardingParam::Parse(t);
    if (!param.ok()) {
      return PartError(what, text, "neither 'mesh{...} P(...)' nor a ShardingParam", t,
                       param.status());
    }
    out.param = *std::move(param);
    return out;
  }
  const size_t close = t.find('}');
  if (close == std::string_view::npos) {
    return ErrorAt(what, text, text.size(), "the mesh has no closing '}'", "'}'", kExample);
  }
  const std::string_view mesh_text = t.substr(0, close + 1);
  absl::StatusOr<Mesh> mesh = Mesh::Parse(mesh_text);
  if (!mesh.ok()) return PartError(what, text, "in the mesh", mesh_text, mesh.status());
  const std::string_view rest = Strip(t.substr(close + 1));
  if (rest.empty()) {
    return ErrorAt(what, text, text.size(), "a PartitionSpec must follow the mesh", "P(...)",
                   kExample);
  }
  absl::StatusOr<PartitionSpec> spec = PartitionSpec::Parse(rest);
  if (!spec.ok()) return PartError(what, text, "in the PartitionSpec", rest, spec.status());
  out.mesh = *std::move(mesh);
  out.spec = *std::move(spec);
  return out;
}

}  // namespace tessera::sharding
