// The StableHLO importer's driver: parse the generic form, read the meshes and @main's shardings,
// inline private functions, then convert @main op by op into a new module (import_state.h).

#include "compiler/stablehlo/stablehlo_import.h"

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "base/string_view.h"
#include "compiler/internal.h"
#include "compiler/nesting.h"
#include "compiler/stablehlo/attribute_text.h"
#include "compiler/stablehlo/gspmd_mesh.h"
#include "compiler/stablehlo/import_state.h"
#include "compiler/stablehlo/manual_computation.h"
#include "compiler/stablehlo/sdy_shardings.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Parser/Parser.h"
#include "sharding/sharding_text.h"

namespace tessera::compiler::stablehlo {
namespace {

// The most ops @main may hold once its calls are inlined: a program whose functions call each
// other twice over a few dozen levels would otherwise expand exponentially. A JAX training step
// of a large model holds tens of thousands.
constexpr int64_t kMaxInlinedOps = 1 << 18;

// The conversions of every op the importer knows, by name (the files of compiler/stablehlo/ each
// add theirs).
const ConversionTable& Conversions();

// What each op the importer cannot convert needs, where that helps the reader of the error.
std::string UnsupportedHint(std::string_view name) {
  if (name == "sdy.manual_computation") {
    return "; shard_map is supported in @main's body only (not inside a loop or a branch)";
  }
  return "";
}

absl::StatusOr<mlir::OwningOpRef<mlir::ModuleOp>> Parse(mlir::MLIRContext& context,
                                                        std::string_view text) {
  TESSERA_RETURN_IF_ERROR(CheckNestingDepth(text, kMaxProgramNesting));
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::string errors;
  {
    DiagnosticCollector diagnostics(&context);
    mlir::ParserConfig config(&context, /*verifyAfterParse=*/false);
    // MLIR's lexer reads up to the NUL after the text (an unterminated string literal runs on to
    // a quote or a newline): a view need not have one, a std::string has.
    const std::string terminated(text);
    module = mlir::parseSourceString<mlir::ModuleOp>(terminated, config, "program");
    if (!module) errors = diagnostics.Message("could not parse");
  }
  if (!module)
    return absl::InvalidArgumentError(absl::StrCat("invalid StableHLO program: ", errors));
  return module;
}

// Each stablehlo.composite becomes a call of its decomposition, which InlineCalls then inlines:
// JAX's portable artifacts carry CHLO ops (asin, erf, cosh, ...) as composites whose
// decomposition is StableHLO. INVALID_ARGUMENT for a composite that names no decomposition.
absl::Status CallCompositeDecompositions(mlir::ModuleOp module) {
  std::vector<mlir::Operation*> composites;
  module.walk([&](mlir::Operation* op) {
    if (op->getName().getStringRef() == "stablehlo.composite") composites.push_back(op);
  });
  for (mlir::Operation* composite : composites) {
    auto decomposition = composite->getAttrOfType<mlir::FlatSymbolRefAttr>("decomposition");
    if (!decomposition) {
      return absl::InvalidArgumentError(
          absl::StrCat(ImportState::Where(composite), " names no decomposition function"));
    }
    mlir::OpBuilder builder(composite);
    auto call = mlir::func::CallOp::create(builder, composite->getLoc(), decomposition,
                                           composite->getResultTypes(), composite->getOperands());
    composite->replaceAllUsesWith(call->getResults());
    composite->erase();
  }
  return absl::OkStatus();
}

// ", called at <location>" when `op` is inside a function other than @main that the program
// calls (JAX outlines jnp.sort, jnp.clip, ... into private functions whose ops carry no Python
// line; the call does), else "".
std::string CallSiteOf(mlir::ModuleOp module, mlir::Operation* op) {
  // Not verified yet: a function may lack its name.
  auto func = op->getParentOfType<mlir::func::FuncOp>();
  auto name = func ? func->getAttrOfType<mlir::StringAttr>("sym_name") : nullptr;
  if (!name || name.getValue() == "main") return "";
  std::string where;
  module.walk([&](mlir::func::CallOp call) {
    auto callee = call->getAttrOfType<mlir::FlatSymbolRefAttr>("callee");
    if (!callee || callee.getValue() != name.getValue()) return mlir::WalkResult::advance();
    where = absl::StrCat(", called at ", DescribeLocation(call.getLoc()));
    return mlir::WalkResult::interrupt();
  });
  return where;
}

// Every op of the program that the importer does not know, outermost first, is UNIMPLEMENTED
// before anything else looks at the program (verification included: a manual computation holds
// func.calls that MLIR's verifier cannot resolve).
absl::Status CheckOpsKnown(mlir::ModuleOp module, const ConversionTable& table) {
  absl::Status status;
  module.walk<mlir::WalkOrder::PreOrder>([&](mlir::Operation* op) {
    const std::string name = op->getName().getStringRef().str();
    if (table.contains(name) || name == "builtin.module" || name == "func.func" ||
        name == "func.return" || name == "func.call" || name == "sdy.mesh" ||
        name == "stablehlo.return" || name == "sdy.manual_computation" || name == "sdy.return") {
      return mlir::WalkResult::advance();
    }
    status = absl::UnimplementedError(
        absl::StrCat("unsupported StableHLO op ", ImportState::Where(op), CallSiteOf(module, op),
                     UnsupportedHint(name),
                     " (docs/computations.md, \"Programs from JAX\", lists the supported ones)"));
    return mlir::WalkResult::interrupt();
  });
  return status;
}

// The `tessera.sharding` text of one of @main's arguments or results ("" when replicated): its
// Shardy sharding, else its GSPMD one (`gspmd`, made for the whole program by GspmdTexts).
// `device_order`: as ShardingText has it (null: a mesh out of order is refused).
absl::StatusOr<std::string> ValueSharding(mlir::DictionaryAttr attrs, const Meshes& meshes,
                                          int64_t rank, const std::string& what,
                                          const std::string& gspmd,
                                          std::vector<int64_t>* device_order) {
  if (!attrs) return gspmd;
  if (mlir::Attribute sdy = attrs.get("sdy.sharding")) {
    auto opaque = mlir::dyn_cast<mlir::OpaqueAttr>(sdy);
    if (!opaque) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": sdy.sharding is not #sdy.sharding"));
    }
    absl::StatusOr<SdySharding> sharding = ParseSdySharding(opaque.getAttrData());
    if (!sharding.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": ", sharding.status().message()));
    }
    return ShardingText(*sharding, meshes, rank, what, device_order);
  }
  return gspmd;
}

