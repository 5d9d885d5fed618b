#include "ifrt/attribute_map.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tessera {

std::optional<std::string> AttributeMap::GetString(const std::string& name) const {
  const Value* v = Get(name);
  if (v == nullptr || !std::holds_alternative<std::string>(*v)) return std::nullopt;
  return std::get<std::string>(*v);
}

std::optional<int64_t> AttributeMap::GetInt(const std::string& name) const {
  const Value* v = Get(name);
  if (v == nullptr || !std::holds_alternative<int64_t>(*v)) return std::nullopt;
  return std::get<int64_t>(*v);
}

std::string AttributeMap::ValueToString(const Value& value) {
  struct Printer {
    std::string operator()(const std::string& s) const { return s; }
    std::string operator()(bool b) const { return b ? "true" : "false"; }
    std::string operator()(int64_t i) const { return absl::StrCat(i); }
    std::string operator()(double d) const { return absl::StrCat(d); }
    std::string operator()(const std::vector<int64_t>& v) const {
      return absl::StrCat("[", absl::StrJoin(v, ","), "]");
    }
  };
  return std::visit(Printer{}, value);
}

std::string AttributeMap::DebugString() const {
  std::string out = "{";
  bool first = true;
  for (const auto& [name, value] : map_) {
    absl::StrAppend(&out, first ? "" : ", ", name, "=", ValueToString(value));
    first = false;
  }
  return out + "}";
}

}  // namespace tessera
