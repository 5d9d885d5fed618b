#include "sharding/partition_spec.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/message_text.h"
#include "sharding/parse_util.h"

namespace tessera::sharding {
namespace {

// An axis name, optionally quoted with ' or ".
bool ConsumeAxisName(internal::TextCursor& cursor, std::string* out) {
  for (std::string_view quote : {"'", "\""}) {
    if (cursor.Consume(quote)) {
      std::string_view name;
      if (!cursor.ConsumeIdentifier(&name) || !cursor.Consume(quote)) {
        return false;
      }
      *out = std::string(name);
      return true;
    }
  }
  std::string_view name;
  if (!cursor.ConsumeIdentifier(&name)) return false;
  *out = std::string(name);
  return true;
}

}  // namespace

absl::StatusOr<PartitionSpec> PartitionSpec::Create(std::vector<Dim> dims) {
  for (const Dim& dim : dims) {
    for (const std::string& name : dim) {
      if (!IsValidAxisName(name)) {
        return absl::InvalidArgumentError(
            absl::StrCat("Invalid axis name ", base::QuoteExcerpt(name), " in PartitionSpec"));
      }
    }
  }
  return PartitionSpec(std::move(dims));
}

absl::StatusOr<PartitionSpec> PartitionSpec::Parse(std::string_view text) {
  internal::TextCursor cursor("PartitionSpec", text);
  if (!cursor.Consume("P")) return cursor.Error("'P'");
  if (!cursor.Consume("(")) return cursor.Error("'('");
  std::vector<Dim> dims;
  if (!cursor.Consume(")")) {
    do {
      Dim dim;
      if (cursor.Consume("(")) {
        if (!cursor.Consume(")")) {
          do {
            std::string name;
            if (!ConsumeAxisName(cursor, &name) || name == "None") {
              return cursor.Error("an axis name");
            }
            dim.push_back(std::move(name));
          } while (cursor.Consume(","));
          if (!cursor.Consume(")")) return cursor.Error("')'");
        }
      } else {
        std::string name;
        if (!ConsumeAxisName(cursor, &name)) {
          return cursor.Error("None, an axis name or a tuple of names");
        }
        if (name != "None") dim.push_back(std::move(name));
      }
      dims.push_back(std::move(dim));
    } while (cursor.Consume(","));
    if (!cursor.Consume(")")) return cursor.Error("')'");
  }
  if (!cursor.AtEnd()) return cursor.Error("end of input");
  return Create(std::move(dims));
}

std::string PartitionSpec::ToString() const {
  std::string out = "P(";
  for (size_t d = 0; d < dims_.size(); ++d) {
    if (d > 0) out += ",";
    const Dim& dim = dims_[d];
    if (dim.empty()) {
      out += "None";
    } else if (dim.size() == 1) {
      out += dim[0];
    } else {
      absl::StrAppend(&out, "(", absl::StrJoin(dim, ","), ")");
    }
  }
  out += ")";
  return out;
}

absl::StatusOr<ShardingParam> ToShardingParam(const Mesh& mesh, const PartitionSpec& spec,
                                              int rank) {
  if (rank < 0) {
    return absl::InvalidArgumentError(absl::StrCat("Negative rank ", rank));
  }
  if (spec.size() > rank) {
    return absl::InvalidArgumentError(
        absl::StrCat("PartitionSpec ", spec.ToString(), " is longer than rank ", rank));
  }
  const int m = mesh.num_axes();
  std::vector<bool> used(m, false);
  std::vector<int> major_to_minor;  // mesh axes
  std::vector<int64_t> dim_shards(rank, 1);
  for (int d = 0; d < spec.size(); ++d) {
    for (const std::string& name : spec.dims()[d]) {
      std::optional<int> axis = mesh.FindAxis(name);
      if (!axis.has_value()) {
        return absl::InvalidArgumentError(absl::StrCat("PartitionSpec ", spec.ToString(),
                                                       " names unknown axis \"", name, "\" of ",
                                                       mesh.ToString()));
      }
      if (used[*axis]) {
        return absl::InvalidArgumentError(
            absl::StrCat("PartitionSpec ", spec.ToString(), " uses repeated axis \"", name, "\""));
      }
      used[*axis] = true;
      major_to_minor.push_back(*axis);
      dim_shards[d] *= mesh.axes()[*axis].size;
    }
  }
  for (int a = 0; a < m; ++a) {
    if (!used[a]) major_to_minor.push_back(a);  // replication axes, minor
  }
  // IFRT numbers slots column-major over axis_sizes, JAX row-major over the mesh axes: IFRT axis i
  // is mesh axis m-1-i.
  ShardingParam::MinorToMajor m2m;
  for (int i = 0; i < m; ++i) {
    m2m.axis_sizes.push_back(static_cast<int>(mesh.axes()[m - 1 - i].size));
  }
  for (auto it = major_to_minor.rbegin(); it != major_to_minor.rend(); ++it) {
    m2m.permutation.push_back(m - 1 - *it);
  }
  return ShardingParam::Create(std::move(dim_shards), std::move(m2m));
}

namespace {

// A run of device slots one group of a ShardingParam (the tiles of one dimension, or the
// replicas) steps over: `size` steps of `stride` slots, inside one axis of the param's mesh.
struct SlotRun {
  int64_t stride = 1;
  int64_t size = 1;
  int group = 0;  // the dimension, or rank for the replicas
};

// The runs of `param` (verified), in the order the logical device order walks them, major first:
// for each dimension, then the replicas, the pieces of the param's axes (taken major to minor,
// the last of the permutation first) whose sizes multiply to the group's. UNIMPLEMENTED when a
// group's size does not fall on whole pieces of the axes.
absl::StatusOr<std::vector<SlotRun>> SlotRuns(const ShardingParam& param) {
  const std::vector<int>& sizes = param.minor_to_major().axis_sizes;
  const std::vector<int>& permutation = param.minor_to_major().permutation;
  struct Axis {
    int64_t stride;     // of the axis's slots: column-major over axis_sizes
    int64_t remaining;  // size left to take, from its major end
  };
  std::vector<Axis> axes;  // major to minor
  for (auto it = permutation.rbegin(); it != permutation.rend(); ++it) {
    int64_t stride = 1;
    for (int a = 0; a < *it; ++a) stride *= sizes[a];
    if (sizes[*it] > 1) axes.push_back({stride, sizes[*it]});
  }
  std::vector<int64_t> groups = param.dim_shards();
  groups.push_back(param.replication());
  std::vector<SlotRun> runs;
  size_t next = 0;
  for (size_t g = 0; g < groups.size(); ++g) {
    for (int64_t need = groups[g]; need > 1;) {
      Axis& axis = axes[next];  // Verify(): the groups multiply to the axes' product
      const int64_t take = std::min(need, axis.remaining);
      if (need % take != 0 || axis.remaining % take != 0) {
        return absl::UnimplementedError(absl::StrCat(
            "ShardingParam ", param.ToString(), " is no mesh + PartitionSpec: the ", groups[g],
            g + 1 < groups.size() ? absl::StrCat(" tiles of dimension ", g) : " replicas",
            " do not fall on whole axes of a mesh over its device order"));
      }
      axis.remaining /= take;
      need /= take;
      runs.push_back({axis.stride * axis.remaining, take, static_cast<int>(g)});
      if (axis.remaining == 1) ++next;
    }
  }
  return runs;
}

// The slot strides that start a mesh axis (`mesh` row-major: the last axis has stride 1), and
// the number of slots.
std::vector<int64_t> MeshBoundaries(const Mesh& mesh) {
  std::vector<int64_t> out = {1};
  for (int a = mesh.num_axes() - 1; a >= 0; --a) out.push_back(out.back() * mesh.axes()[a].size);
  return out;
}

absl::Status CheckParams(absl::Span<const ShardingParam> params) {
  if (params.empty()) return absl::InvalidArgumentError("no ShardingParam given");
  for (const ShardingParam& p : params) {
    if (absl::Status s = p.Verify(); !s.ok()) return s;
    if (p.NumDevices() != params[0].NumDevices()) {
      return absl::InvalidArgumentError(absl::StrCat("ShardingParams ", params[0].ToString(),
                                                     " and ", p.ToString(),
                                                     " span different numbers of devices"));
    }
  }
  return absl::OkStatus();
}

std::string AxisName(int axis, int num_axes) {
  return num_axes == 1 ? std::string("x") : absl::StrCat("x", axis);
}

}  // namespace

absl::StatusOr<Mesh> MeshOfShardingParams(absl::Span<const ShardingParam> params) {
  if (absl::Status s = CheckParams(params); !s.ok()) return s;
  const int64_t slots = params[0].NumDevices();
  std::vector<int64_t> bounds = {1, slots};
  std::vector<std::string> texts;
  for (const ShardingParam& p : params) {
    absl::StatusOr<std::vector<SlotRun>> runs = SlotRuns(p);
    if (!runs.ok()) return runs.status();
    for (const SlotRun& r : *runs) {
      bounds.push_back(r.stride);
      bounds.push_back(r.stride * r.size);
    }
    texts.push_back(p.ToString());
  }
  std::sort(bounds.begin(), bounds.end());
  bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
  for (size_t i = 1; i < bounds.size(); ++i) {
    if (bounds[i] % bounds[i - 1] != 0) {
      return absl::UnimplementedError(absl::StrCat(
          "ShardingParams ", absl::StrJoin(texts, ", "), " need different meshes: one steps over ",
          bounds[i - 1], " device slots at a time, another over ", bounds[i],
          ", and no mesh has axes of both"));
    }
  }
  std::vector<Mesh::Axis> axes;  // major first
  const int num_axes = std::max<int>(1, static_cast<int>(bounds.size()) - 1);
  for (size_t i = bounds.size() - 1; i >= 1; --i) {
    axes.push_back({AxisName(static_cast<int>(axes.size()), num_axes), bounds[i] / bounds[i - 1]});
  }
  if (axes.empty()) axes.push_back({"x", 1});
  return Mesh::Create(std::move(axes));
}

absl::StatusOr<PartitionSpec> ToPartitionSpec(const ShardingParam& param, const Mesh& mesh) {
  if (absl::Status s = param.Verify(); !s.ok()) return s;
  if (param.NumDevices() != mesh.num_devices()) {
    return absl::InvalidArgumentError(absl::StrCat("ShardingParam ", param.ToString(), " spans ",
                                                   param.NumDevices(), " devices, ",
                                                   mesh.ToString(), " ", mesh.num_devices()));
  }
  absl::StatusOr<std::vector<SlotRun>> runs = SlotRuns(param);
  if (!runs.ok()) return runs.status();
  const std::vector<int64_t> bounds = MeshBoundaries(mesh);  // bounds[k]: stride of axis m-1-k
  const int m = mesh.num_axes();
  std::vector<PartitionSpec::Dim> dims(param.dim_shards().size());
  for (const SlotRun& r : *runs) {
    auto lo = std::find(bounds.begin(), bounds.end(), r.stride);
    auto hi = std::find(bounds.begin(), bounds.end(), r.stride * r.size);
    if (lo == bounds.end() || hi == bounds.end()) {
      const std::string what = r.group < static_cast<int>(dims.size())
                                   ? absl::StrCat("tiles of dimension ", r.group)
                                   : std::string("replicas");
      return absl::UnimplementedError(absl::StrCat(
          "ShardingParam ", param.ToString(), " is no PartitionSpec over ", mesh.ToString(),
          ": its ", what, " step over the device slots ", r.stride, " at a time, ", r.size,
          " times, which is no run of whole axes of the mesh"));
    }
    if (r.group == static_cast<int>(dims.size())) continue;  // the replicas: axes left unnamed
    // Mesh axes from the run's major end: bounds index k is the stride of mesh axis m-1-k.
    for (auto k = hi - bounds.begin() - 1; k >= lo - bounds.begin(); --k) {
      if (mesh.axes()[m - 1 - k].size > 1) dims[r.group].push_back(mesh.axes()[m - 1 - k].name);
    }
  }
  absl::StatusOr<PartitionSpec> spec = PartitionSpec::Create(std::move(dims));
  if (!spec.ok()) return spec.status();
  // The mapping's own check: both put every slot's tile in the same place.
  absl::StatusOr<ShardingParam> back =
      ToShardingParam(mesh, *spec, static_cast<int>(param.dim_shards().size()));
  if (!back.ok() || back->DeviceTileIndices() != param.DeviceTileIndices()) {
    return absl::UnimplementedError(absl::StrCat("ShardingParam ", param.ToString(),
                                                 " is no PartitionSpec over ", mesh.ToString()));
  }
  return spec;
}

}  // namespace tessera::sharding
