// sharding/partition_spec.h: JAX's PartitionSpec and its conversion, with a
// Mesh, to a ShardingParam (the NamedSharding -> IFRT mapping).
//
//   P(x,None)        dim 0 split over mesh axis x, dim 1 not split
//   P((x,y),None)    dim 0 split over x then y (x major), dim 1 not split
//   P()              nothing split (fully replicated)
//
// Dimensions beyond the spec's length are not split; mesh axes the spec does
// not name replicate the array.
#ifndef TESSERA_SHARDING_PARTITION_SPEC_H_
#define TESSERA_SHARDING_PARTITION_SPEC_H_

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "sharding/mesh.h"
#include "sharding/sharding_param.h"

namespace tessera::sharding {

// PartitionSpec: an immutable value type (copyable, hashable,
// thread-compatible). It only checks syntax (valid axis names); whether the
// names exist in a mesh, or repeat, is checked by ToShardingParam.
class PartitionSpec {
 public:
  // Per dimension, the mesh axes it is split over, major first; empty = None.
  using Dim = std::vector<std::string>;

  PartitionSpec() = default;  // P()
  // INVALID_ARGUMENT when a name is not a valid axis name.
  static absl::StatusOr<PartitionSpec> Create(std::vector<Dim> dims);
  // Accepts P(...) with entries: None, an axis name, or a parenthesised
  // tuple of names "(x,y)" ("()" means None). Names may be quoted 'x' or "x"
  // as in Python. Spaces allowed. INVALID_ARGUMENT on anything else.
  static absl::StatusOr<PartitionSpec> Parse(std::string_view text);
  // Canonical form: "P(x,None)", "P((x,y),None)", "P()"; a one-name tuple
  // prints as the bare name. Parse(ToString()) == *this.
  std::string ToString() const;

  const std::vector<Dim>& dims() const { return dims_; }
  int size() const { return static_cast<int>(dims_.size()); }

  friend bool operator==(const PartitionSpec& a, const PartitionSpec& b) {
    return a.dims_ == b.dims_;
  }
  friend bool operator!=(const PartitionSpec& a, const PartitionSpec& b) { return !(a == b); }
  template <typename H>
  friend H AbslHashValue(H h, const PartitionSpec& p) {
    return H::combine(std::move(h), p.dims_);
  }

 private:
  explicit PartitionSpec(std::vector<Dim> dims) : dims_(std::move(dims)) {}
  std::vector<Dim> dims_;
};

// The ShardingParam of NamedSharding(mesh, spec) for an array of `rank`,
// whose device slots are the mesh's slots in row-major order of the mesh axes
// (JAX's device order). Unused mesh axes replicate.
// INVALID_ARGUMENT: an axis not in the mesh ("unknown axis"), an axis used
// twice ("repeated axis"), spec longer than rank, rank < 0.
absl::StatusOr<ShardingParam> ToShardingParam(const Mesh& mesh, const PartitionSpec& spec,
                                              int rank);

}  // namespace tessera::sharding

#endif  // TESSERA_SHARDING_PARTITION_SPEC_H_
