#ifndef TESSERA_IFRT_DEVICE_LIST_H_
#define TESSERA_IFRT_DEVICE_LIST_H_

// DeviceList: an immutable, ordered list of distinct devices of one client; the device
// assignment of a sharding (slot i of the sharding lives on devices()[i]).
//
//   absl::StatusOr<DeviceListRef> list = client->MakeDeviceList(client->devices());
//
// Held through DeviceListRef (shared, immutable); thread-safe. Equality and hash compare the
// devices in order.

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ifrt/device.h"

namespace tessera {

class DeviceList;
using DeviceListRef = std::shared_ptr<const DeviceList>;

class DeviceList {
 public:
  // INVALID_ARGUMENT for an empty list, a null device, a device listed twice, or devices of
  // different clients.
  static absl::StatusOr<DeviceListRef> Create(absl::Span<Device* const> devices);

  absl::Span<Device* const> devices() const { return devices_; }
  int size() const { return static_cast<int>(devices_.size()); }
  Device* operator[](int i) const { return devices_[i]; }
  // Device ids in order.
  std::vector<int64_t> ids() const;
  // The position of `device` in the list, or -1.
  int IndexOf(const Device* device) const;
  // "[cpu:0,cpu:1]"
  std::string DebugString() const;
  size_t hash() const { return hash_; }

  friend bool operator==(const DeviceList& a, const DeviceList& b) {
    return a.devices_ == b.devices_;
  }
  friend bool operator!=(const DeviceList& a, const DeviceList& b) { return !(a == b); }
  template <typename H>
  friend H AbslHashValue(H h, const DeviceList& l) {
    return H::combine(std::move(h), l.hash_);
  }

 private:
  // Unchecked: only Create (which validates) builds one. A null device aborts the process with a
  // message naming the entry (never a later segfault).
  explicit DeviceList(std::vector<Device*> devices);

  std::vector<Device*> devices_;
  size_t hash_;
};

// Equality of the lists behind two refs (both null compares equal).
bool SameDeviceList(const DeviceListRef& a, const DeviceListRef& b);

}  // namespace tessera

#endif  // TESSERA_IFRT_DEVICE_LIST_H_
