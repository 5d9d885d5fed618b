// Step b: the shardings of @main's arguments and results, from the request or the program's
// `tessera.sharding` attributes, checked against the program and the executable's device count.

#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/message_text.h"
#include "base/status_macros.h"
#include "base/string_view.h"
#include "compiler/internal.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "sharding/mesh_alignment.h"
#include "sharding/sharding_text.h"

namespace tessera::compiler {
namespace {

// A sharding as parsed (sharding/sharding_text.h): absent (replicated), or a mesh and a spec.
using ShardingText = std::optional<sharding::ShardingText>;

// `text` ("mesh{x=4} P(x,None)") parsed by the one sharding parser; a program names its shardings
// in the mesh notation only. `what` names the text in messages ("argument 0").
absl::StatusOr<sharding::ShardingText> ParseNamed(std::string_view text, const std::string& what) {
  const std::string name = absl::StrCat(what, " sharding");
  TESSERA_ASSIGN_OR_RETURN(sharding::ShardingText parsed, sharding::ParseShardingText(text, name));
  if (!parsed.is_named()) {
    return absl::InvalidArgumentError(absl::StrCat(name, " ", base::QuoteExcerpt(text),
                                                   " is not 'mesh{...} P(...)': a program's "
                                                   "shardings name a mesh"));
  }
  return parsed;
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
      if (requested[i].mesh.empty() && requested[i].spec.empty()) continue;
      TESSERA_ASSIGN_OR_RETURN(texts[i],
                               ParseNamed(absl::StrCat(requested[i].mesh, " ", requested[i].spec),
                                          absl::StrCat(std::string(what), " ", i)));
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
    TESSERA_ASSIGN_OR_RETURN(
        texts[i], ParseNamed(text.getValue().str(), absl::StrCat(std::string(what), " ", i)));
  }
  return texts;
}

// The program's one mesh: the one mesh given, or where several over the same devices are, the
// coarsest all their axes align with (sharding/mesh_alignment.h; `required`, a shard_map's mesh,
// where given); none given -> mesh{x=num_devices}.
absl::StatusOr<sharding::Mesh> ResolveMesh(const std::vector<ShardingText>& texts,
                                           int64_t num_devices,
                                           const sharding::Mesh* required = nullptr) {
  std::vector<sharding::Mesh> meshes;
  for (const ShardingText& text : texts) {
    if (text.has_value() && absl::c_find(meshes, *text->mesh) == meshes.end()) {
      meshes.push_back(*text->mesh);
    }
  }
  std::optional<sharding::Mesh> mesh;
  if (meshes.size() == 1) {
    mesh = meshes.front();
  } else if (meshes.size() > 1) {
    // Meshes of other axes over the same devices: the program runs on one whose axes they all
    // align with (the shard_map's own where there is one), each sharding translated onto it.
    if (required != nullptr) meshes.insert(meshes.begin(), *required);
    absl::StatusOr<sharding::Mesh> common = sharding::CommonMesh(meshes);
    std::vector<std::string> names;
    for (const sharding::Mesh& m : meshes) names.push_back(m.ToString());
    if (!common.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("the program uses meshes ",
                                                     absl::StrJoin(names, " and "), ": ",
                                                     common.status().message()));
    }
    if (required != nullptr && *common != *required) {
      return absl::UnimplementedError(absl::StrCat(
          "the program uses meshes ", absl::StrJoin(names, " and "), ", and its shard_map runs on ",
          required->ToString(), ", whose axes are not runs of the others' (", common->ToString(),
          " would be)"));
    }
    mesh = *std::move(common);
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
  absl::StatusOr<sharding::PartitionSpec> onto = sharding::SpecOnto(text->spec, *text->mesh, mesh);
  if (!onto.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " sharding ", text->spec.ToString(), ": ", onto.status().message()));
  }
  const sharding::PartitionSpec* spec = &*onto;
  absl::Status status = sharding::ToShardingParam(mesh, *spec, type.getRank()).status();
  if (!status.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " sharding ", spec->ToString(), ": ", status.message()));
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
  return *spec;
}

