#ifndef TESSERA_IFRT_COMPILER_H_
#define TESSERA_IFRT_COMPILER_H_

// Compiler: turns a Program into a LoadedExecutable that runs SPMD over a list of devices, as
// IFRT's Compiler and JAX's `jit(f, in_shardings=..., out_shardings=...)` do. A client's compiler
// is Client::GetDefaultCompiler(); it lives as long as the client. Thread-safe.
//
//   CompileOptions options{.devices = devices};   // shardings from the program's attributes
//   absl::StatusOr<LoadedExecutableRef> exe =
//       client->GetDefaultCompiler()->Compile(std::make_unique<MlirProgram>(text), options);
//
// Compiling the same program text with equal options again returns the cached executable's code
// (a cache hit: no partitioning or code generation runs).

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "ifrt/device_list.h"
#include "ifrt/executable.h"
#include "ifrt/program.h"
#include "ifrt/sharding.h"

namespace tessera {

struct CompileOptions {
  // The devices the executable runs on, in the order of the program's grid (row-major). Required.
  DeviceListRef devices;
  // One sharding per argument / result of the program, each over `devices` (NamedSharding or
  // ShardingParamSharding), or both empty: then the program's `tessera.sharding` attributes say
  // (an argument or result without one is replicated).
  std::vector<ShardingRef> input_shardings;
  std::vector<ShardingRef> output_shardings;
  // Arguments the executable may consume (see LoadedExecutable::Execute).
  std::vector<int> donated_input_indices;
};

class Compiler {
 public:
  virtual ~Compiler() = default;
  // INVALID_ARGUMENT: no devices, devices of another client, a parse or verifier error (with
  // line:column), shardings that do not fit (count, rank, devices, uneven division), neither
  // shardings in the options nor attributes in a linalg program, a donated index out of range, a
  // null sharding, program text nested too deeply, a value of the program (an intermediate too)
  // whose shape is not static or whose byte count overflows int64.
  // A StableHloProgram without shardings (in the options or its sdy attributes) is replicated.
  // UNIMPLEMENTED: a program other than MlirProgram and StableHloProgram; an op, dtype or
  // sharding the compiler cannot partition or lower (naming the op, its location and the sharding
  // asked for; a ShardingParamSharding that is no mesh + PartitionSpec on the program's mesh, with
  // the reason: sharding::ToPartitionSpec); a device whose platform has no code generator.
  virtual absl::StatusOr<LoadedExecutableRef> Compile(std::unique_ptr<Program> program,
                                                      CompileOptions options) = 0;
};

}  // namespace tessera

#endif  // TESSERA_IFRT_COMPILER_H_
