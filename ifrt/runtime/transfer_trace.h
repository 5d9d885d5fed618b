#ifndef TESSERA_IFRT_RUNTIME_TRANSFER_TRACE_H_
#define TESSERA_IFRT_RUNTIME_TRANSFER_TRACE_H_

// TransferTrace: a recording of every batch of copies a client ran while the
// trace was attached (RuntimeClient::SetTransferTrace): executing device,
// endpoints, bytes, direction, the guard's action for the call, and start/end
// times. Written out as Chrome trace / Perfetto JSON. When no trace is attached
// the runtime records nothing and takes no timestamps.
//
// Thread-safe.

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"

namespace tessera {

struct TransferTraceEvent {
  std::string operation;   // "ReshardArrays", "MakeArrayFromHostBuffer", ...
  int32_t device = 0;      // the device whose stream ran the batch
  int32_t src_device = 0;  // -1: host
  int32_t dst_device = 0;  // -1: host
  int64_t bytes = 0;
  int64_t copies = 0;
  std::string direction;     // "host_to_device", "device_to_device",
                             // "device_to_host", "local"
  std::string guard_action;  // "allow", "log" ("" when the guard was not asked:
                             // nothing moved)
  int64_t start_ns = 0;      // since the trace was created
  int64_t end_ns = 0;
  bool ok = true;
};

class TransferTrace {
 public:
  TransferTrace();
  // Nanoseconds since the trace was created.
  int64_t NowNs() const;
  void Add(TransferTraceEvent event);
  std::vector<TransferTraceEvent> events() const;
  // {"traceEvents":[{"name":..., "ph":"X", "pid":0, "tid":<device>, "ts":<us>,
  // "dur":<us>,
  //   "args":{...}}, ...], "displayTimeUnit":"ns"}
  std::string ToChromeTraceJson() const;

 private:
  int64_t origin_ns_;
  mutable std::mutex mu_;
  std::vector<TransferTraceEvent> events_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tessera

#endif  // TESSERA_IFRT_RUNTIME_TRANSFER_TRACE_H_
