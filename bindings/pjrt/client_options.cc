// The plugin client's options: environment variables, then PJRT create options.

#include "bindings/pjrt/client_options.h"

#include <charconv>
#include <cstdlib>
#include <string>
#include <string_view>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "base/string_view.h"

namespace tessera::pjrt {
namespace {

constexpr int kMaxCpuDevices = 4096;

absl::StatusOr<int> ParseCpuDevices(std::string_view text, std::string_view source) {
  int value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end || value < 0 || value > kMaxCpuDevices) {
    return absl::InvalidArgumentError(
        absl::StrCat(base::AsAbsl(source), " must be a count of CPU devices from 0 to ",
                     kMaxCpuDevices, ", not '", base::AsAbsl(text), "'"));
  }
  return value;
}

absl::StatusOr<tessera::VulkanMode> ParseVulkan(std::string_view text, std::string_view source) {
  std::string mode = absl::AsciiStrToLower(std::string(text));
  if (mode == "off") return tessera::VulkanMode::kOff;
  if (mode == "if_available") return tessera::VulkanMode::kIfAvailable;
  if (mode == "required") return tessera::VulkanMode::kRequired;
  return absl::InvalidArgumentError(absl::StrCat(base::AsAbsl(source),
                                                 " must be off, if_available or required, not '",
                                                 base::AsAbsl(text), "'"));
}

absl::StatusOr<tessera::guard::Policy> ParseGuard(std::string_view text, std::string_view source) {
  absl::StatusOr<tessera::guard::Policy> policy = tessera::guard::Policy::Parse(text);
  if (!policy.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(base::AsAbsl(source), ": ", policy.status().message()));
  }
  return policy;
}

absl::Status ApplyEnvironment(tessera::ClientOptions& options) {
  if (const char* cpu = std::getenv("TESSERA_CPU_DEVICES"); cpu != nullptr && *cpu != '\0') {
    absl::StatusOr<int> count = ParseCpuDevices(cpu, "TESSERA_CPU_DEVICES");
    if (!count.ok()) return count.status();
    options.cpu_devices = *count;
  }
  if (const char* vulkan = std::getenv("TESSERA_VULKAN"); vulkan != nullptr && *vulkan != '\0') {
    absl::StatusOr<tessera::VulkanMode> mode = ParseVulkan(vulkan, "TESSERA_VULKAN");
    if (!mode.ok()) return mode.status();
    options.vulkan = *mode;
  }
  // TESSERA_TRANSFER_GUARD: CreateClient reads it when transfer_guard is unset.
  return absl::OkStatus();
}

std::string_view StringOption(const PJRT_NamedValue& option) {
  if (option.string_value == nullptr) return {};
  return std::string_view(option.string_value, option.value_size);
}

absl::Status ApplyCreateOption(const PJRT_NamedValue& option, tessera::ClientOptions& options) {
  if (option.name == nullptr)
    return absl::InvalidArgumentError("PJRT_Client_Create: a create option has no name");
  std::string_view name(option.name, option.name_size);
  std::string source = absl::StrCat("create option '", base::AsAbsl(name), "'");
  if (name == "cpu_devices") {
    std::string text;
    if (option.type == PJRT_NamedValue_kInt64) {
      text = std::to_string(option.int64_value);
    } else if (option.type == PJRT_NamedValue_kString) {
      text = std::string(StringOption(option));
    } else {
      return absl::InvalidArgumentError(absl::StrCat(source, " must be an int64 or a string"));
    }
    absl::StatusOr<int> count = ParseCpuDevices(text, source);
    if (!count.ok()) return count.status();
    options.cpu_devices = *count;
    return absl::OkStatus();
  }
  if (name == "vulkan" || name == "transfer_guard") {
    if (option.type != PJRT_NamedValue_kString)
      return absl::InvalidArgumentError(absl::StrCat(source, " must be a string"));
    if (name == "vulkan") {
      absl::StatusOr<tessera::VulkanMode> mode = ParseVulkan(StringOption(option), source);
      if (!mode.ok()) return mode.status();
      options.vulkan = *mode;
      return absl::OkStatus();
    }
    absl::StatusOr<tessera::guard::Policy> policy = ParseGuard(StringOption(option), source);
    if (!policy.ok()) return policy.status();
    options.transfer_guard = *policy;
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat("PJRT_Client_Create: unknown ", source,
                   " (Tessera's are cpu_devices, vulkan and transfer_guard)"));
}

}  // namespace

absl::StatusOr<tessera::ClientOptions> ReadClientOptions(const PJRT_NamedValue* create_options,
                                                         size_t num_options) {
  tessera::ClientOptions options;
  if (absl::Status s = ApplyEnvironment(options); !s.ok()) return s;
  if (num_options > 0 && create_options == nullptr)
    return absl::InvalidArgumentError("PJRT_Client_Create: create_options is NULL");
  for (size_t i = 0; i < num_options; ++i) {
    if (absl::Status s = ApplyCreateOption(create_options[i], options); !s.ok()) return s;
  }
  return options;
}

}  // namespace tessera::pjrt
