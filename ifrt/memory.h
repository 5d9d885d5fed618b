#ifndef TESSERA_IFRT_MEMORY_H_
#define TESSERA_IFRT_MEMORY_H_

// Memory: one memory space that a device can hold array shards in ("host" for CPU devices,
// "device" and "pinned_host" for Vulkan devices).
//
// Memories are owned by their Client and live as long as it. All methods are thread-safe.

#include <cstdint>
#include <string>

#include "absl/types/span.h"
#include "ifrt/memory_kind.h"

namespace tessera {

class Device;

struct MemoryId {
  int32_t value = 0;
  friend bool operator==(MemoryId a, MemoryId b) { return a.value == b.value; }
  template <typename H>
  friend H AbslHashValue(H h, MemoryId id) {
    return H::combine(std::move(h), id.value);
  }
};

class Memory {
 public:
  Memory() = default;
  Memory(const Memory&) = delete;
  Memory& operator=(const Memory&) = delete;
  virtual ~Memory() = default;

  virtual MemoryId Id() const = 0;
  virtual MemoryKind Kind() const = 0;
  // The devices that can hold buffers in this memory.
  virtual absl::Span<Device* const> Devices() const = 0;
  // Bytes currently allocated in this memory through Tessera.
  virtual int64_t BytesInUse() const = 0;
  // "Memory(id=3, kind=device, device=vulkan:1)"
  virtual std::string DebugString() const = 0;
};

}  // namespace tessera

#endif  // TESSERA_IFRT_MEMORY_H_
