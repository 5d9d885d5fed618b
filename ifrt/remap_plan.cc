#include "ifrt/remap_plan.h"

#include <string>
#include <tuple>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "ifrt/device.h"

namespace tessera {
namespace {

absl::Status Error(const std::string& message) {
  return absl::InvalidArgumentError(absl::StrCat("RemapPlan: ", message));
}

// Checks that every spec has a sharding; returns each array's number of shards.
absl::StatusOr<std::vector<int>> ShardCounts(const std::vector<ArraySpec>& specs,
                                             const char* side) {
  std::vector<int> shards;
  shards.reserve(specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    if (specs[i].sharding == nullptr) {
      return Error(absl::StrCat(side, " spec ", i, " has no sharding"));
    }
    shards.push_back(specs[i].sharding->devices()->size());
  }
  return shards;
}

// Checks what mapping `k` connects: array indices in range, equal dtypes, paired intervals.
absl::Status CheckMappingArrays(const RemapPlan& plan, size_t k) {
  const RemapPlan::Mapping& m = plan.mappings[k];
  if (m.in_array < 0 || m.in_array >= static_cast<int>(plan.input_specs.size())) {
    return Error(absl::StrCat("mapping ", k, " names input array ", m.in_array, " of ",
                              plan.input_specs.size()));
  }
  if (m.out_array < 0 || m.out_array >= static_cast<int>(plan.output_specs.size())) {
    return Error(absl::StrCat("mapping ", k, " names output array ", m.out_array, " of ",
                              plan.output_specs.size()));
  }
  const ArraySpec& in = plan.input_specs[m.in_array];
  const ArraySpec& out = plan.output_specs[m.out_array];
  if (in.dtype != out.dtype) {
    return Error(absl::StrCat("mapping ", k, " connects input ", m.in_array, " of dtype ",
                              in.dtype.DebugString(), " to output ", m.out_array, " of dtype ",
                              out.dtype.DebugString()));
  }
  if (m.from.size() != m.to.size()) {
    return Error(absl::StrCat("mapping ", k, " has ", m.from.size(), " 'from' intervals but ",
                              m.to.size(), " 'to' intervals"));
  }
  return absl::OkStatus();
}

// Checks that the interval pair (f, t) of mapping `k` fits arrays of `in_shards` and `out_shards`
// shards and has as many elements on each side.
absl::Status CheckIntervals(size_t k, const RemapPlan::Interval& f, const RemapPlan::Interval& t,
                            int in_shards, int out_shards) {
  for (const auto& [iv, limit, side] :
       {std::tuple(f, in_shards, "from"), std::tuple(t, out_shards, "to")}) {
    if (iv.start < 0 || iv.step <= 0 || iv.end > limit || iv.start > iv.end) {
      return Error(absl::StrCat("mapping ", k, " has an invalid '", side, "' interval ",
                                iv.DebugString(), " for an array of ", limit, " shards"));
    }
  }
  if (f.size() != t.size()) {
    return Error(absl::StrCat("mapping ", k, " maps ", f.size(), " shards ", f.DebugString(),
                              " onto ", t.size(), " shards ", t.DebugString()));
  }
  return absl::OkStatus();
}

// How often each shard is moved so far: per input array its reads, per output array its writes.
struct ShardUses {
  std::vector<std::vector<int>> read;
  std::vector<std::vector<int>> written;
};

// Checks that shard `from` of input `m.in_array` may become shard `to` of output `m.out_array`
// (same device, same shape, neither moved before) and counts the move in `uses`.
absl::Status CheckShardMove(const RemapPlan::Mapping& m, const ArraySpec& in,
                            const sharding::ShardLayout& in_layout, int from, const ArraySpec& out,
                            const sharding::ShardLayout& out_layout, int to, ShardUses& uses) {
  if (++uses.read[m.in_array][from] > 1) {
    // IFRT moves each input shard at most once: a shard cannot be aliased by two outputs.
    return Error(absl::StrCat("shard ", from, " of input ", m.in_array, " is used more than once"));
  }
  if (++uses.written[m.out_array][to] > 1) {
    return Error(
        absl::StrCat("shard ", to, " of output ", m.out_array, " is written more than once"));
  }
  Device* from_device = in.sharding->devices()->devices()[from];
  Device* to_device = out.sharding->devices()->devices()[to];
  if (from_device != to_device) {
    return Error(absl::StrCat("shard ", from, " of input ", m.in_array, " is on ",
                              from_device->ToString(), " but shard ", to, " of output ",
                              m.out_array, " is on ", to_device->ToString()));
  }
  if (in_layout.shard_shape(from) != out_layout.shard_shape(to)) {
    return Error(absl::StrCat("shard ", from, " of input ", m.in_array, " has shape [",
                              absl::StrJoin(in_layout.shard_shape(from), ","), "] but shard ", to,
                              " of output ", m.out_array, " has shape [",
                              absl::StrJoin(out_layout.shard_shape(to), ","), "]"));
  }
  return absl::OkStatus();
}

// Checks mapping `k` whole, counting its moves in `uses`.
absl::Status CheckMapping(const RemapPlan& plan, size_t k, const std::vector<int>& in_shards,
                          const std::vector<int>& out_shards, ShardUses& uses) {
  TESSERA_RETURN_IF_ERROR(CheckMappingArrays(plan, k));
  const RemapPlan::Mapping& m = plan.mappings[k];
  const ArraySpec& in = plan.input_specs[m.in_array];
  const ArraySpec& out = plan.output_specs[m.out_array];
  TESSERA_ASSIGN_OR_RETURN(sharding::ShardLayout in_layout, in.sharding->Layout(in.shape));
  TESSERA_ASSIGN_OR_RETURN(sharding::ShardLayout out_layout, out.sharding->Layout(out.shape));
  for (size_t j = 0; j < m.from.size(); ++j) {
    const RemapPlan::Interval& f = m.from[j];
    const RemapPlan::Interval& t = m.to[j];
    TESSERA_RETURN_IF_ERROR(
        CheckIntervals(k, f, t, in_shards[m.in_array], out_shards[m.out_array]));
    for (int e = 0; e < f.size(); ++e) {
      TESSERA_RETURN_IF_ERROR(CheckShardMove(m, in, in_layout, f.start + e * f.step, out,
                                             out_layout, t.start + e * t.step, uses));
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::string RemapPlan::Interval::DebugString() const {
  return absl::StrCat("[", start, ":", end, ":", step, "]");
}

absl::Status RemapPlan::Validate() const {
  if (input_specs.empty()) return Error("no input specs");
  if (output_specs.empty()) return Error("no output specs");
  TESSERA_ASSIGN_OR_RETURN(std::vector<int> in_shards, ShardCounts(input_specs, "input"));
  TESSERA_ASSIGN_OR_RETURN(std::vector<int> out_shards, ShardCounts(output_specs, "output"));
  ShardUses uses;
  for (int n : in_shards) uses.read.emplace_back(n, 0);
  for (int n : out_shards) uses.written.emplace_back(n, 0);
  for (size_t k = 0; k < mappings.size(); ++k) {
    TESSERA_RETURN_IF_ERROR(CheckMapping(*this, k, in_shards, out_shards, uses));
  }
  for (size_t o = 0; o < uses.written.size(); ++o) {
    for (size_t s = 0; s < uses.written[o].size(); ++s) {
      if (uses.written[o][s] == 0) {
        return Error(absl::StrCat("shard ", s, " of output ", o, " is not written"));
      }
    }
  }
  return absl::OkStatus();
}

std::string RemapPlan::DebugString() const {
  std::string out = absl::StrCat("RemapPlan(", input_specs.size(), " inputs, ", output_specs.size(),
                                 " outputs, mappings=[");
  for (size_t k = 0; k < mappings.size(); ++k) {
    const Mapping& m = mappings[k];
    absl::StrAppend(&out, k == 0 ? "" : ", ", m.in_array, "->", m.out_array, " from ",
                    absl::StrJoin(m.from, "",
                                  [](std::string* s, const Interval& i) {
                                    absl::StrAppend(s, i.DebugString());
                                  }),
                    " to ", absl::StrJoin(m.to, "", [](std::string* s, const Interval& i) {
                      absl::StrAppend(s, i.DebugString());
                    }));
  }
  return out + "])";
}

}  // namespace tessera
