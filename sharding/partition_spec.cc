#include "sharding/partition_spec.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sharding/message_text.h"
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
            absl::StrCat("Invalid axis name ", QuoteExcerpt(name), " in PartitionSpec"));
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
  // IFRT numbers slots column-major over axis_sizes, JAX row-major over the
  // mesh axes: IFRT axis i is mesh axis m-1-i.
  ShardingParam::MinorToMajor m2m;
  for (int i = 0; i < m; ++i) {
    m2m.axis_sizes.push_back(static_cast<int>(mesh.axes()[m - 1 - i].size));
  }
  for (auto it = major_to_minor.rbegin(); it != major_to_minor.rend(); ++it) {
    m2m.permutation.push_back(m - 1 - *it);
  }
  return ShardingParam::Create(std::move(dim_shards), std::move(m2m));
}

}  // namespace tessera::sharding