// A value whose GSPMD sharding (`mhlo.sharding`, as JAX writes them with
// jax_use_shardy_partitioner=False) is placed on the program's mesh: the attribute (null:
// replicated), the value's rank, and what it is (for messages).
struct GspmdValue {
  mlir::Attribute sharding;
  int64_t rank = 0;
  std::string what;
};

// The `tessera.sharding` texts of `values` over the one mesh they fit (gspmd_mesh.h); "" for a
// value without one. All "" when no value has one.
absl::StatusOr<std::vector<std::string>> GspmdTexts(const std::vector<GspmdValue>& values) {
  std::vector<GspmdSharding> shardings(values.size());
  std::vector<int64_t> ranks;
  bool present = false;
  for (size_t i = 0; i < values.size(); ++i) {
    ranks.push_back(values[i].rank);
    if (!values[i].sharding) {
      shardings[i].replicated = true;
      continue;
    }
    auto text = mlir::dyn_cast<mlir::StringAttr>(values[i].sharding);
    if (!text) {
      return absl::InvalidArgumentError(
          absl::StrCat(values[i].what, ": mhlo.sharding is not a string"));
    }
    absl::StatusOr<GspmdSharding> parsed = ParseGspmdSharding(text.getValue());
    if (!parsed.ok()) {
      return absl::Status(parsed.status().code(),
                          absl::StrCat(values[i].what, ": ", parsed.status().message()));
    }
    shardings[i] = *std::move(parsed);
    present = true;
  }
  if (!present) return std::vector<std::string>(values.size());
  return GspmdShardingTexts(shardings, ranks);
}

int64_t RankOf(mlir::Type type) {
  auto tensor = mlir::dyn_cast<mlir::RankedTensorType>(type);
  return tensor ? tensor.getRank() : 0;
}

// @main's arguments, then its results, as GspmdValues.
std::vector<GspmdValue> GspmdValuesOfMain(mlir::func::FuncOp main) {
  std::vector<GspmdValue> values;
  mlir::FunctionType type = main.getFunctionType();
  for (unsigned i = 0; i < type.getNumInputs(); ++i) {
    mlir::DictionaryAttr attrs = main.getArgAttrDict(i);
    values.push_back({attrs ? attrs.get("mhlo.sharding") : nullptr, RankOf(type.getInput(i)),
                      absl::StrCat("@main argument ", i)});
  }
  for (unsigned i = 0; i < type.getNumResults(); ++i) {
    mlir::DictionaryAttr attrs = main.getResultAttrDict(i);
    values.push_back({attrs ? attrs.get("mhlo.sharding") : nullptr, RankOf(type.getResult(i)),
                      absl::StrCat("@main result ", i)});
  }
  return values;
}

// Whether `op` is a custom_call to `target`.
bool IsCustomCall(mlir::Operation* op, std::string_view target) {
  if (op == nullptr || op->getName().getStringRef() != "stablehlo.custom_call") return false;
  auto name =
      mlir::dyn_cast_or_null<mlir::StringAttr>(ImportState::GetAttr(op, "call_target_name"));
  return name && name.getValue() == llvm::StringRef(target);
}

// A shard_map lowered for GSPMD (jax_use_shardy_partitioner=False): a func.call in @main's body
// whose operands are each made manual by a custom_call @SPMDFullToShardShape (of a custom_call
// @Sharding naming the operand's sharding), and whose results are each made whole again by a
// custom_call @Sharding {manual}, then @SPMDShardToFullShape (naming the result's sharding).
struct GspmdManual {
  mlir::func::CallOp call;
  mlir::FlatSymbolRefAttr callee;     // as InlineCalls reads it (the input is not verified)
  std::vector<mlir::Value> operands;  // the values made manual
  std::vector<mlir::Value> results;   // the values made whole again
  std::vector<GspmdValue> in, out;
  std::vector<mlir::Operation*> skipped;  // the custom_calls around the call
};

