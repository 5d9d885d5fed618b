#include "ifrt/runtime/program/collectives.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <string_view>
#include <type_traits>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace tessera::runtime {
namespace {

int64_t Product(absl::Span<const int64_t> dims, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) p *= dims[i];
  return p;
}

// A dense row-major array seen as [outer, axis, inner] around `axis`, in bytes for `inner`.
struct AxisView {
  int64_t outer = 1;
  int64_t axis = 1;
  int64_t inner_bytes = 0;
};
AxisView ViewAround(absl::Span<const int64_t> dims, int64_t axis, int64_t element_bytes) {
  return AxisView{Product(dims, 0, axis), dims[axis],
                  Product(dims, axis + 1, dims.size()) * element_bytes};
}

// Copies piece `index` of `groups` equal pieces along the view's axis into dense `out`.
void CopyPiece(const char* in, const AxisView& v, int64_t groups, int64_t index, char* out) {
  const int64_t piece = v.axis / groups * v.inner_bytes;
  for (int64_t o = 0; o < v.outer; ++o) {
    std::memcpy(out + o * piece, in + o * v.axis * v.inner_bytes + index * piece, piece);
  }
}

// Writes dense `piece` (the view's axis holding axis/groups) as piece `index` of `out`.
void PlacePiece(const char* piece, const AxisView& out_view, int64_t groups, int64_t index,
                char* out) {
  const int64_t bytes = out_view.axis / groups * out_view.inner_bytes;
  for (int64_t o = 0; o < out_view.outer; ++o) {
    std::memcpy(out + o * out_view.axis * out_view.inner_bytes + index * bytes, piece + o * bytes,
                bytes);
  }
}

// r[i] = r[i] (op) a[i] for i < n; `a` and `r` do not overlap. Runs of kLanes elements have a
// trip count the compiler knows, so it vectorizes them at -O2 (element by element the same
// operations in the same order: bit-identical to the scalar loop).
template <typename T, typename Op>
void AccumulateWith(const T* __restrict a, T* __restrict r, int64_t n, Op op) {
  constexpr int64_t kLanes = 16;
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int64_t l = 0; l < kLanes; ++l) r[i + l] = op(r[i + l], a[i + l]);
  }
  for (; i < n; ++i) r[i] = op(r[i], a[i]);
}

// The float kinds of ReductionKind (program_plan.h), exact on NaN and signed zeros: two equal
// operands are +-0 or the same value, so the AND (max) / OR (min) of their bits orders -0 < +0.
template <typename T>
using BitsOf = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
template <typename T>
T AndBits(T x, T y) {
  return std::bit_cast<T>(
      static_cast<BitsOf<T>>(std::bit_cast<BitsOf<T>>(x) & std::bit_cast<BitsOf<T>>(y)));
}
template <typename T>
T OrBits(T x, T y) {
  return std::bit_cast<T>(
      static_cast<BitsOf<T>>(std::bit_cast<BitsOf<T>>(x) | std::bit_cast<BitsOf<T>>(y)));
}
// maximum / minimum: NaN when either is NaN. maxnum / minnum: the other operand when one is NaN.
template <typename T>
T Maximum(T x, T y) {
  return x > y ? x : y > x ? y : x == y ? AndBits(x, y) : std::isnan(x) ? x : y;
}
template <typename T>
T Minimum(T x, T y) {
  return x < y ? x : y < x ? y : x == y ? OrBits(x, y) : std::isnan(x) ? x : y;
}
template <typename T>
T MaxNum(T x, T y) {
  return x > y ? x : y > x ? y : x == y ? AndBits(x, y) : std::isnan(x) ? y : x;
}
template <typename T>
T MinNum(T x, T y) {
  return x < y ? x : y < x ? y : x == y ? OrBits(x, y) : std::isnan(x) ? y : x;
}

