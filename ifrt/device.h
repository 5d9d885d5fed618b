#ifndef TESSERA_IFRT_DEVICE_H_
#define TESSERA_IFRT_DEVICE_H_

// Device: one compute device of a client — a CPU "device" (a group of threads with its own task
// arena and stream) or a Vulkan GPU (or a logical slice of one).
//
// Devices are owned by their Client and live as long as it; callers hold plain `Device*`.
// All methods are thread-safe. Devices are neither copyable nor movable.

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ifrt/attribute_map.h"

namespace tessera {

class Client;
class Memory;

// Identifies a device within one client: 0..N-1 in the order of Client::devices().
struct DeviceId {
  int32_t value = 0;
  friend bool operator==(DeviceId a, DeviceId b) { return a.value == b.value; }
  friend bool operator!=(DeviceId a, DeviceId b) { return a.value != b.value; }
  friend bool operator<(DeviceId a, DeviceId b) { return a.value < b.value; }
  template <typename H>
  friend H AbslHashValue(H h, DeviceId id) {
    return H::combine(std::move(h), id.value);
  }
};

class Device {
 public:
  Device() = default;
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;
  virtual ~Device() = default;

  virtual Client* client() const = 0;
  virtual DeviceId Id() const = 0;
  // The platform: "cpu" or "vulkan".
  virtual std::string_view Kind() const = 0;
  // Platform attributes: name, vendor, driver version, memory sizes, ...
  virtual const AttributeMap& Attributes() const = 0;
  // The memory that arrays land in when no memory kind is given. NOT_FOUND if the device has none.
  virtual absl::StatusOr<Memory*> DefaultMemory() const = 0;
  virtual absl::Span<Memory* const> Memories() const = 0;
  // Whether this process can address the device: true for this process's devices, false for
  // those of the other processes of a multi-process client (Distributed::kMpi).
  virtual bool IsAddressable() const { return true; }
  // The process that owns the device, 0..Client::process_count()-1 (0 in a single-process
  // client).
  virtual int ProcessIndex() const { return 0; }
  // "cpu:0", "vulkan:2"
  virtual std::string ToString() const = 0;
  // "Device(id=2, kind=vulkan, name=llvmpipe (LLVM 15.0.6, 256 bits))"
  virtual std::string DebugString() const = 0;
};

}  // namespace tessera

#endif  // TESSERA_IFRT_DEVICE_H_