// Marks the calls of GspmdManuals (InlineCalls leaves them).
constexpr char kGspmdManualAttrName[] = "tessera.gspmd_manual";

std::vector<GspmdManual> FindGspmdManuals(mlir::func::FuncOp main) {
  std::vector<GspmdManual> found;
  for (mlir::Operation& op : main.getBody().front()) {
    auto call = mlir::dyn_cast<mlir::func::CallOp>(op);
    // Not verified yet: the callee may be missing or of another kind.
    if (!call || call->getNumOperands() == 0 ||
        !call->getAttrOfType<mlir::FlatSymbolRefAttr>("callee")) {
      continue;
    }
    GspmdManual manual{call, call->getAttrOfType<mlir::FlatSymbolRefAttr>("callee"), {}, {}, {}, {},
                       {}};
    bool matches = true;
    for (mlir::Value operand : call->getOperands()) {
      mlir::Operation* to_shard = operand.getDefiningOp();
      if (!IsCustomCall(to_shard, "SPMDFullToShardShape") || !operand.hasOneUse() ||
          to_shard->getNumOperands() != 1) {
        matches = false;
        break;
      }
      mlir::Value whole = to_shard->getOperand(0);
      mlir::Operation* hint = whole.getDefiningOp();
      manual.operands.push_back(whole);
      manual.in.push_back(
          {IsCustomCall(hint, "Sharding") ? ImportState::GetAttr(hint, "mhlo.sharding") : nullptr,
           RankOf(whole.getType()), ImportState::Where(to_shard)});
      manual.skipped.push_back(to_shard);
    }
    for (mlir::Value result : call->getResults()) {
      if (!matches || !result.hasOneUse()) {
        matches = false;
        break;
      }
      mlir::Operation* hint = *result.getUsers().begin();
      mlir::Operation* to_full = IsCustomCall(hint, "Sharding") && hint->getNumResults() == 1 &&
                                         hint->getResult(0).hasOneUse()
                                     ? *hint->getResult(0).getUsers().begin()
                                     : nullptr;
      if (!IsCustomCall(to_full, "SPMDShardToFullShape") || to_full->getNumResults() != 1) {
        matches = false;
        break;
      }
      manual.results.push_back(to_full->getResult(0));
      manual.out.push_back({ImportState::GetAttr(to_full, "mhlo.sharding"),
                            RankOf(to_full->getResult(0).getType()), ImportState::Where(to_full)});
      manual.skipped.push_back(hint);
      manual.skipped.push_back(to_full);
    }
    if (!matches) continue;
    call->setAttr(kGspmdManualAttrName, mlir::UnitAttr::get(call.getContext()));
    found.push_back(std::move(manual));
  }
  return found;
}

// The axis sizes of the mesh of the first of `texts` that names one; empty when none does.
std::vector<int64_t> GridOf(const std::vector<std::string>& texts) {
  for (const std::string& text : texts) {
    if (text.empty()) continue;
    absl::StatusOr<sharding::ShardingText> parsed = sharding::ParseShardingText(text);
    if (!parsed.ok() || !parsed->mesh) continue;
    std::vector<int64_t> grid;
    for (const sharding::Mesh::Axis& axis : parsed->mesh->axes()) grid.push_back(axis.size);
    return grid;
  }
  return {};
}

