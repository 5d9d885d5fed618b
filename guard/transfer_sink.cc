#include "guard/transfer_sink.h"

namespace tessera::guard {

TransferSink::~TransferSink() = default;

}  // namespace tessera::guard
