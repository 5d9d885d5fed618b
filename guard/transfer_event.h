// guard/transfer_event.h: one movement of bytes, as the guard sees it.
//
// A `TransferEvent` describes one call's movement in one direction: the operation that moves the
// bytes, what moves (dtype, shape, byte count), and between which devices and memory kinds. The
// runtime fills one per call and direction and hands it to TransferGuard::Enforce; sinks receive it
// for movements that are logged or refused.
//
// The human-readable `Description()` is built on demand only: the guard calls it (through its sinks
// and its error message) for logged and refused movements, never for allowed ones, so the allowed
// path formats nothing.
//
// Example:
//   TransferEvent event{.direction = Direction::kHostToDevice,
//                       .is_explicit = false,
//                       .operation = "MakeArrayFromHostBuffer",
//                       .dtype = "f32", .shape = {1024}, .bytes = 4096,
//                       .dst_devices = {0}};
//   event.Description();
//   // "MakeArrayFromHostBuffer of f32[1024] (4096 bytes, implicit) from host to devices [0]"
//
// Thread-safety: a value type; concurrent const use is safe.

#ifndef TESSERA_GUARD_TRANSFER_EVENT_H_
#define TESSERA_GUARD_TRANSFER_EVENT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "guard/level.h"

namespace tessera::guard {

struct TransferEvent {
  Direction direction = Direction::kHostToDevice;
  // True when the user asked for this movement (an explicit device_put, reshard or copy to host);
  // false for movements a framework makes on its own (TransferOptions{.is_explicit = false}).
  bool is_explicit = true;
  // "ReshardArrays", "CopyToHostBuffer", "MakeArrayFromHostBuffer", ...
  std::string operation;
  std::string dtype;  // "f32", "bf16", ... (empty: unknown)
  std::vector<int64_t> shape;
  // Bytes moved in this direction by this call; 0 means no transfer.
  int64_t bytes = 0;
  std::vector<int> src_devices;  // device ids; empty for the host side
  std::vector<int> dst_devices;  // device ids; empty for the host side
  // "device", "pinned_host", "host", ... (empty: not stated).
  std::string src_memory_kind;
  std::string dst_memory_kind;

  // The description, in the form
  //   "<operation> of <dtype>[<shape>] (<bytes> bytes, explicit|implicit) from <src> to <dst>"
  // where a side is "host" or "devices [0,1]", followed by " (memory kind <kind>)" when one is
  // set; an empty operation reads "transfer"; " of <dtype>[<shape>]" is left out when both are
  // empty (a program's communication moves no one array). For example, on one line:
  //   "ReshardArrays of f32[8192,8192] (268435456 bytes, explicit) from devices [0,1]
  //    (memory kind host) to devices [2,3] (memory kind device)"
  std::string Description() const;

  friend bool operator==(const TransferEvent&, const TransferEvent&) = default;
};

namespace internal {
// How many times TransferEvent::Description() has run in this process (for tests of laziness).
int64_t DescriptionCallCountForTesting();
}  // namespace internal

}  // namespace tessera::guard

#endif  // TESSERA_GUARD_TRANSFER_EVENT_H_