// Whether `kind` applies to elements of type T (CheckKind refuses the others before a call).
template <typename T>
bool Applies(ReductionKind kind) {
  switch (kind) {
    case ReductionKind::kSum:
    case ReductionKind::kProduct:
    case ReductionKind::kMin:
    case ReductionKind::kMax:
      return true;
    case ReductionKind::kMinNum:
    case ReductionKind::kMaxNum:
      return std::is_floating_point_v<T>;
    case ReductionKind::kMinUnsigned:
    case ReductionKind::kMaxUnsigned:
    case ReductionKind::kAnd:
    case ReductionKind::kOr:
    case ReductionKind::kXor:
      return std::is_integral_v<T>;
  }
  return false;
}

template <typename T>
void AccumulateFloat(ReductionKind kind, const T* a, T* r, int64_t n) {
  switch (kind) {
    case ReductionKind::kSum:
      return AccumulateWith(a, r, n, [](T x, T y) { return x + y; });
    case ReductionKind::kProduct:
      return AccumulateWith(a, r, n, [](T x, T y) { return x * y; });
    case ReductionKind::kMin:
      return AccumulateWith(a, r, n, [](T x, T y) { return Minimum(x, y); });
    case ReductionKind::kMax:
      return AccumulateWith(a, r, n, [](T x, T y) { return Maximum(x, y); });
    case ReductionKind::kMinNum:
      return AccumulateWith(a, r, n, [](T x, T y) { return MinNum(x, y); });
    case ReductionKind::kMaxNum:
      return AccumulateWith(a, r, n, [](T x, T y) { return MaxNum(x, y); });
    default:
      return;  // integer kinds: refused by CheckKind
  }
}

// Integers: wrapping + and * (computed unsigned), min / max signed or unsigned, bitwise.
template <typename T>
void AccumulateInteger(ReductionKind kind, const T* a, T* r, int64_t n) {
  using U = std::make_unsigned_t<T>;
  switch (kind) {
    case ReductionKind::kSum:
      return AccumulateWith(a, r, n, [](T x, T y) { return static_cast<T>(U(x) + U(y)); });
    case ReductionKind::kProduct:
      return AccumulateWith(a, r, n, [](T x, T y) { return static_cast<T>(U(x) * U(y)); });
    case ReductionKind::kMin:
      return AccumulateWith(a, r, n, [](T x, T y) { return std::min(x, y); });
    case ReductionKind::kMax:
      return AccumulateWith(a, r, n, [](T x, T y) { return std::max(x, y); });
    case ReductionKind::kMinUnsigned:
      return AccumulateWith(a, r, n, [](T x, T y) { return U(x) < U(y) ? x : y; });
    case ReductionKind::kMaxUnsigned:
      return AccumulateWith(a, r, n, [](T x, T y) { return U(x) > U(y) ? x : y; });
    case ReductionKind::kAnd:
      return AccumulateWith(a, r, n, [](T x, T y) { return static_cast<T>(x & y); });
    case ReductionKind::kOr:
      return AccumulateWith(a, r, n, [](T x, T y) { return static_cast<T>(x | y); });
    case ReductionKind::kXor:
      return AccumulateWith(a, r, n, [](T x, T y) { return static_cast<T>(x ^ y); });
    default:
      return;  // float kinds: refused by CheckKind
  }
}

template <typename T>
void Accumulate(ReductionKind kind, const void* in, void* acc, int64_t n) {
  const T* a = static_cast<const T*>(in);
  T* r = static_cast<T*>(acc);
  if constexpr (std::is_floating_point_v<T>) {
    AccumulateFloat(kind, a, r, n);
  } else {
    AccumulateInteger(kind, a, r, n);
  }
}

using Accumulator = void (*)(ReductionKind, const void*, void*, int64_t);

