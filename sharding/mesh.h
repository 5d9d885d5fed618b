// sharding/mesh.h: a JAX-style named device mesh.
//
// A Mesh names the axes of a logical grid of device slots, e.g. "mesh{x=2,y=4}": 8 slots, numbered
// in row-major order of the axes (the last axis varies fastest), as JAX numbers
// `Mesh.devices.flat`.
#ifndef TESSERA_SHARDING_MESH_H_
#define TESSERA_SHARDING_MESH_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace tessera::sharding {

// Mesh: an immutable value type (copyable, hashable, thread-compatible). Axis names are identifiers
// ([A-Za-z_][A-Za-z0-9_]*, not "None"), unique; sizes are >= 1; at least one axis; at most 2^24
// slots in all. Create() and Parse() return INVALID_ARGUMENT for anything else.
class Mesh {
 public:
  struct Axis {
    std::string name;
    int64_t size;
    friend bool operator==(const Axis& a, const Axis& b) {
      return a.name == b.name && a.size == b.size;
    }
    template <typename H>
    friend H AbslHashValue(H h, const Axis& a) {
      return H::combine(std::move(h), a.name, a.size);
    }
  };

  static absl::StatusOr<Mesh> Create(std::vector<Axis> axes);
  // "mesh{x=2,y=4}" (spaces allowed around tokens).
  static absl::StatusOr<Mesh> Parse(std::string_view text);
  // Canonical form "mesh{x=2,y=4}"; Parse(ToString()) == *this.
  std::string ToString() const;

  const std::vector<Axis>& axes() const { return axes_; }
  int num_axes() const { return static_cast<int>(axes_.size()); }
  // Product of the axis sizes.
  int num_devices() const;
  // Position of the axis called `name`, if any.
  std::optional<int> FindAxis(std::string_view name) const;

  friend bool operator==(const Mesh& a, const Mesh& b) { return a.axes_ == b.axes_; }
  friend bool operator!=(const Mesh& a, const Mesh& b) { return !(a == b); }
  template <typename H>
  friend H AbslHashValue(H h, const Mesh& m) {
    return H::combine(std::move(h), m.axes_);
  }

 private:
  explicit Mesh(std::vector<Axis> axes) : axes_(std::move(axes)) {}
  std::vector<Axis> axes_;
};

// True iff `name` is a valid axis name ([A-Za-z_][A-Za-z0-9_]*, not "None").
bool IsValidAxisName(std::string_view name);

}  // namespace tessera::sharding

#endif  // TESSERA_SHARDING_MESH_H_
