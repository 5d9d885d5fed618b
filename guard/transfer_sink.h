// guard/transfer_sink.h: where a TransferGuard reports the movements it logs or refuses.
//
// A `TransferSink` receives every event that a guard's decision turns into Action::kLog or
// Action::kDisallow, with that action; allowed movements never reach a sink. Sinks are added to a
// guard with TransferGuard::AddSink and shared with it (std::shared_ptr): a guard keeps a sink
// alive while it is registered and while a call to it is in flight.
//
// Thread-safety: implementations must be thread-safe. The guard calls
// OnTransfer synchronously on the thread that called TransferGuard::Enforce (or Check),
// possibly from many threads at once, and without holding any lock of its own,
// so a sink may call back into the guard (even RemoveSink). A sink runs on the
// runtime's dispatch path: it should be quick and must not throw.
//
// Example:
//   class CountingSink : public TransferSink {
//    public:
//     void OnTransfer(const TransferEvent& event, Action action) override {
//       ++count_;
//     }
//     std::atomic<int> count_{0};
//   };

#ifndef TESSERA_GUARD_TRANSFER_SINK_H_
#define TESSERA_GUARD_TRANSFER_SINK_H_

#include "guard/level.h"
#include "guard/transfer_event.h"

namespace tessera::guard {

class TransferSink {
 public:
  virtual ~TransferSink();

  // Called for each logged (`action == Action::kLog`) or refused (`Action::kDisallow`) movement.
  // `event` is valid only for the duration of the call; copy what must outlive it.
  virtual void OnTransfer(const TransferEvent& event, Action action) = 0;
};

}  // namespace tessera::guard

#endif  // TESSERA_GUARD_TRANSFER_SINK_H_