// Inlines every func.call in `main` (callees' bodies cloned in place), until none is left.
absl::Status InlineCalls(mlir::ModuleOp module, mlir::func::FuncOp main) {
  for (int round = 0;; ++round) {
    std::vector<mlir::func::CallOp> calls;
    main.walk([&](mlir::func::CallOp call) {
      if (!call->hasAttr(kGspmdManualAttrName)) calls.push_back(call);
    });
    if (calls.empty()) return absl::OkStatus();
    if (round >= kMaxProgramNesting) {
      return absl::InvalidArgumentError(
          absl::StrCat("the program's function calls nest deeper than ", kMaxProgramNesting,
                       " levels (or recurse), at ", DescribeLocation(calls.front().getLoc())));
    }
    int64_t ops = 0;
    main.walk([&](mlir::Operation*) { ++ops; });
    for (mlir::func::CallOp call : calls) {
      const std::string where = ImportState::Where(call);
      auto callee_attr = call->getAttrOfType<mlir::FlatSymbolRefAttr>("callee");
      auto callee = callee_attr ? module.lookupSymbol<mlir::func::FuncOp>(callee_attr.getAttr())
                                : mlir::func::FuncOp();
      if (!callee || callee.isExternal() || !callee.getBody().hasOneBlock()) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, ": calls a function the program does not define with one block"));
      }
      mlir::Block& body = callee.getBody().front();
      // Not verified yet: the block may end in anything, or be empty.
      auto ret = body.empty() ? nullptr : mlir::dyn_cast<mlir::func::ReturnOp>(&body.back());
      if (body.getNumArguments() != call.getNumOperands() || !ret ||
          ret.getNumOperands() != call.getNumResults()) {
        return absl::InvalidArgumentError(absl::StrCat(
            where, ": its operands or results do not match @", callee.getSymName().str()));
      }
      for (unsigned i = 0; i < call.getNumOperands(); ++i) {
        if (body.getArgument(i).getType() != call.getOperand(i).getType()) {
          return absl::InvalidArgumentError(absl::StrCat(where, ": operand ", i,
                                                         " has another type than @",
                                                         callee.getSymName().str(), " takes"));
        }
      }
      callee.walk([&](mlir::Operation*) { ++ops; });
      if (ops > kMaxInlinedOps) {
        return absl::InvalidArgumentError(absl::StrCat(
            "the program's function calls expand to more than ", kMaxInlinedOps, " ops"));
      }
      mlir::IRMapping mapping;
      for (unsigned i = 0; i < call.getNumOperands(); ++i) {
        mapping.map(body.getArgument(i), call.getOperand(i));
      }
      mlir::OpBuilder builder(call);
      // Inlined ops are located at their call too: an error names the Python line that called
      // the function (JAX's jnp.sort is a call of a private @sort).
      for (mlir::Operation& op : body.without_terminator()) {
        builder.clone(op, mapping)->walk([&](mlir::Operation* inlined) {
          inlined->setLoc(mlir::CallSiteLoc::get(inlined->getLoc(), call.getLoc()));
        });
      }
      for (unsigned i = 0; i < call.getNumResults(); ++i) {
        mlir::Value result = mapping.lookupOrDefault(ret.getOperand(i));
        if (result.getType() != call.getResult(i).getType()) {
          return absl::InvalidArgumentError(absl::StrCat(where, ": result ", i,
                                                         " has another type than @",
                                                         callee.getSymName().str(), " returns"));
        }
        call.getResult(i).replaceAllUsesWith(result);
      }
      call.erase();
    }
  }
}

// Whether op `name` makes its bf16 / f16 results of values of that type only (moves, selects,
// compares' kin, a bitcast from their bits): they need no rounding.
bool KeepsNarrowFloatValues(std::string_view name) {
  static const auto* const kKeeping =
      new absl::flat_hash_set<std::string_view>{"stablehlo.broadcast_in_dim",
                                                "stablehlo.reshape",
                                                "stablehlo.transpose",
                                                "stablehlo.slice",
                                                "stablehlo.concatenate",
                                                "stablehlo.pad",
                                                "stablehlo.reverse",
                                                "stablehlo.sort",
                                                "stablehlo.gather",
                                                "stablehlo.dynamic_slice",
                                                "stablehlo.dynamic_update_slice",
                                                "stablehlo.select",
                                                "stablehlo.negate",
                                                "stablehlo.abs",
                                                "stablehlo.maximum",
                                                "stablehlo.minimum",
                                                "stablehlo.clamp",
                                                "stablehlo.constant",
                                                "stablehlo.while",
                                                "stablehlo.case",
                                                "stablehlo.optimization_barrier",
                                                "stablehlo.custom_call",
                                                "sdy.sharding_constraint",
                                                "stablehlo.floor",
                                                "stablehlo.ceil",
                                                "stablehlo.round_nearest_even",
                                                "stablehlo.round_nearest_afz",
                                                "stablehlo.sign",
                                                "stablehlo.all_gather",
                                                "stablehlo.all_to_all",
                                                "stablehlo.bitcast_convert"};
  return kKeeping->contains(name);
}

// Each bf16 / f16 result of `op` (held in f32) rounded to its precision, as the op would have made
// it in that type.
void RoundNarrowFloatResults(ImportState& state, mlir::Operation* op) {
  for (mlir::Value result : op->getResults()) {
    auto type = mlir::dyn_cast<mlir::RankedTensorType>(result.getType());
    mlir::Value computed = state.Lookup(result);
    if (!type || !IsNarrowFloat(type.getElementType()) || !computed || type.getNumElements() == 0) {
      continue;
    }
    state.Map(result,
              BuildElementwise(state, op->getLoc(), type, {computed}, {},
                               [&](mlir::OpBuilder& b, mlir::Location loc, mlir::ValueRange x) {
                                 return RoundToNarrowFloat(b, loc, x[0], type.getElementType());
                               }));
  }
}

// The bits of a bf16 / f16 tensor of `type`'s shape: i16.
mlir::RankedTensorType BitsType(mlir::RankedTensorType type) {
  return mlir::RankedTensorType::get(type.getShape(),
                                     mlir::IntegerType::get(type.getContext(), 16));
}

// The f32 tensor (how the program holds bf16 and f16) of `bits`, a bf16 / f16 tensor of `type` as
// i16, exact: a bf16's bits are the upper half of an f32's.
mlir::Value FromBits(ImportState& state, mlir::Location loc, mlir::RankedTensorType type,
                     mlir::Value bits) {
  mlir::Type narrow = type.getElementType();
  return BuildElementwise(state, loc, type, {bits}, {},
                          [narrow](mlir::OpBuilder& b, mlir::Location loc, mlir::ValueRange x) {
                            return NarrowFloatFromBits(b, loc, x[0], narrow);
                          });
}

