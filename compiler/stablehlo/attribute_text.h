#ifndef TESSERA_COMPILER_STABLEHLO_ATTRIBUTE_TEXT_H_
#define TESSERA_COMPILER_STABLEHLO_ATTRIBUTE_TEXT_H_

// compiler/stablehlo/attribute_text.h: the bodies of the StableHLO and Shardy attributes that a
// program in generic form carries as opaque text (their dialects are not registered: no Debian
// package has them), parsed into plain values.
//
//   ParseDotDimensions("dot<lhs_batching_dimensions = [0], rhs_batching_dimensions = [0], "
//                      "lhs_contracting_dimensions = [2], rhs_contracting_dimensions = [1]>")
//   ParseConvDimensions("conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>")    // NHWC, HWIO, NHWC
//   ParseEnumAttr("<comparison_direction EQ>", "comparison_direction")     // "EQ"
//   ParseSdyMesh("mesh<[\"dp\"=2, \"tp\"=4]>")                             // axes dp=2, tp=4
//   ParseSdySharding("sharding<@mesh, [{\"dp\"}, {}]>")                    // mesh "mesh", [[dp],
//   []]
//   ParseGspmdSharding("{devices=[2,1,4]<=[8] last_tile_dim_replicate}")   // tiles [2, 1], 4
//   replicas
//
// Each parser takes the attribute's text after its dialect prefix, as MLIR's OpaqueAttr holds it,
// with or without the mnemonic. INVALID_ARGUMENT names what was expected and where ("... at
// position N" into the text, quoted). Abseil only (no MLIR), so that a fuzz target builds it.
// Free functions, thread-safe.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace tessera::compiler::stablehlo {

// stablehlo.dot_general's dimension numbers; a list the text omits is empty.
struct DotDimensions {
  std::vector<int64_t> lhs_batch;
  std::vector<int64_t> rhs_batch;
  std::vector<int64_t> lhs_contracting;
  std::vector<int64_t> rhs_contracting;
};
absl::StatusOr<DotDimensions> ParseDotDimensions(std::string_view text);

// stablehlo.gather's and stablehlo.scatter's dimension numbers (the fields JAX sets; a list the
// text omits is empty).
struct GatherDimensions {
  std::vector<int64_t> offset_dims;                   // gather
  std::vector<int64_t> collapsed_slice_dims;          // gather
  std::vector<int64_t> operand_batching_dims;         // both
  std::vector<int64_t> start_indices_batching_dims;   // both
  std::vector<int64_t> start_index_map;               // gather
  std::vector<int64_t> update_window_dims;            // scatter
  std::vector<int64_t> inserted_window_dims;          // scatter
  std::vector<int64_t> scatter_dims_to_operand_dims;  // scatter
  int64_t index_vector_dim = 0;                       // StableHLO prints none when 0
};
absl::StatusOr<GatherDimensions> ParseGatherDimensions(std::string_view text);

// stablehlo.convolution's dimension numbers: which dimension of the input (lhs), the kernel
// (rhs) and the output holds the batch, the features and each spatial dimension (spatial
// dimension s of the input is paired with spatial dimension s of the kernel and of the output).
// Read from the compact form StableHLO prints, `[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]` (each
// list one tensor's dimensions in order: b / f / i / o or the spatial index), or the raw form
// `raw input_batch_dimension = 0, ...`. INVALID_ARGUMENT: a label missing or repeated, spatial
// indices that are not 0..S-1 once each, lists of different spatial counts, over 64 dimensions.
struct ConvDimensions {
  int64_t input_batch = 0, input_feature = 0;
  std::vector<int64_t> input_spatial;
  int64_t kernel_input_feature = 0, kernel_output_feature = 0;
  std::vector<int64_t> kernel_spatial;
  int64_t output_batch = 0, output_feature = 0;
  std::vector<int64_t> output_spatial;
};
absl::StatusOr<ConvDimensions> ParseConvDimensions(std::string_view text);

// The value of an enum attribute "<name VALUE>" ("comparison_direction EQ" -> "EQ").
absl::StatusOr<std::string> ParseEnumAttr(std::string_view text, std::string_view name);

// A Shardy mesh: its axes in order and, when the text lists them, the device ids in mesh order.
struct SdyMesh {
  struct Axis {
    std::string name;
    int64_t size = 0;
  };
  std::vector<Axis> axes;
  std::vector<int64_t> device_ids;  // empty: 0, 1, ..., n-1
};
absl::StatusOr<SdyMesh> ParseSdyMesh(std::string_view text);

// A Shardy tensor sharding: the mesh (by name, or inline), the axes each dimension is sharded
// over (major to minor), and the axes it is explicitly replicated or left unreduced over.
struct SdySharding {
  std::string mesh_name;  // "@mesh" without the "@"; empty when inline
  std::optional<SdyMesh> inline_mesh;
  std::vector<std::vector<std::string>> dims;
  std::vector<std::string> replicated;
  std::vector<std::string> unreduced;
};
absl::StatusOr<SdySharding> ParseSdySharding(std::string_view text);

// A list of Shardy shardings, one per value (`#sdy.sharding_per_value<[<@mesh, ...>, ...]>`).
absl::StatusOr<std::vector<SdySharding>> ParseSdyShardingPerValue(std::string_view text);

// The mesh axes a manual computation (shard_map) takes over: `manual_axes{"x", "y"}` (the text of
// `#sdy<manual_axes{...}>`).
absl::StatusOr<std::vector<std::string>> ParseSdyManualAxes(std::string_view text);

// A GSPMD sharding string (`mhlo.sharding`, XLA's HloSharding text): `{replicated}`, or
// `{devices=[t0,t1,...]D}` with D the device at each tile (row-major): an explicit list `0,1,...`
// or an iota `<=[r0,r1,...]` optionally transposed `T(p0,p1,...)`, and optionally
// ` last_tile_dim_replicate` (or ` last_tile_dims={replicated}`): the last tile dimension
// replicates instead of splitting. UNIMPLEMENTED: maximal, manual and other subgroup kinds;
// INVALID_ARGUMENT: malformed text, a device list of another size than the tiles' product or not a
// permutation, more than 65,536 devices.
struct GspmdSharding {
  bool replicated = false;
  std::vector<int64_t> tiles;    // per tensor dimension (the replicate dimension excluded)
  int64_t replicas = 1;          // the size of the replicate dimension (1 without one)
  std::vector<int64_t> devices;  // the device of each tile (and replica), row-major
};
absl::StatusOr<GspmdSharding> ParseGspmdSharding(std::string_view text);

}  // namespace tessera::compiler::stablehlo

#endif  // TESSERA_COMPILER_STABLEHLO_ATTRIBUTE_TEXT_H_
