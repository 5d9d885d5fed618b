#include "ifrt/sharding.h"

#include <cstdio>
#include <cstdlib>

#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/checked_math.h"

namespace tessera {
namespace {

sharding::Index ToIndex(absl::Span<const int64_t> v) { return sharding::Index(v.begin(), v.end()); }

// A broken non-null precondition of an unchecked factory: abort with a message, never segfault.
[[noreturn]] void DieNull(const char* call, const char* argument) {
  std::fprintf(stderr, "tessera: fatal: %s called with a null %s (use CreateChecked)\n", call,
               argument);
  std::abort();
}

std::string DevicesAndMemory(const Sharding& s) {
  return absl::StrCat("devices=", s.devices()->DebugString(),
                      ", memory_kind=", s.memory_kind().DebugString());
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Sharding

absl::StatusOr<Shape> Sharding::GetShardShape(const Shape& shape) const {
  absl::StatusOr<sharding::ShardLayout> layout = Layout(shape);
  if (!layout.ok()) return layout.status();
  const sharding::Index first = layout->shard_shape(0);
  for (int i = 1; i < layout->num_slots(); ++i) {
    if (layout->shard_shape(i) != first) {
      return absl::InvalidArgumentError(absl::StrCat(
          "shards of ", shape.DebugString(), " under ", DebugString(), " differ in shape (device ",
          i, " holds [", absl::StrJoin(layout->shard_shape(i), ","), "], device 0 holds [",
          absl::StrJoin(first, ","), "])"));
    }
  }
  return Shape(first);
}

absl::StatusOr<std::vector<std::pair<Shape, ShardingRef>>> Sharding::Disassemble(
    const Shape& shape) const {
  absl::StatusOr<sharding::ShardLayout> layout = Layout(shape);
  if (!layout.ok()) return layout.status();
  std::vector<std::pair<Shape, ShardingRef>> out;
  out.reserve(layout->num_slots());
  for (int i = 0; i < layout->num_slots(); ++i) {
    out.emplace_back(Shape(layout->shard_shape(i)),
                     SingleDeviceSharding::Create(devices_->devices()[i], memory_kind_));
  }
  return out;
}

absl::StatusOr<std::vector<IndexDomain>> Sharding::IndexDomains(const Shape& shape) const {
  absl::StatusOr<sharding::ShardLayout> layout = Layout(shape);
  if (!layout.ok()) return layout.status();
  std::vector<IndexDomain> out;
  out.reserve(layout->num_slots());
  for (int i = 0; i < layout->num_slots(); ++i) {
    const sharding::Box& box = layout->slot_box(i);
    out.emplace_back(Index(box.origin().begin(), box.origin().end()), Shape(box.shape()));
  }
  return out;
}

absl::StatusOr<std::pair<DeviceListRef, MemoryKind>> Sharding::ResolveAssignment(
    std::optional<DeviceListRef> devices, std::optional<MemoryKind> memory_kind) const {
  DeviceListRef new_devices = devices.has_value() && *devices != nullptr ? *devices : devices_;
  if (new_devices->size() != devices_->size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("WithDeviceAssignment: the new device list has ", new_devices->size(),
                     " devices but the sharding has ", devices_->size(), " (", DebugString(), ")"));
  }
  return std::make_pair(new_devices, memory_kind.value_or(memory_kind_));
}

// ---------------------------------------------------------------------------------------------
// SingleDeviceSharding

ShardingRef SingleDeviceSharding::Create(Device* device, MemoryKind memory_kind) {
  if (device == nullptr) DieNull("SingleDeviceSharding::Create", "device");
  return std::shared_ptr<const SingleDeviceSharding>(new SingleDeviceSharding(
      *DeviceList::Create(absl::MakeConstSpan(&device, 1)), std::move(memory_kind)));
}

absl::StatusOr<ShardingRef> SingleDeviceSharding::CreateChecked(Device* device,
                                                                MemoryKind memory_kind) {
  if (device == nullptr) return absl::InvalidArgumentError("SingleDeviceSharding: null device");
  return Create(device, std::move(memory_kind));
}

bool SingleDeviceSharding::HasSamePartitioning(const Sharding& other) const {
  return dynamic_cast<const SingleDeviceSharding*>(&other) != nullptr;
}

absl::StatusOr<ShardingRef> SingleDeviceSharding::WithDeviceAssignment(
    std::optional<DeviceListRef> devices, std::optional<MemoryKind> memory_kind) const {
  auto resolved = ResolveAssignment(std::move(devices), std::move(memory_kind));
  if (!resolved.ok()) return resolved.status();
  return ShardingRef(std::shared_ptr<const SingleDeviceSharding>(
      new SingleDeviceSharding(resolved->first, resolved->second)));
}

absl::StatusOr<sharding::ShardLayout> SingleDeviceSharding::Layout(const Shape& shape) const {
  if (absl::Status s = ValidateShape(shape); !s.ok()) return s;
  return sharding::ShardLayout::Replicated(shape.dims(), 1);
}

std::string SingleDeviceSharding::DebugString() const {
  return absl::StrCat("SingleDeviceSharding(", device()->ToString(),
                      ", memory_kind=", memory_kind().DebugString(), ")");
}

// ---------------------------------------------------------------------------------------------
// OpaqueSharding

ShardingRef OpaqueSharding::Create(DeviceListRef devices, MemoryKind memory_kind) {
  if (devices == nullptr) DieNull("OpaqueSharding::Create", "device list");
  return std::shared_ptr<const OpaqueSharding>(
      new OpaqueSharding(std::move(devices), std::move(memory_kind)));
}

absl::StatusOr<ShardingRef> OpaqueSharding::CreateChecked(DeviceListRef devices,
                                                          MemoryKind memory_kind) {
  if (devices == nullptr) return absl::InvalidArgumentError("OpaqueSharding: null device list");
  return Create(std::move(devices), std::move(memory_kind));
}

bool OpaqueSharding::HasSamePartitioning(const Sharding& other) const {
  // Nothing is known of an opaque sharding's geometry: only the same object
  // partitions alike.
  return this == &other;
}

absl::StatusOr<ShardingRef> OpaqueSharding::WithDeviceAssignment(
    std::optional<DeviceListRef> devices, std::optional<MemoryKind> memory_kind) const {
  auto resolved = ResolveAssignment(std::move(devices), std::move(memory_kind));
  if (!resolved.ok()) return resolved.status();
  return ShardingRef(
      std::shared_ptr<const OpaqueSharding>(new OpaqueSharding(resolved->first, resolved->second)));
}

absl::StatusOr<sharding::ShardLayout> OpaqueSharding::Layout(const Shape& shape) const {
  return absl::UnimplementedError(absl::StrCat("OpaqueSharding has no geometry: cannot lay out ",
                                               shape.DebugString(), " over ",
                                               devices()->DebugString()));
}

std::string OpaqueSharding::DebugString() const {
  return absl::StrCat("OpaqueSharding(", DevicesAndMemory(*this), ")");
}

// ---------------------------------------------------------------------------------------------
// ConcreteSharding

ConcreteSharding::ConcreteSharding(DeviceListRef devices, MemoryKind memory_kind, Shape shape,
                                   std::vector<Shape> shard_shapes,
                                   std::vector<IndexDomain> index_domains,
                                   sharding::ShardLayout layout)
    : Sharding(std::move(devices), std::move(memory_kind), layout.IsFullyReplicated()),
      shape_(std::move(shape)),
      shard_shapes_(std::move(shard_shapes)),
      index_domains_(std::move(index_domains)),
      layout_(std::move(layout)) {}

absl::StatusOr<ShardingRef> ConcreteSharding::Create(DeviceListRef devices, MemoryKind memory_kind,
                                                     Shape shape, std::vector<Shape> shard_shapes,
                                                     std::vector<IndexDomain> index_domains) {
  if (devices == nullptr) return absl::InvalidArgumentError("ConcreteSharding: null device list");
  if (absl::Status s = ValidateShape(shape); !s.ok()) return s;
  const size_t n = devices->size();
  if (shard_shapes.size() != n || index_domains.size() != n) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ConcreteSharding: ", n, " devices need as many shard shapes and index domains; got ",
        shard_shapes.size(), " shard shapes and ", index_domains.size(), " index domains"));
  }
  std::vector<sharding::Box> boxes;
  boxes.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    if (index_domains[i].shape() != shard_shapes[i]) {
      return absl::InvalidArgumentError(
          absl::StrCat("ConcreteSharding: shard ", i, " has shape ", shard_shapes[i].DebugString(),
                       " but its index domain is ", index_domains[i].DebugString()));
    }
    if (index_domains[i].origin().size() != static_cast<size_t>(shape.rank()) ||
        shard_shapes[i].rank() != shape.rank()) {
      return absl::InvalidArgumentError(
          absl::StrCat("ConcreteSharding: index domain ", i, " ", index_domains[i].DebugString(),
                       " does not have the rank of ", shape.DebugString()));
    }
    absl::StatusOr<sharding::Box> box = sharding::Box::Create(
        ToIndex(index_domains[i].origin()), ToIndex(index_domains[i].shape().dims()));
    if (!box.ok()) return box.status();
    boxes.push_back(*std::move(box));
  }
  absl::StatusOr<sharding::ShardLayout> layout =
      sharding::ShardLayout::FromBoxes(shape.dims(), std::move(boxes));
  if (!layout.ok()) return layout.status();
  return ShardingRef(std::shared_ptr<const ConcreteSharding>(
      new ConcreteSharding(std::move(devices), std::move(memory_kind), std::move(shape),
                           std::move(shard_shapes), std::move(index_domains), *std::move(layout))));
}

