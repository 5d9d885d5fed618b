// guard/recording_transfer_sink.h: a sink that keeps every event it receives.
//
// `RecordingTransferSink` stores a copy of each (event, action) pair in arrival order, for tests
// and for tools that want to show what a run logged or refused. It grows without bound until
// Clear().
//
// Thread-safety: thread-safe.
//
// Example:
//   auto recorder = std::make_shared<RecordingTransferSink>();
//   int id = guard.AddSink(recorder);
//   ...
//   for (const RecordingTransferSink::Record& r : recorder->records()) { ... }
//   guard.RemoveSink(id);

#ifndef TESSERA_GUARD_RECORDING_TRANSFER_SINK_H_
#define TESSERA_GUARD_RECORDING_TRANSFER_SINK_H_

#include <mutex>
#include <vector>

#include "guard/level.h"
#include "guard/transfer_event.h"
#include "guard/transfer_sink.h"

namespace tessera::guard {

class RecordingTransferSink : public TransferSink {
 public:
  struct Record {
    TransferEvent event;
    Action action;
    friend bool operator==(const Record&, const Record&) = default;
  };

  void OnTransfer(const TransferEvent& event, Action action) override;

  // A copy of everything received so far, oldest first.
  std::vector<Record> records() const;
  // The events only, oldest first.
  std::vector<TransferEvent> events() const;
  void Clear();

 private:
  // std::mutex rather than absl::Mutex: visible to ThreadSanitizer without an instrumented
  // Abseil.
  mutable std::mutex mu_;
  std::vector<Record> records_;  // guarded by mu_
};

}  // namespace tessera::guard

#endif  // TESSERA_GUARD_RECORDING_TRANSFER_SINK_H_
