// Step b: the shardings of @main's arguments and results, from the request or the program's
// `tessera.sharding` attributes, checked against the program and the executable's device count.

#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "base/message_text.h"
#include "base/status_macros.h"
#include "compiler/internal.h"
#include "llvm/ADT/STLExtras.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
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

// The program's one mesh: every given mesh must be the same; none given -> mesh{x=num_devices}.
absl::StatusOr<sharding::Mesh> ResolveMesh(const std::vector<ShardingText>& texts,
                                           int64_t num_devices) {
  std::optional<sharding::Mesh> mesh;
  for (const ShardingText& text : texts) {
    if (!text.has_value()) continue;
    const sharding::Mesh& parsed = *text->mesh;
    if (mesh.has_value() && *mesh != parsed) {
      return absl::InvalidArgumentError(absl::StrCat("the program uses two meshes, ",
                                                     mesh->ToString(), " and ", parsed.ToString(),
                                                     "; one is supported"));
    }
    mesh = parsed;
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
  const sharding::PartitionSpec* spec = &text->spec;
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

// The sharding `value` has before partitioning, when the program says: an argument's, a
// shard_map's result's, or, through elementwise linalg.generic ops (all loops parallel, the
// result's indexing map and an operand's the identity), that operand's. nullopt when unknown.
ShardingText KnownSharding(mlir::func::FuncOp main, mlir::Value value,
                           const std::vector<ShardingText>& params,
                           const std::vector<ManualTextsOf>& manuals, int depth = 0) {
  constexpr int kMaxDepth = 64;  // a chain of elementwise ops is followed this far
  if (depth > kMaxDepth) return std::nullopt;
  if (auto arg = mlir::dyn_cast<mlir::BlockArgument>(value)) {
    if (arg.getOwner() != &main.getBody().front()) return std::nullopt;
    return params[arg.getArgNumber()];
  }
  mlir::Operation* op = value.getDefiningOp();
  for (const ManualTextsOf& manual : manuals) {
    if (op != manual.op) continue;
    const unsigned index = mlir::cast<mlir::OpResult>(value).getResultNumber();
    return index < manual.out.size() ? manual.out[index] : std::nullopt;
  }
  auto generic = mlir::dyn_cast_or_null<mlir::linalg::GenericOp>(op);
  if (!generic || generic.getNumDpsInits() != generic->getNumResults() ||
      generic.getNumParallelLoops() != generic.getNumLoops()) {
    return std::nullopt;
  }
  const unsigned result = mlir::cast<mlir::OpResult>(value).getResultNumber();
  if (!generic.getMatchingIndexingMap(generic.getDpsInitOperand(result)).isIdentity()) {
    return std::nullopt;
  }
  for (mlir::OpOperand* input : generic.getDpsInputOperands()) {
    if (input->get().getType() != value.getType() ||
        !generic.getMatchingIndexingMap(input).isIdentity()) {
      continue;
    }
    ShardingText known = KnownSharding(main, input->get(), params, manuals, depth + 1);
    if (known.has_value()) return known;
  }
  return std::nullopt;
}

// JAX leaves a jit's results open when out_shardings is not given, and XLA's partitioner picks
// them. A StableHLO result without a sharding takes the one KnownSharding finds for the value it
// returns (a shard_map's out_specs, the argument it returns or computes elementwise from); any
// other open result stays replicated. A result's own sharding, or a request's, is never
// overridden.
void PropagateToOpenResults(mlir::func::FuncOp main, const std::vector<ShardingText>& params,
                            const std::vector<ManualTextsOf>& manuals,
                            std::vector<ShardingText>& results) {
  mlir::Operation* ret = main.getBody().front().getTerminator();
  if (ret == nullptr || ret->getNumOperands() != results.size()) return;
  for (size_t i = 0; i < results.size(); ++i) {
    if (results[i].has_value() || main.getResultAttr(i, kShardingAttrName)) continue;
    results[i] = KnownSharding(main, ret->getOperand(i), params, manuals);
  }
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
  if (!requested && request.format == ProgramFormat::kStableHlo) {
    PropagateToOpenResults(main, params, manuals, results);
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
  // the request's mesh is the program's, and a constraint over another mesh is not imposed (a
  // hint on how to compute: the results are the same).
  if (!requested) all.insert(all.end(), constraints.begin(), constraints.end());
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
  for (size_t i = 0; i < constraints.size(); ++i) {
    mlir::Operation* op = constraint_ops[i];
    if (*constraints[i]->mesh != mesh) continue;
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
