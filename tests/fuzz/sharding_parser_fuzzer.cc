// libFuzzer target for the sharding parsers: ShardingParam::Parse, Mesh::Parse,
// PartitionSpec::Parse and ParseShardingText (both notations) must never crash, and on success
// ToString() must re-parse to an equal value (and print identically); on failure the message must
// be one short line of printable text (the input escaped and shortened by QuoteExcerpt), and a
// parse location, when attached, must lie within the text.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "base/message_text.h"
#include "sharding/mesh.h"
#include "sharding/partition_spec.h"
#include "sharding/sharding_param.h"
#include "sharding/sharding_text.h"

namespace {

// One line, no control characters, bounded whatever the input's length.
void CheckMessage(const absl::Status& status) {
  const std::string_view message(status.message().data(), status.message().size());
  if (message.size() > 600) std::abort();
  for (unsigned char c : message) {
    if (c < 0x20 || c == 0x7F) std::abort();
  }
}

template <typename T>
void CheckRoundTrip(std::string_view text) {
  auto parsed = T::Parse(text);
  if (!parsed.ok()) {
    CheckMessage(parsed.status());
    return;
  }
  const std::string printed = parsed->ToString();
  auto reparsed = T::Parse(printed);
  if (!reparsed.ok() || !(*reparsed == *parsed) || reparsed->ToString() != printed) {
    std::abort();
  }
}

// Either notation: ParseShardingText(ToString()) prints the same again.
void CheckShardingText(std::string_view text) {
  auto parsed = tessera::sharding::ParseShardingText(text);
  if (!parsed.ok()) {
    CheckMessage(parsed.status());
    auto at = tessera::base::GetParseLocation(parsed.status());
    if (at.has_value() && at->offset > text.size()) std::abort();
    return;
  }
  if (parsed->is_named() == parsed->param.has_value()) std::abort();
  const std::string printed = parsed->ToString();
  auto reparsed = tessera::sharding::ParseShardingText(printed);
  if (!reparsed.ok() || reparsed->ToString() != printed ||
      reparsed->num_devices() != parsed->num_devices()) {
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  CheckRoundTrip<tessera::sharding::ShardingParam>(text);
  CheckRoundTrip<tessera::sharding::Mesh>(text);
  CheckRoundTrip<tessera::sharding::PartitionSpec>(text);
  CheckShardingText(text);
  // Valid mesh + spec pairs separated by ';' exercise ToShardingParam.
  if (size_t semi = text.find(';'); semi != std::string_view::npos) {
    auto mesh = tessera::sharding::Mesh::Parse(text.substr(0, semi));
    auto spec = tessera::sharding::PartitionSpec::Parse(text.substr(semi + 1));
    if (mesh.ok() && spec.ok()) {
      auto param = tessera::sharding::ToShardingParam(*mesh, *spec, spec->size());
      if (param.ok() && !param->Verify().ok()) std::abort();
    }
  }
  return 0;
}
