#include "ifrt/runtime/program/runtime_compiler.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "ifrt/runtime/distributed/distributed_runtime.h"
#include "ifrt/runtime/plan_executor.h"
#include "ifrt/runtime/program/collectives.h"
#include "ifrt/runtime/program/kernel_targets.h"
#include "ifrt/runtime/program/program_messages.h"
#include "ifrt/runtime/runtime_client.h"
#include "ifrt/shape.h"
#include "sharding/mesh.h"
#include "sharding/partition_spec.h"

namespace tessera::runtime {
namespace {

// The text and language of a program the compiler takes; null text for any other Program.
struct ProgramSource {
  const std::string* text = nullptr;
  ProgramFormat format = ProgramFormat::kLinalg;
};
ProgramSource SourceOf(const Program* program) {
  if (const auto* mlir = dynamic_cast<const MlirProgram*>(program)) {
    return {&mlir->text(), ProgramFormat::kLinalg};
  }
  if (const auto* stablehlo = dynamic_cast<const StableHloProgram*>(program)) {
    return {&stablehlo->text(), ProgramFormat::kStableHlo};
  }
  return {};
}

// The text that identifies a compile: equal texts compile to the same executable.
std::string CompileKey(const std::string& text, const CompileOptions& options,
                       ProgramFormat format = ProgramFormat::kLinalg) {
  std::string key = format == ProgramFormat::kStableHlo ? "--stablehlo\n" : "";
  key += text;
  absl::StrAppend(&key, "\n--devices:");
  for (Device* d : options.devices->devices()) absl::StrAppend(&key, " ", d->Id().value);
  for (const auto* list : {&options.input_shardings, &options.output_shardings}) {
    absl::StrAppend(&key, "\n--shardings:");
    for (const ShardingRef& s : *list) {
      absl::StrAppend(&key, " ", s == nullptr ? std::string("null") : s->DebugString(), ";");
    }
  }
  absl::StrAppend(&key, "\n--donated: ", absl::StrJoin(options.donated_input_indices, ","));
  absl::StrAppend(&key, "\n--targets: ", KernelTargetsKey(KernelTargetsOf(*options.devices)));
  return key;
}

// FNV-1a, 64 bits: stable across processes and builds.
uint64_t Fnv1a(std::string_view bytes) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::string FingerprintOfKey(std::string_view key) { return absl::StrFormat("%016x", Fnv1a(key)); }

// The grid's mesh: that of the first NamedSharding given; else, when ShardingParamShardings are
// given, the coarsest mesh on which each is a PartitionSpec (sharding::MeshOfShardingParams);
// else one axis over every device.
absl::StatusOr<std::string> GridMesh(const CompileOptions& options, size_t num_devices) {
  std::vector<sharding::ShardingParam> params;
  for (const auto* list : {&options.input_shardings, &options.output_shardings}) {
    for (const ShardingRef& s : *list) {
      if (const auto* named = dynamic_cast<const NamedSharding*>(s.get())) {
        return named->mesh().ToString();
      }
      if (const auto* param = dynamic_cast<const ShardingParamSharding*>(s.get())) {
        if (!param->IsFullyReplicated()) params.push_back(param->sharding_param());
      }
    }
  }
  if (params.empty()) return absl::StrCat("mesh{x=", num_devices, "}");
  absl::StatusOr<sharding::Mesh> mesh = sharding::MeshOfShardingParams(params);
  if (!mesh.ok()) {
    return absl::Status(mesh.status().code(), absl::StrCat("Compile: ", mesh.status().message()));
  }
  return mesh->ToString();
}

// A ShardingParamSharding as a PartitionSpec over the grid's mesh.
absl::StatusOr<ProgramSharding> ParamToProgramSharding(const ShardingParamSharding& sharding,
                                                       const std::string& grid_mesh,
                                                       const std::string& what) {
  absl::StatusOr<sharding::Mesh> mesh = sharding::Mesh::Parse(grid_mesh);
  absl::StatusOr<sharding::PartitionSpec> spec =
      mesh.ok() ? sharding::ToPartitionSpec(sharding.sharding_param(), *mesh) : mesh.status();
  if (!spec.ok()) {
    return absl::Status(spec.status().code(),
                        absl::StrCat("Compile: ", what, " ", sharding.DebugString(),
                                     " cannot be expressed on the device grid ", grid_mesh, ": ",
                                     spec.status().message()));
  }
  return ProgramSharding{grid_mesh, spec->ToString(), {}};
}

absl::StatusOr<ProgramSharding> ToProgramSharding(const ShardingRef& sharding,
                                                  const CompileOptions& options,
                                                  const std::string& grid_mesh,
                                                  const std::string& what) {
  if (sharding == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("Compile: ", what, " is null"));
  }
  if (*sharding->devices() != *options.devices) {
    return absl::InvalidArgumentError(absl::StrCat("Compile: ", what, " ", sharding->DebugString(),
                                                   " is not over the executable's devices ",
                                                   options.devices->DebugString()));
  }
  if (const auto* named = dynamic_cast<const NamedSharding*>(sharding.get())) {
    return ProgramSharding{named->mesh().ToString(), named->spec().ToString(), {}};
  }
  if (sharding->IsFullyReplicated()) return ProgramSharding{grid_mesh, "P()", {}};
  if (const auto* param = dynamic_cast<const ShardingParamSharding*>(sharding.get())) {
    return ParamToProgramSharding(*param, grid_mesh, what);
  }
  return absl::UnimplementedError(absl::StrCat(
      "Compile: ", what, " ", sharding->DebugString(),
      " cannot be expressed on a device grid; use a NamedSharding (mesh + PartitionSpec) or a "
      "ShardingParamSharding"));
}

// Each collective step's members (group, peers, bytes from each peer) per slot, and the bytes the
// program's communication reads per run. UNIMPLEMENTED when a device has no host-addressable
// memory (the runtime's collectives read their peers' buffers from the host).
absl::Status BindCollectives(CompiledProgram& program) {
  const ProgramPlan& plan = program.plan;
  program.members.resize(plan.steps.size());
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    if (plan.steps[i].kind != ProgramStep::Kind::kCollective) continue;
    for (size_t s = 0; s < program.slot_memories.size(); ++s) {
      if (program.host_memories[s] == nullptr) {
        return absl::UnimplementedError(absl::StrCat(
            "Compile: '", plan.name, "' communicates between devices, which programs do only ",
            "through host-addressable memory; ", program.slot_devices[s]->DebugString(),
            " has none"));
      }
    }
    const CollectiveStep& step = plan.steps[i].collective;
    const ProgramValue& in = plan.values[step.input];
    const int64_t bytes = in.local_shape.num_elements() * *in.dtype.byte_size();
    for (size_t s = 0; s < program.slot_devices.size(); ++s) {
      CollectiveMember member{GroupOf(plan.grid_shape, step.grid_axes, static_cast<int>(s))};
      const int group_size = static_cast<int>(member.group.members.size());
      if (step.kind == CollectiveKind::kCollectivePermute) {  // reads its source only
        const int source = PermuteSource(step, group_size, member.group.position);
        const int m = source < 0 ? static_cast<int>(s) : member.group.members[source];
        if (m != static_cast<int>(s))
          member.peer_ids.push_back(program.slot_devices[m]->Id().value);
      } else {
        for (int m : member.group.members) {
          if (m != static_cast<int>(s))
            member.peer_ids.push_back(program.slot_devices[m]->Id().value);
        }
      }
      member.bytes_from_each_peer = BytesFromEachPeer(step, bytes, group_size);
      program.communication_bytes +=
          static_cast<int64_t>(member.peer_ids.size()) * member.bytes_from_each_peer;
      program.members[i].push_back(std::move(member));
    }
  }
  return absl::OkStatus();
}