// Booleans (one byte, 0 or 1) as i1 arithmetic computes them: a sum wraps (xor), a product, a min
// and an and keep what all hold, a max and an or what any holds.
void AccumulatePred(ReductionKind kind, const void* in, void* acc, int64_t n) {
  const uint8_t* a = static_cast<const uint8_t*>(in);
  uint8_t* r = static_cast<uint8_t*>(acc);
  switch (kind) {
    case ReductionKind::kSum:
    case ReductionKind::kXor:
      return AccumulateWith(a, r, n, [](uint8_t x, uint8_t y) -> uint8_t { return x ^ y; });
    case ReductionKind::kMax:
    case ReductionKind::kMaxUnsigned:
    case ReductionKind::kOr:
      return AccumulateWith(a, r, n, [](uint8_t x, uint8_t y) -> uint8_t { return x | y; });
    default:  // product, min, unsigned min, and (min / max num do not apply: integer data)
      return AccumulateWith(a, r, n, [](uint8_t x, uint8_t y) -> uint8_t { return x & y; });
  }
}

const char* KindName(ReductionKind kind) {
  switch (kind) {
    case ReductionKind::kSum:
      return "sum";
    case ReductionKind::kProduct:
      return "product";
    case ReductionKind::kMin:
      return "min";
    case ReductionKind::kMax:
      return "max";
    case ReductionKind::kMinUnsigned:
      return "unsigned min";
    case ReductionKind::kMaxUnsigned:
      return "unsigned max";
    case ReductionKind::kMinNum:
      return "minnum";
    case ReductionKind::kMaxNum:
      return "maxnum";
    case ReductionKind::kAnd:
      return "and";
    case ReductionKind::kOr:
      return "or";
    case ReductionKind::kXor:
      return "xor";
  }
  return "unknown";
}

// The accumulator of `dtype` for `kind`; INVALID_ARGUMENT for a dtype the reductions do not
// support or a kind that does not apply to it (a bitwise kind of floats, a maxnum of integers).
template <typename T>
absl::StatusOr<Accumulator> Checked(ReductionKind kind, DType dtype) {
  if (!Applies<T>(kind)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a ", KindName(kind), " reduction does not apply to ", dtype.DebugString(), " elements"));
  }
  return &Accumulate<T>;
}

absl::StatusOr<Accumulator> AccumulatorFor(ReductionKind kind, DType dtype) {
  switch (dtype.kind()) {
    case DType::kF32:
      return Checked<float>(kind, dtype);
    case DType::kF64:
      return Checked<double>(kind, dtype);
    case DType::kS8:
      return Checked<int8_t>(kind, dtype);
    case DType::kS16:
      return Checked<int16_t>(kind, dtype);
    case DType::kS32:
      return Checked<int32_t>(kind, dtype);
    case DType::kS64:
      return Checked<int64_t>(kind, dtype);
    case DType::kPred:
      return &AccumulatePred;
    case DType::kU8:
      return Checked<uint8_t>(kind, dtype);
    case DType::kU16:
      return Checked<uint16_t>(kind, dtype);
    case DType::kU32:
      return Checked<uint32_t>(kind, dtype);
    case DType::kU64:
      return Checked<uint64_t>(kind, dtype);
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "collective reductions support pred, f32, f64 and 8- to 64-bit integers, not ",
          dtype.DebugString()));
  }
}

// out = reduction over `pieces` (each `bytes` long).
absl::Status Reduce(DType dtype, ReductionKind kind, absl::Span<const char* const> pieces,
                    int64_t bytes, char* out) {
  auto accumulate = AccumulatorFor(kind, dtype);
  if (!accumulate.ok()) return accumulate.status();
  const int64_t n = bytes / *dtype.byte_size();
  if (pieces.empty()) return absl::OkStatus();
  std::memcpy(out, pieces[0], bytes);
  for (size_t j = 1; j < pieces.size(); ++j) (*accumulate)(kind, pieces[j], out, n);
  return absl::OkStatus();
}

absl::Status CheckAxis(int64_t axis, size_t rank, int64_t groups, absl::Span<const int64_t> dims) {
  if (axis < 0 || axis >= static_cast<int64_t>(rank)) {
    return absl::InvalidArgumentError(
        absl::StrCat("collective axis ", axis, " out of rank ", rank));
  }
  if (dims[axis] % groups != 0) {
    return absl::InvalidArgumentError(absl::StrCat("collective axis ", axis, " of size ",
                                                   dims[axis], " does not split into ", groups,
                                                   " pieces"));
  }
  return absl::OkStatus();
}

}  // namespace

