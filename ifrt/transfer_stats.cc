#include "ifrt/transfer_stats.h"

#include "absl/strings/str_cat.h"

namespace tessera {

std::string TransferStats::DebugString() const {
  auto counter = [](const Counter& c) {
    return absl::StrCat(c.bytes, " bytes in ", c.copies, " copies");
  };
  auto side = [](int32_t id) { return id == kHost ? std::string("host") : absl::StrCat(id); };
  std::string out = absl::StrCat("host_to_device: ", counter(host_to_device),
                                 "\ndevice_to_device: ", counter(device_to_device),
                                 "\ndevice_to_host: ", counter(device_to_host),
                                 "\nlocal: ", counter(local), "\n");
  for (const auto& [pair, c] : per_device_pair) {
    absl::StrAppend(&out, "  ", side(pair.first), " -> ", side(pair.second), ": ", counter(c),
                    "\n");
  }
  return out;
}

}  // namespace tessera