// The i16 bits of `value`, an f32 tensor holding the bf16 / f16 tensor of `type` (the program
// rounds every such value it computes, RoundNarrowFloatResults, and moves keep them): a bf16's
// are the f32's upper half (the lower is zero; a NaN's payload passes through as it came in).
mlir::Value ToBits(ImportState& state, mlir::Location loc, mlir::RankedTensorType type,
                   mlir::Value value) {
  mlir::Type narrow = type.getElementType();
  return BuildElementwise(state, loc, BitsType(type), {value}, {},
                          [narrow](mlir::OpBuilder& b, mlir::Location loc, mlir::ValueRange x) {
                            return NarrowFloatBits(b, loc, x[0], narrow);
                          });
}

// An sdy.sharding_constraint of @main's body (with_sharding_constraint): an identity
// linalg.generic carrying the constraint's `tessera.sharding`, which AnnotateShardings
// (compiler/partition.cc) turns into a shard.shard of its input. A constraint over a mesh of no
// axes is the value itself.
absl::Status ConvertShardingConstraint(ImportState& state, mlir::Operation* op,
                                       const Meshes& meshes) {
  TESSERA_RETURN_IF_ERROR(ImportState::CheckArity(op, 1, 1));
  TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType in, state.OperandType(op, 0));
  TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType out, state.ResultType(op, 0));
  TESSERA_ASSIGN_OR_RETURN(std::string text, ImportState::OpaqueAttrText(op, "sharding"));
  if (in != out) {
    return absl::InvalidArgumentError(
        absl::StrCat(ImportState::Where(op), ": the result's type differs from the operand's"));
  }
  absl::StatusOr<SdySharding> sharding = ParseSdySharding(text);
  if (!sharding.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(ImportState::Where(op), ": ", sharding.status().message()));
  }
  TESSERA_ASSIGN_OR_RETURN(std::string constraint,
                           ShardingText(*sharding, meshes, in.getRank(), ImportState::Where(op)));
  TESSERA_ASSIGN_OR_RETURN(mlir::Value input, state.Operand(op, 0));
  if (constraint.empty() || in.getRank() == 0) {
    state.Map(op->getResult(0), input);
    return absl::OkStatus();
  }
  mlir::Value constrained = BuildElementwise(
      state, op->getLoc(), out, {input}, {},
      [](mlir::OpBuilder&, mlir::Location, mlir::ValueRange scalars) { return scalars[0]; });
  constrained.getDefiningOp()->setAttr(kShardingAttrName,
                                       state.builder().getStringAttr(constraint));
  state.Map(op->getResult(0), constrained);
  return absl::OkStatus();
}

