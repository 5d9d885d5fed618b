// sharding/sharding_param.h: IFRT IR's ShardingParam, the compact description of a tiled, possibly
// replicated sharding over a mesh of device slots.
//
// A ShardingParam says how many tiles each array dimension is cut into (`dim_shards`) and how the
// tiles map onto a logical device mesh (`minor_to_major`: mesh axis sizes and the order, minor to
// major, in which the axes are walked). Its text form is IFRT's:
//
//   "2x1x3 to [1,0] on 3x2"   dim_shards 2x1x3, permutation [1,0], axes 3x2
//   "{} to [0] on 2"          rank 0 (a scalar replicated over 2 slots)
//
// Device slots are numbered 0..NumDevices()-1 column-major over `axis_sizes` (axis 0 has stride 1),
// exactly as IFRT's MinorToMajor::ToDeviceList. Walking the axes in `permutation` order (last entry
// outermost) yields the logical device order; logical position p holds tile p / replication()
// (tiles in row-major order over dim_shards), the replicas of one tile being adjacent.
#ifndef TESSERA_SHARDING_SHARDING_PARAM_H_
#define TESSERA_SHARDING_SHARDING_PARAM_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "sharding/index.h"

namespace tessera::sharding {

// ShardingParam: an immutable value type (copyable, hashable, thread-compatible). The constructor
// does not validate; call Verify() or use Create()/Parse(), which return INVALID_ARGUMENT for every
// invalid input.
class ShardingParam {
 public:
  struct MinorToMajor {
    std::vector<int> permutation;  // mesh axes, minor to major
    std::vector<int> axis_sizes;   // mesh shape

    friend bool operator==(const MinorToMajor& a, const MinorToMajor& b) {
      return a.permutation == b.permutation && a.axis_sizes == b.axis_sizes;
    }
    template <typename H>
    friend H AbslHashValue(H h, const MinorToMajor& m) {
      return H::combine(std::move(h), m.permutation, m.axis_sizes);
    }
  };

  ShardingParam(std::vector<int64_t> dim_shards, MinorToMajor minor_to_major);
  // Constructs and Verify()s.
  static absl::StatusOr<ShardingParam> Create(std::vector<int64_t> dim_shards,
                                              MinorToMajor minor_to_major);
  // Parses the text form above (spaces allowed around tokens), then Verify()s. INVALID_ARGUMENT on
  // syntax errors (message names the position) and on anything Verify() rejects.
  static absl::StatusOr<ShardingParam> Parse(std::string_view text);
  // The canonical text form; Parse(ToString()) == *this.
  std::string ToString() const;

  // IFRT's verifier plus range checks. INVALID_ARGUMENT when: a dim_shard or axis size is < 1;
  // permutation and axis_sizes differ in size or are empty; the permutation has duplicates or
  // out-of-range axes; the dims cannot be sharded onto the mesh ("Can't shard the dims ..."); more
  // than 2^24 slots.
  absl::Status Verify() const;
  // Verify() + rank of `shape` equals the number of dim_shards, no negative dims. INVALID_ARGUMENT
  // otherwise.
  absl::Status VerifyForShape(absl::Span<const int64_t> shape) const;
  // INVALID_ARGUMENT unless num_devices == NumDevices().
  absl::Status VerifyDeviceCount(int64_t num_devices) const;

  // Product of axis_sizes (the number of device slots).
  int NumDevices() const;
  // Product of dim_shards (at most NumDevices() once Verify() is OK; -1 when an unverified param's
  // product overflows int64_t).
  int64_t NumTiles() const;
  // NumDevices() / NumTiles(): how many slots hold each tile.
  int replication() const;

  const std::vector<int64_t>& dim_shards() const { return dim_shards_; }
  const MinorToMajor& minor_to_major() const { return minor_to_major_; }

  // IFRT's ToDeviceList: the device slot at each logical position. Precondition: Verify() is OK.
  std::vector<int> LogicalDeviceOrder() const;
  // For each device slot 0..NumDevices()-1, the tile index per dimension of the tile it holds
  // (replicas included). Precondition: Verify() is OK.
  std::vector<Index> DeviceTileIndices() const;

  friend bool operator==(const ShardingParam& a, const ShardingParam& b) {
    return a.dim_shards_ == b.dim_shards_ && a.minor_to_major_ == b.minor_to_major_;
  }
  friend bool operator!=(const ShardingParam& a, const ShardingParam& b) { return !(a == b); }
  template <typename H>
  friend H AbslHashValue(H h, const ShardingParam& p) {
    return H::combine(std::move(h), p.dim_shards_, p.minor_to_major_);
  }

 private:
  std::vector<int64_t> dim_shards_;
  MinorToMajor minor_to_major_;
};

}  // namespace tessera::sharding

#endif  // TESSERA_SHARDING_SHARDING_PARAM_H_