bool ConcreteSharding::HasSamePartitioning(const Sharding& other) const {
  const auto* o = dynamic_cast<const ConcreteSharding*>(&other);
  return o != nullptr && o->shape_ == shape_ && o->index_domains_ == index_domains_;
}

size_t ConcreteSharding::PartitioningHash() const {
  return absl::HashOf(3, shape_, index_domains_);
}

absl::StatusOr<ShardingRef> ConcreteSharding::WithDeviceAssignment(
    std::optional<DeviceListRef> devices, std::optional<MemoryKind> memory_kind) const {
  auto resolved = ResolveAssignment(std::move(devices), std::move(memory_kind));
  if (!resolved.ok()) return resolved.status();
  return ShardingRef(std::shared_ptr<const ConcreteSharding>(new ConcreteSharding(
      resolved->first, resolved->second, shape_, shard_shapes_, index_domains_, layout_)));
}

absl::StatusOr<sharding::ShardLayout> ConcreteSharding::Layout(const Shape& shape) const {
  if (shape != shape_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ConcreteSharding is for shape ", shape_.DebugString(), ", not ", shape.DebugString()));
  }
  return layout_;
}

std::string ConcreteSharding::DebugString() const {
  return absl::StrCat("ConcreteSharding(shape=", shape_.DebugString(), ", index_domains=[",
                      absl::StrJoin(index_domains_, ",",
                                    [](std::string* out, const IndexDomain& d) {
                                      absl::StrAppend(out, d.DebugString());
                                    }),
                      "], ", DevicesAndMemory(*this), ")");
}

