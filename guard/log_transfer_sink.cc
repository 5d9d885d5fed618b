#include "guard/log_transfer_sink.h"

#include <cstdio>
#include <string>
#include <string_view>
#include <utility>

#include "guard/level.h"
#include "guard/transfer_event.h"

namespace tessera::guard {

LogTransferSink::LogTransferSink(LineWriter writer) : writer_(std::move(writer)) {}

std::string LogTransferSink::FormatLine(const TransferEvent& event) {
  std::string line = "WARNING: tessera: ";
  line += DirectionName(event.direction);
  line += " transfer: ";
  line += event.Description();
  return line;
}

void LogTransferSink::OnTransfer(const TransferEvent& event, Action action) {
  if (action != Action::kLog) return;
  std::string line = FormatLine(event);
  if (writer_) {
    writer_(line);
    return;
  }
  line += '\n';
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace tessera::guard
