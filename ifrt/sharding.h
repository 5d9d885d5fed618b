#ifndef TESSERA_IFRT_SHARDING_H_
#define TESSERA_IFRT_SHARDING_H_

// Sharding: how an array's elements are laid out over the devices of a DeviceList, in one kind of
// memory. A sharding binds the pure geometry of sharding/ (which box each device *slot* holds) to
// devices: slot i lives on devices()[i].
//
//   ShardingRef rows = *NamedSharding::Create(*sharding::Mesh::Parse("mesh{x=8}"),
//                                             *sharding::PartitionSpec::Parse("P(x,None)"),
//                                             devices, MemoryKind());
//   std::vector<IndexDomain> boxes = *rows->IndexDomains(Shape({8192, 8192}));
//
// The classes:
//   SingleDeviceSharding   the whole array on one device
//   OpaqueSharding         devices only, no geometry (arrays with it cannot be resharded)
//   ConcreteSharding       an explicit shape and box per device (any layout, even irregular)
//   ConcreteEvenSharding   one shard shape for every device (a row-major grid of tiles, replicated
//                          evenly when there are more devices than tiles)
//   ShardingParamSharding  IFRT IR's ShardingParam ("2x1 to [0] on 2")
//   NamedSharding          JAX's Mesh + PartitionSpec ("mesh{x=2,y=4}", "P(x,None)")
//
// Shardings are immutable and held through ShardingRef; all methods are thread-safe. Equality
// compares the class, the device list, the memory kind and the geometry. Shards may be uneven:
// tiles use ceil division, so the last tile along a dimension may be smaller, or empty.

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "ifrt/device_list.h"
#include "ifrt/memory_kind.h"
#include "ifrt/shape.h"
#include "sharding/mesh.h"
#include "sharding/partition_spec.h"
#include "sharding/shard_layout.h"
#include "sharding/sharding_param.h"

namespace tessera {

class Sharding;
using ShardingRef = std::shared_ptr<const Sharding>;

class Sharding {
 public:
  virtual ~Sharding() = default;
  Sharding(const Sharding&) = delete;
  Sharding& operator=(const Sharding&) = delete;

  const DeviceListRef& devices() const { return devices_; }
  MemoryKind memory_kind() const { return memory_kind_; }
  // Every device holds the whole array.
  bool IsFullyReplicated() const { return is_fully_replicated_; }

  // The shape of every shard of an array of `shape`. UNIMPLEMENTED for OpaqueSharding;
  // INVALID_ARGUMENT when shards differ in shape (ragged tiles, irregular concrete shardings) or
  // the rank does not fit.
  absl::StatusOr<Shape> GetShardShape(const Shape& shape) const;
  // Same class and the same geometry, whatever the devices and memory kind.
  virtual bool HasSamePartitioning(const Sharding& other) const = 0;
  // The same partitioning on `devices` (same count, else INVALID_ARGUMENT) and/or `memory_kind`.
  virtual absl::StatusOr<ShardingRef> WithDeviceAssignment(
      std::optional<DeviceListRef> devices, std::optional<MemoryKind> memory_kind) const = 0;
  // One (shard shape, SingleDeviceSharding) per device, in device-list order.
  absl::StatusOr<std::vector<std::pair<Shape, ShardingRef>>> Disassemble(const Shape& shape) const;
  // The box of every device, in device-list order.
  absl::StatusOr<std::vector<IndexDomain>> IndexDomains(const Shape& shape) const;
  // The geometry for an array of `shape`: the box of every slot. INVALID_ARGUMENT when the shape
  // does not fit the sharding; UNIMPLEMENTED for OpaqueSharding.
  virtual absl::StatusOr<sharding::ShardLayout> Layout(const Shape& shape) const = 0;

  virtual std::string DebugString() const = 0;

  friend bool operator==(const Sharding& a, const Sharding& b) {
    return &a == &b || (SameDeviceList(a.devices_, b.devices_) &&
                        a.memory_kind_ == b.memory_kind_ && a.HasSamePartitioning(b));
  }
  friend bool operator!=(const Sharding& a, const Sharding& b) { return !(a == b); }
  template <typename H>
  friend H AbslHashValue(H h, const Sharding& s) {
    return H::combine(std::move(h), s.devices_->hash(), s.memory_kind_, s.PartitioningHash());
  }

