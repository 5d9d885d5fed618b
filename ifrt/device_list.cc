#include "ifrt/device_list.h"

#include <cstdio>
#include <cstdlib>

#include "absl/container/flat_hash_set.h"
#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tessera {

DeviceList::DeviceList(std::vector<Device*> devices) : devices_(std::move(devices)) {
  std::vector<int32_t> ids;
  ids.reserve(devices_.size());
  for (size_t i = 0; i < devices_.size(); ++i) {
    if (devices_[i] == nullptr) {
      // A broken precondition of the unchecked constructor: abort with a message, never segfault.
      std::fprintf(stderr,
                   "tessera: fatal: DeviceList constructed with a null device at entry %zu "
                   "(use DeviceList::Create)\n",
                   i);
      std::abort();
    }
    ids.push_back(devices_[i]->Id().value);
  }
  hash_ = absl::HashOf(ids, devices_.empty() ? nullptr : devices_[0]->client());
}

absl::StatusOr<DeviceListRef> DeviceList::Create(absl::Span<Device* const> devices) {
  if (devices.empty()) return absl::InvalidArgumentError("a device list must not be empty");
  absl::flat_hash_set<const Device*> seen;
  for (size_t i = 0; i < devices.size(); ++i) {
    if (devices[i] == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("device list entry ", i, " is null"));
    }
    if (devices[i]->client() != devices[0]->client()) {
      return absl::InvalidArgumentError(
          absl::StrCat("device list mixes clients: ", devices[i]->ToString(),
                       " belongs to another client than ", devices[0]->ToString()));
    }
    if (!seen.insert(devices[i]).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("device ", devices[i]->ToString(), " appears twice in a device list"));
    }
  }
  return std::shared_ptr<const DeviceList>(
      new DeviceList(std::vector<Device*>(devices.begin(), devices.end())));
}

std::vector<int64_t> DeviceList::ids() const {
  std::vector<int64_t> out;
  out.reserve(devices_.size());
  for (Device* d : devices_) out.push_back(d->Id().value);
  return out;
}

int DeviceList::IndexOf(const Device* device) const {
  for (size_t i = 0; i < devices_.size(); ++i) {
    if (devices_[i] == device) return static_cast<int>(i);
  }
  return -1;
}

std::string DeviceList::DebugString() const {
  return absl::StrCat(
      "[",
      absl::StrJoin(devices_, ",",
                    [](std::string* out, Device* d) { absl::StrAppend(out, d->ToString()); }),
      "]");
}

bool SameDeviceList(const DeviceListRef& a, const DeviceListRef& b) {
  if (a == b) return true;
  if (a == nullptr || b == nullptr) return false;
  return *a == *b;
}

}  // namespace tessera
