// Meshes of different axes over the same slots (mesh_alignment.h). An axis spans the slot strides
// from the product of the sizes after it (its step) to that times its size: two meshes align
// where every such boundary of one is a boundary of the other.

#include "sharding/mesh_alignment.h"

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace tessera::sharding {
namespace {

// The strides at which `mesh`'s axes begin and end: 1, the product of the last axis's size, ...,
// the slot count.
std::set<int64_t> Boundaries(const Mesh& mesh) {
  std::set<int64_t> boundaries = {1};
  int64_t stride = 1;
  for (size_t i = mesh.axes().size(); i-- > 0;) {
    stride *= mesh.axes()[i].size;
    boundaries.insert(stride);
  }
  return boundaries;
}

// The axes of `onto` (of size above 1) between strides `low` and `high`, major first; nullopt
// when either is no boundary of `onto`.
std::optional<std::vector<std::string>> AxesBetween(const Mesh& onto, int64_t low, int64_t high) {
  const std::set<int64_t> boundaries = Boundaries(onto);
  if (!boundaries.contains(low) || !boundaries.contains(high)) return std::nullopt;
  std::vector<std::string> axes;
  int64_t stride = 1;
  for (size_t i = onto.axes().size(); i-- > 0;) {
    const Mesh::Axis& axis = onto.axes()[i];
    if (axis.size > 1 && stride >= low && stride * axis.size <= high) {
      axes.insert(axes.begin(), axis.name);
    }
    stride *= axis.size;
  }
  return axes;
}

}  // namespace

absl::StatusOr<Mesh> CommonMesh(const std::vector<Mesh>& meshes) {
  if (meshes.empty()) return absl::InvalidArgumentError("CommonMesh: no meshes");
  std::set<int64_t> boundaries;
  for (const Mesh& mesh : meshes) {
    if (mesh.num_devices() != meshes.front().num_devices()) {
      return absl::InvalidArgumentError(absl::StrCat("meshes ", meshes.front().ToString(), " and ",
                                                     mesh.ToString(),
                                                     " have different numbers of devices"));
    }
    const std::set<int64_t> own = Boundaries(mesh);
    boundaries.insert(own.begin(), own.end());
  }
  // The boundaries must nest (each divides the next) for every axis to be whole axes of one mesh.
  std::vector<Mesh::Axis> axes;
  int64_t previous = 1;
  for (int64_t boundary : boundaries) {
    if (boundary == 1) continue;
    if (boundary % previous != 0) {
      for (const Mesh& a : meshes) {
        for (const Mesh& b : meshes) {
          if (Boundaries(a).contains(previous) && Boundaries(b).contains(boundary)) {
            return absl::InvalidArgumentError(absl::StrCat(
                "meshes ", a.ToString(), " and ", b.ToString(),
                " split the devices along axes that do not line up (one's axes are no runs of "
                "the other's)"));
          }
        }
      }
      return absl::InternalError("CommonMesh: boundaries that nest in no pair of meshes");
    }
    axes.insert(axes.begin(), Mesh::Axis{"", boundary / previous});
    previous = boundary;
  }
  for (const Mesh& mesh : meshes) {
    std::vector<Mesh::Axis> own;
    for (const Mesh::Axis& axis : mesh.axes()) {
      if (axis.size > 1) own.push_back(axis);
    }
    bool same = own.size() == axes.size();
    for (size_t i = 0; same && i < own.size(); ++i) same = own[i].size == axes[i].size;
    if (same) return mesh;
  }
  for (size_t i = 0; i < axes.size(); ++i) axes[i].name = absl::StrCat("g", i);
  if (axes.empty()) axes.push_back(Mesh::Axis{"g0", 1});
  return Mesh::Create(std::move(axes));
}

absl::StatusOr<PartitionSpec> SpecOnto(const PartitionSpec& spec, const Mesh& from,
                                       const Mesh& onto) {
  if (from == onto) return spec;
  if (from.num_devices() != onto.num_devices()) {
    return absl::InvalidArgumentError(absl::StrCat("meshes ", from.ToString(), " and ",
                                                   onto.ToString(),
                                                   " have different numbers of devices"));
  }
  std::vector<PartitionSpec::Dim> dims;
  for (const PartitionSpec::Dim& dim : spec.dims()) {
    PartitionSpec::Dim mapped;
    for (const std::string& name : dim) {
      const std::optional<int> index = from.FindAxis(name);
      if (!index.has_value()) {
        return absl::InvalidArgumentError(absl::StrCat("PartitionSpec ", spec.ToString(),
                                                       " names axis '", name, "', which ",
                                                       from.ToString(), " does not have"));
      }
      int64_t low = 1;
      for (size_t i = *index + 1; i < from.axes().size(); ++i) low *= from.axes()[i].size;
      const std::optional<std::vector<std::string>> axes =
          AxesBetween(onto, low, low * from.axes()[*index].size);
      if (!axes.has_value()) {
        return absl::InvalidArgumentError(absl::StrCat("axis '", name, "' of ", from.ToString(),
                                                       " is no run of whole axes of ",
                                                       onto.ToString()));
      }
      mapped.insert(mapped.end(), axes->begin(), axes->end());
    }
    dims.push_back(std::move(mapped));
  }
  return PartitionSpec::Create(std::move(dims));
}

}  // namespace tessera::sharding