// A new module with @main converted: its signature with signless types and `tessera.sharding`
// attributes, its body op by op.
absl::StatusOr<mlir::OwningOpRef<mlir::ModuleOp>> Convert(
    mlir::func::FuncOp main, const Meshes& meshes, const ConversionTable& table,
    const std::vector<GspmdManual>& gspmd_manuals) {
  mlir::MLIRContext* context = main.getContext();
  if (!main.getBody().hasOneBlock()) {
    return absl::InvalidArgumentError("@main must have one block");
  }
  mlir::Block& old_body = main.getBody().front();
  mlir::FunctionType old_type = main.getFunctionType();
  if (old_body.getNumArguments() != old_type.getNumInputs()) {
    return absl::InvalidArgumentError("@main's block arguments do not match its function_type");
  }
  // GSPMD shardings: @main's and its GSPMD shard_maps', over one mesh.
  std::vector<GspmdValue> gspmd_values = GspmdValuesOfMain(main);
  for (const GspmdManual& manual : gspmd_manuals) {
    gspmd_values.insert(gspmd_values.end(), manual.in.begin(), manual.in.end());
    gspmd_values.insert(gspmd_values.end(), manual.out.begin(), manual.out.end());
  }
  TESSERA_ASSIGN_OR_RETURN(std::vector<std::string> gspmd, GspmdTexts(gspmd_values));
  llvm::SmallVector<mlir::Type> inputs, results;
  llvm::SmallVector<mlir::Attribute> arg_attrs, res_attrs;
  mlir::Builder attrs_builder(context);
  for (auto [what, types, new_types, new_attrs] :
       {std::tuple{"argument", old_type.getInputs(), &inputs, &arg_attrs},
        std::tuple{"result", old_type.getResults(), &results, &res_attrs}}) {
    for (unsigned i = 0; i < types.size(); ++i) {
      const std::string name = absl::StrCat("@main ", what, " ", i);
      auto tensor = mlir::dyn_cast<mlir::RankedTensorType>(types[i]);
      if (!tensor || !tensor.hasStaticShape()) {
        return absl::UnimplementedError(
            absl::StrCat(name, ": not a tensor of static shape (lower for concrete shapes)"));
      }
      // bf16 and f16 cross the boundary as their bits (i16, kBf16AttrName / kF16AttrName),
      // converted inside.
      const bool narrow = IsNarrowFloat(tensor.getElementType());
      new_types->push_back(narrow ? BitsType(tensor) : ImportState::NewType(tensor));
      mlir::DictionaryAttr attrs =
          std::string_view(what) == "argument" ? main.getArgAttrDict(i) : main.getResultAttrDict(i);
      const size_t index = std::string_view(what) == "argument" ? i : old_type.getNumInputs() + i;
      // An argument may sit on a mesh of the program's devices in another order (JAX's
      // device_put between such meshes): the runtime moves it into order before the program.
      std::vector<int64_t> device_order;
      const bool argument = std::string_view(what) == "argument";
      TESSERA_ASSIGN_OR_RETURN(std::string sharding,
                               ValueSharding(attrs, meshes, tensor.getRank(), name, gspmd[index],
                                             argument ? &device_order : nullptr));
      llvm::SmallVector<mlir::NamedAttribute> named;
      if (!sharding.empty()) {
        named.push_back(
            attrs_builder.getNamedAttr(kShardingAttrName, attrs_builder.getStringAttr(sharding)));
      }
      if (!device_order.empty()) {
        named.push_back(attrs_builder.getNamedAttr(
            kDeviceOrderAttrName, attrs_builder.getDenseI64ArrayAttr(device_order)));
      }
      // The program computes on signless integers; the signature keeps the caller's dtype.
      if (tensor.getElementType().isUnsignedInteger()) {
        named.push_back(attrs_builder.getNamedAttr(kUnsignedAttrName, attrs_builder.getUnitAttr()));
      }
      if (narrow) {
        named.push_back(attrs_builder.getNamedAttr(
            tensor.getElementType().isF16() ? kF16AttrName : kBf16AttrName,
            attrs_builder.getUnitAttr()));
      }
      new_attrs->push_back(attrs_builder.getDictionaryAttr(named));
    }
  }
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::ModuleOp::create(main.getLoc());
  // The program keeps the name its framework gave it (JAX's "jit_train_step"): the executable's
  // name, which the guard's refusals and Explain() show.
  if (mlir::Operation* source = main->getParentOp()) {
    if (auto name = source->getAttrOfType<mlir::StringAttr>("sym_name")) {
      module->setSymName(name.getValue());
    }
  }
  mlir::OpBuilder builder(context);
  builder.setInsertionPointToEnd(module->getBody());
  auto new_main = mlir::func::FuncOp::create(builder, main.getLoc(), "main",
                                             builder.getFunctionType(inputs, results));
  new_main.setAllArgAttrs(arg_attrs);
  new_main.setAllResultAttrs(res_attrs);
  mlir::Block* body = new_main.addEntryBlock();
  builder.setInsertionPointToEnd(body);
  // The GSPMD shard_maps: their parts, and the custom_calls around them (skipped).
  absl::flat_hash_map<mlir::Operation*, ManualParts> gspmd_parts;
  absl::flat_hash_set<mlir::Operation*> skipped;
  size_t next_text = old_type.getNumInputs() + old_type.getNumResults();
  for (const GspmdManual& manual : gspmd_manuals) {
    ManualParts parts;
    parts.op = manual.call;
    parts.operands = manual.operands;
    parts.results = manual.results;
    auto callee =
        main->getParentOfType<mlir::ModuleOp>().lookupSymbol<mlir::func::FuncOp>(manual.callee);
    if (!callee || callee.isExternal() || !callee.getBody().hasOneBlock()) {
      return absl::InvalidArgumentError(absl::StrCat(
          ImportState::Where(manual.call), ": calls a function the program does not define"));
    }
    parts.body = &callee.getBody().front();
    parts.in.assign(gspmd.begin() + next_text, gspmd.begin() + next_text + manual.in.size());
    next_text += manual.in.size();
    parts.out.assign(gspmd.begin() + next_text, gspmd.begin() + next_text + manual.out.size());
    next_text += manual.out.size();
    std::vector<std::string> texts = parts.in;
    texts.insert(texts.end(), parts.out.begin(), parts.out.end());
    parts.grid = GridOf(texts);
    if (parts.grid.empty()) {
      return absl::UnimplementedError(absl::StrCat(
          ImportState::Where(manual.call),
          ": a GSPMD shard_map whose operands and results are all replicated (its mesh is "
          "unknown)"));
    }
    skipped.insert(manual.skipped.begin(), manual.skipped.end());
    gspmd_parts[manual.call] = std::move(parts);
  }
  ImportState state(builder);
  for (unsigned i = 0; i < old_body.getNumArguments(); ++i) {
    mlir::Value arg = body->getArgument(i);
    auto old_type = mlir::cast<mlir::RankedTensorType>(old_body.getArgument(i).getType());
    state.Map(old_body.getArgument(i), IsNarrowFloat(old_type.getElementType())
                                           ? FromBits(state, main.getLoc(), old_type, arg)
                                           : arg);
  }
  for (mlir::Operation& op : old_body) {
    const std::string name = op.getName().getStringRef().str();
    if (name == "func.return") {
      if (op.getNumOperands() != results.size()) {
        return absl::InvalidArgumentError(absl::StrCat(ImportState::Where(&op), ": returns ",
                                                       op.getNumOperands(), " values, @main has ",
                                                       results.size(), " results"));
      }
      llvm::SmallVector<mlir::Value> returned;
      for (unsigned i = 0; i < op.getNumOperands(); ++i) {
        TESSERA_ASSIGN_OR_RETURN(mlir::Value v, state.Operand(&op, i));
        auto returned_type = mlir::dyn_cast<mlir::RankedTensorType>(op.getOperand(i).getType());
        if (returned_type && IsNarrowFloat(returned_type.getElementType()) &&
            returned_type.getShape() == mlir::cast<mlir::RankedTensorType>(results[i]).getShape()) {
          v = ToBits(state, op.getLoc(), returned_type, v);
        }
        if (v.getType() != results[i]) {
          return absl::InvalidArgumentError(absl::StrCat(ImportState::Where(&op), ": value ", i,
                                                         " has another type than @main's result"));
        }
        returned.push_back(v);
      }
      mlir::func::ReturnOp::create(builder, op.getLoc(), returned);
      continue;
    }
    if (name == "sdy.sharding_constraint") {
      TESSERA_RETURN_IF_ERROR(ConvertShardingConstraint(state, &op, meshes));
      continue;
    }
    if (name == "sdy.manual_computation") {
      TESSERA_RETURN_IF_ERROR(ConvertManualComputation(state, &op, meshes, *module));
      continue;
    }
    if (skipped.contains(&op)) continue;  // a GSPMD shard_map's custom_calls
    if (auto it = gspmd_parts.find(&op); it != gspmd_parts.end()) {
      TESSERA_RETURN_IF_ERROR(ConvertManualParts(state, it->second, *module));
      continue;
    }
    TESSERA_RETURN_IF_ERROR(ConvertOp(state, &op));
  }
  if (body->empty() || !mlir::isa<mlir::func::ReturnOp>(body->back())) {
    return absl::InvalidArgumentError("@main does not end in func.return");
  }
  // What no result needs (a broadcast's source once folded, a reduction's init constant) goes:
  // the partitioner would otherwise shard values nothing uses.
  for (mlir::Operation& op : llvm::make_early_inc_range(llvm::reverse(*body))) {
    if (mlir::isOpTriviallyDead(&op)) op.erase();
  }
  return module;
}

