// libFuzzer target for the `tessera` tool's option text (tools/option_text.h): the first byte picks
// the parser (--devices, --shape, a sharding option), the rest is the option's text. None may
// crash; each fails only with INVALID_ARGUMENT, in one printable line that is not much longer than
// the text allows (the text is quoted once, shortened when long); what --devices accepts names
// each platform once with 1..4096 devices; a parsed sharding prints a text that parses back to the
// same text.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "tools/option_text.h"

namespace {

// The message of a rejected option: one printable line of bounded length.
void CheckMessage(const absl::Status& s, std::string_view text) {
  if (s.code() != absl::StatusCode::kInvalidArgument) {
    std::fprintf(stderr, "unexpected code: %s\n", s.ToString().c_str());
    std::abort();
  }
  const std::string line = tessera::tools::OneLine(std::string(s.message()));
  for (unsigned char c : line) {
    if (c < 0x20 || c == 0x7f) {
      std::fprintf(stderr, "control character 0x%02x in the one-line message\n", c);
      std::abort();
    }
  }
  // The text appears once, cut to an excerpt: the message stays short whatever the input.
  if (line.size() > 4096 + 64) {
    std::fprintf(stderr, "a %zu-byte message for a %zu-byte option\n", line.size(), text.size());
    std::abort();
  }
}

void FuzzDevices(std::string_view text) {
  absl::StatusOr<std::vector<tessera::tools::DeviceRequest>> r = tessera::tools::ParseDevices(text);
  if (!r.ok()) return CheckMessage(r.status(), text);
  if (r->empty()) std::abort();
  for (size_t i = 0; i < r->size(); ++i) {
    const auto& d = (*r)[i];
    if ((d.platform != "cpu" && d.platform != "vulkan") || d.count < 1 || d.count > 4096) {
      std::abort();
    }
    for (size_t j = 0; j < i; ++j) {
      if ((*r)[j].platform == d.platform) std::abort();
    }
  }
}

void FuzzShape(std::string_view text) {
  absl::StatusOr<std::vector<int64_t>> r = tessera::tools::ParseShape(text);
  if (!r.ok()) return CheckMessage(r.status(), text);
  for (int64_t d : *r) {
    if (d < 0) std::abort();
  }
}

void FuzzSharding(std::string_view text) {
  absl::StatusOr<tessera::tools::ShardingText> r = tessera::tools::ParseSharding("--from", text);
  if (!r.ok()) return CheckMessage(r.status(), text);
  if (r->num_devices() < 1) std::abort();
  const std::string printed = r->ToString();
  absl::StatusOr<tessera::tools::ShardingText> again =
      tessera::tools::ParseSharding("--from", printed);
  if (!again.ok() || again->ToString() != printed) {
    std::fprintf(stderr, "round trip of '%s' failed\n", printed.c_str());
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  switch (data[0] % 3) {
    case 0:
      FuzzDevices(text);
      break;
    case 1:
      FuzzShape(text);
      break;
    default:
      FuzzSharding(text);
      break;
  }
  return 0;
}