// ---------------------------------------------------------------------------------------------
// ConcreteEvenSharding

ConcreteEvenSharding::ConcreteEvenSharding(DeviceListRef devices, MemoryKind memory_kind,
                                           Shape shape, Shape shard_shape, bool is_fully_replicated,
                                           sharding::ShardLayout layout)
    : Sharding(std::move(devices), std::move(memory_kind), is_fully_replicated),
      shape_(std::move(shape)),
      shard_shape_(std::move(shard_shape)),
      layout_(std::move(layout)) {}

absl::StatusOr<ShardingRef> ConcreteEvenSharding::Create(DeviceListRef devices,
                                                         MemoryKind memory_kind, Shape shape,
                                                         Shape shard_shape,
                                                         bool is_fully_replicated) {
  if (devices == nullptr) {
    return absl::InvalidArgumentError("ConcreteEvenSharding: null device list");
  }
  if (absl::Status s = ValidateShape(shape); !s.ok()) return s;
  if (absl::Status s = ValidateShape(shard_shape); !s.ok()) return s;
  if (shape.rank() != shard_shape.rank()) {
    return absl::InvalidArgumentError(
        absl::StrCat("ConcreteEvenSharding: shard shape ", shard_shape.DebugString(),
                     " does not have the rank of ", shape.DebugString()));
  }
  const int n = devices->size();
  if (is_fully_replicated) {
    if (shard_shape != shape) {
      return absl::InvalidArgumentError(
          absl::StrCat("ConcreteEvenSharding: a fully replicated sharding needs shard shape "
                       "== shape; got ",
                       shard_shape.DebugString(), " for ", shape.DebugString()));
    }
    return ShardingRef(std::shared_ptr<const ConcreteEvenSharding>(
        new ConcreteEvenSharding(std::move(devices), std::move(memory_kind), shape, shard_shape,
                                 true, sharding::ShardLayout::Replicated(shape.dims(), n))));
  }
  // A row-major grid of tiles of shard_shape; every tile held by n / tiles
  // consecutive devices.
  std::vector<int64_t> tiles_per_dim;
  int64_t tiles = 1;
  for (int d = 0; d < shape.rank(); ++d) {
    const int64_t size = shape.dims()[d], tile = shard_shape.dims()[d];
    if (tile == 0 && size != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("ConcreteEvenSharding: shard shape ", shard_shape.DebugString(),
                       " has an empty dimension ", d, " but ", shape.DebugString(), " does not"));
    }
    const int64_t count = size == 0 ? 1 : base::CeilDiv(size, tile);
    tiles_per_dim.push_back(count);
    // count <= size, so a shape that passed ValidateShape keeps this in range; checked anyway.
    const std::optional<int64_t> product = base::CheckedMul(tiles, count);
    if (!product.has_value()) {
      return absl::InvalidArgumentError(absl::StrCat("ConcreteEvenSharding: ", shape.DebugString(),
                                                     " in tiles of ", shard_shape.DebugString(),
                                                     " makes a tile count that overflows int64"));
    }
    tiles = *product;
  }
  if (tiles > n || n % tiles != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ConcreteEvenSharding: ", shape.DebugString(), " in tiles of ", shard_shape.DebugString(),
        " makes ", tiles, " tiles, which ", n, " devices cannot hold evenly"));
  }
  const int64_t replication = n / tiles;
  std::vector<sharding::Box> boxes;
  boxes.reserve(n);
  for (int i = 0; i < n; ++i) {
    int64_t t = i / replication;
    sharding::Index origin(shape.rank()), size(shape.rank());
    for (int d = shape.rank() - 1; d >= 0; --d) {
      const int64_t k = t % tiles_per_dim[d];
      t /= tiles_per_dim[d];
      origin[d] = std::min(shape.dims()[d], k * shard_shape.dims()[d]);
      size[d] = std::min(shard_shape.dims()[d], shape.dims()[d] - origin[d]);
    }
    boxes.emplace_back(std::move(origin), std::move(size));
  }
  absl::StatusOr<sharding::ShardLayout> layout =
      sharding::ShardLayout::FromBoxes(shape.dims(), std::move(boxes));
  if (!layout.ok()) return layout.status();
  const bool replicated = layout->IsFullyReplicated();
  return ShardingRef(std::shared_ptr<const ConcreteEvenSharding>(
      new ConcreteEvenSharding(std::move(devices), std::move(memory_kind), std::move(shape),
                               std::move(shard_shape), replicated, *std::move(layout))));
}

