#ifndef TESSERA_COMPILER_STABLEHLO_SDY_SHARDINGS_H_
#define TESSERA_COMPILER_STABLEHLO_SDY_SHARDINGS_H_

// compiler/stablehlo/sdy_shardings.h: a program's Shardy meshes (`sdy.mesh`) and the
// `tessera.sharding` text of a Shardy sharding over one of them (internal to compiler/stablehlo/).

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

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
// a mesh of no axes (the value is then replicated, as without a sharding). A mesh whose
// device_ids are out of order (JAX's jax.device_put between meshes of the same devices in
// another order) fills `device_order` with them: the mesh's device i is the program's device
// device_order[i]; empty when in order. UNIMPLEMENTED: such a mesh where `device_order` is null,
// unreduced axes; INVALID_ARGUMENT: an unknown mesh, device_ids that are no permutation of the
// mesh's devices, a rank other than the sharding's.
absl::StatusOr<std::string> ShardingText(const SdySharding& sharding, const Meshes& meshes,
                                         int64_t rank, const std::string& what,
                                         std::vector<int64_t>* device_order = nullptr);

}  // namespace tessera::compiler::stablehlo

#endif  // TESSERA_COMPILER_STABLEHLO_SDY_SHARDINGS_H_
