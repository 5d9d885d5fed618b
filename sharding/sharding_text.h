// sharding/sharding_text.h: the one parser of Tessera's two sharding notations.
//
//   "mesh{x=2,y=4} P(x,None)"   JAX's: a Mesh and a PartitionSpec (bound to devices: NamedSharding)
//   "2x1 to [0] on 2"           IFRT's ShardingParam (bound to devices: ShardingParamSharding)
//
//   absl::StatusOr<ShardingText> s = ParseShardingText(" mesh{x=4} P(x,None) ");
//   s->mesh->num_devices() == 4;  s->ToString() == "mesh{x=4} P(x,None)"
//   ParseShardingText("mesh{x=4} P(x,None", "--from").status().message() ==
//       "invalid --from \"mesh{x=4} P(x,None\": in the PartitionSpec: expected ')' at position 18"
//
// Every front end that takes a sharding as text (the C API, the Python package, the CLI, the
// program compiler's `tessera.sharding` attributes) parses it here; binding the result to devices
// is ifrt/sharding_from_text.h. Free functions; no state, thread-safe.
#ifndef TESSERA_SHARDING_SHARDING_TEXT_H_
#define TESSERA_SHARDING_SHARDING_TEXT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "sharding/mesh.h"
#include "sharding/partition_spec.h"
#include "sharding/sharding_param.h"

namespace tessera::sharding {

// A sharding as parsed, not yet bound to devices: exactly one of `mesh` (with `spec`) and `param`
// is set. A value type.
struct ShardingText {
  std::optional<Mesh> mesh;            // the "mesh{...} P(...)" notation
  PartitionSpec spec;                  // its PartitionSpec (empty for the ShardingParam notation)
  std::optional<ShardingParam> param;  // the ShardingParam notation

  bool is_named() const { return mesh.has_value(); }
  // The device slots the notation names: the mesh's or the ShardingParam's.
  int64_t num_devices() const;
  // The canonical text; ParseShardingText(ToString()) gives an equal value.
  std::string ToString() const;
};

// Parses `text` in either notation; leading and trailing white space is ignored. `what` names the
// text in messages ("sharding", or the option it came from: "--from").
// INVALID_ARGUMENT "invalid <what> "<text>": <where>: <problem>[ at position N]": the text quoted
// once (base::QuoteExcerpt: escaped, shortened around N), <where> the part that failed ("in the
// mesh", "in the PartitionSpec", or "neither 'mesh{...} P(...)' nor a ShardingParam") and N a byte
// offset into `text` as given, also attached (base::GetParseLocation) when the failure has one.
absl::StatusOr<ShardingText> ParseShardingText(std::string_view text,
                                               std::string_view what = "sharding");

}  // namespace tessera::sharding

#endif  // TESSERA_SHARDING_SHARDING_TEXT_H_
