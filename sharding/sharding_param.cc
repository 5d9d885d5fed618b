#include "sharding/sharding_param.h"

#include <cstdint>
#include <limits>
#include <string>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/checked_math.h"
#include "sharding/parse_util.h"

namespace tessera::sharding {
namespace {

constexpr int64_t kMaxDevices = int64_t{1} << 24;

// Parses "AxBxC" (at least one integer).
bool ParseDims(internal::TextCursor& lex, std::vector<int64_t>* out) {
  int64_t v;
  if (!lex.ConsumeInteger(&v, /*allow_negative=*/true)) return false;
  out->push_back(v);
  while (lex.Consume("x")) {
    if (!lex.ConsumeInteger(&v, /*allow_negative=*/true)) return false;
    out->push_back(v);
  }
  return true;
}

// absl::StrJoin for an error message: at most 16 entries, then "..." and the count, so that a
// message stays short whatever the input's length.
template <typename T>
std::string JoinForMessage(const std::vector<T>& values, const char* separator) {
  constexpr size_t kShown = 16;
  if (values.size() <= kShown) return absl::StrJoin(values, separator);
  return absl::StrCat(absl::StrJoin(values.begin(), values.begin() + kShown, separator), separator,
                      "...(", values.size(), " in all)");
}

bool FitsInt(int64_t v) {
  return v >= std::numeric_limits<int>::min() && v <= std::numeric_limits<int>::max();
}

}  // namespace

ShardingParam::ShardingParam(std::vector<int64_t> dim_shards, MinorToMajor minor_to_major)
    : dim_shards_(std::move(dim_shards)), minor_to_major_(std::move(minor_to_major)) {}

absl::StatusOr<ShardingParam> ShardingParam::Create(std::vector<int64_t> dim_shards,
                                                    MinorToMajor minor_to_major) {
  ShardingParam param(std::move(dim_shards), std::move(minor_to_major));
  if (absl::Status s = param.Verify(); !s.ok()) return s;
  return param;
}

absl::StatusOr<ShardingParam> ShardingParam::Parse(std::string_view text) {
  internal::TextCursor lex("ShardingParam", text);
  std::vector<int64_t> dim_shards;
  if (lex.Consume("{")) {
    if (!lex.Consume("}")) return lex.Error("'}'");
  } else if (!ParseDims(lex, &dim_shards)) {
    return lex.Error("dim_shards like 2x1x3 or {}");
  }
  if (!lex.Consume("to")) return lex.Error("'to'");
  if (!lex.Consume("[")) return lex.Error("'['");
  MinorToMajor m2m;
  int64_t v;
  if (!lex.Consume("]")) {
    do {
      if (!lex.ConsumeInteger(&v, /*allow_negative=*/true) || !FitsInt(v))
        return lex.Error("an axis index");
      m2m.permutation.push_back(static_cast<int>(v));
    } while (lex.Consume(","));
    if (!lex.Consume("]")) return lex.Error("']'");
  }
  if (!lex.Consume("on")) return lex.Error("'on'");
  std::vector<int64_t> axis_sizes;
  if (!ParseDims(lex, &axis_sizes)) return lex.Error("axis sizes like 3x2");
  for (int64_t s : axis_sizes) {
    if (!FitsInt(s)) return lex.Error("axis sizes that fit in int");
    m2m.axis_sizes.push_back(static_cast<int>(s));
  }
  if (!lex.AtEnd()) return lex.Error("end of input");
  return Create(std::move(dim_shards), std::move(m2m));
}

std::string ShardingParam::ToString() const {
  std::string dims = dim_shards_.empty() ? "{}" : absl::StrJoin(dim_shards_, "x");
  return absl::StrCat(dims, " to [", absl::StrJoin(minor_to_major_.permutation, ","), "] on ",
                      absl::StrJoin(minor_to_major_.axis_sizes, "x"));
}

absl::Status ShardingParam::Verify() const {
  const auto& perm = minor_to_major_.permutation;
  const auto& axes = minor_to_major_.axis_sizes;
  for (size_t d = 0; d < dim_shards_.size(); ++d) {
    if (dim_shards_[d] < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("dim_shards must be positive; dimension ", d, " has ", dim_shards_[d]));
    }
  }
  if (perm.size() != axes.size() || axes.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("Expect same non-zero size for `permutation` and `axis_sizes`. "
                     "Actual ",
                     perm.size(), " vs ", axes.size()));
  }
  int64_t num_devices = 1;
  for (size_t a = 0; a < axes.size(); ++a) {
    if (axes[a] < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("axis_sizes must be positive; axis ", a, " has ", axes[a]));
    }
    num_devices *= axes[a];
    if (num_devices > kMaxDevices) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Too many devices: axis_sizes ", JoinForMessage(axes, "x"), " exceed ", kMaxDevices));
    }
  }
  absl::flat_hash_set<int> seen(perm.begin(), perm.end());
  if (seen.size() != perm.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("`permutation` [", JoinForMessage(perm, ","), "] has duplicate values"));
  }
  for (int index : perm) {
    if (index < 0 || index >= static_cast<int>(axes.size())) {
      return absl::InvalidArgumentError(absl::StrCat("Out of range axis ", index,
                                                     " to the mesh of [", JoinForMessage(perm, ","),
                                                     "] on ", JoinForMessage(axes, "x")));
    }
  }
  // IFRT's ShardingParam::verify, verbatim in structure.
  size_t dim_index = 0;
  int64_t cum_size = 1;
  for (int index : perm) {
    while (dim_index < dim_shards_.size() && dim_shards_[dim_index] == 1) {
      ++dim_index;
    }
    if (dim_index == dim_shards_.size()) break;
    cum_size *= axes[index];
    while (dim_index < dim_shards_.size() && cum_size % dim_shards_[dim_index] == 0) {
      cum_size /= dim_shards_[dim_index];
      ++dim_index;
    }
  }
  while (dim_index < dim_shards_.size() && dim_shards_[dim_index] == 1) {
    ++dim_index;
  }
  if (dim_index != dim_shards_.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("Can't shard the dims ", JoinForMessage(dim_shards_, "x"), " to the mesh of [",
                     JoinForMessage(perm, ","), "] on ", JoinForMessage(axes, "x")));
  }
  return absl::OkStatus();
}

