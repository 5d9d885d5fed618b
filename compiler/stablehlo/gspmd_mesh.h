#ifndef TESSERA_COMPILER_STABLEHLO_GSPMD_MESH_H_
#define TESSERA_COMPILER_STABLEHLO_GSPMD_MESH_H_

// compiler/stablehlo/gspmd_mesh.h: a program's GSPMD shardings (which name devices, not mesh
// axes) as Tessera's mesh and PartitionSpecs.
//
//   {devices=[2,1,4]<=[8] last_tile_dim_replicate}      x: rows in 2, replicated over 4
//   {devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}  w: columns in 4, replicated over 2
//   -> mesh{x=2,y=4}: x P(x,None), w P(None,y)
//
// The mesh is the one with the fewest axes (then the smallest axis sizes first) over which every
// sharding is a PartitionSpec with the devices in mesh order (device id = row-major mesh
// position); its axes are named x, y, z, then a3, a4, .... Abseil only (a fuzz target builds it).

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler/stablehlo/attribute_text.h"

namespace tessera::compiler::stablehlo {

// One text per sharding, "mesh{x=2,y=4} P(x,None)", or "" for a replicated one; `ranks[i]` is the
// rank of the value sharding i belongs to. INVALID_ARGUMENT: a sharding whose tile count is not
// its value's rank, shardings over different device counts; UNIMPLEMENTED: no mesh of at most 4
// axes makes every sharding a PartitionSpec (devices in an order no mesh has).
absl::StatusOr<std::vector<std::string>> GspmdShardingTexts(
    const std::vector<GspmdSharding>& shardings, const std::vector<int64_t>& ranks);

}  // namespace tessera::compiler::stablehlo

#endif  // TESSERA_COMPILER_STABLEHLO_GSPMD_MESH_H_
