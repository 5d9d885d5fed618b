// PJRT_LoadedExecutable_Execute: JAX hands one buffer per (device, argument); Tessera runs on
// sharded arrays. Each argument's buffers are assembled into the parameter's sharded array (the
// buffers are shared, not copied), the executable runs, and each output is handed back as its
// shards, one buffer per device. Nothing blocks: the outputs' ready events and the
// device_complete_events resolve when the run ends.

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "bindings/pjrt/entry_points.h"
#include "bindings/pjrt/internal.h"

namespace tessera::pjrt {
namespace {

// Argument `a`'s buffers, in the order of its parameter sharding's devices, assembled.
absl::StatusOr<tessera::ArrayRef> AssembleArgument(const CompiledProgram& program,
                                                   PJRT_Buffer* const* const* argument_lists,
                                                   size_t a) {
  const tessera::ArraySpec& spec = program.parameters[a];
  absl::InlinedVector<tessera::ArrayRef, 8> shards;
  for (tessera::Device* device : spec.sharding->devices()->devices()) {
    auto it = program.partition_of.find(device);
    if (it == program.partition_of.end()) {
      return absl::InternalError(absl::StrCat("argument ", a,
                                              "'s sharding names a device the "
                                              "executable does not run on"));
    }
    size_t d = it->second;
    PJRT_Buffer* buffer = argument_lists[d][a];
    if (buffer == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("argument ", a, " for device ", d, " is NULL"));
    }
    if (buffer->device != program.devices[d]) {
      return absl::InvalidArgumentError(
          absl::StrCat("argument ", a, " for the executable's device ", d, " (",
                       program.devices[d]->description.to_string, ") is on ",
                       buffer->device->description.to_string));
    }
    if (buffer->array->IsDeleted()) {
      return absl::FailedPreconditionError(absl::StrCat("argument ", a, " on ",
                                                        buffer->device->description.to_string,
                                                        " has been deleted or donated"));
    }
    shards.push_back(buffer->array);
  }
  // On one device (one shard per device of the sharding) the buffer is the argument: the
  // executable takes a single-device array where its parameter is on that device alone.
  if (shards.size() == 1) return shards[0];
  absl::StatusOr<tessera::ArrayRef> array =
      program.state->client->AssembleArrayFromSingleDeviceArrays(
          spec.dtype, spec.shape, spec.sharding, absl::MakeSpan(shards),
          tessera::ArrayCopySemantics::kReuseInput);
  if (!array.ok()) {
    return absl::Status(
        array.status().code(),
        absl::StrCat("argument ", a, " (", spec.DebugString(), "): ", array.status().message()));
  }
  return array;
}

// Output `o`'s shards as buffers, into output_lists[d][o]. An output on one device is its own
// shard: handed out as it is.
absl::Status HandOutOutput(const CompiledProgram& program, tessera::ArrayRef output, size_t o,
                           PJRT_Buffer** const* output_lists) {
  // On one device the output is its own shard (no list of one: a call's tiny output is common).
  std::vector<tessera::ArrayRef> shards;
  absl::Span<tessera::ArrayRef> list = absl::MakeSpan(&output, 1);
  if (output->sharding().devices()->size() != 1) {
    absl::StatusOr<std::vector<tessera::ArrayRef>> disassembled =
        output->DisassembleIntoSingleDeviceArrays(tessera::ArrayCopySemantics::kReuseInput);
    if (!disassembled.ok()) return disassembled.status();
    shards = *std::move(disassembled);
    list = absl::MakeSpan(shards);
  }
  for (tessera::ArrayRef& shard : list) {
    auto it = program.partition_of.find(shard->sharding().devices()->devices()[0]);
    if (it == program.partition_of.end())
      return absl::InternalError(absl::StrCat("output ", o, " has a shard off the executable"));
    absl::StatusOr<PJRT_Buffer*> buffer = MakeBuffer(program.state, std::move(shard));
    if (!buffer.ok()) return buffer.status();
    output_lists[it->second][o] = *buffer;
  }
  return absl::OkStatus();
}

absl::Status CheckShape(const PJRT_LoadedExecutable_Execute_Args& args,
                        const CompiledProgram& program) {
  if (args.num_devices != program.devices.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("PJRT_LoadedExecutable_Execute: ", args.num_devices,
                     " argument lists for an executable of ", program.devices.size(), " devices"));
  }
  if (args.num_args != program.parameters.size()) {
    return absl::InvalidArgumentError(absl::StrCat("PJRT_LoadedExecutable_Execute: ", args.num_args,
                                                   " arguments for ", program.executable->name(),
                                                   ", which takes ", program.parameters.size()));
  }
  if (args.num_args > 0 && args.argument_lists == nullptr)
    return absl::InvalidArgumentError("PJRT_LoadedExecutable_Execute: argument_lists is NULL");
  if (!program.outputs.empty() && args.output_lists == nullptr)
    return absl::InvalidArgumentError("PJRT_LoadedExecutable_Execute: output_lists is NULL");
  for (size_t d = 0; d < args.num_devices; ++d) {
    if ((args.num_args > 0 && args.argument_lists[d] == nullptr) ||
        (!program.outputs.empty() && args.output_lists[d] == nullptr)) {
      return absl::InvalidArgumentError(
          absl::StrCat("PJRT_LoadedExecutable_Execute: the lists of device ", d, " are NULL"));
    }
  }
  if (TESSERA_PJRT_HAS_FIELD(&args, PJRT_LoadedExecutable_Execute_Args, execute_device) &&
      args.execute_device != nullptr &&
      (program.devices.size() != 1 || args.execute_device != program.devices[0])) {
    return absl::UnimplementedError(
        "PJRT_LoadedExecutable_Execute: execute_device (a launch on one device of a "
        "multi-device executable, or on a device it was not compiled for)");
  }
  return absl::OkStatus();
}

