#ifndef TESSERA_IFRT_RUNTIME_TRANSFER_EVENTS_H_
#define TESSERA_IFRT_RUNTIME_TRANSFER_EVENTS_H_

// The transfer guard's events of the runtime's movements, built in one place: what the dispatcher
// asks the guard (Dispatcher::GuardTransfer) for an upload, a download, a reshard and a program's
// communication.
//
//   DeviceTraffic traffic;
//   for (...) AddDeviceTraffic(*plan, src_memories, dst_memories, traffic);
//   guard::TransferEvent event = ReshardEvent("ReshardArrays", arrays, traffic, options);
//
// Each event names the operation, the dtype and shape (of the first array for several), the bytes
// that cross devices (or the host boundary), the devices at each end and the memory kinds. Internal
// legs are classified as the movement they serve: an upload's forwards between replicas are
// host-to-device bytes. Free functions; thread-compatible.

#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/types/span.h"
#include "guard/transfer_event.h"
#include "ifrt/dtype.h"
#include "ifrt/runtime/runtime_array.h"
#include "ifrt/runtime/runtime_device.h"
#include "ifrt/shape.h"
#include "ifrt/transfer_options.h"
#include "sharding/reshard_plan.h"

namespace tessera::runtime {

struct CompiledProgram;

// The host-to-device movement of an upload into `memories`: every byte written to a replica,
// whether read from the host or forwarded from another replica, and the devices they go to, with
// `sharing` (memories whose devices take one of those buffers: replicas on CPU devices).
guard::TransferEvent UploadEvent(std::string_view op, const sharding::ReshardPlan& plan,
                                 const std::vector<RuntimeMemory*>& memories, DType dtype,
                                 const Shape& shape, TransferOptions options,
                                 absl::Span<RuntimeMemory* const> sharing = {});

// The device-to-host movement of a download of `array`.
guard::TransferEvent DownloadEvent(std::string_view op, const sharding::ReshardPlan& plan,
                                   const RuntimeArray& array, TransferOptions options);

// What the plans of one reshard call move between devices. The lists hold an entry per copy,
// repeats included (a copy costs a push, not a tree insertion); ReshardEvent names each once.
struct DeviceTraffic {
  int64_t bytes = 0;
  std::vector<int32_t> src_ids, dst_ids;
  // The memories' kinds are named once per call (ReshardEvent), not once per copy.
  std::vector<const RuntimeMemory*> src_memories, dst_memories;
};
// Adds the copies of `plan` (from `src` memories to `dst` memories) that cross devices. Copies
// within a device and aliases are not transfers.
void AddDeviceTraffic(const sharding::ReshardPlan& plan, const std::vector<RuntimeMemory*>& src,
                      const std::vector<RuntimeMemory*>& dst, DeviceTraffic& traffic);
// The device-to-device movement of a reshard of `arrays`, described by the first array.
guard::TransferEvent ReshardEvent(std::string_view op, absl::Span<RuntimeArray* const> arrays,
                                  const DeviceTraffic& traffic, TransferOptions options);

// The device-to-device movement of one run of `program`'s collectives (explicit: the program asks
// for them): the bytes they read from peers, over the program's devices.
guard::TransferEvent ProgramCommunicationEvent(const CompiledProgram& program);

}  // namespace tessera::runtime

#endif  // TESSERA_IFRT_RUNTIME_TRANSFER_EVENTS_H_