// "dtype[local shape]" of each value id, comma-separated.
std::string DescribeValues(const ProgramPlan& plan, const std::vector<int>& ids) {
  std::vector<std::string> parts;
  for (int id : ids) {
    const ProgramValue& v = plan.values[id];
    parts.push_back(absl::StrCat("%", id, " ", v.dtype.DebugString(), v.local_shape.DebugString()));
  }
  return absl::StrJoin(parts, ", ");
}

// One line per step, in the order every device runs them.
std::string DescribeSteps(const CompiledProgram& program) {
  const ProgramPlan& plan = program.plan;
  std::string out = absl::StrCat("steps (each device runs them in order; local shapes):\n");
  for (const ProgramStep& step : plan.steps) {
    if (step.kind == ProgramStep::Kind::kKernel) {
      const KernelStep& k = step.kernel;
      absl::StrAppend(&out, "  ", k.name, ": ", k.ops.empty() ? "(no ops)" : k.ops, "  (",
                      DescribeValues(plan, k.inputs), " -> ", DescribeValues(plan, k.outputs),
                      ")\n");
      continue;
    }
    const CollectiveStep& c = step.collective;
    absl::StrAppend(
        &out, "  ", CollectiveName(c.kind), ": ", DescribeValues(plan, {c.input}), " -> ",
        DescribeValues(plan, {c.output}), " over grid axes [", absl::StrJoin(c.grid_axes, ","), "]",
        c.kind == CollectiveKind::kCollectivePermute
            ? absl::StrCat(", shifted by ", c.shift_offset, c.shift_rotates ? " (rotating)" : "")
            : "",
        "\n");
  }
  return out;
}