tessera::ExecuteOptions ReadOptions(const PJRT_ExecuteOptions* options) {
  tessera::ExecuteOptions result;
  if (options == nullptr) return result;
  if (TESSERA_PJRT_HAS_FIELD(options, PJRT_ExecuteOptions, num_non_donatable_input_indices) &&
      options->non_donatable_input_indices != nullptr) {
    for (size_t i = 0; i < options->num_non_donatable_input_indices; ++i) {
      result.non_donatable_input_indices.insert(
          static_cast<int>(options->non_donatable_input_indices[i]));
    }
  }
  return result;
}

absl::Status Execute(PJRT_LoadedExecutable_Execute_Args& args) {
  const CompiledProgram& program = *args.executable->program;
  if (absl::Status s = CheckShape(args, program); !s.ok()) return s;
  absl::InlinedVector<tessera::ArrayRef, 8> arguments;
  for (size_t a = 0; a < args.num_args; ++a) {
    absl::StatusOr<tessera::ArrayRef> argument = AssembleArgument(program, args.argument_lists, a);
    if (!argument.ok()) {
      return absl::Status(argument.status().code(),
                          absl::StrCat("PJRT_LoadedExecutable_Execute of ", program.name, ": ",
                                       argument.status().message()));
    }
    arguments.push_back(std::move(*argument));
  }
  absl::StatusOr<tessera::ExecuteResult> result =
      program.executable->Execute(absl::MakeSpan(arguments), ReadOptions(args.options));
  if (!result.ok()) return result.status();

  // A donated argument's assembled array is deleted: its buffers are JAX's view of it.
  for (size_t a = 0; a < args.num_args; ++a) {
    if (!arguments[a]->IsDeleted()) continue;
    for (size_t d = 0; d < args.num_devices; ++d) {
      static_cast<void>(args.argument_lists[d][a]->array->Delete());
    }
  }
  for (size_t d = 0; d < args.num_devices; ++d) {
    for (size_t o = 0; o < program.outputs.size(); ++o) args.output_lists[d][o] = nullptr;
  }
  absl::Status handed = absl::OkStatus();
  for (size_t o = 0; o < program.outputs.size() && handed.ok(); ++o) {
    handed = HandOutOutput(program, result->outputs[o], o, args.output_lists);
  }
  for (size_t d = 0; d < args.num_devices && handed.ok(); ++d) {
    for (size_t o = 0; o < program.outputs.size(); ++o) {
      if (args.output_lists[d][o] == nullptr) {
        handed = absl::InternalError(absl::StrCat("output ", o, " has no shard on device ", d));
      }
    }
  }
  if (!handed.ok()) {
    for (size_t d = 0; d < args.num_devices; ++d) {
      for (size_t o = 0; o < program.outputs.size(); ++o) {
        delete args.output_lists[d][o];
        args.output_lists[d][o] = nullptr;
      }
    }
    return handed;
  }
  if (args.device_complete_events != nullptr) {
    for (size_t d = 0; d < args.num_devices; ++d) {
      args.device_complete_events[d] = NewEvent(result->status);
    }
  }
  return absl::OkStatus();
}

}  // namespace

PJRT_Error* LoadedExecutableExecute(PJRT_LoadedExecutable_Execute_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_LoadedExecutable_Execute_Args);
  if (args->executable == nullptr || args->executable->program == nullptr) {
    return MakeError(
        absl::InvalidArgumentError("PJRT_LoadedExecutable_Execute: executable is NULL"));
  }
  return MakeError(Execute(*args));
}

}  // namespace tessera::pjrt
