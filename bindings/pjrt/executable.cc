// PJRT_Client_Compile, PJRT_Executable and PJRT_LoadedExecutable: a Tessera LoadedExecutable
// compiled from the StableHLO program JAX sends, over the devices of its device assignment.

#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/string_view.h"
#include "bindings/pjrt/compile_options.h"
#include "bindings/pjrt/entry_points.h"
#include "bindings/pjrt/internal.h"
#include "bindings/pjrt/optimized_program.h"
#include "bindings/pjrt/program_reader.h"

namespace tessera::pjrt {
namespace {

constexpr std::string_view kDeviceMemoryKind = "device";

// The executable's devices: partition p runs on the device the assignment names for it (the
// first num_partitions devices without one).
absl::StatusOr<std::vector<PJRT_Device*>> ExecutableDevices(const ClientState& state,
                                                            const CompileOptions& options) {
  std::vector<PJRT_Device*> devices;
  if (options.device_ids.empty()) {
    if (options.num_partitions > static_cast<int64_t>(state.devices.size())) {
      return absl::InvalidArgumentError(
          absl::StrCat("PJRT_Client_Compile: the program has ", options.num_partitions,
                       " partitions and the client ", state.devices.size(),
                       " devices (TESSERA_CPU_DEVICES sets how many CPU devices it has)"));
    }
    devices.assign(state.devices.begin(), state.devices.begin() + options.num_partitions);
    return devices;
  }
  for (const std::vector<int64_t>& replicas : options.device_ids) {
    PJRT_Device* found = nullptr;
    for (PJRT_Device* device : state.devices) {
      if (device->description.id == replicas[0]) found = device;
    }
    if (found == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("PJRT_Client_Compile: the device assignment names device ", replicas[0],
                       ", which the client does not have (it has ", state.devices.size(), ")"));
    }
    for (PJRT_Device* d : devices) {
      if (d == found) {
        return absl::InvalidArgumentError(absl::StrCat(
            "PJRT_Client_Compile: the device assignment names device ", replicas[0], " twice"));
      }
    }
    devices.push_back(found);
  }
  return devices;
}

// Each output's element type, the shape of its shard on a device, and its memory kind.
absl::Status DescribeOutputs(CompiledProgram& program) {
  for (const tessera::ArraySpec& spec : program.outputs) {
    program.output_types.push_back(ToBufferType(spec.dtype));
    absl::StatusOr<sharding::ShardLayout> layout = spec.sharding->Layout(spec.shape);
    if (!layout.ok()) return layout.status();
    sharding::Index shard = layout->shard_shape(0);
    program.output_dims.insert(program.output_dims.end(), shard.begin(), shard.end());
    program.output_dim_sizes.push_back(shard.size());
    program.output_memory_kinds.push_back(kDeviceMemoryKind.data());
    program.output_memory_kind_sizes.push_back(kDeviceMemoryKind.size());
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<CompiledProgram>> Compile(const PJRT_Client_Compile_Args& args) {
  if (args.client == nullptr || args.client->state == nullptr)
    return absl::InvalidArgumentError("PJRT_Client_Compile: client is NULL");
  if (args.program == nullptr || (args.program->code == nullptr && args.program->code_size > 0))
    return absl::InvalidArgumentError("PJRT_Client_Compile: program is NULL");
  std::string_view format = args.program->format == nullptr
                                ? std::string_view()
                                : std::string_view(args.program->format, args.program->format_size);
  if (format != "mlir") {
    return absl::UnimplementedError(absl::StrCat("PJRT_Client_Compile: programs of format '",
                                                 base::AsAbsl(format),
                                                 "': Tessera compiles StableHLO (format 'mlir')"));
  }
  absl::StatusOr<CompileOptions> options =
      ParseCompileOptions(args.compile_options == nullptr
                              ? std::string_view()
                              : std::string_view(args.compile_options, args.compile_options_size));
  if (!options.ok()) return options.status();
  if (options->num_replicas != 1) {
    return absl::UnimplementedError(absl::StrCat(
        "PJRT_Client_Compile: a program of ", options->num_replicas,
        " replicas (jax.pmap): Tessera runs SPMD programs over partitions (jax.jit with "
        "shardings, shard_map)"));
  }
  const std::shared_ptr<ClientState>& state = args.client->state;
  absl::StatusOr<std::vector<PJRT_Device*>> devices = ExecutableDevices(*state, *options);
  if (!devices.ok()) return devices.status();
  absl::StatusOr<std::string> text =
      ReadProgram(std::string_view(args.program->code, args.program->code_size));
  if (!text.ok()) return text.status();

  std::vector<tessera::Device*> tessera_devices;
  for (PJRT_Device* d : *devices) tessera_devices.push_back(d->device);
  absl::StatusOr<tessera::DeviceListRef> device_list =
      state->client->MakeDeviceList(tessera_devices);
  if (!device_list.ok()) return device_list.status();
  tessera::CompileOptions compile_options;
  compile_options.devices = *device_list;
  absl::StatusOr<tessera::LoadedExecutableRef> executable =
      state->client->GetDefaultCompiler()->Compile(
          std::make_unique<tessera::StableHloProgram>(std::move(*text)),
          std::move(compile_options));
  if (!executable.ok()) return executable.status();

  auto program = std::make_shared<CompiledProgram>();
  program->state = state;
  program->executable = std::move(*executable);
  program->name = program->executable->name();
  program->fingerprint = program->executable->Fingerprint();
  program->devices = std::move(*devices);
  for (size_t p = 0; p < program->devices.size(); ++p) {
    program->partition_of[program->devices[p]->device] = p;
  }
  program->parameters = program->executable->GetParameterSpecs();
  program->outputs = program->executable->GetOutputSpecs();
  if (absl::Status s = DescribeOutputs(*program); !s.ok()) return s;
  std::vector<const tessera::Device*> partitions;
  for (PJRT_Device* d : program->devices) partitions.push_back(d->device);
  program->optimized_program =
      OptimizedProgram(program->name, program->parameters, program->outputs, partitions);
  return program;
}

absl::Status CheckExecutable(const PJRT_Executable* executable, std::string_view where) {
  if (executable == nullptr || executable->program == nullptr)
    return absl::InvalidArgumentError(absl::StrCat(base::AsAbsl(where), ".executable is NULL"));
  return absl::OkStatus();
}

absl::Status CheckLoaded(const PJRT_LoadedExecutable* executable, std::string_view where) {
  if (executable == nullptr || executable->program == nullptr)
    return absl::InvalidArgumentError(absl::StrCat(base::AsAbsl(where), ".executable is NULL"));
  return absl::OkStatus();
}

}  // namespace

PJRT_Error* ClientCompile(PJRT_Client_Compile_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_Client_Compile_Args);
  absl::StatusOr<std::shared_ptr<CompiledProgram>> program = Compile(*args);
  TESSERA_PJRT_RETURN_IF_ERROR(program.status());
  args->executable = new PJRT_LoadedExecutable{std::move(*program)};
  return nullptr;
}

PJRT_Error* ExecutableDestroy(PJRT_Executable_Destroy_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_Executable_Destroy_Args);
  delete args->executable;
  return nullptr;
}

