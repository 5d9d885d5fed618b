// guard/log_transfer_sink.h: the default sink, which writes logged movements as warnings.
//
// `LogTransferSink` turns each Action::kLog event into one line
//
//   "WARNING: tessera: host-to-device transfer: <TransferEvent::Description()>"
//
// written to a `LineWriter` (default: stderr, one fwrite per line so concurrent lines do not
// interleave). Refused movements (Action::kDisallow) are not written: the refusal comes back to the
// caller as an INVALID_ARGUMENT status carrying the same description, and writing it too would
// report it twice.
//
// Every TransferGuard owns one of these, enabled by default
// (TransferGuard::SetDefaultLogSinkEnabled). Add another instance with a custom writer to send the
// lines elsewhere.
//
// Thread-safety: thread-safe if the writer is (the default one is).

#ifndef TESSERA_GUARD_LOG_TRANSFER_SINK_H_
#define TESSERA_GUARD_LOG_TRANSFER_SINK_H_

#include <functional>
#include <string>
#include <string_view>

#include "guard/level.h"
#include "guard/transfer_event.h"
#include "guard/transfer_sink.h"

namespace tessera::guard {

class LogTransferSink : public TransferSink {
 public:
  // Receives one complete line, without its trailing newline.
  using LineWriter = std::function<void(std::string_view line)>;

  // `writer` empty: write to stderr.
  explicit LogTransferSink(LineWriter writer = nullptr);

  void OnTransfer(const TransferEvent& event, Action action) override;

  // The line written for a logged `event` (without the newline).
  static std::string FormatLine(const TransferEvent& event);

 private:
  LineWriter writer_;
};

}  // namespace tessera::guard

#endif  // TESSERA_GUARD_LOG_TRANSFER_SINK_H_