bool ConcreteEvenSharding::HasSamePartitioning(const Sharding& other) const {
  const auto* o = dynamic_cast<const ConcreteEvenSharding*>(&other);
  return o != nullptr && o->shape_ == shape_ && o->shard_shape_ == shard_shape_ &&
         o->IsFullyReplicated() == IsFullyReplicated();
}

size_t ConcreteEvenSharding::PartitioningHash() const {
  return absl::HashOf(4, shape_, shard_shape_, IsFullyReplicated());
}

absl::StatusOr<ShardingRef> ConcreteEvenSharding::WithDeviceAssignment(
    std::optional<DeviceListRef> devices, std::optional<MemoryKind> memory_kind) const {
  auto resolved = ResolveAssignment(std::move(devices), std::move(memory_kind));
  if (!resolved.ok()) return resolved.status();
  return ShardingRef(std::shared_ptr<const ConcreteEvenSharding>(new ConcreteEvenSharding(
      resolved->first, resolved->second, shape_, shard_shape_, IsFullyReplicated(), layout_)));
}

absl::StatusOr<sharding::ShardLayout> ConcreteEvenSharding::Layout(const Shape& shape) const {
  if (shape != shape_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ConcreteEvenSharding is for shape ", shape_.DebugString(), ", not ", shape.DebugString()));
  }
  return layout_;
}

