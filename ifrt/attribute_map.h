#ifndef TESSERA_IFRT_ATTRIBUTE_MAP_H_
#define TESSERA_IFRT_ATTRIBUTE_MAP_H_

// AttributeMap: named attributes of a device (name, vendor, driver version, heap sizes, ...).
//
//   tessera::AttributeMap attrs;
//   attrs.Set("vendor", std::string("NVIDIA"));
//   attrs.Set("subgroup_size", int64_t{32});
//   std::optional<int64_t> sg = attrs.GetInt("subgroup_size");
//
// A value type; thread-compatible. Iteration is in name order.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace tessera {

class AttributeMap {
 public:
  using Value = std::variant<std::string, bool, int64_t, double, std::vector<int64_t>>;

  void Set(std::string name, Value value) { map_[std::move(name)] = std::move(value); }
  const Value* Get(const std::string& name) const {
    auto it = map_.find(name);
    return it == map_.end() ? nullptr : &it->second;
  }
  std::optional<std::string> GetString(const std::string& name) const;
  std::optional<int64_t> GetInt(const std::string& name) const;
  const std::map<std::string, Value>& map() const { return map_; }
  size_t size() const { return map_.size(); }

  // A value as text: strings unquoted, lists as "[1,2]".
  static std::string ValueToString(const Value& value);
  // "{name=..., vendor=...}"
  std::string DebugString() const;

  friend bool operator==(const AttributeMap& a, const AttributeMap& b) { return a.map_ == b.map_; }

 private:
  std::map<std::string, Value> map_;
};

}  // namespace tessera

#endif  // TESSERA_IFRT_ATTRIBUTE_MAP_H_