std::string DescribeCommunication(const CompiledProgram& program) {
  const ProgramPlan& plan = program.plan;
  std::string out = "communication (done by the runtime, guarded as explicit device-to-device):\n";
  std::vector<std::string> ids;
  for (RuntimeDevice* d : program.slot_devices) ids.push_back(absl::StrCat(d->Id().value));
  bool any = false;
  for (const ProgramStep& step : plan.steps) {
    if (step.kind != ProgramStep::Kind::kCollective) continue;
    any = true;
    const CollectiveStep& c = step.collective;
    const ProgramValue& in = plan.values[c.input];
    const std::vector<CollectiveMember>& members = program.members[&step - plan.steps.data()];
    const size_t group = members[0].group.members.size();
    // The most any device reads (a collective_permute's devices without a source read nothing).
    int64_t per_device = 0;
    for (const CollectiveMember& m : members) {
      per_device =
          std::max(per_device, static_cast<int64_t>(m.peer_ids.size()) * m.bytes_from_each_peer);
    }
    absl::StrAppend(&out, "  ", CollectiveName(c.kind), " of value %", c.input, " (",
                    in.dtype.DebugString(), in.local_shape.DebugString(),
                    " per device) over grid axes [", absl::StrJoin(c.grid_axes, ","),
                    "] in groups of ", group, ", devices [", absl::StrJoin(ids, ","),
                    "]: ", per_device, " bytes read from peers per device\n");
  }
  if (!any) absl::StrAppend(&out, "  none\n");
  absl::StrAppend(&out, "total per run: ", program.communication_bytes, " bytes\n");
  if (program.spans_processes) {
    absl::StrAppend(&out,
                    "between processes (sent over the transport): ", BytesBetweenProcesses(program),
                    " bytes per run\n");
  }
  return out;
}

// True when `devices` (which may be null or hold null entries: the call then fails in
// CheckOptions) belong to more than one process. Allocates nothing (it decides, outside any
// allocation-failure handling, whether the call is collective).
bool SpansSeveralProcesses(const DeviceListRef& devices) {
  if (devices == nullptr) return false;
  std::optional<int> first;
  for (Device* d : devices->devices()) {
    if (d == nullptr) continue;
    if (!first) first = d->ProcessIndex();
    if (d->ProcessIndex() != *first) return true;
  }
  return false;
}

// The same on every process that compiles the same program with the same options.
uint64_t CompileFingerprint(const Program* program, const CompileOptions& options) {
  CallFingerprint f;
  f.Add(std::string_view("Compile"));
  const ProgramSource source = SourceOf(program);
  f.Add(source.format == ProgramFormat::kStableHlo ? std::string_view("stablehlo")
                                                   : std::string_view("linalg"));
  f.Add(source.text != nullptr
            ? std::string_view(*source.text)
            : std::string_view("(neither an MlirProgram nor a StableHloProgram)"));
  for (Device* d : options.devices->devices()) {
    f.Add(static_cast<uint64_t>(d == nullptr ? -1 : d->Id().value));
  }
  for (const std::vector<ShardingRef>* shardings :
       {&options.input_shardings, &options.output_shardings}) {
    f.Add(static_cast<uint64_t>(shardings->size()));
    for (const ShardingRef& s : *shardings) {
      f.Add(std::string_view(s == nullptr ? std::string("null") : s->DebugString()));
    }
  }
  for (int i : options.donated_input_indices) f.Add(static_cast<uint64_t>(i));
  return f.value();
}

