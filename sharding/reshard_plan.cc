#include "sharding/reshard_plan.h"

#include <map>
#include <tuple>

#include "absl/strings/str_cat.h"

namespace tessera::sharding {

std::string_view KindName(BoxCopy::Kind kind) {
  switch (kind) {
    case BoxCopy::Kind::kAlias:
      return "alias";
    case BoxCopy::Kind::kLocal:
      return "local";
    case BoxCopy::Kind::kCrossLocation:
      return "cross-location";
  }
  return "unknown";
}

std::string RenderPlan(const ReshardPlan& plan) {
  return RenderPlan(plan, [](int64_t location) { return absl::StrCat("location ", location); });
}

std::string RenderPlan(const ReshardPlan& plan,
                       absl::FunctionRef<std::string(int64_t location)> location_name) {
  using Key = std::tuple<int64_t, int64_t, bool, int>;
  std::map<Key, std::pair<int64_t, int64_t>> groups;  // -> (count, bytes)
  for (const BoxCopy& c : plan.copies) {
    auto& g =
        groups[Key(c.src_location, c.dst_location, c.from_destination, static_cast<int>(c.kind))];
    ++g.first;
    g.second += c.bytes;
  }
  std::string out = absl::StrCat("ReshardPlan: ", plan.copies.size(),
                                 " copies, fan_out=", plan.fan_out ? "true" : "false", "\n");
  for (const auto& [key, value] : groups) {
    const auto& [src, dst, forward, kind] = key;
    absl::StrAppend(&out, "  ", forward ? "forward " : "", location_name(src), " -> ",
                    location_name(dst), ": ", value.first, " ",
                    std::string(KindName(static_cast<BoxCopy::Kind>(kind))),
                    value.first == 1 ? " copy, " : " copies, ", value.second, " bytes\n");
  }
  absl::StrAppend(&out, "totals: cross_location_bytes=", plan.cross_location_bytes,
                  " local_bytes=", plan.local_bytes, " aliased_bytes=", plan.aliased_bytes,
                  " forwarded_bytes=", plan.forwarded_bytes,
                  " lower_bound_bytes=", plan.lower_bound_bytes, "\n");
  return out;
}

}  // namespace tessera::sharding
