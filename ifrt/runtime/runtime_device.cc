#include "ifrt/runtime/runtime_device.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tessera::runtime {

RuntimeMemory::RuntimeMemory(MemoryId id, RuntimeDevice* device, int platform_memory,
                             const PlatformMemoryInfo& info)
    : id_(id),
      device_(device),
      devices_{device},
      platform_memory_(platform_memory),
      kind_(info.kind),
      host_addressable_(info.host_addressable) {}

int64_t RuntimeMemory::BytesInUse() const {
  if (!device_->IsAddressable()) return 0;
  return device_->platform()->BytesInUse(device_->platform_device(), platform_memory_);
}

std::string RuntimeMemory::DebugString() const {
  return absl::StrCat("Memory(id=", id_.value, ", kind=", kind_.DebugString(),
                      ", device=", device_->ToString(), ")");
}

absl::StatusOr<PlatformBufferRef> RuntimeMemory::Allocate(int64_t bytes) const {
  if (!device_->IsAddressable()) {
    return absl::FailedPreconditionError(absl::StrCat("cannot allocate in ", DebugString(),
                                                      ": its device belongs to process ",
                                                      device_->ProcessIndex()));
  }
  return device_->platform()->Allocate(device_->platform_device(), platform_memory_, bytes);
}

RuntimeDevice::RuntimeDevice(Client* client, DeviceId id, Platform* platform, int platform_device)
    : client_(client),
      id_(id),
      platform_(platform),
      platform_device_(platform_device),
      info_(platform->device_info(platform_device)) {}

RuntimeDevice::RuntimeDevice(Client* client, DeviceId id, PlatformDeviceInfo remote_info,
                             int process_index)
    : client_(client),
      id_(id),
      platform_(nullptr),
      platform_device_(-1),
      process_index_(process_index),
      remote_info_(std::make_unique<PlatformDeviceInfo>(std::move(remote_info))),
      info_(*remote_info_) {}

void RuntimeDevice::CreateMemories(int32_t* next_memory_id) {
  for (size_t i = 0; i < info_.memories.size(); ++i) {
    memories_.push_back(std::make_unique<RuntimeMemory>(MemoryId{(*next_memory_id)++}, this,
                                                        static_cast<int>(i), info_.memories[i]));
    memory_ptrs_.push_back(memories_.back().get());
  }
}

absl::StatusOr<Memory*> RuntimeDevice::DefaultMemory() const {
  if (memories_.empty()) {
    return absl::NotFoundError(absl::StrCat("device ", ToString(), " has no memory"));
  }
  return memories_[info_.default_memory].get();
}

absl::StatusOr<RuntimeMemory*> RuntimeDevice::ResolveMemory(const MemoryKind& kind) const {
  if (memories_.empty()) {
    return absl::NotFoundError(absl::StrCat("device ", ToString(), " has no memory"));
  }
  if (!kind.memory_kind().has_value()) return memories_[info_.default_memory].get();
  for (const auto& m : memories_) {
    if (m->Kind() == kind) return m.get();
  }
  return absl::NotFoundError(absl::StrCat(
      "device ", ToString(), " has no memory of kind '", kind.DebugString(), "' (it has: ",
      absl::StrJoin(memories_, ", ",
                    [](std::string* out, const std::unique_ptr<RuntimeMemory>& m) {
                      absl::StrAppend(out, m->Kind().DebugString());
                    }),
      ")"));
}

std::string RuntimeDevice::ToString() const {
  return absl::StrCat(std::string(Kind()), ":", id_.value);
}

std::string RuntimeDevice::DebugString() const {
  return absl::StrCat("Device(id=", id_.value, ", kind=", std::string(Kind()),
                      ", name=", info_.name,
                      IsAddressable() ? "" : absl::StrCat(", process=", process_index_), ")");
}

}  // namespace tessera::runtime
