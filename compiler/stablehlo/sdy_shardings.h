#ifndef TESSERA_COMPILER_STABLEHLO_SDY_SHARDINGS_H_
#define TESSERA_COMPILER_STABLEHLO_SDY_SHARDINGS_H_

// compiler/stablehlo/sdy_shardings.h: a program's Shardy meshes (`sdy.mesh`) and the
// `tessera.sharding` text of a Shardy sharding over one of them (internal to compiler/stablehlo/).

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "compiler/stablehlo/attribute_text.h"
#include "mlir/IR/BuiltinOps.h"

namespace tessera::compiler::stablehlo {

// The program's meshes by symbol name.
using Meshes = std::map<std::string, SdyMesh, std::less<>>;

// The `sdy.mesh` ops of `module`'s body. INVALID_ARGUMENT naming the op: no sym_name, or a mesh
// text ParseSdyMesh rejects.
absl::StatusOr<Meshes> ReadMeshes(mlir::ModuleOp module);

// The mesh `sharding` is over: its inline mesh or the one it names. INVALID_ARGUMENT (`what`
// starts the message): a name the program does not define.
absl::StatusOr<const SdyMesh*> MeshOf(const SdySharding& sharding, const Meshes& meshes,
                                      const std::string& what);

// "mesh{dp=2,tp=4} P(dp,None)" for a Shardy sharding of a value of rank `rank`; empty for one over
// a mesh of no axes (the value is then replicated, as without a sharding). UNIMPLEMENTED: a mesh
// whose device_ids are not in order, unreduced axes; INVALID_ARGUMENT: an unknown mesh, a rank
// other than the sharding's.
absl::StatusOr<std::string> ShardingText(const SdySharding& sharding, const Meshes& meshes,
                                         int64_t rank, const std::string& what);

}  // namespace tessera::compiler::stablehlo

#endif  // TESSERA_COMPILER_STABLEHLO_SDY_SHARDINGS_H_