 protected:
  Sharding(DeviceListRef devices, MemoryKind memory_kind, bool is_fully_replicated)
      : devices_(std::move(devices)),
        memory_kind_(std::move(memory_kind)),
        is_fully_replicated_(is_fully_replicated) {}
  // A hash of the geometry alone, consistent with HasSamePartitioning.
  virtual size_t PartitioningHash() const = 0;
  // Checks a device assignment given to WithDeviceAssignment.
  absl::StatusOr<std::pair<DeviceListRef, MemoryKind>> ResolveAssignment(
      std::optional<DeviceListRef> devices, std::optional<MemoryKind> memory_kind) const;

 private:
  DeviceListRef devices_;
  MemoryKind memory_kind_;
  bool is_fully_replicated_;
};

class SingleDeviceSharding final : public Sharding {
 public:
  // Precondition: `device` is not null; a null device aborts the process with a message naming
  // this call (never a later segfault). Use CreateChecked for untrusted input.
  static ShardingRef Create(Device* device, MemoryKind memory_kind);
  // INVALID_ARGUMENT for a null device; otherwise Create(device, memory_kind).
  static absl::StatusOr<ShardingRef> CreateChecked(Device* device, MemoryKind memory_kind);
  Device* device() const { return devices()->devices()[0]; }
  bool HasSamePartitioning(const Sharding& other) const override;
  absl::StatusOr<ShardingRef> WithDeviceAssignment(
      std::optional<DeviceListRef> devices, std::optional<MemoryKind> memory_kind) const override;
  absl::StatusOr<sharding::ShardLayout> Layout(const Shape& shape) const override;
  std::string DebugString() const override;

 private:
  // Unchecked: only Create (which validates) builds one.
  SingleDeviceSharding(DeviceListRef devices, MemoryKind memory_kind)
      : Sharding(std::move(devices), std::move(memory_kind), true) {}

 protected:
  size_t PartitioningHash() const override { return 1; }
};

class OpaqueSharding final : public Sharding {
 public:
  // Precondition: `devices` is not null; a null list aborts the process with a message naming
  // this call. Use CreateChecked for untrusted input.
  static ShardingRef Create(DeviceListRef devices, MemoryKind memory_kind);
  // INVALID_ARGUMENT for a null device list; otherwise Create(devices, memory_kind).
  static absl::StatusOr<ShardingRef> CreateChecked(DeviceListRef devices, MemoryKind memory_kind);
  bool HasSamePartitioning(const Sharding& other) const override;
  absl::StatusOr<ShardingRef> WithDeviceAssignment(
      std::optional<DeviceListRef> devices, std::optional<MemoryKind> memory_kind) const override;
  absl::StatusOr<sharding::ShardLayout> Layout(const Shape& shape) const override;
  std::string DebugString() const override;

 private:
  // Unchecked: only Create (which validates) builds one.
  OpaqueSharding(DeviceListRef devices, MemoryKind memory_kind)
      : Sharding(std::move(devices), std::move(memory_kind), false) {}

 protected:
  size_t PartitioningHash() const override { return 2; }
};

class ConcreteSharding final : public Sharding {
 public:
  // INVALID_ARGUMENT for a null device list, a shape that fails ValidateShape, and unless there is
  // one shard shape and one index domain per device, each domain has its shard's shape, lies
  // inside `shape` (its end computed without overflow), and the domains together cover it.
  static absl::StatusOr<ShardingRef> Create(DeviceListRef devices, MemoryKind memory_kind,
                                            Shape shape, std::vector<Shape> shard_shapes,
                                            std::vector<IndexDomain> index_domains);
  const Shape& shape() const { return shape_; }
  const std::vector<Shape>& shard_shapes() const { return shard_shapes_; }
  const std::vector<IndexDomain>& index_domains() const { return index_domains_; }
  bool HasSamePartitioning(const Sharding& other) const override;
  absl::StatusOr<ShardingRef> WithDeviceAssignment(
      std::optional<DeviceListRef> devices, std::optional<MemoryKind> memory_kind) const override;
  absl::StatusOr<sharding::ShardLayout> Layout(const Shape& shape) const override;
  std::string DebugString() const override;

 private:
  // Unchecked: only Create (which validates) builds one.
  ConcreteSharding(DeviceListRef devices, MemoryKind memory_kind, Shape shape,
                   std::vector<Shape> shard_shapes, std::vector<IndexDomain> index_domains,
                   sharding::ShardLayout layout);

