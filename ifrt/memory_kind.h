#ifndef TESSERA_IFRT_MEMORY_KIND_H_
#define TESSERA_IFRT_MEMORY_KIND_H_

// MemoryKind: the name of a kind of memory ("host", "device", "pinned_host"), or unspecified,
// which means "the device's default memory".
//
//   tessera::MemoryKind pinned("pinned_host");
//   tessera::MemoryKind unspecified;   // memory_kind() == std::nullopt
//
// A value type; thread-compatible.

#include <optional>
#include <string>
#include <string_view>

namespace tessera {

class MemoryKind {
 public:
  MemoryKind() = default;
  explicit MemoryKind(std::string_view kind) : kind_(std::string(kind)) {}

  std::optional<std::string_view> memory_kind() const {
    if (!kind_.has_value()) return std::nullopt;
    return std::string_view(*kind_);
  }
  // The kind, or "(default)" when unspecified.
  std::string DebugString() const { return kind_.value_or("(default)"); }

  friend bool operator==(const MemoryKind& a, const MemoryKind& b) { return a.kind_ == b.kind_; }
  friend bool operator!=(const MemoryKind& a, const MemoryKind& b) { return !(a == b); }
  template <typename H>
  friend H AbslHashValue(H h, const MemoryKind& m) {
    return H::combine(std::move(h), m.kind_);
  }

 private:
  std::optional<std::string> kind_;
};

}  // namespace tessera

#endif  // TESSERA_IFRT_MEMORY_KIND_H_
