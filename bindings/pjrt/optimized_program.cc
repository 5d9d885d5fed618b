// The executable's interface as an HLO module with its shardings (optimized_program.h).

#include "bindings/pjrt/optimized_program.h"

#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bindings/pjrt/proto_writer.h"

namespace tessera::pjrt {
namespace {

// xla::PrimitiveType's numbers.
constexpr int64_t kTuple = 13;
constexpr int64_t kU32 = 8;

absl::StatusOr<int64_t> PrimitiveType(tessera::DType dtype) {
  switch (dtype.kind()) {
    case tessera::DType::kPred:
      return 1;
    case tessera::DType::kS8:
      return 2;
    case tessera::DType::kS16:
      return 3;
    case tessera::DType::kS32:
      return 4;
    case tessera::DType::kS64:
      return 5;
    case tessera::DType::kU8:
      return 6;
    case tessera::DType::kU16:
      return 7;
    case tessera::DType::kU32:
      return kU32;
    case tessera::DType::kU64:
      return 9;
    case tessera::DType::kF16:
      return 10;
    case tessera::DType::kF32:
      return 11;
    case tessera::DType::kF64:
      return 12;
    case tessera::DType::kBF16:
      return 16;
    default:
      return absl::UnimplementedError(absl::StrCat("an HLO type for ", dtype.DebugString()));
  }
}

// A dense row-major array ShapeProto.
ProtoWriter ArrayShape(int64_t element_type, const std::vector<int64_t>& dims) {
  std::vector<int64_t> minor_to_major;
  for (size_t i = dims.size(); i-- > 0;) minor_to_major.push_back(static_cast<int64_t>(i));
  ProtoWriter layout;
  layout.Packed(1, minor_to_major).Varint(16, 1);
  ProtoWriter shape;
  shape.Varint(2, static_cast<uint64_t>(element_type)).Packed(3, dims).Message(5, layout);
  return shape;
}

absl::StatusOr<ProtoWriter> ShardShape(const tessera::ArraySpec& spec) {
  absl::StatusOr<int64_t> type = PrimitiveType(spec.dtype);
  if (!type.ok()) return type.status();
  absl::StatusOr<sharding::ShardLayout> layout = spec.sharding->Layout(spec.shape);
  if (!layout.ok()) return layout.status();
  sharding::Index shard = layout->shard_shape(0);
  return ArrayShape(*type, std::vector<int64_t>(shard.begin(), shard.end()));
}

// How an array of `spec` is tiled over `devices` (the executable's, in partition order), as
// HLO's tiled sharding: `tiles` per dimension, then (when shards repeat) a last dimension of
// `replicas`; `partitions` lists the partition holding each tile, row-major. Empty `tiles` for
// a replicated array. UNIMPLEMENTED for shards that are no even grid of tiles.
struct TileAssignment {
  std::vector<int64_t> tiles;
  int64_t replicas = 1;
  std::vector<int64_t> partitions;
};

absl::StatusOr<TileAssignment> TileAssignmentOf(
    const tessera::ArraySpec& spec, const std::vector<const tessera::Device*>& devices) {
  absl::StatusOr<sharding::ShardLayout> layout = spec.sharding->Layout(spec.shape);
  if (!layout.ok()) return layout.status();
  const int rank = layout->rank();
  const sharding::Index shard = layout->shard_shape(0);
  std::vector<int64_t> tiles(rank, 1);
  int64_t tile_count = 1;
  for (int d = 0; d < rank; ++d) {
    if (shard[d] > 0) tiles[d] = (layout->global_shape()[d] + shard[d] - 1) / shard[d];
    tile_count *= tiles[d];
  }
  TileAssignment result;
  if (tile_count == 1) return result;
  // Each tile's holders, in the order of the sharding's devices, by row-major tile index.
  std::map<int64_t, std::vector<int64_t>> holders;
  absl::Span<tessera::Device* const> slots = spec.sharding->devices()->devices();
  for (int slot = 0; slot < layout->num_slots(); ++slot) {
    const sharding::Box& box = layout->slot_box(slot);
    int64_t tile = 0;
    for (int d = 0; d < rank; ++d) {
      if (box.size(d) != shard[d] || (shard[d] > 0 && box.origin()[d] % shard[d] != 0)) {
        return absl::UnimplementedError(
            absl::StrCat("an HLO sharding for shards that are no even grid of tiles (",
                         spec.DebugString(), ")"));
      }
      tile = tile * tiles[d] + (shard[d] > 0 ? box.origin()[d] / shard[d] : 0);
    }
    int64_t partition = -1;
    for (size_t p = 0; p < devices.size(); ++p) {
      if (devices[p] == slots[slot]) partition = static_cast<int64_t>(p);
    }
    if (partition < 0)
      return absl::InternalError("a sharding over a device the executable does not run on");
    holders[tile].push_back(partition);
  }
  result.tiles = tiles;
  result.replicas = static_cast<int64_t>(holders.begin()->second.size());
  for (int64_t tile = 0; tile < tile_count; ++tile) {
    auto it = holders.find(tile);
    if (it == holders.end() || static_cast<int64_t>(it->second.size()) != result.replicas) {
      return absl::UnimplementedError(
          absl::StrCat("an HLO sharding for tiles held by different numbers of devices (",
                       spec.DebugString(), ")"));
    }
    result.partitions.insert(result.partitions.end(), it->second.begin(), it->second.end());
  }
  return result;
}

ProtoWriter OpSharding(const TileAssignment& tiles) {
  ProtoWriter sharding;
  if (tiles.tiles.empty()) return sharding;  // type REPLICATED (0), the default
  std::vector<int64_t> dims = tiles.tiles;
  if (tiles.replicas > 1) dims.push_back(tiles.replicas);
  sharding.Varint(1, 3).Packed(3, dims).Packed(4, tiles.partitions);  // type OTHER
  if (tiles.replicas > 1) sharding.Varint(6, 1);
  return sharding;
}

// Instructions of the entry computation, numbered from 1.
class Computation {
 public:
  int64_t Add(ProtoWriter instruction, const std::string& name, const std::string& opcode,
              const ProtoWriter& shape, const std::vector<int64_t>& operands = {}) {
    const int64_t id = ++count_;
    instruction.String(1, absl::StrCat(name, ".", id)).String(2, opcode).Message(3, shape);
    instruction.Varint(35, static_cast<uint64_t>(id));
    if (!operands.empty()) instruction.Packed(36, operands);
    computation_.Message(2, instruction);
    return id;
  }
  ProtoWriter& proto() { return computation_; }