PJRT_Error* ExecutableName(PJRT_Executable_Name_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_Executable_Name_Args);
  TESSERA_PJRT_RETURN_IF_ERROR(CheckExecutable(args->executable, "PJRT_Executable_Name_Args"));
  const std::string& name = args->executable->program->name;
  args->executable_name = name.c_str();
  args->executable_name_size = name.size();
  return nullptr;
}

PJRT_Error* ExecutableNumReplicas(PJRT_Executable_NumReplicas_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_Executable_NumReplicas_Args);
  TESSERA_PJRT_RETURN_IF_ERROR(
      CheckExecutable(args->executable, "PJRT_Executable_NumReplicas_Args"));
  args->num_replicas = 1;
  return nullptr;
}

PJRT_Error* ExecutableNumPartitions(PJRT_Executable_NumPartitions_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_Executable_NumPartitions_Args);
  TESSERA_PJRT_RETURN_IF_ERROR(
      CheckExecutable(args->executable, "PJRT_Executable_NumPartitions_Args"));
  args->num_partitions = args->executable->program->devices.size();
  return nullptr;
}

PJRT_Error* ExecutableNumOutputs(PJRT_Executable_NumOutputs_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_Executable_NumOutputs_Args);
  TESSERA_PJRT_RETURN_IF_ERROR(
      CheckExecutable(args->executable, "PJRT_Executable_NumOutputs_Args"));
  args->num_outputs = args->executable->program->outputs.size();
  return nullptr;
}

