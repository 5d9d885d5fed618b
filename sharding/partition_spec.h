// sharding/partition_spec.h: JAX's PartitionSpec and its conversion, with a Mesh, to a
// ShardingParam (the NamedSharding -> IFRT mapping).
//
//   P(x,None)        dim 0 split over mesh axis x, dim 1 not split
//   P((x,y),None)    dim 0 split over x then y (x major), dim 1 not split
//   P()              nothing split (fully replicated)
//
// Dimensions beyond the spec's length are not split; mesh axes the spec does not name replicate the
// array.
#ifndef TESSERA_SHARDING_PARTITION_SPEC_H_
#define TESSERA_SHARDING_PARTITION_SPEC_H_

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "sharding/mesh.h"
#include "sharding/sharding_param.h"

namespace tessera::sharding {

// PartitionSpec: an immutable value type (copyable, hashable, thread-compatible). It only checks
// syntax (valid axis names); whether the names exist in a mesh, or repeat, is checked by
// ToShardingParam.
class PartitionSpec {
 public:
  // Per dimension, the mesh axes it is split over, major first; empty = None.
  using Dim = std::vector<std::string>;

  PartitionSpec() = default;  // P()
  // INVALID_ARGUMENT when a name is not a valid axis name.
  static absl::StatusOr<PartitionSpec> Create(std::vector<Dim> dims);
  // Accepts P(...) with entries: None, an axis name, or a parenthesised tuple of names "(x,y)"
  // ("()" means None). Names may be quoted 'x' or "x" as in Python. Spaces allowed.
  // INVALID_ARGUMENT on anything else.
  static absl::StatusOr<PartitionSpec> Parse(std::string_view text);
  // Canonical form: "P(x,None)", "P((x,y),None)", "P()"; a one-name tuple prints as the bare name.
  // Parse(ToString()) == *this.
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

// The ShardingParam of NamedSharding(mesh, spec) for an array of `rank`, whose device slots are the
// mesh's slots in row-major order of the mesh axes (JAX's device order). Unused mesh axes
// replicate. INVALID_ARGUMENT: an axis not in the mesh ("unknown axis"), an axis used twice
// ("repeated axis"), spec longer than rank, rank < 0.
absl::StatusOr<ShardingParam> ToShardingParam(const Mesh& mesh, const PartitionSpec& spec,
                                              int rank);

// ---- ShardingParam -> Mesh + PartitionSpec (the IFRT -> NamedSharding mapping) ----
//
// A ShardingParam is a NamedSharding exactly when the slots of each dimension's tiles and of the
// replicas are whole axes of some mesh (slot i of the param being slot i of the mesh):
//
//   "2x1 to [0] on 2"        mesh{x=2}        P(x,None)
//   "1x2 to [0] on 2"        mesh{x=2}        P(None,x)
//   "4x1 to [0,1] on 2x2"    mesh{x0=2,x1=2}  P((x0,x1),None)
//   "4x1 to [1,0] on 2x2"    mesh{x0=2,x1=2}  P((x1,x0),None)   (another device order)
//   "2x1 to [0] on 4"        mesh{x0=2,x1=2}  P(x0,None)        (x1 replicates)
//
// and not, for instance, "3 to [1,0] on 2x3" (its 3 tiles hold 2 slots each, 0 and 1, 2 and 3,
// 4 and 5, which straddle the axes of every mesh of its device order).

// The coarsest mesh over which every one of `params` is a PartitionSpec (ToPartitionSpec): each
// mesh axis the smallest run of slots some param's tiles or replicas step over, major first,
// named "x" when there is one axis (also for a single device, mesh{x=1}), else x0, x1, ...
// INVALID_ARGUMENT when `params` is empty, a param is invalid or spans another number of devices
// than the first; UNIMPLEMENTED, naming the params, when there is no such mesh: a param that is
// no NamedSharding at all (above), or params whose axes cross (2x1 to [0] on 6 steps over slots
// by 3, 3x1 to [0] on 6 by 2).
absl::StatusOr<Mesh> MeshOfShardingParams(absl::Span<const ShardingParam> params);

// `param` as a PartitionSpec over `mesh`: the NamedSharding(mesh, spec) over the same device list
// gives each device the tile `param` gives it (ToShardingParam(mesh, spec, rank) and `param`
// agree on every slot's tile). One entry per dimension of `param`, None where it is not split.
// INVALID_ARGUMENT when `param` is invalid or spans another number of devices than `mesh`;
// UNIMPLEMENTED when no spec over `mesh` gives that device order (MeshOfShardingParams finds the
// mesh where one exists).
absl::StatusOr<PartitionSpec> ToPartitionSpec(const ShardingParam& param, const Mesh& mesh);

}  // namespace tessera::sharding

#endif  // TESSERA_SHARDING_PARTITION_SPEC_H_