const ConversionTable& Conversions() {
  static const ConversionTable* const kTable = [] {
    auto* table = new ConversionTable;
    AddElementwiseConversions(*table);
    AddStructuralConversions(*table);
    AddContractionConversions(*table);
    AddGatherConversions(*table);
    AddSlicingConversions(*table);
    AddDynamicSlicingConversions(*table);
    AddControlFlowConversions(*table);
    AddCollectiveConversions(*table);
    AddReduceWindowConversions(*table);
    AddSortConversions(*table);
    AddConvolutionConversions(*table);
    return table;
  }();
  return *kTable;
}

// Unregistered dialects allowed while alive (the source program's StableHLO, CHLO and Shardy
// ops); the context's setting from before is restored after.
class UnregisteredDialectsAllowed {
 public:
  explicit UnregisteredDialectsAllowed(mlir::MLIRContext& context)
      : context_(context), before_(context.allowsUnregisteredDialects()) {
    context_.allowUnregisteredDialects(true);
  }
  ~UnregisteredDialectsAllowed() { context_.allowUnregisteredDialects(before_); }
  UnregisteredDialectsAllowed(const UnregisteredDialectsAllowed&) = delete;
  UnregisteredDialectsAllowed& operator=(const UnregisteredDialectsAllowed&) = delete;

 private:
  mlir::MLIRContext& context_;
  bool before_;
};

// The invariants of the program's builtin and func ops (their region and operand counts,
// attributes and types; not the ops they hold), checked before the importer reads them through
// their interfaces: a func.func without its region would otherwise fail an assertion. The
// program is verified whole only after calls are inlined (InlineCalls says why).
absl::Status CheckStructuralOps(mlir::ModuleOp module) {
  DiagnosticCollector diagnostics(module.getContext());
  mlir::Operation* failed = nullptr;
  module.walk<mlir::WalkOrder::PreOrder>([&](mlir::Operation* op) {
    const llvm::StringRef dialect = op->getName().getDialectNamespace();
    if ((dialect == "builtin" || dialect == "func") && op->isRegistered() &&
        mlir::failed(op->getName().verifyInvariants(op))) {
      failed = op;
      return mlir::WalkResult::interrupt();
    }
    return mlir::WalkResult::advance();
  });
  if (failed == nullptr) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("invalid StableHLO program: ", ImportState::Where(failed), ": ",
                   diagnostics.Message("does not verify")));
}

