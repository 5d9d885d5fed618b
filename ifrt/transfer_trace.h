#ifndef TESSERA_IFRT_TRANSFER_TRACE_H_
#define TESSERA_IFRT_TRANSFER_TRACE_H_

// TransferTrace: a recording of every copy a client ran while the trace was attached
// (ClientIntrospection::SetTransferTrace, ifrt/introspection.h): executing device (whose one
// in-order stream ran it), endpoints, boxes, bytes, direction, the guard's action for the call,
// and start/end times. While a trace is attached the runtime runs each copy as its own stream
// operation, so that each has its own start and end (untraced, the copies a device runs for one
// call are one batched operation). Written out as Chrome trace / Perfetto JSON. When no trace is
// attached the runtime records nothing and takes no timestamps.
//
//   auto trace = std::make_shared<TransferTrace>();
//   client->introspection()->SetTransferTrace(trace);
//   ...  // the calls to trace
//   client->introspection()->SetTransferTrace(nullptr);
//   std::string json = trace->ToChromeTraceJson();
//
// Shared (std::shared_ptr) between its owner and the clients it is attached to. Thread-safe.

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "ifrt/future.h"
#include "ifrt/transfer_stats.h"

namespace tessera {

struct TransferTraceEvent {
  std::string operation;   // "ReshardArrays", "MakeArrayFromHostBuffer", ...
  int32_t device = 0;      // the device whose stream ran the batch
  int32_t src_device = 0;  // TransferStats::kHost: the host
  int32_t dst_device = 0;  // TransferStats::kHost: the host
  int64_t bytes = 0;
  int64_t copies = 0;  // 1, except for whole-operation events
  // The box read and the box written ("[0:512, 0:1024]"), each in its side's own coordinates: a
  // shard's, or the whole array's for a host buffer.
  std::string src_box, dst_box;
  // "host_to_device", "device_to_device", "device_to_host" or "local".
  std::string direction;
  // The action the guard enforced on the call, "allow" or "log" (a refused call moves nothing);
  // "" for local copies and where the call moved no bytes between devices or the host.
  std::string guard_action;
  // Since the trace was created. Start: when the copy's inputs were ready and the previous traced
  // copy on the same stream had finished.
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  bool ok = true;
  // A part of a copy between processes (a multi-process client, ifrt/client_options.h): the
  // process at the other end, whose device is src_device (a part received) or dst_device (a part
  // sent); `device` is this process's end. Such an event is this process's side of one message:
  // from when it was posted to when it was sent or received (the wait for the peer and for the
  // source's readiness included), and it appears on a row of its own per peer process. -1: a
  // copy this process ran on a device stream.
  int32_t peer_process = -1;
};

class TransferTrace {
 public:
  // The first Chrome trace row of the parts exchanged with other processes (see above).
  static constexpr int32_t kPeerProcessRow = 1 << 20;

  TransferTrace();
  // Nanoseconds since the trace was created.
  int64_t NowNs() const;
  void Add(TransferTraceEvent event);
  std::vector<TransferTraceEvent> events() const;
  // The events as Chrome trace / Perfetto JSON, one row per device stream, one slice per copy:
  //
  //   {"traceEvents":[{"name":..., "ph":"X", "pid":0, "tid":<device>, "ts":<us>, "dur":<us>,
  //                    "args":{...}}, ...],
  //    "displayTimeUnit":"ns"}
  //
  // Parts exchanged with another process p are on row kPeerProcessRow + p, named
  // "<operation> <src> -> <dst> (sent to process p)" or "(received from process p)".
  std::string ToChromeTraceJson() const;

  // For the runtime: records `copy` as the latest traced copy enqueued on `device`'s stream and
  // returns the one before it (invalid if none), whose end is the earliest start of `copy`.
  Future<> ExchangeLastCopy(int32_t device, Future<> copy);

 private:
  int64_t origin_ns_;
  mutable std::mutex mu_;
  std::vector<TransferTraceEvent> events_ ABSL_GUARDED_BY(mu_);
  std::map<int32_t, Future<>> last_copy_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tessera

#endif  // TESSERA_IFRT_TRANSFER_TRACE_H_
