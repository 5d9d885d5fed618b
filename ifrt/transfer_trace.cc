#include "ifrt/transfer_trace.h"

#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace tessera {
namespace {

int64_t SteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string DeviceName(int32_t id) {
  return id == TransferStats::kHost ? "host" : absl::StrCat("device ", id);
}

// Box strings hold digits, brackets, colons, commas and spaces only: no
// escaping.
std::string BoxArgs(const TransferTraceEvent& e) {
  std::string out;
  if (!e.src_box.empty()) absl::StrAppend(&out, "\"src_box\":\"", e.src_box, "\",");
  if (!e.dst_box.empty()) absl::StrAppend(&out, "\"dst_box\":\"", e.dst_box, "\",");
  return out;
}

// "ReshardArrays device 0 -> device 2", and for a part exchanged with another process
// " (sent to process 1)" or " (received from process 1)" after it.
std::string EventName(const TransferTraceEvent& e) {
  std::string name =
      absl::StrCat(e.operation, " ", DeviceName(e.src_device), " -> ", DeviceName(e.dst_device));
  if (e.peer_process >= 0) {
    absl::StrAppend(&name,
                    e.device == e.dst_device ? " (received from process " : " (sent to process ",
                    e.peer_process, ")");
  }
  return name;
}

}  // namespace

TransferTrace::TransferTrace() : origin_ns_(SteadyNs()) {}

int64_t TransferTrace::NowNs() const { return SteadyNs() - origin_ns_; }

void TransferTrace::Add(TransferTraceEvent event) {
  std::lock_guard<std::mutex> lock(mu_);
  events_.push_back(std::move(event));
}

Future<> TransferTrace::ExchangeLastCopy(int32_t device, Future<> copy) {
  std::lock_guard<std::mutex> lock(mu_);
  std::swap(last_copy_[device], copy);
  return copy;
}

std::vector<TransferTraceEvent> TransferTrace::events() const {
  std::lock_guard<std::mutex> lock(mu_);
  return events_;
}

std::string TransferTrace::ToChromeTraceJson() const {
  std::vector<TransferTraceEvent> events = this->events();
  std::string out = "{\"traceEvents\":[\n";
  bool first = true;
  for (const TransferTraceEvent& e : events) {
    // Strings here come from the runtime itself (operation names, fixed words):
    // no escaping needed beyond what they contain, which is none.
    absl::StrAppend(
        &out, first ? "" : ",\n",
        absl::StrFormat("{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":0,"
                        "\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"operation\":\"%s\","
                        "\"bytes\":%d,\"copies\":%d,\"direction\":\"%s\",\"src_device\":%d,"
                        "\"dst_device\":%d,%s%s\"guard_action\":\"%s\",\"ok\":%s}}",
                        EventName(e), e.direction,
                        e.peer_process >= 0 ? kPeerProcessRow + e.peer_process : e.device,
                        e.start_ns / 1000.0, (e.end_ns - e.start_ns) / 1000.0, e.operation, e.bytes,
                        e.copies, e.direction, e.src_device, e.dst_device, BoxArgs(e),
                        e.peer_process >= 0 ? absl::StrCat("\"peer_process\":", e.peer_process, ",")
                                            : std::string(),
                        e.guard_action, e.ok ? "true" : "false"));
    first = false;
  }
  absl::StrAppend(&out, "\n],\"displayTimeUnit\":\"ns\"}\n");
  return out;
}

}  // namespace tessera