absl::Status ShardingParam::VerifyForShape(absl::Span<const int64_t> shape) const {
  if (absl::Status s = Verify(); !s.ok()) return s;
  if (shape.size() != dim_shards_.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("Requires dim shards to have the same rank as the array. Array rank "
                     "is ",
                     shape.size(), " vs dim shards rank of ", dim_shards_.size()));
  }
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("Array shape has negative size ", shape[d], " in dimension ", d));
    }
  }
  return absl::OkStatus();
}

absl::Status ShardingParam::VerifyDeviceCount(int64_t num_devices) const {
  if (num_devices != NumDevices()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Requires the same amount of `devices` and from `sharding`. Actual: ", num_devices, " vs ",
        NumDevices()));
  }
  return absl::OkStatus();
}

int ShardingParam::NumDevices() const {
  int64_t n = 1;
  for (int s : minor_to_major_.axis_sizes) n *= s;
  return static_cast<int>(n);
}

int64_t ShardingParam::NumTiles() const { return base::CheckedProduct(dim_shards_).value_or(-1); }

int ShardingParam::replication() const { return static_cast<int>(NumDevices() / NumTiles()); }

std::vector<int> ShardingParam::LogicalDeviceOrder() const {
  const auto& perm = minor_to_major_.permutation;
  const auto& axes = minor_to_major_.axis_sizes;
  // Column-major strides of the axes (axis 0 has stride 1).
  std::vector<int64_t> stride(axes.size());
  int64_t cum = 1;
  for (size_t a = 0; a < axes.size(); ++a) {
    stride[a] = cum;
    cum *= axes[a];
  }
  // Odometer: perm.back() is the outermost (major) digit, perm[0] the minor.
  std::vector<int> out;
  out.reserve(cum);
  std::vector<int> digit(perm.size(), 0);
  for (int64_t p = 0; p < cum; ++p) {
    int64_t device = 0;
    for (size_t k = 0; k < perm.size(); ++k) {
      device += digit[k] * stride[perm[k]];
    }
    out.push_back(static_cast<int>(device));
    for (size_t k = 0; k < perm.size(); ++k) {
      if (++digit[k] < axes[perm[k]]) break;
      digit[k] = 0;
    }
  }
  return out;
}

std::vector<Index> ShardingParam::DeviceTileIndices() const {
  std::vector<int> order = LogicalDeviceOrder();
  const int64_t replicas = replication();
  std::vector<Index> out(order.size());
  for (size_t p = 0; p < order.size(); ++p) {
    int64_t tile = static_cast<int64_t>(p) / replicas;
    Index index(dim_shards_.size());
    for (int d = static_cast<int>(dim_shards_.size()) - 1; d >= 0; --d) {
      index[d] = tile % dim_shards_[d];
      tile /= dim_shards_[d];
    }
    out[order[p]] = std::move(index);
  }
  return out;
}

}  // namespace tessera::sharding
