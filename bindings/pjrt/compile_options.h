#ifndef TESSERA_BINDINGS_PJRT_COMPILE_OPTIONS_H_
#define TESSERA_BINDINGS_PJRT_COMPILE_OPTIONS_H_

// What Tessera reads of the serialized xla.CompileOptionsProto that PJRT_Client_Compile gets:
// the replica and partition counts and the device assignment, and the names of the compiler
// options. Everything else (debug options, layouts, XLA flags) has no meaning for Tessera and is
// skipped.
//
// The proto is read straight from its wire format (field numbers below, from XLA's
// xla/pjrt/proto/compile_options.proto and xla/xla_data.proto): Tessera would otherwise need
// XLA's .proto files, which no package ships, and a second protobuf runtime inside JAX's process
// for six integers.
//
//   CompileOptionsProto          3: executable_build_options (ExecutableBuildOptionsProto)
//                                7: env_option_overrides (map<string, OptionOverrideProto>:
//                                   entries of 1: key): jax.jit's compiler_options
//   ExecutableBuildOptionsProto  4: num_replicas   5: num_partitions
//                                9: device_assignment (DeviceAssignmentProto)
//   DeviceAssignmentProto        1: replica_count  2: computation_count
//                                3: computation_devices (repeated ComputationDevice)
//   ComputationDevice            1: replica_device_ids (repeated int64, packed or not)
//
// INVALID_ARGUMENT for bytes that are not such a proto (a truncated or malformed field, a count
// outside [1, 65536], a device assignment whose shape disagrees with its counts), and for a
// compiler option (`jax.jit(f, compiler_options=...)`) that is not one of XLA's debug options
// (`xla_...`), named as XLA names it ("No such compile option: 'name'"). XLA's debug options
// are accepted and ignored: Tessera's compiler has none of them.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace tessera::pjrt {

struct CompileOptions {
  int64_t num_replicas = 1;
  int64_t num_partitions = 1;
  // device_ids[partition][replica]: a device id; empty when the proto has no assignment.
  std::vector<std::vector<int64_t>> device_ids;
};

absl::StatusOr<CompileOptions> ParseCompileOptions(std::string_view bytes);

// A serialized xla.DeviceAssignmentProto of one replica over `device_ids` (partition p on
// device_ids[p]), as PJRT_LoadedExecutable_GetDeviceAssignment hands it out.
std::string SerializeDeviceAssignment(const std::vector<int64_t>& device_ids);

}  // namespace tessera::pjrt

#endif  // TESSERA_BINDINGS_PJRT_COMPILE_OPTIONS_H_