PJRT_Error* ExecutableSizeOfGeneratedCodeInBytes(
    PJRT_Executable_SizeOfGeneratedCodeInBytes_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_Executable_SizeOfGeneratedCodeInBytes_Args);
  TESSERA_PJRT_RETURN_IF_ERROR(
      CheckExecutable(args->executable, "PJRT_Executable_SizeOfGeneratedCodeInBytes_Args"));
  args->size_in_bytes = 0;  // not measured: the kernels live in Tessera's kernel cache
  return nullptr;
}

PJRT_Error* ExecutableGetCostAnalysis(PJRT_Executable_GetCostAnalysis_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_Executable_GetCostAnalysis_Args);
  TESSERA_PJRT_RETURN_IF_ERROR(
      CheckExecutable(args->executable, "PJRT_Executable_GetCostAnalysis_Args"));
  args->num_properties = 0;  // Tessera has no cost model to report
  args->properties = nullptr;
  return nullptr;
}

PJRT_Error* ExecutableOutputElementTypes(PJRT_Executable_OutputElementTypes_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_Executable_OutputElementTypes_Args);
  TESSERA_PJRT_RETURN_IF_ERROR(
      CheckExecutable(args->executable, "PJRT_Executable_OutputElementTypes_Args"));
  std::vector<PJRT_Buffer_Type>& types = args->executable->program->output_types;
  args->output_types = types.data();
  args->num_output_types = types.size();
  return nullptr;
}

PJRT_Error* ExecutableOutputDimensions(PJRT_Executable_OutputDimensions_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_Executable_OutputDimensions_Args);
  TESSERA_PJRT_RETURN_IF_ERROR(
      CheckExecutable(args->executable, "PJRT_Executable_OutputDimensions_Args"));
  const CompiledProgram& program = *args->executable->program;
  args->num_outputs = program.outputs.size();
  args->dims = program.output_dims.data();
  args->dim_sizes = program.output_dim_sizes.data();
  return nullptr;
}

PJRT_Error* ExecutableOutputMemoryKinds(PJRT_Executable_OutputMemoryKinds_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_Executable_OutputMemoryKinds_Args);
  TESSERA_PJRT_RETURN_IF_ERROR(
      CheckExecutable(args->executable, "PJRT_Executable_OutputMemoryKinds_Args"));
  const CompiledProgram& program = *args->executable->program;
  args->num_outputs = program.outputs.size();
  args->memory_kinds = program.output_memory_kinds.data();
  args->memory_kind_sizes = program.output_memory_kind_sizes.data();
  return nullptr;
}

PJRT_Error* ExecutableOptimizedProgram(PJRT_Executable_OptimizedProgram_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_Executable_OptimizedProgram_Args);
  TESSERA_PJRT_RETURN_IF_ERROR(
      CheckExecutable(args->executable, "PJRT_Executable_OptimizedProgram_Args"));
  TESSERA_PJRT_RETURN_IF_ERROR(
      CheckNotNull(args->program, "PJRT_Executable_OptimizedProgram_Args.program"));
  const CompiledProgram& program = *args->executable->program;
  TESSERA_PJRT_RETURN_IF_ERROR(program.optimized_program.status());
  const std::string& text = *program.optimized_program;
  static constexpr std::string_view kFormat = "hlo_with_config";
  args->program->format = kFormat.data();
  args->program->format_size = kFormat.size();
  if (args->program->code == nullptr) {  // the first call asks for the size
    args->program->code_size = text.size();
    return nullptr;
  }
  if (args->program->code_size < text.size()) {
    return MakeError(absl::InvalidArgumentError(
        absl::StrCat("PJRT_Executable_OptimizedProgram: code holds ", args->program->code_size,
                     " bytes; the program has ", text.size())));
  }
  std::memcpy(args->program->code, text.data(), text.size());
  args->program->code_size = text.size();
  return nullptr;
}

