#ifndef TESSERA_BINDINGS_PJRT_OPTIMIZED_PROGRAM_H_
#define TESSERA_BINDINGS_PJRT_OPTIMIZED_PROGRAM_H_

// What PJRT_Executable_OptimizedProgram hands a framework: the compiled program's interface as an
// HLO module (format "hlo_with_config": a serialized xla.HloModuleProtoWithConfig), with the
// shardings Tessera compiled for.
//
// JAX reads the shardings a compiler chose from this module's spmd_parameters_shardings and
// spmd_output_sharding: those of a `jit` without in_shardings or out_shardings, and those of a
// shard_map's results. Without them such a `jit` fails. Tessera compiles to its own kernels, so
// the module describes the interface only, as one device sees it after partitioning:
//
//   ENTRY main (Arg_0: f32[8,32]) -> f32[8,16]      parameters and result of the shard shapes,
//     Arg_0 = parameter(0), sharding={devices=[8,1]0,1,2,3,4,5,6,7}
//     partition-id -> convert -> broadcast         (a result of the right shape, not the values)
//
// Device numbers in shardings are partition ids: positions in `devices`.
//
// The messages are written field by field (proto_writer.h), their numbers from XLA's hlo.proto
// and xla_data.proto:
//   HloModuleProtoWithConfig  1 hlo_module  2 config
//   HloModuleProto            1 name  2 entry_computation_name  3 computations
//                             4 host_program_shape  5 id  6 entry_computation_id
//                             12 spmd_output_sharding  14 spmd_parameters_shardings
//   HloComputationProto       1 name  2 instructions  4 program_shape  5 id  6 root_id
//   HloInstructionProto       1 name  2 opcode  3 shape  9 parameter_number  14 dimensions
//                             35 id  36 operand_ids  40 sharding
//   ShapeProto                2 element_type  3 dimensions  4 tuple_shapes  5 layout
//   LayoutProto               1 minor_to_major  16 tail_padding_alignment_in_elements
//   ProgramShapeProto         1 parameters  2 result  3 parameter_names
//   OpSharding                1 type  3 tile_assignment_dimensions  4 tile_assignment_devices
//                             5 tuple_shardings  6 replicate_on_last_tile_dim
//   HloModuleConfigProto      1 entry_computation_layout  4 replica_count  5 num_partitions
//                             7 use_spmd_partitioning

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tessera.h"

namespace tessera::pjrt {

// The serialized HloModuleProtoWithConfig described above.
absl::StatusOr<std::string> OptimizedProgram(const std::string& name,
                                             const std::vector<tessera::ArraySpec>& parameters,
                                             const std::vector<tessera::ArraySpec>& outputs,
                                             const std::vector<const tessera::Device*>& devices);

}  // namespace tessera::pjrt

#endif  // TESSERA_BINDINGS_PJRT_OPTIMIZED_PROGRAM_H_