// Whether `op` is a linalg.generic on tensors computing its result as a copy of its one input.
bool IsIdentityGeneric(mlir::Operation* op) {
  auto generic = mlir::dyn_cast<mlir::linalg::GenericOp>(op);
  if (!generic || generic.getNumDpsInputs() != 1 || generic.getNumDpsInits() != 1 ||
      generic->getNumResults() != 1 || !generic.hasPureTensorSemantics() ||
      generic->getOperand(0).getType() != generic->getResult(0).getType() ||
      !llvm::all_of(generic.getIndexingMapsArray(),
                    [](mlir::AffineMap map) { return map.isIdentity(); })) {
    return false;
  }
  mlir::Block& body = generic.getRegion().front();
  auto yield = mlir::dyn_cast<mlir::linalg::YieldOp>(body.getTerminator());
  return body.getOperations().size() == 1 && yield && yield->getNumOperands() == 1 &&
         yield->getOperand(0) == body.getArgument(0);
}

// The shardings of a manual computation's `count` operands or results: attribute `name` of `op`,
// one text per value ("" replicated).
absl::StatusOr<std::vector<ShardingText>> ManualTexts(mlir::Operation* op, std::string_view name,
                                                      size_t count, const std::string& what) {
  auto texts = op->getAttrOfType<mlir::ArrayAttr>(name);
  if (!texts || texts.size() != count) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": ", std::string(name), " must be an array of ", count, " strings"));
  }
  std::vector<ShardingText> parsed(count);
  for (size_t i = 0; i < count; ++i) {
    auto text = mlir::dyn_cast<mlir::StringAttr>(texts[i]);
    if (!text) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": ", std::string(name), " must be an array of strings"));
    }
    if (text.getValue().empty()) continue;
    TESSERA_ASSIGN_OR_RETURN(parsed[i],
                             ParseNamed(text.getValue().str(), absl::StrCat(what, " ", i)));
  }
  return parsed;
}

// A manual computation's (shard_map's) operand and result shardings, as the program names them.
struct ManualTextsOf {
  mlir::Operation* op;
  std::vector<ShardingText> in, out;
};

// The elementwise operands of `value`'s linalg.generic, in order: those of its type whose indexing
// map, like the result's, is the identity, where all its loops are parallel; none otherwise.
std::vector<mlir::Value> ElementwiseSources(mlir::Value value) {
  auto generic = mlir::dyn_cast_or_null<mlir::linalg::GenericOp>(value.getDefiningOp());
  if (!generic || generic.getNumDpsInits() != generic->getNumResults() ||
      generic.getNumParallelLoops() != generic.getNumLoops()) {
    return {};
  }
  const unsigned result = mlir::cast<mlir::OpResult>(value).getResultNumber();
  if (!generic.getMatchingIndexingMap(generic.getDpsInitOperand(result)).isIdentity()) return {};
  std::vector<mlir::Value> sources;
  for (mlir::OpOperand* input : generic.getDpsInputOperands()) {
    if (input->get().getType() == value.getType() &&
        generic.getMatchingIndexingMap(input).isIdentity()) {
      sources.push_back(input->get());
    }
  }
  return sources;
}

// The sharding `value` has before partitioning, when the program says: an argument's, a
// shard_map's result's, or, through elementwise linalg.generic ops (ElementwiseSources), the
// first such operand's, depth first. nullopt when unknown. Each value is visited once, so a
// program whose elementwise ops share operands (threefry's rounds) costs its size, not the
// number of its paths.
ShardingText KnownSharding(mlir::func::FuncOp main, mlir::Value value,
                           const std::vector<ShardingText>& params,
                           const std::vector<ManualTextsOf>& manuals) {
  std::vector<mlir::Value> pending = {value};
  llvm::DenseSet<mlir::Value> visited;
  while (!pending.empty()) {
    const mlir::Value next = pending.back();
    pending.pop_back();
    if (!visited.insert(next).second) continue;
    if (auto arg = mlir::dyn_cast<mlir::BlockArgument>(next)) {
      if (arg.getOwner() == &main.getBody().front() && params[arg.getArgNumber()].has_value()) {
        return params[arg.getArgNumber()];
      }
      continue;
    }
    const ManualTextsOf* manual = nullptr;
    for (const ManualTextsOf& candidate : manuals) {
      if (candidate.op == next.getDefiningOp()) manual = &candidate;
    }
    if (manual != nullptr) {
      const unsigned index = mlir::cast<mlir::OpResult>(next).getResultNumber();
      if (index < manual->out.size() && manual->out[index].has_value()) return manual->out[index];
      continue;
    }
    const std::vector<mlir::Value> sources = ElementwiseSources(next);
    pending.insert(pending.end(), sources.rbegin(), sources.rend());  // the first on top
  }
  return std::nullopt;
}

