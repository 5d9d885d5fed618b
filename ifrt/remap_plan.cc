#include "ifrt/remap_plan.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tessera {
namespace {

absl::Status Error(const std::string& message) {
  return absl::InvalidArgumentError(absl::StrCat("RemapPlan: ", message));
}

}  // namespace

std::string RemapPlan::Interval::DebugString() const {
  return absl::StrCat("[", start, ":", end, ":", step, "]");
}

absl::Status RemapPlan::Validate() const {
  if (input_specs.empty()) return Error("no input specs");
  if (output_specs.empty()) return Error("no output specs");
  std::vector<int> in_shards, out_shards;
  for (size_t i = 0; i < input_specs.size(); ++i) {
    if (input_specs[i].sharding == nullptr)
      return Error(absl::StrCat("input spec ", i, " has no sharding"));
    in_shards.push_back(input_specs[i].sharding->devices()->size());
  }
  std::vector<std::vector<int>> written(output_specs.size());
  for (size_t o = 0; o < output_specs.size(); ++o) {
    if (output_specs[o].sharding == nullptr) {
      return Error(absl::StrCat("output spec ", o, " has no sharding"));
    }
    out_shards.push_back(output_specs[o].sharding->devices()->size());
    written[o].assign(out_shards.back(), 0);
  }
  for (size_t k = 0; k < mappings.size(); ++k) {
    const Mapping& m = mappings[k];
    if (m.in_array < 0 || m.in_array >= static_cast<int>(input_specs.size())) {
      return Error(absl::StrCat("mapping ", k, " names input array ", m.in_array, " of ",
                                input_specs.size()));
    }
    if (m.out_array < 0 || m.out_array >= static_cast<int>(output_specs.size())) {
      return Error(absl::StrCat("mapping ", k, " names output array ", m.out_array, " of ",
                                output_specs.size()));
    }
    const ArraySpec& in = input_specs[m.in_array];
    const ArraySpec& out = output_specs[m.out_array];
    if (in.dtype != out.dtype) {
      return Error(absl::StrCat("mapping ", k, " connects input ", m.in_array, " of dtype ",
                                in.dtype.DebugString(), " to output ", m.out_array, " of dtype ",
                                out.dtype.DebugString()));
    }
    if (m.from.size() != m.to.size()) {
      return Error(absl::StrCat("mapping ", k, " has ", m.from.size(), " 'from' intervals but ",
                                m.to.size(), " 'to' intervals"));
    }
    absl::StatusOr<sharding::ShardLayout> in_layout = in.sharding->Layout(in.shape);
    if (!in_layout.ok()) return in_layout.status();
    absl::StatusOr<sharding::ShardLayout> out_layout = out.sharding->Layout(out.shape);
    if (!out_layout.ok()) return out_layout.status();
    for (size_t j = 0; j < m.from.size(); ++j) {
      const Interval& f = m.from[j];
      const Interval& t = m.to[j];
      for (const auto& [iv, limit, side] : {std::tuple(f, in_shards[m.in_array], "from"),
                                            std::tuple(t, out_shards[m.out_array], "to")}) {
        if (iv.start < 0 || iv.step <= 0 || iv.end > limit || iv.start > iv.end) {
          return Error(absl::StrCat("mapping ", k, " has an invalid '", side, "' interval ",
                                    iv.DebugString(), " for an array of ", limit, " shards"));
        }
      }
      if (f.size() != t.size()) {
        return Error(absl::StrCat("mapping ", k, " maps ", f.size(), " shards ", f.DebugString(),
                                  " onto ", t.size(), " shards ", t.DebugString()));
      }
      for (int e = 0; e < f.size(); ++e) {
        const int from = f.start + e * f.step;
        const int to = t.start + e * t.step;
        if (++written[m.out_array][to] > 1) {
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
        if (in_layout->shard_shape(from) != out_layout->shard_shape(to)) {
          return Error(absl::StrCat("shard ", from, " of input ", m.in_array, " has shape [",
                                    absl::StrJoin(in_layout->shard_shape(from), ","),
                                    "] but shard ", to, " of output ", m.out_array, " has shape [",
                                    absl::StrJoin(out_layout->shard_shape(to), ","), "]"));
        }
      }
    }
  }
  for (size_t o = 0; o < written.size(); ++o) {
    for (size_t s = 0; s < written[o].size(); ++s) {
      if (written[o][s] == 0) {
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