PJRT_Error* ExecutableFingerprint(PJRT_Executable_Fingerprint_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_Executable_Fingerprint_Args);
  TESSERA_PJRT_RETURN_IF_ERROR(
      CheckExecutable(args->executable, "PJRT_Executable_Fingerprint_Args"));
  const std::string& fingerprint = args->executable->program->fingerprint;
  args->executable_fingerprint = fingerprint.c_str();
  args->executable_fingerprint_size = fingerprint.size();
  return nullptr;
}

PJRT_Error* LoadedExecutableDestroy(PJRT_LoadedExecutable_Destroy_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_LoadedExecutable_Destroy_Args);
  delete args->executable;
  return nullptr;
}

PJRT_Error* LoadedExecutableGetExecutable(PJRT_LoadedExecutable_GetExecutable_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_LoadedExecutable_GetExecutable_Args);
  TESSERA_PJRT_RETURN_IF_ERROR(
      CheckLoaded(args->loaded_executable, "PJRT_LoadedExecutable_GetExecutable_Args"));
  args->executable = new PJRT_Executable{args->loaded_executable->program};
  return nullptr;
}

PJRT_Error* LoadedExecutableAddressableDevices(
    PJRT_LoadedExecutable_AddressableDevices_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_LoadedExecutable_AddressableDevices_Args);
  TESSERA_PJRT_RETURN_IF_ERROR(
      CheckLoaded(args->executable, "PJRT_LoadedExecutable_AddressableDevices_Args"));
  const std::vector<PJRT_Device*>& devices = args->executable->program->devices;
  args->addressable_devices = devices.data();
  args->num_addressable_devices = devices.size();
  return nullptr;
}

PJRT_Error* LoadedExecutableDelete(PJRT_LoadedExecutable_Delete_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_LoadedExecutable_Delete_Args);
  TESSERA_PJRT_RETURN_IF_ERROR(CheckLoaded(args->executable, "PJRT_LoadedExecutable_Delete_Args"));
  static_cast<void>(args->executable->program->executable->Delete());
  return nullptr;
}

PJRT_Error* LoadedExecutableIsDeleted(PJRT_LoadedExecutable_IsDeleted_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_LoadedExecutable_IsDeleted_Args);
  TESSERA_PJRT_RETURN_IF_ERROR(
      CheckLoaded(args->executable, "PJRT_LoadedExecutable_IsDeleted_Args"));
  args->is_deleted = args->executable->program->executable->IsDeleted();
  return nullptr;
}

PJRT_Error* LoadedExecutableGetDeviceAssignment(
    PJRT_LoadedExecutable_GetDeviceAssignment_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_LoadedExecutable_GetDeviceAssignment_Args);
  TESSERA_PJRT_RETURN_IF_ERROR(
      CheckLoaded(args->executable, "PJRT_LoadedExecutable_GetDeviceAssignment_Args"));
  std::vector<int64_t> ids;
  for (PJRT_Device* device : args->executable->program->devices) {
    ids.push_back(device->description.id);
  }
  auto* serialized = new PJRT_DeviceAssignmentSerialized{SerializeDeviceAssignment(ids)};
  args->serialized_bytes = serialized->bytes.data();
  args->serialized_bytes_size = serialized->bytes.size();
  args->serialized_device_assignment = serialized;
  args->serialized_device_assignment_deleter = [](PJRT_DeviceAssignmentSerialized* s) { delete s; };
  return nullptr;
}

PJRT_Error* LoadedExecutableFingerprint(PJRT_LoadedExecutable_Fingerprint_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_LoadedExecutable_Fingerprint_Args);
  TESSERA_PJRT_RETURN_IF_ERROR(
      CheckLoaded(args->executable, "PJRT_LoadedExecutable_Fingerprint_Args"));
  const std::string& fingerprint = args->executable->program->fingerprint;
  args->executable_fingerprint = fingerprint.c_str();
  args->executable_fingerprint_size = fingerprint.size();
  return nullptr;
}

}  // namespace tessera::pjrt