 protected:
  size_t PartitioningHash() const override;

 private:
  Shape shape_;
  std::vector<Shape> shard_shapes_;
  std::vector<IndexDomain> index_domains_;
  sharding::ShardLayout layout_;
};

class ConcreteEvenSharding final : public Sharding {
 public:
  // Shards tile `shape` as a row-major grid of `shard_shape` tiles (ceil division); with more
  // devices than tiles, each tile is held by devices/tiles consecutive devices. INVALID_ARGUMENT
  // for a null device list, when ranks differ, a size is negative, an element count overflows
  // int64 (ValidateShape), or the device count is not a multiple of the tile count (or, with
  // is_fully_replicated, shard_shape != shape).
  static absl::StatusOr<ShardingRef> Create(DeviceListRef devices, MemoryKind memory_kind,
                                            Shape shape, Shape shard_shape,
                                            bool is_fully_replicated = false);
  const Shape& shape() const { return shape_; }
  const Shape& shard_shape() const { return shard_shape_; }
  bool HasSamePartitioning(const Sharding& other) const override;
  absl::StatusOr<ShardingRef> WithDeviceAssignment(
      std::optional<DeviceListRef> devices, std::optional<MemoryKind> memory_kind) const override;
  absl::StatusOr<sharding::ShardLayout> Layout(const Shape& shape) const override;
  std::string DebugString() const override;

 private:
  // Unchecked: only Create (which validates) builds one.
  ConcreteEvenSharding(DeviceListRef devices, MemoryKind memory_kind, Shape shape,
                       Shape shard_shape, bool is_fully_replicated, sharding::ShardLayout layout);

 protected:
  size_t PartitioningHash() const override;

 private:
  Shape shape_;
  Shape shard_shape_;
  sharding::ShardLayout layout_;
};

class ShardingParamSharding final : public Sharding {
 public:
  // INVALID_ARGUMENT when the param is invalid or its device count differs from the list's.
  static absl::StatusOr<ShardingRef> Create(sharding::ShardingParam param, DeviceListRef devices,
                                            MemoryKind memory_kind);
  const sharding::ShardingParam& sharding_param() const { return param_; }
  bool HasSamePartitioning(const Sharding& other) const override;
  absl::StatusOr<ShardingRef> WithDeviceAssignment(
      std::optional<DeviceListRef> devices, std::optional<MemoryKind> memory_kind) const override;
  absl::StatusOr<sharding::ShardLayout> Layout(const Shape& shape) const override;
  std::string DebugString() const override;

 private:
  // Unchecked: only Create (which validates) builds one.
  ShardingParamSharding(sharding::ShardingParam param, DeviceListRef devices,
                        MemoryKind memory_kind);

 protected:
  size_t PartitioningHash() const override;

 private:
  sharding::ShardingParam param_;
};

// JAX's NamedSharding: devices()[i] is the i-th device of the mesh in row-major order of its axes.
class NamedSharding final : public Sharding {
 public:
  // INVALID_ARGUMENT when the mesh's device count differs from the list's or the spec names an
  // axis the mesh lacks (or names one twice).
  static absl::StatusOr<ShardingRef> Create(sharding::Mesh mesh, sharding::PartitionSpec spec,
                                            DeviceListRef devices, MemoryKind memory_kind);
  const sharding::Mesh& mesh() const { return mesh_; }
  const sharding::PartitionSpec& spec() const { return spec_; }
  // The equivalent ShardingParam for arrays of rank `rank`.
  absl::StatusOr<sharding::ShardingParam> ToShardingParam(int rank) const;
  bool HasSamePartitioning(const Sharding& other) const override;
  absl::StatusOr<ShardingRef> WithDeviceAssignment(
      std::optional<DeviceListRef> devices, std::optional<MemoryKind> memory_kind) const override;
  absl::StatusOr<sharding::ShardLayout> Layout(const Shape& shape) const override;
  std::string DebugString() const override;

 private:
  // Unchecked: only Create (which validates) builds one.
  NamedSharding(sharding::Mesh mesh, sharding::PartitionSpec spec, DeviceListRef devices,
                MemoryKind memory_kind, bool is_fully_replicated);

 protected:
  size_t PartitioningHash() const override;

 private:
  sharding::Mesh mesh_;
  sharding::PartitionSpec spec_;
};

}  // namespace tessera

#endif  // TESSERA_IFRT_SHARDING_H_