// The sharding a caller's argument is in where the program's mesh lists the executable's
// `devices` in another order (`planned.device_order`): the planned mesh and spec with slot i on
// devices[order[i]]. `kernels` itself when the order is empty.
absl::StatusOr<ShardingRef> InDeviceOrder(const ProgramSharding& planned,
                                          const ShardingRef& kernels, const DeviceListRef& devices,
                                          const RuntimeClient& client) {
  const std::vector<int64_t>& order = planned.device_order;
  if (order.empty()) return kernels;
  absl::Span<Device* const> listed = devices->devices();
  std::vector<Device*> placed;
  for (int64_t i : order) {
    if (i < 0 || i >= static_cast<int64_t>(listed.size())) {
      return absl::InternalError(absl::StrCat("Compile: a parameter's device order names device ",
                                              i, " of ", listed.size()));
    }
    placed.push_back(listed[i]);
  }
  TESSERA_ASSIGN_OR_RETURN(DeviceListRef reordered, client.MakeDeviceList(placed));
  TESSERA_ASSIGN_OR_RETURN(sharding::Mesh mesh, sharding::Mesh::Parse(planned.mesh));
  TESSERA_ASSIGN_OR_RETURN(sharding::PartitionSpec spec,
                           sharding::PartitionSpec::Parse(planned.spec));
  return NamedSharding::Create(std::move(mesh), std::move(spec), std::move(reordered),
                               kernels->memory_kind());
}

}  // namespace

std::string ProgramFingerprint(const std::string& text, const CompileOptions& options) {
  return FingerprintOfKey(CompileKey(text, options));
}

RuntimeCompiler::RuntimeCompiler(RuntimeClient* client, std::unique_ptr<ProgramCompiler> compiler)
    : client_(client), compiler_(std::move(compiler)) {}

PlanCacheStats RuntimeCompiler::cache_stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return PlanCacheStats{hits_, misses_, static_cast<int64_t>(cache_.size())};
}

absl::Status RuntimeCompiler::CheckOptions(const CompileOptions& options,
                                           size_t* num_devices) const {
  if (options.devices == nullptr || options.devices->size() == 0) {
    return absl::InvalidArgumentError("Compile: CompileOptions::devices is empty");
  }
  for (const auto& [list, name] : {std::pair{&options.input_shardings, "input_shardings"},
                                   std::pair{&options.output_shardings, "output_shardings"}}) {
    for (size_t i = 0; i < list->size(); ++i) {
      if ((*list)[i] == nullptr) {
        return absl::InvalidArgumentError(absl::StrCat("Compile: ", name, "[", i, "] is null"));
      }
    }
  }
  std::set<int> processes;
  for (Device* d : options.devices->devices()) {
    absl::StatusOr<Device*> mine = client_->LookupDevice(d->Id());
    if (!mine.ok() || *mine != d) {
      return absl::InvalidArgumentError(
          absl::StrCat("Compile: device ", d->DebugString(), " belongs to another client"));
    }
    processes.insert(d->ProcessIndex());
  }
  // Devices of several processes: every process compiles and executes it (Execute is collective).
  // Devices of one other process alone: that process's executable, which it runs by itself.
  if (processes.size() == 1 && *processes.begin() != client_->process_index()) {
    return absl::InvalidArgumentError(
        absl::StrCat("Compile: every device of ", options.devices->DebugString(),
                     " belongs to process ", *processes.begin(),
                     "; compile it there (an executable over devices of several "
                     "processes is compiled and executed by every process)"));
  }
  *num_devices = options.devices->size();
  return absl::OkStatus();
}

absl::StatusOr<ProgramCompileRequest> RuntimeCompiler::MakeRequest(
    const std::string& text, ProgramFormat format, const CompileOptions& options) const {
  ProgramCompileRequest request;
  request.mlir_text = text;
  request.format = format;
  request.num_devices = options.devices->size();
  request.targets = KernelTargetsOf(*options.devices);
  for (Device* d : options.devices->devices()) {
    std::string platform(d->Kind());
    if (std::find(request.platforms.begin(), request.platforms.end(), platform) ==
        request.platforms.end()) {
      request.platforms.push_back(platform);
    }
  }
  TESSERA_ASSIGN_OR_RETURN(const std::string grid_mesh, GridMesh(options, options.devices->size()));
  for (size_t i = 0; i < options.input_shardings.size(); ++i) {
    TESSERA_ASSIGN_OR_RETURN(ProgramSharding s,
                             ToProgramSharding(options.input_shardings[i], options, grid_mesh,
                                               absl::StrCat("input_shardings[", i, "]")));
    request.parameter_shardings.push_back(std::move(s));
  }
  for (size_t i = 0; i < options.output_shardings.size(); ++i) {
    TESSERA_ASSIGN_OR_RETURN(ProgramSharding s,
                             ToProgramSharding(options.output_shardings[i], options, grid_mesh,
                                               absl::StrCat("output_shardings[", i, "]")));
    request.result_shardings.push_back(std::move(s));
  }
  return request;
}