 private:
  ProtoWriter computation_;
  int64_t count_ = 0;
};

}  // namespace

absl::StatusOr<std::string> OptimizedProgram(const std::string& name,
                                             const std::vector<tessera::ArraySpec>& parameters,
                                             const std::vector<tessera::ArraySpec>& outputs,
                                             const std::vector<const tessera::Device*>& devices) {
  Computation entry;
  ProtoWriter program_shape;
  std::vector<ProtoWriter> parameter_shardings;
  for (size_t i = 0; i < parameters.size(); ++i) {
    absl::StatusOr<ProtoWriter> shape = ShardShape(parameters[i]);
    if (!shape.ok()) return shape.status();
    absl::StatusOr<TileAssignment> tiles = TileAssignmentOf(parameters[i], devices);
    if (!tiles.ok()) return tiles.status();
    parameter_shardings.push_back(OpSharding(*tiles));
    ProtoWriter parameter;
    parameter.Varint(9, i).Message(40, parameter_shardings.back());
    entry.Add(parameter, "Arg", "parameter", *shape);
    program_shape.Message(1, *shape).String(3, absl::StrCat("Arg_", i));
  }
  // Each result: a value of its shard shape (the partition id, converted and broadcast).
  std::vector<int64_t> results;
  std::vector<ProtoWriter> result_shapes;
  ProtoWriter output_sharding;
  std::vector<ProtoWriter> output_shardings;
  for (const tessera::ArraySpec& output : outputs) {
    absl::StatusOr<ProtoWriter> shape = ShardShape(output);
    if (!shape.ok()) return shape.status();
    absl::StatusOr<int64_t> type = PrimitiveType(output.dtype);
    if (!type.ok()) return type.status();
    absl::StatusOr<TileAssignment> tiles = TileAssignmentOf(output, devices);
    if (!tiles.ok()) return tiles.status();
    output_shardings.push_back(OpSharding(*tiles));
    int64_t id = entry.Add(ProtoWriter(), "partition-id", "partition-id", ArrayShape(kU32, {}));
    id = entry.Add(ProtoWriter(), "convert", "convert", ArrayShape(*type, {}), {id});
    results.push_back(entry.Add(ProtoWriter(), "broadcast", "broadcast", *shape, {id}));
    result_shapes.push_back(*shape);
  }
  ProtoWriter result_shape;
  ProtoWriter result_sharding;
  int64_t root = 0;
  if (outputs.size() == 1) {
    result_shape = result_shapes[0];
    result_sharding = output_shardings[0];
    root = results[0];
  } else {
    result_shape.Varint(2, kTuple);
    for (const ProtoWriter& s : result_shapes) result_shape.Message(4, s);
    result_sharding.Varint(1, 2);  // type TUPLE
    for (const ProtoWriter& s : output_shardings) result_sharding.Message(5, s);
    // XLA gives an empty tuple one (replicated) element sharding.
    if (output_shardings.empty()) result_sharding.Message(5, ProtoWriter());
    ProtoWriter tuple;
    tuple.Message(40, result_sharding);
    root = entry.Add(tuple, "tuple", "tuple", result_shape, results);
  }
  program_shape.Message(2, result_shape);
  constexpr int64_t kComputationId = 1;
  entry.proto()
      .String(1, "main")
      .Message(4, program_shape)
      .Varint(5, kComputationId)
      .Varint(6, static_cast<uint64_t>(root));

  ProtoWriter module;
  module.String(1, name.empty() ? "tessera" : name)
      .String(2, "main")
      .Message(3, entry.proto())
      .Message(4, program_shape)
      .Varint(5, 1)
      .Varint(6, kComputationId)
      .Message(12, result_sharding);
  for (const ProtoWriter& s : parameter_shardings) module.Message(14, s);
  ProtoWriter config;
  config.Message(1, program_shape).Varint(4, 1).Varint(5, devices.size()).Varint(7, 1);
  ProtoWriter with_config;
  with_config.Message(1, module).Message(2, config);
  return with_config.bytes();
}

}  // namespace tessera::pjrt
