// sharding/mesh_alignment.h: meshes of different axes over the same slots.
//
// Two meshes of n slots each number their slots row-major (mesh.h). An axis of one mesh *aligns*
// with another mesh when the slots it steps over are those of a run of whole axes of the other:
// mesh{a=4,b=2}'s `a` is (x,y) of mesh{x=2,y=2,z=2}, its `b` is z. Then a PartitionSpec over the
// one translates to an equal one over the other: the same tile on every slot.
//
//   Mesh xy = *Mesh::Parse("mesh{x=2,y=4}"), z = *Mesh::Parse("mesh{z=8}");
//   Mesh common = *CommonMesh({xy, z});                    // mesh{x=2,y=4}: z is (x,y)
//   PartitionSpec p = *SpecOnto(*PartitionSpec::Parse("P(z)"), z, common);  // P((x,y))
#ifndef TESSERA_SHARDING_MESH_ALIGNMENT_H_
#define TESSERA_SHARDING_MESH_ALIGNMENT_H_

#include <vector>

#include "absl/status/statusor.h"
#include "sharding/mesh.h"
#include "sharding/partition_spec.h"

namespace tessera::sharding {

// The coarsest mesh every axis of every one of `meshes` aligns with: the first of them whose axes
// of size above 1 are exactly the common ones, else a mesh of those sizes with axes named g0, g1,
// ... (major first). INVALID_ARGUMENT naming two of them: no meshes, meshes of different slot
// counts, or axes that cut the slots where no axis of another mesh can (mesh{x=2,y=3} and
// mesh{a=3,b=2}).
absl::StatusOr<Mesh> CommonMesh(const std::vector<Mesh>& meshes);

// `spec` over `from` as a spec over `onto`: each of `from`'s axes named replaced by the axes of
// `onto` it spans (none for an axis of size 1). INVALID_ARGUMENT: meshes of different slot counts,
// an axis of `from` that does not align with `onto`, a name `from` does not have.
absl::StatusOr<PartitionSpec> SpecOnto(const PartitionSpec& spec, const Mesh& from,
                                       const Mesh& onto);

}  // namespace tessera::sharding

#endif  // TESSERA_SHARDING_MESH_ALIGNMENT_H_