// The sharding hints on rank-0 values inside the scalar bodies of reductions, scatters, sorts and
// windows go: such a body computes one element, which no sharding splits, and JAX's explicit
// sharding mode hints each of its values (`sdy.sharding_constraint %arg <@mesh, []>`).
void DropHintsInScalarBodies(mlir::ModuleOp module) {
  static const auto* const kScalarBodies =
      new absl::flat_hash_set<std::string_view>{"stablehlo.reduce",
                                                "stablehlo.scatter",
                                                "stablehlo.sort",
                                                "stablehlo.reduce_window",
                                                "stablehlo.all_reduce",
                                                "stablehlo.reduce_scatter",
                                                "stablehlo.select_and_scatter"};
  llvm::SmallVector<mlir::Operation*> hints;
  module.walk([&](mlir::Operation* op) {
    // (A hint of its own result, which a graph region allows, is left for the body's check.)
    if (op->getName().getStringRef() != "sdy.sharding_constraint" || op->getNumOperands() != 1 ||
        op->getNumResults() != 1 || op->getOperand(0).getType() != op->getResult(0).getType() ||
        op->getOperand(0) == op->getResult(0)) {
      return;
    }
    auto type = mlir::dyn_cast<mlir::RankedTensorType>(op->getOperand(0).getType());
    if (!type || type.getRank() != 0) {
      return;
    }
    mlir::Operation* owner = op->getParentOp();
    if (owner != nullptr &&
        kScalarBodies->contains(std::string_view(owner->getName().getStringRef()))) {
      hints.push_back(op);
    }
  });
  for (mlir::Operation* hint : hints) {
    hint->getResult(0).replaceAllUsesWith(hint->getOperand(0));
    hint->erase();
  }
}

// The source program parsed, checked and converted (unregistered dialects allowed).
absl::StatusOr<mlir::OwningOpRef<mlir::ModuleOp>> ImportSource(mlir::MLIRContext& context,
                                                               std::string_view text) {
  TESSERA_ASSIGN_OR_RETURN(mlir::OwningOpRef<mlir::ModuleOp> source, Parse(context, text));
  const ConversionTable& table = Conversions();
  TESSERA_RETURN_IF_ERROR(CheckStructuralOps(*source));
  TESSERA_RETURN_IF_ERROR(CallCompositeDecompositions(*source));
  TESSERA_RETURN_IF_ERROR(CheckOpsKnown(*source, table));
  auto main = source->lookupSymbol<mlir::func::FuncOp>("main");
  if (!main || main.isExternal()) {
    return absl::InvalidArgumentError("the StableHLO program has no func.func @main with a body");
  }
  // Calls inlined (and the functions then erased) before the module is verified: MLIR looks a
  // callee up in the nearest op that may hold symbols, and an unregistered op (a scatter's or a
  // while's body calling JAX's outlined @clip) may, so a call inside one names no function.
  // A GSPMD shard_map's call stays (its callee is its body, with calls inlined too).
  const std::vector<GspmdManual> gspmd_manuals = FindGspmdManuals(main);
  TESSERA_RETURN_IF_ERROR(InlineCalls(*source, main));
  absl::flat_hash_set<mlir::Operation*> bodies;
  for (const GspmdManual& manual : gspmd_manuals) {
    auto callee = source->lookupSymbol<mlir::func::FuncOp>(manual.callee);
    if (!callee || callee.isExternal()) continue;  // refused by Convert, named
    if (bodies.insert(callee).second) TESSERA_RETURN_IF_ERROR(InlineCalls(*source, callee));
  }
  for (mlir::func::FuncOp func :
       llvm::make_early_inc_range(source->getBody()->getOps<mlir::func::FuncOp>())) {
    if (func != main && !bodies.contains(func)) func.erase();
  }
  TESSERA_RETURN_IF_ERROR(
      VerifyModule(*source, absl::StatusCode::kInvalidArgument, "invalid StableHLO program"));
  DropHintsInScalarBodies(*source);
  TESSERA_ASSIGN_OR_RETURN(Meshes meshes, ReadMeshes(*source));
  return Convert(main, meshes, table, gspmd_manuals);
}

}  // namespace

absl::Status ConvertOp(ImportState& state, mlir::Operation* op) {
  const std::string name = op->getName().getStringRef().str();
  auto it = Conversions().find(name);
  if (it == Conversions().end()) {
    return absl::UnimplementedError(
        absl::StrCat("unsupported StableHLO op ", ImportState::Where(op), UnsupportedHint(name)));
  }
  TESSERA_RETURN_IF_ERROR(it->second(state, op));
  if (!KeepsNarrowFloatValues(name)) RoundNarrowFloatResults(state, op);
  return absl::OkStatus();
}

absl::StatusOr<mlir::OwningOpRef<mlir::ModuleOp>> ImportStableHlo(mlir::MLIRContext& context,
                                                                  std::string_view text) {
  mlir::OwningOpRef<mlir::ModuleOp> module;
  {
    UnregisteredDialectsAllowed allowed(context);
    TESSERA_ASSIGN_OR_RETURN(module, ImportSource(context, text));
  }
  // The imported program uses registered dialects only.
  TESSERA_RETURN_IF_ERROR(VerifyModule(*module, absl::StatusCode::kInternal,
                                       "the imported StableHLO program is invalid (an importer "
                                       "defect: please report it with the program)"));
  return module;
}

}  // namespace tessera::compiler::stablehlo