absl::Status RuntimeCompiler::BindShardings(const CompileOptions& options,
                                            CompiledProgram& program) const {
  const ProgramPlan& plan = program.plan;
  auto bind = [&](const std::vector<ShardingRef>& given,
                  const std::vector<ProgramSharding>& planned,
                  std::vector<ShardingRef>& out) -> absl::Status {
    if (!given.empty()) {
      out = given;
      return absl::OkStatus();
    }
    for (const ProgramSharding& p : planned) {
      TESSERA_ASSIGN_OR_RETURN(sharding::Mesh mesh, sharding::Mesh::Parse(p.mesh));
      TESSERA_ASSIGN_OR_RETURN(sharding::PartitionSpec spec,
                               sharding::PartitionSpec::Parse(p.spec));
      TESSERA_ASSIGN_OR_RETURN(
          ShardingRef s,
          NamedSharding::Create(std::move(mesh), std::move(spec), options.devices, MemoryKind()));
      out.push_back(std::move(s));
    }
    return absl::OkStatus();
  };
  TESSERA_RETURN_IF_ERROR(
      bind(options.input_shardings, plan.parameter_shardings, program.parameter_shardings));
  TESSERA_RETURN_IF_ERROR(
      bind(options.output_shardings, plan.result_shardings, program.result_shardings));
  if (program.parameter_shardings.size() != plan.parameters.size() ||
      program.result_shardings.size() != plan.results.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Compile: '", plan.name, "' has ", plan.parameters.size(), " arguments and ",
        plan.results.size(), " results; the options give ", program.parameter_shardings.size(),
        " input and ", program.result_shardings.size(), " output shardings"));
  }
  program.declared_parameter_shardings = program.parameter_shardings;
  if (options.input_shardings.empty()) {
    for (size_t p = 0; p < plan.parameter_shardings.size(); ++p) {
      TESSERA_ASSIGN_OR_RETURN(
          program.declared_parameter_shardings[p],
          InDeviceOrder(plan.parameter_shardings[p], program.parameter_shardings[p],
                        options.devices, *client_));
    }
  }
  for (size_t r = 0; r < program.result_shardings.size(); ++r) {
    const ShardingRef& s = program.result_shardings[r];
    TESSERA_ASSIGN_OR_RETURN(std::vector<RuntimeMemory*> memories, Dispatcher::ResolveMemories(*s));
    program.result_memories.push_back(
        std::make_shared<const std::vector<RuntimeMemory*>>(std::move(memories)));
    TESSERA_ASSIGN_OR_RETURN(sharding::ShardLayout layout,
                             s->Layout(plan.global_results[r].local_shape));
    // The buffers the kernels write must be the shards the result's arrays describe.
    const Shape& local = plan.values[plan.results[r]].local_shape;
    for (int slot = 0; slot < layout.num_slots(); ++slot) {
      if (absl::Span<const int64_t>(layout.shard_shape(slot)) != local.dims()) {
        return absl::InternalError(absl::StrCat(
            "Compile: result ", r, " of '", plan.name, "' has local shape ", local.DebugString(),
            " in the compiler's plan but ", s->DebugString(), " gives shard ", slot, " another"));
      }
    }
    program.result_layouts.push_back(
        std::make_shared<const sharding::ShardLayout>(std::move(layout)));
  }
  return absl::OkStatus();
}