std::vector<int64_t> GridPosition(absl::Span<const int64_t> grid_shape, int device) {
  std::vector<int64_t> position(grid_shape.size());
  int64_t rest = device;
  for (int a = static_cast<int>(grid_shape.size()) - 1; a >= 0; --a) {
    position[a] = rest % grid_shape[a];
    rest /= grid_shape[a];
  }
  return position;
}

CollectiveGroup GroupOf(absl::Span<const int64_t> grid_shape, absl::Span<const int> grid_axes,
                        int device) {
  const std::vector<int64_t> own = GridPosition(grid_shape, device);
  CollectiveGroup group;
  int64_t size = 1;
  for (int a : grid_axes) size *= grid_shape[a];
  for (int64_t m = 0; m < size; ++m) {
    // Member m's coordinates on grid_axes (row-major over those axes), the others as `own`.
    std::vector<int64_t> position = own;
    int64_t rest = m;
    for (int k = static_cast<int>(grid_axes.size()) - 1; k >= 0; --k) {
      position[grid_axes[k]] = rest % grid_shape[grid_axes[k]];
      rest /= grid_shape[grid_axes[k]];
    }
    int64_t linear = 0;
    for (size_t a = 0; a < grid_shape.size(); ++a) linear = linear * grid_shape[a] + position[a];
    if (linear == device) group.position = static_cast<int>(m);
    group.members.push_back(static_cast<int>(linear));
  }
  return group;
}

std::pair<int64_t, int64_t> AllReduceRange(int64_t elements, int group_size, int position) {
  const int64_t base = elements / group_size, extra = elements % group_size;
  const int64_t begin = position * base + std::min<int64_t>(position, extra);
  return {begin, begin + base + (position < extra ? 1 : 0)};
}

absl::Status ReduceElements(ReductionKind reduction, DType dtype,
                            absl::Span<const void* const> inputs, int64_t begin, int64_t end,
                            void* output) {
  if (inputs.empty() || end <= begin) return absl::OkStatus();
  auto accumulate = AccumulatorFor(reduction, dtype);
  if (!accumulate.ok()) return accumulate.status();
  const int64_t size = *dtype.byte_size();
  // Block by block, so that the block of `output` stays in L1 while every input adds to it (one
  // pass over the output instead of one per input).
  constexpr int64_t kBlockBytes = 16 << 10;
  const int64_t block = std::max<int64_t>(1, kBlockBytes / size);
  for (int64_t b = begin; b < end; b += block) {
    const int64_t n = std::min(block, end - b);
    char* out = static_cast<char*>(output) + b * size;
    std::memcpy(out, static_cast<const char*>(inputs[0]) + b * size, n * size);
    for (size_t j = 1; j < inputs.size(); ++j) {
      (*accumulate)(reduction, static_cast<const char*>(inputs[j]) + b * size, out, n);
    }
  }
  return absl::OkStatus();
}

int PermuteSource(const CollectiveStep& step, int group_size, int position) {
  if (group_size <= 0) return -1;
  int64_t source = static_cast<int64_t>(position) - step.shift_offset;
  if (step.shift_rotates) {
    source %= group_size;
    if (source < 0) source += group_size;
  }
  return source >= 0 && source < group_size ? static_cast<int>(source) : -1;
}

int64_t BytesFromEachPeer(const CollectiveStep& step, int64_t input_bytes, int group_size) {
  switch (step.kind) {
    case CollectiveKind::kAllReduce:
      return group_size > 0 ? 2 * input_bytes / group_size : 0;
    case CollectiveKind::kAllGather:
      return input_bytes;
    case CollectiveKind::kAllToAll:
    case CollectiveKind::kReduceScatter:
      return group_size > 0 ? input_bytes / group_size : 0;
    case CollectiveKind::kAllSlice:
      return 0;
    case CollectiveKind::kCollectivePermute:
      return input_bytes;  // from the source only
  }
  return 0;
}

