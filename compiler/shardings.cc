// Step b: the shardings of @main's arguments and results, from the request or the program's
// `tessera.sharding` attributes, checked against the program and the executable's device count.

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "compiler/internal.h"
#include "ifrt/status_macros.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"

namespace tessera::compiler {
namespace {

// A sharding as written: absent (replicated), or a mesh and a spec.
using ShardingText = std::optional<ProgramSharding>;

// "mesh{x=4} P(x,None)" -> {"mesh{x=4}", "P(x,None)"}.
absl::StatusOr<ProgramSharding> SplitAttribute(std::string_view text) {
  size_t close = text.find('}');
  if (close == std::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("sharding '", std::string(text), "' is not 'mesh{...} P(...)'"));
  }
  auto strip = [](std::string_view part) {
    std::string out(part);
    absl::StripAsciiWhitespace(&out);
    return out;
  };
  return ProgramSharding{strip(text.substr(0, close + 1)), strip(text.substr(close + 1))};
}

// The shardings of `count` values (what = "argument" / "result"): the request's when it gives
// any, else the attributes (`attribute(i)`, null when absent).
template <typename AttributeFn>
absl::StatusOr<std::vector<ShardingText>> CollectTexts(
    std::string_view what, size_t count, const std::vector<ProgramSharding>& requested,
    AttributeFn attribute) {
  std::vector<ShardingText> texts(count);
  if (!requested.empty()) {
    if (requested.size() != count) {
      return absl::InvalidArgumentError(
          absl::StrCat("expected ", count, " ", std::string(what), " shardings (one per @main ",
                       std::string(what), "), got ", requested.size()));
    }
    for (size_t i = 0; i < count; ++i) {
      if (!requested[i].mesh.empty() || !requested[i].spec.empty()) texts[i] = requested[i];
    }
    return texts;
  }
  for (size_t i = 0; i < count; ++i) {
    mlir::Attribute attr = attribute(i);
    if (!attr) continue;
    auto text = mlir::dyn_cast<mlir::StringAttr>(attr);
    if (!text) {
      return absl::InvalidArgumentError(absl::StrCat(
          std::string(what), " ", i, ": ", std::string(kShardingAttrName), " must be a string"));
    }
    TESSERA_ASSIGN_OR_RETURN(texts[i], SplitAttribute(text.getValue().str()));
  }
  return texts;
}

// The program's one mesh: every given mesh must be the same; none given -> mesh{x=num_devices}.
absl::StatusOr<sharding::Mesh> ResolveMesh(const std::vector<ShardingText>& texts,
                                           int64_t num_devices) {
  std::optional<sharding::Mesh> mesh;
  for (const ShardingText& text : texts) {
    if (!text.has_value()) continue;
    absl::StatusOr<sharding::Mesh> parsed = sharding::Mesh::Parse(text->mesh);
    if (!parsed.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("mesh '", text->mesh, "': ", parsed.status().message()));
    }
    if (mesh.has_value() && *mesh != *parsed) {
      return absl::InvalidArgumentError(absl::StrCat("the program uses two meshes, ",
                                                     mesh->ToString(), " and ", parsed->ToString(),
                                                     "; one is supported"));
    }
    mesh = *std::move(parsed);
  }
  if (!mesh.has_value()) {
    TESSERA_ASSIGN_OR_RETURN(mesh, sharding::Mesh::Create({{"x", num_devices}}));
  }
  if (mesh->num_devices() != num_devices) {
    return absl::InvalidArgumentError(
        absl::StrCat("mesh ", mesh->ToString(), " has ", mesh->num_devices(),
                     " devices but the executable has ", num_devices));
  }
  return *mesh;
}

// The spec of one value, checked against its shape: known axes, rank, even division.
absl::StatusOr<sharding::PartitionSpec> ResolveSpec(const ShardingText& text,
                                                    const sharding::Mesh& mesh,
                                                    mlir::RankedTensorType type,
                                                    const std::string& what) {
  if (!text.has_value()) return sharding::PartitionSpec();
  absl::StatusOr<sharding::PartitionSpec> spec = sharding::PartitionSpec::Parse(text->spec);
  absl::Status status = spec.status();
  if (status.ok()) status = sharding::ToShardingParam(mesh, *spec, type.getRank()).status();
  if (!status.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " sharding '", text->spec, "': ", status.message()));
  }
  for (int d = 0; d < spec->size(); ++d) {
    int64_t tiles = 1;
    for (const std::string& axis : spec->dims()[d]) {
      tiles *= mesh.axes()[*mesh.FindAxis(axis)].size;
    }
    if (type.getDimSize(d) % tiles != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " sharding ", spec->ToString(), ": dimension ", d, " of size ",
                       type.getDimSize(d), " does not divide evenly into ", tiles, " tiles"));
    }
  }
  return *std::move(spec);
}

}  // namespace

absl::StatusOr<ProgramShardings> ResolveShardings(mlir::func::FuncOp main,
                                                  const ProgramCompileRequest& request) {
  TESSERA_ASSIGN_OR_RETURN(
      std::vector<ShardingText> params,
      CollectTexts("argument", main.getNumArguments(), request.parameter_shardings,
                   [&](size_t i) { return main.getArgAttr(i, kShardingAttrName); }));
  TESSERA_ASSIGN_OR_RETURN(
      std::vector<ShardingText> results,
      CollectTexts("result", main.getNumResults(), request.result_shardings,
                   [&](size_t i) { return main.getResultAttr(i, kShardingAttrName); }));
  std::vector<ShardingText> all = params;
  all.insert(all.end(), results.begin(), results.end());
  TESSERA_ASSIGN_OR_RETURN(sharding::Mesh mesh, ResolveMesh(all, request.num_devices));

  ProgramShardings out{mesh, {}, {}, 0};
  if (request.parameter_shardings.empty() && request.result_shardings.empty()) {
    for (size_t i = 0; i < main.getNumArguments(); ++i) {
      out.from_attributes += main.getArgAttr(i, kShardingAttrName) != nullptr;
    }
    for (size_t i = 0; i < main.getNumResults(); ++i) {
      out.from_attributes += main.getResultAttr(i, kShardingAttrName) != nullptr;
    }
  }
  mlir::FunctionType type = main.getFunctionType();
  for (size_t i = 0; i < params.size(); ++i) {
    TESSERA_ASSIGN_OR_RETURN(
        sharding::PartitionSpec spec,
        ResolveSpec(params[i], mesh, mlir::cast<mlir::RankedTensorType>(type.getInput(i)),
                    absl::StrCat("argument ", i)));
    out.parameters.push_back(std::move(spec));
  }
  for (size_t i = 0; i < results.size(); ++i) {
    TESSERA_ASSIGN_OR_RETURN(
        sharding::PartitionSpec spec,
        ResolveSpec(results[i], mesh, mlir::cast<mlir::RankedTensorType>(type.getResult(i)),
                    absl::StrCat("result ", i)));
    out.results.push_back(std::move(spec));
  }
  return out;
}

}  // namespace tessera::compiler