std::string ConcreteEvenSharding::DebugString() const {
  return absl::StrCat("ConcreteEvenSharding(shape=", shape_.DebugString(),
                      ", shard_shape=", shard_shape_.DebugString(),
                      IsFullyReplicated() ? ", fully_replicated" : "", ", ",
                      DevicesAndMemory(*this), ")");
}

// ---------------------------------------------------------------------------------------------
// ShardingParamSharding

namespace {
bool ParamIsFullyReplicated(const sharding::ShardingParam& p) { return p.NumTiles() == 1; }
}  // namespace

ShardingParamSharding::ShardingParamSharding(sharding::ShardingParam param, DeviceListRef devices,
                                             MemoryKind memory_kind)
    : Sharding(std::move(devices), std::move(memory_kind), ParamIsFullyReplicated(param)),
      param_(std::move(param)) {}

absl::StatusOr<ShardingRef> ShardingParamSharding::Create(sharding::ShardingParam param,
                                                          DeviceListRef devices,
                                                          MemoryKind memory_kind) {
  if (devices == nullptr) {
    return absl::InvalidArgumentError("ShardingParamSharding: null device list");
  }
  if (absl::Status s = param.Verify(); !s.ok()) return s;
  if (absl::Status s = param.VerifyDeviceCount(devices->size()); !s.ok()) return s;
  return ShardingRef(std::shared_ptr<const ShardingParamSharding>(
      new ShardingParamSharding(std::move(param), std::move(devices), std::move(memory_kind))));
}

bool ShardingParamSharding::HasSamePartitioning(const Sharding& other) const {
  const auto* o = dynamic_cast<const ShardingParamSharding*>(&other);
  return o != nullptr && o->param_ == param_;
}

size_t ShardingParamSharding::PartitioningHash() const { return absl::HashOf(5, param_); }

absl::StatusOr<ShardingRef> ShardingParamSharding::WithDeviceAssignment(
    std::optional<DeviceListRef> devices, std::optional<MemoryKind> memory_kind) const {
  auto resolved = ResolveAssignment(std::move(devices), std::move(memory_kind));
  if (!resolved.ok()) return resolved.status();
  return ShardingRef(std::shared_ptr<const ShardingParamSharding>(
      new ShardingParamSharding(param_, resolved->first, resolved->second)));
}