// JAX leaves a jit's results open when out_shardings is not given, and XLA's partitioner picks
// them. A StableHLO result without a sharding takes the one KnownSharding finds for the value it
// returns (a shard_map's out_specs, the argument it returns or computes elementwise from); any
// other is marked in `open`, for PartitionProgram to give it the sharding propagation gives its
// value. A result's own sharding, or a request's, is never overridden.
void PropagateToOpenResults(mlir::func::FuncOp main, const std::vector<ShardingText>& params,
                            const std::vector<ManualTextsOf>& manuals,
                            std::vector<ShardingText>& results, std::vector<bool>& open) {
  mlir::Operation* ret = main.getBody().front().getTerminator();
  if (ret == nullptr || ret->getNumOperands() != results.size()) return;
  for (size_t i = 0; i < results.size(); ++i) {
    if (results[i].has_value() || main.getResultAttr(i, kShardingAttrName)) continue;
    results[i] = KnownSharding(main, ret->getOperand(i), params, manuals);
    open[i] = !results[i].has_value();
  }
}

// Argument `i`'s `tessera.device_order`, checked: a permutation of the mesh's `devices`.
absl::StatusOr<std::vector<int64_t>> DeviceOrder(llvm::ArrayRef<int64_t> order, int64_t devices,
                                                 size_t i) {
  if (!IsPermutation(order, devices)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "argument ", i, ": ", base::AsAbsl(kDeviceOrderAttrName), " [", absl::StrJoin(order, ", "),
        "] is no permutation of the program's ", devices, " devices"));
  }
  return std::vector<int64_t>(order.begin(), order.end());
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
  // Sharding constraints: identity ops of @main's body with a sharding attribute.
  std::vector<mlir::Operation*> constraint_ops;
  std::vector<ShardingText> constraints;
  for (mlir::Operation& op : main.getBody().front()) {
    mlir::Attribute attr = op.getAttr(kShardingAttrName);
    if (!attr) continue;
    auto text = mlir::dyn_cast<mlir::StringAttr>(attr);
    const std::string what =
        absl::StrCat("the sharding constraint at ", FormatLocation(op.getLoc()));
    if (!text || !IsIdentityGeneric(&op)) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": ", std::string(kShardingAttrName),
                       " on an op must be a string, on a linalg.generic that yields its one input "
                       "unchanged (identity indexing maps)"));
    }
    TESSERA_ASSIGN_OR_RETURN(ShardingText parsed, ParseNamed(text.getValue().str(), what));
    constraint_ops.push_back(&op);
    constraints.push_back(std::move(parsed));
  }
  // Manual computations: casts of @main's body that name a body (internal.h).
  std::vector<ManualTextsOf> manuals;
  for (mlir::Operation& op : main.getBody().front()) {
    if (!op.hasAttr(kManualBodyAttrName)) continue;
    const std::string what =
        absl::StrCat("the manual computation at ", FormatLocation(op.getLoc()));
    ManualTextsOf manual{&op, {}, {}};
    TESSERA_ASSIGN_OR_RETURN(manual.in, ManualTexts(&op, kManualInAttrName, op.getNumOperands(),
                                                    absl::StrCat(what, ": operand")));
    TESSERA_ASSIGN_OR_RETURN(manual.out, ManualTexts(&op, kManualOutAttrName, op.getNumResults(),
                                                     absl::StrCat(what, ": result")));
    manuals.push_back(std::move(manual));
  }
  const bool requested = !request.parameter_shardings.empty() || !request.result_shardings.empty();
  std::vector<bool> open_results(results.size(), false);
  if (!requested && request.format == ProgramFormat::kStableHlo) {
    PropagateToOpenResults(main, params, manuals, results, open_results);
  }
  std::vector<ShardingText> all = params;
  all.insert(all.end(), results.begin(), results.end());
  // A manual computation runs on its own mesh, whatever the request: a request over another mesh
  // (a 1-device reference run) is FAILED_PRECONDITION.
  if (requested && !manuals.empty()) {
    absl::StatusOr<sharding::Mesh> request_mesh = ResolveMesh(all, request.num_devices);
    const ManualTextsOf& manual = manuals.front();
    for (const std::vector<ShardingText>* texts : {&manual.in, &manual.out}) {
      for (const ShardingText& text : *texts) {
        if (!text.has_value() || !request_mesh.ok() || *text->mesh == *request_mesh) continue;
        return absl::FailedPreconditionError(absl::StrCat(
            "the manual computation (shard_map) at ", FormatLocation(manual.op->getLoc()),
            " runs on its own mesh, ", text->mesh->ToString(), ", not the request's ",
            request_mesh->ToString(), ": a program with one compiles for its mesh only"));
      }
    }
  }
  for (const ManualTextsOf& manual : manuals) {
    all.insert(all.end(), manual.in.begin(), manual.in.end());
    all.insert(all.end(), manual.out.begin(), manual.out.end());
  }
  // The program's constraints name its mesh too, unless the request gives the shardings: then
  // the request's mesh is the program's, and a constraint over a mesh that does not align with it
  // is not imposed (a hint on how to compute: the results are the same).
  if (!requested) all.insert(all.end(), constraints.begin(), constraints.end());
  const sharding::Mesh* manual_mesh = nullptr;
  for (const ManualTextsOf& manual : manuals) {
    for (const std::vector<ShardingText>* texts : {&manual.in, &manual.out}) {
      for (const ShardingText& text : *texts) {
        if (text.has_value() && manual_mesh == nullptr) manual_mesh = &*text->mesh;
      }
    }
  }
  TESSERA_ASSIGN_OR_RETURN(sharding::Mesh mesh, ResolveMesh(all, request.num_devices, manual_mesh));

  ProgramShardings out{mesh, {}, {}, 0};
  out.open_results = std::move(open_results);
  out.parameter_device_orders.resize(main.getNumArguments());
  if (request.parameter_shardings.empty() && request.result_shardings.empty()) {
    for (size_t i = 0; i < main.getNumArguments(); ++i) {
      out.from_attributes += main.getArgAttr(i, kShardingAttrName) != nullptr;
      if (auto order = main.getArgAttrOfType<mlir::DenseI64ArrayAttr>(i, kDeviceOrderAttrName)) {
        TESSERA_ASSIGN_OR_RETURN(out.parameter_device_orders[i],
                                 DeviceOrder(order.asArrayRef(), mesh.num_devices(), i));
      }
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
  for (size_t i = 0; i < constraints.size(); ++i) {
    mlir::Operation* op = constraint_ops[i];
    // Over a mesh the request's does not align with, a constraint is a hint not imposed.
    if (requested && *constraints[i]->mesh != mesh &&
        !sharding::SpecOnto(constraints[i]->spec, *constraints[i]->mesh, mesh).ok()) {
      continue;
    }
    TESSERA_ASSIGN_OR_RETURN(
        sharding::PartitionSpec spec,
        ResolveSpec(constraints[i], mesh,
                    mlir::cast<mlir::RankedTensorType>(op->getResult(0).getType()),
                    absl::StrCat("the constraint at ", FormatLocation(op->getLoc()))));
    out.constraints.emplace_back(op, std::move(spec));
  }
  for (const ManualTextsOf& manual : manuals) {
    ProgramShardings::Manual resolved{manual.op, {}, {}};
    const std::string what =
        absl::StrCat("the manual computation at ", FormatLocation(manual.op->getLoc()));
    for (auto [texts, values, specs, kind] :
         {std::tuple{&manual.in, mlir::ValueRange(manual.op->getOperands()), &resolved.in,
                     "operand"},
          std::tuple{&manual.out, mlir::ValueRange(manual.op->getResults()), &resolved.out,
                     "result"}}) {
      for (size_t i = 0; i < texts->size(); ++i) {
        auto type = mlir::dyn_cast<mlir::RankedTensorType>(values[i].getType());
        if (!type) {
          return absl::InvalidArgumentError(
              absl::StrCat(what, ": ", kind, " ", i, " is not a ranked tensor"));
        }
        TESSERA_ASSIGN_OR_RETURN(
            sharding::PartitionSpec spec,
            ResolveSpec((*texts)[i], mesh, type, absl::StrCat(what, ": ", kind, " ", i)));
        specs->push_back(std::move(spec));
      }
    }
    out.manuals.push_back(std::move(resolved));
  }
  TESSERA_RETURN_IF_ERROR(
      CheckManualComputations(main->getParentOfType<mlir::ModuleOp>(), main, out));
  return out;
}

}  // namespace tessera::compiler
