#include "ifrt/runtime/program/kernel_targets.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <variant>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ifrt/attribute_map.h"
#include "ifrt/device.h"

namespace tessera::runtime {
namespace {

std::optional<bool> GetBool(const AttributeMap& attrs, const std::string& name) {
  const AttributeMap::Value* v = attrs.Get(name);
  if (v == nullptr || !std::holds_alternative<bool>(*v)) return std::nullopt;
  return std::get<bool>(*v);
}

// `target` narrowed to what `attrs` allows (the first device: `first`, taken as it reports).
void Meet(const AttributeMap& attrs, bool first, KernelTarget& target) {
  auto narrow = [&](const char* name, int64_t& field, bool take_max = false) {
    std::optional<int64_t> v = attrs.GetInt(name);
    if (!v) return;
    field = first ? *v : take_max ? std::max(field, *v) : std::min(field, *v);
  };
  narrow("max_compute_work_group_invocations", target.max_workgroup_invocations);
  narrow("subgroup_size", target.subgroup_size);
  narrow("max_storage_buffer_range", target.max_storage_buffer_range);
  // Reported only where there is a limit (0 in the target: none yet).
  if (std::optional<int64_t> loops = attrs.GetInt("max_shader_loop_iterations");
      loops && *loops > 0) {
    target.max_loop_iterations =
        target.max_loop_iterations == 0 ? *loops : std::min(target.max_loop_iterations, *loops);
  }
  // An offset aligned for the strictest device is aligned for every one (powers of two).
  narrow("min_storage_buffer_offset_alignment", target.min_storage_buffer_offset_alignment,
         /*take_max=*/true);
  if (const AttributeMap::Value* v = attrs.Get("max_compute_work_group_size");
      v != nullptr && std::holds_alternative<std::vector<int64_t>>(*v)) {
    const auto& size = std::get<std::vector<int64_t>>(*v);
    if (size.size() == 3) {
      for (int i = 0; i < 3; ++i) {
        target.max_workgroup_size[i] =
            first ? size[i] : std::min(target.max_workgroup_size[i], size[i]);
      }
    }
  }
  if (std::optional<bool> f64 = GetBool(attrs, "shader_float64")) {
    target.float64 = (first || target.float64) && *f64;
  }
  if (std::optional<bool> i64 = GetBool(attrs, "shader_int64")) {
    target.int64 = (first || target.int64) && *i64;
  }
  if (const AttributeMap::Value* v = attrs.Get("device_type");
      v != nullptr && std::holds_alternative<std::string>(*v)) {
    target.cpu_device = (first || target.cpu_device) && std::get<std::string>(*v) == "cpu";
  } else {
    target.cpu_device = false;  // not known to be one
  }
  const std::optional<bool> p32 = GetBool(attrs, "shader_signed_zero_inf_nan_preserve_float32");
  const std::optional<bool> p64 = GetBool(attrs, "shader_signed_zero_inf_nan_preserve_float64");
  target.preserve_signed_zero_inf_nan32 =
      (first || target.preserve_signed_zero_inf_nan32) && p32.value_or(false);
  target.preserve_signed_zero_inf_nan64 =
      (first || target.preserve_signed_zero_inf_nan64) && p64.value_or(false);
}

}  // namespace

std::map<std::string, KernelTarget> KernelTargetsOf(const DeviceList& devices) {
  std::map<std::string, KernelTarget> targets;
  for (Device* d : devices.devices()) {
    const AttributeMap& attrs = d->Attributes();
    if (!attrs.GetInt("max_compute_work_group_invocations")) continue;
    const std::string platform(d->Kind());
    const bool first = !targets.contains(platform);
    Meet(attrs, first, targets[platform]);
  }
  return targets;
}

std::string KernelTargetsKey(const std::map<std::string, KernelTarget>& targets) {
  std::string key;
  for (const auto& [platform, t] : targets) {
    absl::StrAppend(&key, platform, "{inv=", t.max_workgroup_invocations, ",size=[",
                    absl::StrJoin(t.max_workgroup_size, ","), "],sg=", t.subgroup_size,
                    ",f64=", t.float64, ",i64=", t.int64, ",range=", t.max_storage_buffer_range,
                    ",align=", t.min_storage_buffer_offset_alignment,
                    ",loops=", t.max_loop_iterations, ",szinp=", t.preserve_signed_zero_inf_nan32,
                    t.preserve_signed_zero_inf_nan64, ",cpu=", t.cpu_device, "}");
  }
  return key;
}

}  // namespace tessera::runtime