absl::StatusOr<sharding::ShardLayout> ShardingParamSharding::Layout(const Shape& shape) const {
  return sharding::ShardLayout::FromShardingParam(param_, shape.dims());
}

std::string ShardingParamSharding::DebugString() const {
  return absl::StrCat("ShardingParamSharding(", param_.ToString(), ", ", DevicesAndMemory(*this),
                      ")");
}

// ---------------------------------------------------------------------------------------------
// NamedSharding

namespace {
bool SpecIsFullyReplicated(const sharding::Mesh& mesh, const sharding::PartitionSpec& spec) {
  for (const auto& dim : spec.dims()) {
    for (const std::string& name : dim) {
      for (const auto& axis : mesh.axes()) {
        if (axis.name == name && axis.size > 1) return false;
      }
    }
  }
  return true;
}
}  // namespace

NamedSharding::NamedSharding(sharding::Mesh mesh, sharding::PartitionSpec spec,
                             DeviceListRef devices, MemoryKind memory_kind,
                             bool is_fully_replicated)
    : Sharding(std::move(devices), std::move(memory_kind), is_fully_replicated),
      mesh_(std::move(mesh)),
      spec_(std::move(spec)) {}

absl::StatusOr<ShardingRef> NamedSharding::Create(sharding::Mesh mesh, sharding::PartitionSpec spec,
                                                  DeviceListRef devices, MemoryKind memory_kind) {
  if (devices == nullptr) return absl::InvalidArgumentError("NamedSharding: null device list");
  if (mesh.num_devices() != devices->size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("NamedSharding: ", mesh.ToString(), " has ", mesh.num_devices(),
                     " devices but the list ", devices->DebugString(), " has ", devices->size()));
  }
  // Validate the axis names now (the rank is only known per array; use the
  // spec's own length).
  if (auto p = sharding::ToShardingParam(mesh, spec, spec.size()); !p.ok()) return p.status();
  const bool replicated = SpecIsFullyReplicated(mesh, spec);
  return ShardingRef(std::shared_ptr<const NamedSharding>(new NamedSharding(
      std::move(mesh), std::move(spec), std::move(devices), std::move(memory_kind), replicated)));
}

absl::StatusOr<sharding::ShardingParam> NamedSharding::ToShardingParam(int rank) const {
  return sharding::ToShardingParam(mesh_, spec_, rank);
}

bool NamedSharding::HasSamePartitioning(const Sharding& other) const {
  const auto* o = dynamic_cast<const NamedSharding*>(&other);
  return o != nullptr && o->mesh_ == mesh_ && o->spec_ == spec_;
}

size_t NamedSharding::PartitioningHash() const { return absl::HashOf(6, mesh_, spec_); }

absl::StatusOr<ShardingRef> NamedSharding::WithDeviceAssignment(
    std::optional<DeviceListRef> devices, std::optional<MemoryKind> memory_kind) const {
  auto resolved = ResolveAssignment(std::move(devices), std::move(memory_kind));
  if (!resolved.ok()) return resolved.status();
  return ShardingRef(std::shared_ptr<const NamedSharding>(
      new NamedSharding(mesh_, spec_, resolved->first, resolved->second, IsFullyReplicated())));
}

absl::StatusOr<sharding::ShardLayout> NamedSharding::Layout(const Shape& shape) const {
  absl::StatusOr<sharding::ShardingParam> param = ToShardingParam(shape.rank());
  if (!param.ok()) return param.status();
  return sharding::ShardLayout::FromShardingParam(*param, shape.dims());
}

std::string NamedSharding::DebugString() const {
  return absl::StrCat("NamedSharding(", mesh_.ToString(), " ", spec_.ToString(), ", ",
                      DevicesAndMemory(*this), ")");
}

}  // namespace tessera
