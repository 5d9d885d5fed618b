#ifndef TESSERA_IFRT_RUNTIME_RUNTIME_DEVICE_H_
#define TESSERA_IFRT_RUNTIME_RUNTIME_DEVICE_H_

// RuntimeDevice and RuntimeMemory: the generic runtime's Device and Memory,
// each a view of one device (or memory) of a Platform. Owned by the
// RuntimeClient; immutable after construction, so thread-safe.
//
// In a multi-process client (ifrt/runtime/distributed/distributed_runtime.h) the devices of other
// processes are RuntimeDevices too, without a platform: not addressable, described by what their
// process told at creation; nothing may be allocated in or copied by them.

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ifrt/device.h"
#include "ifrt/memory.h"
#include "ifrt/spi/platform.h"

namespace tessera::runtime {

class RuntimeDevice;

class RuntimeMemory final : public Memory {
 public:
  RuntimeMemory(MemoryId id, RuntimeDevice* device, int platform_memory,
                const PlatformMemoryInfo& info);

  MemoryId Id() const override { return id_; }
  MemoryKind Kind() const override { return kind_; }
  absl::Span<Device* const> Devices() const override { return devices_; }
  int64_t BytesInUse() const override;
  std::string DebugString() const override;

  RuntimeDevice* device() const { return device_; }
  int platform_memory() const { return platform_memory_; }
  bool host_addressable() const { return host_addressable_; }
  // Allocates a buffer of `bytes` in this memory.
  absl::StatusOr<PlatformBufferRef> Allocate(int64_t bytes) const;

 private:
  MemoryId id_;
  RuntimeDevice* device_;
  std::vector<Device*> devices_;
  int platform_memory_;
  MemoryKind kind_;
  bool host_addressable_;
};

class RuntimeDevice final : public Device {
 public:
  RuntimeDevice(Client* client, DeviceId id, Platform* platform, int platform_device);
  // A device of process `process_index`, another process of a multi-process client.
  RuntimeDevice(Client* client, DeviceId id, PlatformDeviceInfo remote_info, int process_index);

  Client* client() const override { return client_; }
  DeviceId Id() const override { return id_; }
  std::string_view Kind() const override {
    return platform_ != nullptr ? platform_->name() : std::string_view(info_.kind);
  }
  const AttributeMap& Attributes() const override { return info_.attributes; }
  absl::StatusOr<Memory*> DefaultMemory() const override;
  absl::Span<Memory* const> Memories() const override { return memory_ptrs_; }
  bool IsAddressable() const override { return platform_ != nullptr; }
  int ProcessIndex() const override { return process_index_; }
  std::string ToString() const override;
  std::string DebugString() const override;

  // The process of a local device in a multi-process client (set once, at creation).
  void set_process_index(int process_index) { process_index_ = process_index; }
  // Null for another process's device.
  Platform* platform() const { return platform_; }
  int platform_device() const { return platform_device_; }
  const PlatformDeviceInfo& info() const { return info_; }
  // The memory of `kind` (the default memory when unspecified). NOT_FOUND
  // naming the kinds the device has otherwise.
  absl::StatusOr<RuntimeMemory*> ResolveMemory(const MemoryKind& kind) const;
  // Adds this device's memories, numbering them from *next_memory_id.
  void CreateMemories(int32_t* next_memory_id);

 private:
  Client* client_;
  DeviceId id_;
  Platform* platform_;
  int platform_device_;
  int process_index_ = 0;
  std::unique_ptr<PlatformDeviceInfo> remote_info_;  // another process's device only
  const PlatformDeviceInfo& info_;
  std::vector<std::unique_ptr<RuntimeMemory>> memories_;
  std::vector<Memory*> memory_ptrs_;
};

}  // namespace tessera::runtime

#endif  // TESSERA_IFRT_RUNTIME_RUNTIME_DEVICE_H_