absl::Status ComputeCollective(const CollectiveStep& step, DType dtype,
                               absl::Span<const int64_t> input_dims,
                               absl::Span<const int64_t> output_dims,
                               absl::Span<const void* const> inputs, int position, void* output) {
  const int64_t groups = static_cast<int64_t>(inputs.size());
  const int64_t element_bytes = *dtype.byte_size();
  const int64_t input_bytes = Product(input_dims, 0, input_dims.size()) * element_bytes;
  const int64_t output_bytes = Product(output_dims, 0, output_dims.size()) * element_bytes;
  if (input_bytes == 0 || output_bytes == 0) return absl::OkStatus();
  std::vector<const char*> in(inputs.size());
  for (size_t j = 0; j < inputs.size(); ++j) in[j] = static_cast<const char*>(inputs[j]);
  char* out = static_cast<char*>(output);
  switch (step.kind) {
    case CollectiveKind::kAllReduce:
      return Reduce(dtype, step.reduction, in, input_bytes, out);
    case CollectiveKind::kAllGather: {
      if (absl::Status s = CheckAxis(step.gather_axis, output_dims.size(), groups, output_dims);
          !s.ok()) {
        return s;
      }
      const AxisView view = ViewAround(output_dims, step.gather_axis, element_bytes);
      for (int64_t j = 0; j < groups; ++j) PlacePiece(in[j], view, groups, j, out);
      return absl::OkStatus();
    }
    case CollectiveKind::kAllSlice: {
      if (absl::Status s = CheckAxis(step.split_axis, input_dims.size(), groups, input_dims);
          !s.ok()) {
        return s;
      }
      CopyPiece(in[position], ViewAround(input_dims, step.split_axis, element_bytes), groups,
                position, out);
      return absl::OkStatus();
    }
    case CollectiveKind::kAllToAll: {
      if (absl::Status s = CheckAxis(step.split_axis, input_dims.size(), groups, input_dims);
          !s.ok()) {
        return s;
      }
      const AxisView in_view = ViewAround(input_dims, step.split_axis, element_bytes);
      const AxisView out_view = ViewAround(output_dims, step.concat_axis, element_bytes);
      std::vector<char> piece(input_bytes / groups);
      for (int64_t j = 0; j < groups; ++j) {
        CopyPiece(in[j], in_view, groups, position, piece.data());
        PlacePiece(piece.data(), out_view, groups, j, out);
      }
      return absl::OkStatus();
    }
    case CollectiveKind::kReduceScatter: {
      if (absl::Status s = CheckAxis(step.split_axis, input_dims.size(), groups, input_dims);
          !s.ok()) {
        return s;
      }
      const AxisView view = ViewAround(input_dims, step.split_axis, element_bytes);
      const int64_t piece_bytes = input_bytes / groups;
      std::vector<char> pieces(piece_bytes * groups);
      std::vector<const char*> piece_ptrs(groups);
      for (int64_t j = 0; j < groups; ++j) {
        CopyPiece(in[j], view, groups, position, pieces.data() + j * piece_bytes);
        piece_ptrs[j] = pieces.data() + j * piece_bytes;
      }
      return Reduce(dtype, step.reduction, piece_ptrs, piece_bytes, out);
    }
    case CollectiveKind::kCollectivePermute: {
      if (input_bytes != output_bytes) {
        return absl::InvalidArgumentError(
            "collective_permute: the output's size is not the input's");
      }
      const int source = PermuteSource(step, static_cast<int>(groups), position);
      if (source < 0) {
        std::memset(out, 0, output_bytes);
      } else {
        std::memcpy(out, in[source], output_bytes);
      }
      return absl::OkStatus();
    }
  }
  return absl::InvalidArgumentError("unknown collective kind");
}

}  // namespace tessera::runtime
