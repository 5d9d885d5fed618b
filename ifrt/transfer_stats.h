#ifndef TESSERA_IFRT_TRANSFER_STATS_H_
#define TESSERA_IFRT_TRANSFER_STATS_H_

// TransferStats: the bytes a client has actually moved, per direction and per device pair.
// A snapshot; Client::transfer_stats() returns a fresh one on each call.
//
// Copies within one device (bytes that were already on the destination device) count as
// `local`; aliasing moves nothing and counts nowhere.
//
// A plain value type; thread-compatible.

#include <cstdint>
#include <map>
#include <string>
#include <utility>

namespace tessera {

struct TransferStats {
  // The one id of the host side of a host<->device transfer, wherever the runtime names the two
  // sides by device id: here, in TransferTraceEvent (ifrt/transfer_trace.h) and in the runtime's
  // records and plans. No device has it (device ids are >= 0).
  static constexpr int32_t kHost = -1;

  struct Counter {
    int64_t bytes = 0;
    int64_t copies = 0;
    friend bool operator==(const Counter& a, const Counter& b) {
      return a.bytes == b.bytes && a.copies == b.copies;
    }
  };
  Counter host_to_device;
  Counter device_to_device;  // across devices
  Counter device_to_host;
  Counter local;  // within one device
  // (source device id, destination device id) -> bytes moved; kHost for the host side.
  std::map<std::pair<int32_t, int32_t>, Counter> per_device_pair;

  std::string DebugString() const;
  friend bool operator==(const TransferStats& a, const TransferStats& b) {
    return a.host_to_device == b.host_to_device && a.device_to_device == b.device_to_device &&
           a.device_to_host == b.device_to_host && a.local == b.local &&
           a.per_device_pair == b.per_device_pair;
  }
};

}  // namespace tessera

#endif  // TESSERA_IFRT_TRANSFER_STATS_H_
