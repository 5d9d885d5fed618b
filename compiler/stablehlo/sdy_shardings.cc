// The program's Shardy meshes and the `tessera.sharding` texts of its Shardy shardings.

#include "compiler/stablehlo/sdy_shardings.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "compiler/internal.h"
#include "compiler/stablehlo/import_state.h"
#include "mlir/IR/BuiltinAttributes.h"

namespace tessera::compiler::stablehlo {

absl::StatusOr<Meshes> ReadMeshes(mlir::ModuleOp module) {
  Meshes meshes;
  for (mlir::Operation& op : module.getBody()->getOperations()) {
    if (op.getName().getStringRef() != "sdy.mesh") continue;
    auto name = mlir::dyn_cast_or_null<mlir::StringAttr>(ImportState::GetAttr(&op, "sym_name"));
    TESSERA_ASSIGN_OR_RETURN(std::string text, ImportState::OpaqueAttrText(&op, "mesh"));
    if (!name) {
      return absl::InvalidArgumentError(
          absl::StrCat(ImportState::Where(&op), ": expected a sym_name"));
    }
    absl::StatusOr<SdyMesh> mesh = ParseSdyMesh(text);
    if (!mesh.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(ImportState::Where(&op), ": ", mesh.status().message()));
    }
    meshes[name.getValue().str()] = *std::move(mesh);
  }
  return meshes;
}

absl::StatusOr<const SdyMesh*> MeshOf(const SdySharding& sharding, const Meshes& meshes,
                                      const std::string& what) {
  if (sharding.inline_mesh) return &*sharding.inline_mesh;
  auto it = meshes.find(sharding.mesh_name);
  if (it == meshes.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": its sharding names mesh @", sharding.mesh_name,
                     ", which the program does not define (sdy.mesh)"));
  }
  return &it->second;
}

namespace {

// The mesh's device_ids: empty when absent or in order; else a permutation of the mesh's devices.
// INVALID_ARGUMENT (`what` starts the message): ids that are no such permutation.
absl::StatusOr<std::vector<int64_t>> DeviceIds(const SdyMesh& mesh, const std::string& mesh_name,
                                               const std::string& what) {
  if (mesh.device_ids.empty()) return std::vector<int64_t>();
  int64_t devices = 1;
  for (const SdyMesh::Axis& axis : mesh.axes) {
    if (__builtin_mul_overflow(devices, axis.size, &devices)) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": mesh @", mesh_name, " has more devices than 2^63"));
    }
  }
  if (!IsPermutation(mesh.device_ids, devices)) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": mesh @", mesh_name, " lists device_ids [", absl::StrJoin(mesh.device_ids, ", "),
        "], which are no permutation of its ", devices, " devices"));
  }
  for (size_t i = 0; i < mesh.device_ids.size(); ++i) {
    if (mesh.device_ids[i] != static_cast<int64_t>(i)) return mesh.device_ids;
  }
  return std::vector<int64_t>();
}

}  // namespace

absl::StatusOr<std::string> ShardingText(const SdySharding& sharding, const Meshes& meshes,
                                         int64_t rank, const std::string& what,
                                         std::vector<int64_t>* device_order) {
  TESSERA_ASSIGN_OR_RETURN(const SdyMesh* mesh, MeshOf(sharding, meshes, what));
  if (mesh->axes.empty()) return std::string();
  TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> order, DeviceIds(*mesh, sharding.mesh_name, what));
  if (!order.empty() && device_order == nullptr) {
    return absl::UnimplementedError(absl::StrCat(
        what, ": mesh @", sharding.mesh_name, " lists device_ids [", absl::StrJoin(order, ", "),
        "]; a mesh over the devices out of order is supported for @main's arguments only"));
  }
  if (device_order != nullptr) *device_order = std::move(order);
  if (!sharding.unreduced.empty()) {
    return absl::UnimplementedError(
        absl::StrCat(what, ": unreduced axes in a sharding are not supported"));
  }
  if (static_cast<int64_t>(sharding.dims.size()) != rank) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": its sharding has ",
                                                   sharding.dims.size(),
                                                   " dimensions for a value of rank ", rank));
  }
  std::vector<std::string> axes;
  for (const SdyMesh::Axis& axis : mesh->axes) {
    axes.push_back(absl::StrCat(axis.name, "=", axis.size));
  }
  std::vector<std::string> dims;
  for (const std::vector<std::string>& dim : sharding.dims) {
    if (dim.empty()) {
      dims.push_back("None");
    } else if (dim.size() == 1) {
      dims.push_back(dim[0]);
    } else {
      dims.push_back(absl::StrCat("(", absl::StrJoin(dim, ","), ")"));
    }
  }
  return absl::StrCat("mesh{", absl::StrJoin(axes, ","), "} P(", absl::StrJoin(dims, ","), ")");
}

}  // namespace tessera::compiler::stablehlo
