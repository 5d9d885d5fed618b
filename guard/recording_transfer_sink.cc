#include "guard/recording_transfer_sink.h"

#include <mutex>
#include <vector>

namespace tessera::guard {

void RecordingTransferSink::OnTransfer(const TransferEvent& event, Action action) {
  std::lock_guard lock(mu_);
  records_.push_back({event, action});
}

std::vector<RecordingTransferSink::Record> RecordingTransferSink::records() const {
  std::lock_guard lock(mu_);
  return records_;
}

std::vector<TransferEvent> RecordingTransferSink::events() const {
  std::lock_guard lock(mu_);
  std::vector<TransferEvent> events;
  events.reserve(records_.size());
  for (const Record& record : records_) events.push_back(record.event);
  return events;
}

void RecordingTransferSink::Clear() {
  std::lock_guard lock(mu_);
  records_.clear();
}

}  // namespace tessera::guard