absl::Status RuntimeCompiler::LoadKernels(CompiledProgram& program) const {
  const ProgramPlan& plan = program.plan;
  program.kernels.resize(plan.steps.size());
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    if (plan.steps[i].kind != ProgramStep::Kind::kKernel) continue;
    const KernelStep& kernel = plan.steps[i].kernel;
    for (RuntimeDevice* device : program.slot_devices) {
      auto artifact = kernel.artifacts.find(std::string(device->Kind()));
      if (artifact == kernel.artifacts.end()) {
        return absl::UnimplementedError(absl::StrCat(
            "Compile: no code generator for platform '", std::string(device->Kind()), "' (kernel ",
            kernel.name, " of '", plan.name, "' for ", device->DebugString(), ")"));
      }
      if (!device->IsAddressable()) {  // its own process loads it
        program.kernels[i].push_back(nullptr);
        continue;
      }
      TESSERA_ASSIGN_OR_RETURN(
          PlatformKernelRef loaded,
          device->platform()->LoadKernel(device->platform_device(), artifact->second));
      program.kernels[i].push_back(std::move(loaded));
    }
  }
  return absl::OkStatus();
}

namespace {

// Every size the runtime will allocate or copy from the plan must be a valid, non-overflowing one
// (the plan comes from a compiler the runtime does not trust blindly), and every value id in range.
absl::Status CheckPlan(const ProgramPlan& plan) {
  auto check_values = [](const std::vector<ProgramValue>& values, std::string_view what) {
    for (size_t i = 0; i < values.size(); ++i) {
      if (absl::Status s = ValidateShape(values[i].local_shape, values[i].dtype); !s.ok()) {
        return absl::InternalError(absl::StrCat("the compiler's plan has an invalid ",
                                                std::string(what), " ", i, ": ", s.message()));
      }
    }
    return absl::OkStatus();
  };
  TESSERA_RETURN_IF_ERROR(check_values(plan.values, "value"));
  TESSERA_RETURN_IF_ERROR(check_values(plan.global_parameters, "parameter"));
  TESSERA_RETURN_IF_ERROR(check_values(plan.global_results, "result"));
  const int n = static_cast<int>(plan.values.size());
  auto in_range = [n](int v) { return v >= 0 && v < n; };
  bool ok = plan.parameters.size() == plan.global_parameters.size() &&
            plan.results.size() == plan.global_results.size();
  for (int v : plan.parameters) ok = ok && in_range(v);
  for (int v : plan.results) ok = ok && in_range(v);
  for (const ProgramStep& step : plan.steps) {
    for (int v : step.kernel.inputs) ok = ok && in_range(v);
    for (int v : step.kernel.outputs) ok = ok && in_range(v);
    if (step.kind == ProgramStep::Kind::kCollective) {
      ok = ok && in_range(step.collective.input) && in_range(step.collective.output);
      for (int a : step.collective.grid_axes) {
        ok = ok && a >= 0 && a < static_cast<int>(plan.grid_shape.size());
      }
    }
  }
  if (!ok) return absl::InternalError("the compiler's plan refers to values or axes it lacks");
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::shared_ptr<const CompiledProgram>> RuntimeCompiler::Bind(
    ProgramPlan plan, const CompileOptions& options, std::string fingerprint) const {
  TESSERA_RETURN_IF_ERROR(CheckPlan(plan));
  int64_t grid_size = 1;
  for (int64_t axis : plan.grid_shape) grid_size *= axis;
  if (grid_size != options.devices->size()) {
    return absl::InternalError(absl::StrCat("the compiler's grid has ", grid_size,
                                            " devices; the executable ", options.devices->size()));
  }
  auto program = std::make_shared<CompiledProgram>();
  program->plan = std::move(plan);
  program->fingerprint = std::move(fingerprint);
  program->devices = options.devices;
  for (int s = 0; s < options.devices->size(); ++s) {
    auto* device = static_cast<RuntimeDevice*>((*options.devices)[s]);
    program->slot_devices.push_back(device);
    program->slot_positions.push_back(GridPosition(program->plan.grid_shape, s));
    TESSERA_ASSIGN_OR_RETURN(RuntimeMemory * memory, device->ResolveMemory(MemoryKind()));
    program->slot_memories.push_back(memory);
    RuntimeMemory* host = memory->host_addressable() ? memory : nullptr;
    for (Memory* m : device->Memories()) {
      if (host == nullptr && static_cast<RuntimeMemory*>(m)->host_addressable()) {
        host = static_cast<RuntimeMemory*>(m);
      }
    }
    program->host_memories.push_back(host);
  }
  TESSERA_RETURN_IF_ERROR(BindShardings(options, *program));
  for (int index : options.donated_input_indices) {
    if (index < 0 || index >= static_cast<int>(program->plan.parameters.size())) {
      return absl::InvalidArgumentError(
          absl::StrCat("Compile: donated_input_indices holds ", index, " but '", program->plan.name,
                       "' has ", program->plan.parameters.size(), " arguments"));
    }
    program->donated_parameters.push_back(index);
  }
  TESSERA_RETURN_IF_ERROR(BindCollectives(*program));
  std::set<int> processes;
  for (RuntimeDevice* d : program->slot_devices) processes.insert(d->ProcessIndex());
  program->spans_processes = processes.size() > 1;
  ProgramTags tags = AssignTags(program->plan, program->slot_devices.size());
  program->tag_offsets = std::move(tags.offsets);
  program->tag_count = tags.total;
  TESSERA_RETURN_IF_ERROR(LoadKernels(*program));
  program->explain = absl::StrCat(program->plan.partitioned_text, "\n", DescribeSteps(*program),
                                  DescribeCommunication(*program));
  return std::shared_ptr<const CompiledProgram>(std::move(program));
}

absl::StatusOr<LoadedExecutableRef> RuntimeCompiler::Compile(std::unique_ptr<Program> program,
                                                             CompileOptions options) {
  const bool collective = client_->dispatcher().processes().transport() != nullptr &&
                          SpansSeveralProcesses(options.devices);
  uint64_t fingerprint = 0;
  absl::StatusOr<LoadedExecutableRef> result =
      CatchAllocationFailure("Compile", [&]() -> absl::StatusOr<LoadedExecutableRef> {
        if (collective) fingerprint = CompileFingerprint(program.get(), options);
        return CompileImpl(std::move(program), std::move(options));
      });
  if (!collective) return result;
  absl::StatusOr<int64_t> agreed = client_->dispatcher().processes().transport()->Agree(
      "Compile", fingerprint, /*messages=*/0, result.status());
  if (!agreed.ok()) return agreed.status();
  return result;
}

absl::StatusOr<LoadedExecutableRef> RuntimeCompiler::CompileImpl(std::unique_ptr<Program> program,
                                                                 CompileOptions options) {
  const ProgramSource source = SourceOf(program.get());
  if (source.text == nullptr) {
    return absl::UnimplementedError(
        absl::StrCat("Compile: only MlirProgram and StableHloProgram are supported, got ",
                     program == nullptr ? std::string("null") : program->DebugString()));
  }
  size_t num_devices = 0;
  TESSERA_RETURN_IF_ERROR(CheckOptions(options, &num_devices));
  if (options.input_shardings.empty() != options.output_shardings.empty()) {
    return absl::InvalidArgumentError(
        "Compile: give both input_shardings and output_shardings, or neither (then the program's "
        "tessera.sharding attributes say)");
  }
  const std::string key = CompileKey(*source.text, options, source.format);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = cache_.find(key); it != cache_.end()) {
      ++hits_;
      return LoadedExecutableRef(std::make_shared<RuntimeExecutable>(client_, it->second));
    }
  }
  if (compiler_ == nullptr) {
    return absl::UnimplementedError("Compile: this build of Tessera has no program compiler");
  }
  TESSERA_ASSIGN_OR_RETURN(ProgramCompileRequest request,
                           MakeRequest(*source.text, source.format, options));
  TESSERA_ASSIGN_OR_RETURN(ProgramPlan plan, compiler_->Compile(request));
  // A StableHLO program without shardings is replicated, as a framework's unsharded function is;
  // a linalg program must say (its author may have forgotten the attributes).
  if (options.input_shardings.empty() && plan.sharding_attributes == 0 &&
      source.format == ProgramFormat::kLinalg) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Compile: no shardings for '", plan.name, "': CompileOptions has none and no argument or ",
        "result of the program carries a tessera.sharding attribute"));
  }
  TESSERA_ASSIGN_OR_RETURN(std::shared_ptr<const CompiledProgram> compiled,
                           Bind(std::move(plan), options, FingerprintOfKey(key)));
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++misses_;
    // Bounded like the plan cache: when full it starts over (executables keep their programs).
    if (cache_.size() >= kMaxCachedPrograms) cache_.clear();
    cache_.emplace(key, compiled);
  }
  return LoadedExecutableRef(std::make_shared<RuntimeExecutable>(client_, std::move(compiled)));
}

}  // namespace tessera::runtime
