// GspmdShardingTexts: GSPMD shardings -> one mesh and a PartitionSpec per value (gspmd_mesh.h).
// Candidate meshes are the ordered factorizations of the device count into at most 4 axes, fewest
// axes first; for each, every sharding must match some assignment of mesh axes to its tiled
// dimensions: the device at each tile position has, in the mesh, the coordinates that position
// names.

#include "compiler/stablehlo/gspmd_mesh.h"

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tessera::compiler::stablehlo {
namespace {

constexpr size_t kMaxAxes = 4;

using Mesh = std::vector<int64_t>;                 // axis sizes, major to minor
using Assignment = std::vector<std::vector<int>>;  // per tensor dimension: mesh axes, major first

// The ordered factorizations of `n` into factors >= 2, at most kMaxAxes of them.
void Factorizations(int64_t n, Mesh& prefix, std::vector<Mesh>& out) {
  if (n == 1) {
    if (!prefix.empty()) out.push_back(prefix);
    return;
  }
  if (prefix.size() == kMaxAxes) return;
  for (int64_t f = 2; f <= n; ++f) {
    if (n % f != 0) continue;
    prefix.push_back(f);
    Factorizations(n / f, prefix, out);
    prefix.pop_back();
  }
}

// Whether `sharding` is `assignment` over `mesh`: each device's tile position, read off its mesh
// coordinates, is where the sharding puts it.
bool Matches(const GspmdSharding& sharding, const Mesh& mesh, const Assignment& assignment) {
  const size_t rank = sharding.tiles.size();
  std::vector<int64_t> position(rank + 1, 0);  // tile index per dimension, then the replica
  for (int64_t device : sharding.devices) {
    // The device's mesh coordinates (row-major).
    std::vector<int64_t> coords(mesh.size());
    int64_t rest = device;
    for (size_t a = mesh.size(); a-- > 0;) {
      coords[a] = rest % mesh[a];
      rest /= mesh[a];
    }
    for (size_t d = 0; d < rank; ++d) {
      int64_t tile = 0;
      for (int axis : assignment[d]) tile = tile * mesh[axis] + coords[axis];
      if (tile != position[d]) return false;
    }
    for (size_t d = rank + 1; d-- > 0;) {  // next position, row-major over tiles and replicas
      const int64_t extent = d < rank ? sharding.tiles[d] : sharding.replicas;
      if (++position[d] < extent) break;
      position[d] = 0;
    }
  }
  return true;
}

// An assignment of `mesh`'s axes under which `sharding` is a PartitionSpec, if any.
bool FindAssignment(const GspmdSharding& sharding, const Mesh& mesh, Assignment& assignment) {
  const size_t rank = sharding.tiles.size();
  assignment.assign(rank, {});
  std::vector<bool> used(mesh.size(), false);
  // Dimension d gets axes (in order) whose sizes multiply to its tile count.
  std::function<bool(size_t, int64_t)> assign = [&](size_t d, int64_t left) -> bool {
    if (d == rank) return Matches(sharding, mesh, assignment);
    if (left == 1) return assign(d + 1, d + 1 < rank ? sharding.tiles[d + 1] : 1);
    for (size_t a = 0; a < mesh.size(); ++a) {
      if (used[a] || left % mesh[a] != 0) continue;
      used[a] = true;
      assignment[d].push_back(static_cast<int>(a));
      if (assign(d, left / mesh[a])) return true;
      assignment[d].pop_back();
      used[a] = false;
    }
    return false;
  };
  return rank == 0 ? false : assign(0, sharding.tiles[0]);
}

std::string AxisName(size_t a) {
  static const char* const kNames[] = {"x", "y", "z"};
  return a < 3 ? kNames[a] : absl::StrCat("a", a);
}

}  // namespace

absl::StatusOr<std::vector<std::string>> GspmdShardingTexts(
    const std::vector<GspmdSharding>& shardings, const std::vector<int64_t>& ranks) {
  int64_t devices = 0;
  for (size_t i = 0; i < shardings.size(); ++i) {
    const GspmdSharding& s = shardings[i];
    if (s.replicated) continue;
    if (static_cast<int64_t>(s.tiles.size()) != ranks[i]) {
      return absl::InvalidArgumentError(absl::StrCat("GSPMD sharding ", i, " tiles ",
                                                     s.tiles.size(),
                                                     " dimensions of a value of rank ", ranks[i]));
    }
    const int64_t count = static_cast<int64_t>(s.devices.size());
    if (devices != 0 && count != devices) {
      return absl::InvalidArgumentError(absl::StrCat("GSPMD shardings over ", devices, " and ",
                                                     count,
                                                     " devices; one device count is supported"));
    }
    devices = count;
  }
  std::vector<std::string> texts(shardings.size());
  if (devices <= 1) return texts;  // every value replicated (or on the one device)
  std::vector<Mesh> meshes;
  Mesh prefix;
  Factorizations(devices, prefix, meshes);
  std::stable_sort(meshes.begin(), meshes.end(),
                   [](const Mesh& a, const Mesh& b) { return a.size() < b.size(); });
  for (const Mesh& mesh : meshes) {
    std::vector<Assignment> assignments(shardings.size());
    bool all = true;
    for (size_t i = 0; all && i < shardings.size(); ++i) {
      if (shardings[i].replicated) continue;
      all = FindAssignment(shardings[i], mesh, assignments[i]);
    }
    if (!all) continue;
    std::vector<std::string> axes;
    for (size_t a = 0; a < mesh.size(); ++a)
      axes.push_back(absl::StrCat(AxisName(a), "=", mesh[a]));
    const std::string mesh_text = absl::StrCat("mesh{", absl::StrJoin(axes, ","), "}");
    for (size_t i = 0; i < shardings.size(); ++i) {
      if (shardings[i].replicated) {
        texts[i] = absl::StrCat(mesh_text, " P()");
        continue;
      }
      std::vector<std::string> dims;
      for (const std::vector<int>& dim : assignments[i]) {
        std::vector<std::string> names;
        for (int a : dim) names.push_back(AxisName(a));
        dims.push_back(names.empty()       ? "None"
                       : names.size() == 1 ? names[0]
                                           : absl::StrCat("(", absl::StrJoin(names, ","), ")"));
      }
      texts[i] = absl::StrCat(mesh_text, " P(", absl::StrJoin(dims, ","), ")");
    }
    return texts;
  }
  return absl::UnimplementedError(absl::StrCat(
      "no mesh of at most ", kMaxAxes, " axes over ", devices,
      " devices in order makes every GSPMD sharding of the program a PartitionSpec (devices in "
      "another order than a mesh's)"));
}

}  // namespace tessera::compiler::stablehlo
