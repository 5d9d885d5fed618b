#include "guard/transfer_event.h"

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tessera::guard {
namespace {

std::atomic<int64_t> description_calls{0};

void AppendSide(std::string& out, const std::vector<int>& devices, const std::string& memory_kind) {
  if (devices.empty()) {
    out += "host";
  } else {
    absl::StrAppend(&out, "devices [", absl::StrJoin(devices, ","), "]");
  }
  if (!memory_kind.empty()) absl::StrAppend(&out, " (memory kind ", memory_kind, ")");
}

}  // namespace

std::string TransferEvent::Description() const {
  description_calls.fetch_add(1, std::memory_order_relaxed);
  std::string out = operation.empty() ? std::string("transfer") : operation;
  // A movement of no one array (a program's communication) names no dtype and shape.
  if (!dtype.empty() || !shape.empty()) {
    absl::StrAppend(&out, " of ", dtype, "[", absl::StrJoin(shape, ","), "]");
  }
  absl::StrAppend(&out, " (", bytes, " bytes, ", is_explicit ? "explicit" : "implicit", ") from ");
  AppendSide(out, src_devices, src_memory_kind);
  out += " to ";
  AppendSide(out, dst_devices, dst_memory_kind);
  return out;
}

namespace internal {
int64_t DescriptionCallCountForTesting() {
  return description_calls.load(std::memory_order_relaxed);
}
}  // namespace internal

}  // namespace tessera::guard
