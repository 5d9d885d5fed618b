// Shardings from Python objects, one object per meaning: a call that names a sharding it named
// before (the same text, device ids and memory kind, or the same Device) gets the same Sharding
// object back. The runtime's plan caches find uploads, downloads and reshards by their shardings'
// identity (docs/performance.md), so a loop of client.put(x, "mesh{x=8} P(x,None)") plans once.

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "bindings/python/src/common.h"
#include "ifrt/sharding_from_text.h"

namespace tessera::python {
namespace {

// The shardings made so far, by (client, text, device ids, memory kind). Each entry holds its
// client weakly: an entry of a client that is gone (whose address a new client may reuse) is a
// miss. Bounded: cleared when full.
class ShardingMemo {
 public:
  template <typename Make>
  ShardingRef Get(const std::shared_ptr<Client>& client, std::string text, std::vector<int32_t> ids,
                  std::string memory_kind, Make&& make) {
    Key key{client.get(), std::move(text), std::move(ids), std::move(memory_kind)};
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = entries_.find(key);
      if (it != entries_.end() && it->second.client.lock() == client) return it->second.sharding;
    }
    ShardingRef made = make(std::get<1>(key), std::get<2>(key), std::get<3>(key));  // may throw
    std::lock_guard<std::mutex> lock(mu_);
    if (entries_.size() >= kCapacity) entries_.clear();
    entries_.insert_or_assign(std::move(key), Entry{client, made});
    return made;
  }

 private:
  static constexpr size_t kCapacity = 256;
  using Key = std::tuple<const Client*, std::string, std::vector<int32_t>, std::string>;
  struct Entry {
    std::weak_ptr<Client> client;
    ShardingRef sharding;
  };
  std::mutex mu_;
  absl::flat_hash_map<Key, Entry> entries_;
};

ShardingMemo& Memo() {
  static ShardingMemo* memo = new ShardingMemo();  // never destroyed: used until the process ends
  return *memo;
}

}  // namespace

ShardingRef ShardingFromPython(const std::shared_ptr<Client>& client, nb::handle sharding) {
  if (nb::isinstance<PyDevice>(sharding)) {
    const PyDevice& d = nb::cast<const PyDevice&>(sharding);
    if (d.client != client) throw nb::value_error("the device belongs to another client");
    Device* device = d.device;
    return Memo().Get(client, "", {device->Id().value}, "", [device](auto&&...) {
      return SingleDeviceSharding::Create(device, MemoryKind());
    });
  }
  std::string text;
  std::vector<int32_t> ids;
  std::string memory_kind;
  if (nb::isinstance<nb::str>(sharding)) {
    text = nb::cast<std::string>(sharding);
  } else if (nb::hasattr(sharding, "_tessera_sharding")) {
    nb::tuple t = nb::cast<nb::tuple>(sharding.attr("_tessera_sharding")());
    text = nb::cast<std::string>(t[0]);
    if (!t[1].is_none()) ids = nb::cast<std::vector<int32_t>>(t[1]);
    if (!t[2].is_none()) memory_kind = nb::cast<std::string>(t[2]);
  } else {
    throw nb::type_error(
        "a sharding is a str ('mesh{x=4} P(x,None)' or '2x1 to [0] on 2'), a tessera.Device or "
        "a tessera.NamedSharding");
  }
  return Memo().Get(
      client, std::move(text), std::move(ids), std::move(memory_kind),
      [&client](const std::string& t, const std::vector<int32_t>& i, const std::string& kind) {
        return ValueOrThrow(ShardingFromText(*client, t, i, kind));
      });
}

}  // namespace tessera::python
