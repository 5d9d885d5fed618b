// stablehlo.convolution (lax.conv_general_dilated, and the convolutions of its gradients) as an
// im2col and one matmul. The input, in the layout [batch, spatial..., features], is dilated and
// padded (reshapes and tensor.pad), and its windows gathered into patches [batch, output
// positions, window positions and features] by strided tensor.extract_slices, one per window
// position or one per output position, whichever are fewer, joined by a tensor.concat: ops that
// keep the batch's and the features' shardings, so a data-parallel convolution runs on each
// device's rows and a kernel gradient is all-reduced from each device's partial sums. Where both
// counts are large (over 256) one linalg.generic reads the input at each window position instead
// (tensor.extract: it runs whole on every device, ReplicatePositionalOps in partition.cc). Then
// one matmul (a batch_matmul over groups) contracts the patches with the kernel laid out in the
// same order, [window positions and features per group, outputs], the form both code generators
// have fast paths for. Feature groups (depthwise and grouped convolutions) and batch groups (the
// kernel's gradient of a grouped convolution) are the matmul's batch dimension; window_reversal
// reverses the kernel.

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "base/string_view.h"
#include "compiler/stablehlo/attribute_text.h"
#include "compiler/stablehlo/import_state.h"
#include "llvm/ADT/STLExtras.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinAttributes.h"

namespace tessera::compiler::stablehlo {
namespace {

using mlir::Value;

// The most elements the patches tensor may have (4 GiB of f32 on every device): beyond it a
// convolution is refused by name rather than exhausting memory.
constexpr int64_t kMaxPatchElements = int64_t{1} << 30;
// The most slices SlicedPatches makes (one per window or output position): beyond it, one
// generic reads the windows (GatheredPatches), rather than compiling thousands of slices.
constexpr int64_t kMaxSlices = 256;

// The convolution's geometry, checked against its operands and result.
struct ConvPlan {
  ConvDimensions dims;
  int64_t spatial = 0;  // S
  std::vector<int64_t> strides, lhs_dilation, rhs_dilation, low, high;
  std::vector<bool> reversal;
  int64_t groups = 1;         // feature_group_count * batch_group_count (one of them is 1)
  bool batch_groups = false;  // the groups split the batch (else the features)
  int64_t batch_per_group = 0, features_per_group = 0, outputs_per_group = 0;
  std::vector<int64_t> input_extent;  // per spatial dimension: dilated (before padding)
  std::vector<int64_t> out_spatial, window;
};

absl::Status Invalid(mlir::Operation* op, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(ImportState::Where(op), ": ", what));
}

// Whether `batch`, `feature` and `spatial` are each dimension of a rank-`rank` tensor once.
bool IsPermutation(int64_t batch, int64_t feature, const std::vector<int64_t>& spatial,
                   int64_t rank) {
  if (static_cast<int64_t>(spatial.size()) + 2 != rank) return false;
  std::vector<bool> seen(rank, false);
  std::vector<int64_t> all = spatial;
  all.push_back(batch);
  all.push_back(feature);
  for (int64_t d : all) {
    if (d < 0 || d >= rank || seen[d]) return false;
    seen[d] = true;
  }
  return true;
}

// A positive i64 attribute (`feature_group_count`, `batch_group_count`), 1 when absent.
absl::StatusOr<int64_t> GroupCount(mlir::Operation* op, std::string_view name) {
  mlir::Attribute attr = ImportState::GetAttr(op, name);
  if (!attr) return 1;
  auto integer = mlir::dyn_cast<mlir::IntegerAttr>(attr);
  if (!integer || integer.getValue().getSignificantBits() > 41 || integer.getInt() < 1) {
    return Invalid(op, absl::StrCat(base::AsAbsl(name), " must be a positive integer"));
  }
  return integer.getInt();
}

// padding: S (low, high) pairs, each in [-2^40, 2^40]; zeros when absent.
absl::Status ReadPadding(mlir::Operation* op, ConvPlan& plan) {
  plan.low.assign(plan.spatial, 0);
  plan.high.assign(plan.spatial, 0);
  mlir::Attribute attr = ImportState::GetAttr(op, "padding");
  if (!attr) return absl::OkStatus();
  auto padding = mlir::dyn_cast<mlir::DenseIntElementsAttr>(attr);
  if (!padding || padding.getNumElements() != 2 * plan.spatial) {
    return Invalid(
        op, absl::StrCat("padding must be ", plan.spatial, " (low, high) pairs of integers"));
  }
  int64_t i = 0;
  for (const llvm::APInt& v : padding.getValues<llvm::APInt>()) {
    if (v.getSignificantBits() > 41) return Invalid(op, "padding out of range");
    (i % 2 == 0 ? plan.low : plan.high)[i / 2] = v.getSExtValue();
    ++i;
  }
  return absl::OkStatus();
}

// window_reversal: S booleans; none reversed when absent.
absl::Status ReadReversal(mlir::Operation* op, ConvPlan& plan) {
  plan.reversal.assign(plan.spatial, false);
  mlir::Attribute attr = ImportState::GetAttr(op, "window_reversal");
  if (!attr) return absl::OkStatus();
  auto flags = mlir::dyn_cast<mlir::DenseBoolArrayAttr>(attr);
  if (!flags || static_cast<int64_t>(flags.size()) != plan.spatial) {
    return Invalid(op, absl::StrCat("window_reversal must be ", plan.spatial, " booleans"));
  }
  for (int64_t s = 0; s < plan.spatial; ++s) plan.reversal[s] = flags[s];
  return absl::OkStatus();
}

absl::StatusOr<ConvPlan> PlanConvolution(mlir::Operation* op, mlir::RankedTensorType lhs,
                                         mlir::RankedTensorType rhs,
                                         mlir::RankedTensorType result) {
  ConvPlan plan;
  TESSERA_ASSIGN_OR_RETURN(std::string text, ImportState::OpaqueAttrText(op, "dimension_numbers"));
  absl::StatusOr<ConvDimensions> parsed = ParseConvDimensions(text);
  if (!parsed.ok()) return Invalid(op, parsed.status().message());
  plan.dims = *std::move(parsed);
  const ConvDimensions& d = plan.dims;
  const int64_t rank = lhs.getRank();
  if (rhs.getRank() != rank || result.getRank() != rank ||
      !IsPermutation(d.input_batch, d.input_feature, d.input_spatial, rank) ||
      !IsPermutation(d.kernel_input_feature, d.kernel_output_feature, d.kernel_spatial, rank) ||
      !IsPermutation(d.output_batch, d.output_feature, d.output_spatial, rank)) {
    return Invalid(
        op, absl::StrCat("dimension_numbers ", text, " do not fit operands of rank ", lhs.getRank(),
                         " and ", rhs.getRank(), " and a result of rank ", result.getRank()));
  }
  plan.spatial = rank - 2;
  const int64_t s_count = plan.spatial;
  TESSERA_ASSIGN_OR_RETURN(plan.strides,
                           ImportState::I64ArrayAttrOr(op, "window_strides", s_count, 1, 1));
  TESSERA_ASSIGN_OR_RETURN(plan.lhs_dilation,
                           ImportState::I64ArrayAttrOr(op, "lhs_dilation", s_count, 1, 1));
  TESSERA_ASSIGN_OR_RETURN(plan.rhs_dilation,
                           ImportState::I64ArrayAttrOr(op, "rhs_dilation", s_count, 1, 1));
  TESSERA_RETURN_IF_ERROR(ReadPadding(op, plan));
  TESSERA_RETURN_IF_ERROR(ReadReversal(op, plan));
  TESSERA_ASSIGN_OR_RETURN(const int64_t feature_groups, GroupCount(op, "feature_group_count"));
  TESSERA_ASSIGN_OR_RETURN(const int64_t batch_groups, GroupCount(op, "batch_group_count"));

  const int64_t batch = lhs.getDimSize(d.input_batch);
  const int64_t features = lhs.getDimSize(d.input_feature);
  const int64_t kernel_in = rhs.getDimSize(d.kernel_input_feature);
  const int64_t kernel_out = rhs.getDimSize(d.kernel_output_feature);
  if (feature_groups > 1 && batch_groups > 1) {
    return Invalid(op, "feature_group_count and batch_group_count are both above 1");
  }
  plan.batch_groups = batch_groups > 1;
  plan.groups = feature_groups * batch_groups;
  if (features % feature_groups != 0 || features / feature_groups != kernel_in) {
    return Invalid(
        op, absl::StrCat("the input's ", features, " features in ", feature_groups,
                         " groups do not match the kernel's ", kernel_in, " input features"));
  }
  if (batch % batch_groups != 0 || kernel_out % plan.groups != 0) {
    return Invalid(op,
                   absl::StrCat("a batch of ", batch, " and ", kernel_out,
                                " output features cannot be split into ", plan.groups, " groups"));
  }
  plan.batch_per_group = batch / batch_groups;
  plan.features_per_group = kernel_in;
  plan.outputs_per_group = kernel_out / plan.groups;

  llvm::SmallVector<int64_t> expected(rank, 0);
  expected[d.output_batch] = plan.batch_per_group;
  expected[d.output_feature] = kernel_out;
  for (int64_t s = 0; s < s_count; ++s) {
    const int64_t size = lhs.getDimSize(d.input_spatial[s]);
    const int64_t kernel = rhs.getDimSize(d.kernel_spatial[s]);
    int64_t dilated = 0, padded = 0, window = 0;
    // Sizes fit int64 (the types were checked), dilations and padding are at most 2^40.
    if ((size > 0 && (__builtin_mul_overflow(size - 1, plan.lhs_dilation[s], &dilated) ||
                      __builtin_add_overflow(dilated, 1, &dilated))) ||
        (kernel > 0 && (__builtin_mul_overflow(kernel - 1, plan.rhs_dilation[s], &window) ||
                        __builtin_add_overflow(window, 1, &window))) ||
        __builtin_add_overflow(dilated, plan.low[s] + plan.high[s], &padded)) {
      return Invalid(op, absl::StrCat("spatial dimension ", s, " dilated overflows int64"));
    }
    plan.input_extent.push_back(dilated);
    plan.window.push_back(kernel);
    plan.out_spatial.push_back(padded < window ? 0 : (padded - window) / plan.strides[s] + 1);
    expected[d.output_spatial[s]] = plan.out_spatial.back();
  }
  if (result.getShape() != llvm::ArrayRef<int64_t>(expected)) {
    return Invalid(op, absl::StrCat("the result is ", absl::StrJoin(result.getShape(), "x"),
                                    "; the convolution makes ", absl::StrJoin(expected, "x")));
  }
  int64_t patches = plan.groups * plan.batch_per_group * plan.features_per_group;
  for (int64_t s = 0; s < s_count; ++s) {
    for (int64_t factor : {plan.out_spatial[s], plan.window[s]}) {
      if (patches > 0 &&
          (__builtin_mul_overflow(patches, factor, &patches) || patches > kMaxPatchElements)) {
        return absl::UnimplementedError(absl::StrCat(
            ImportState::Where(op),
            ": a convolution whose windows hold more than 2^30 elements (batch times output "
            "positions times window times input features)"));
      }
    }
  }
  return plan;
}

// Shapes and reshapes of new values.
mlir::RankedTensorType TypeOf(Value value) {
  return mlir::cast<mlir::RankedTensorType>(value.getType());
}

// `value` with its dimensions regrouped: ExpandShape into `shape` by `groups` of it.
Value ExpandInto(ImportState& state, mlir::Location loc, Value value, llvm::ArrayRef<int64_t> shape,
                 llvm::ArrayRef<mlir::ReassociationIndices> groups) {
  return mlir::tensor::ExpandShapeOp::create(
             state.builder(), loc,
             mlir::RankedTensorType::get(shape, TypeOf(value).getElementType()), value, groups)
      .getResult();
}

// Groups [0, 1, ..., n) by sizes: Runs({1, 3, 1}) = {{0}, {1, 2, 3}, {4}}.
llvm::SmallVector<mlir::ReassociationIndices> Runs(std::initializer_list<int64_t> sizes) {
  llvm::SmallVector<mlir::ReassociationIndices> groups;
  int64_t next = 0;
  for (int64_t size : sizes) {
    mlir::ReassociationIndices group;
    for (int64_t i = 0; i < size; ++i) group.push_back(next++);
    groups.push_back(group);
  }
  return groups;
}

int64_t Product(llvm::ArrayRef<int64_t> values) {
  int64_t product = 1;
  for (int64_t v : values) product *= v;  // sizes of tensors the plan bounded
  return product;
}

// The input [N, L..., C] dilated (lhs_dilation: d - 1 zeros between elements, DilateDims) and
// padded (negative padding crops).
Value DilateAndPad(ImportState& state, mlir::Location loc, const ConvPlan& plan, Value x) {
  const int64_t s_count = plan.spatial;
  mlir::RankedTensorType type = TypeOf(x);
  auto zero = mlir::cast<mlir::TypedAttr>(state.builder().getZeroAttr(type.getElementType()));
  const int64_t rank = type.getRank();
  llvm::SmallVector<int64_t> interior(rank, 0);
  for (int64_t s = 0; s < s_count; ++s) interior[1 + s] = plan.lhs_dilation[s] - 1;
  x = DilateDims(state, loc, x, interior, zero);
  // Negative padding crops; positive padding adds zeros.
  llvm::SmallVector<int64_t> offsets(rank, 0), sizes(TypeOf(x).getShape()), low(rank, 0),
      pad_high(rank, 0);
  for (int64_t s = 0; s < s_count; ++s) {
    offsets[1 + s] = std::max<int64_t>(0, -plan.low[s]);
    sizes[1 + s] -= offsets[1 + s] + std::max<int64_t>(0, -plan.high[s]);
    low[1 + s] = std::max<int64_t>(0, plan.low[s]);
    pad_high[1 + s] = std::max<int64_t>(0, plan.high[s]);
  }
  x = SliceOf(state, loc, x, offsets, sizes, llvm::SmallVector<int64_t>(rank, 1));
  if (llvm::all_of(low, [](int64_t v) { return v == 0; }) &&
      llvm::all_of(pad_high, [](int64_t v) { return v == 0; })) {
    return x;
  }
  llvm::SmallVector<int64_t> padded(sizes);
  for (int64_t d = 0; d < rank; ++d) padded[d] += low[d] + pad_high[d];
  return PadWith(state, loc, x, mlir::RankedTensorType::get(padded, type.getElementType()), low,
                 pad_high, zero);
}

// Whether DilateAndPad can crop: negative padding removes no more than the dilated input has.
bool CropsFit(const ConvPlan& plan) {
  for (int64_t s = 0; s < plan.spatial; ++s) {
    if (std::max<int64_t>(0, -plan.low[s]) + std::max<int64_t>(0, -plan.high[s]) >
        plan.input_extent[s]) {
      return false;
    }
  }
  return true;
}

// Whether the dilated, padded input [N, P..., C] is within the patches' bound: SlicedPatches
// builds it whole (a hostile lhs_dilation of 2^40 with strides as large makes few patches of a
// huge one), GatheredPatches never does.
bool PaddedInputFits(const ConvPlan& plan, int64_t batch, int64_t features) {
  int64_t elements = batch * features;  // at most the input's element count
  for (int64_t s = 0; s < plan.spatial; ++s) {
    int64_t padded = 0;
    if (__builtin_add_overflow(
            plan.input_extent[s],
            std::max<int64_t>(0, plan.low[s]) + std::max<int64_t>(0, plan.high[s]), &padded) ||
        __builtin_mul_overflow(elements, padded, &elements) || elements > kMaxPatchElements) {
      return false;
    }
  }
  return true;
}

// The row-major coordinates of position `i` in `shape`.
llvm::SmallVector<int64_t> Coordinates(int64_t i, llvm::ArrayRef<int64_t> shape) {
  llvm::SmallVector<int64_t> at(shape.size());
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    at[d] = i % shape[d];
    i /= shape[d];
  }
  return at;
}

// The patches of the input: [N, O, K, C] (window_major: the contraction's order is window
// position, then feature) or [N, O, C, K].
struct Patches {
  Value value;
  bool window_major = false;
};

// The patches of the padded input [N, P..., C] by strided slices joined along a new dimension:
// one per window position (each [N, O..., C], joined into [N, O..., K, C]: every slice writes
// whole runs of features) or, where there are fewer output positions (a kernel's gradient), one
// per output position (each [N, K..., C], joined into [N, O, K..., C], then transposed to
// [N, O, C, K], so that the features lead the contraction: a data-parallel kernel gradient, whose
// features are the batch, stays split across devices).
Patches SlicedPatches(ImportState& state, mlir::Location loc, const ConvPlan& plan, Value padded) {
  const int64_t s_count = plan.spatial;
  mlir::RankedTensorType type = TypeOf(padded);
  const int64_t rank = type.getRank(), batch = type.getDimSize(0),
                features = type.getDimSize(rank - 1);
  const int64_t outputs = Product(plan.out_spatial), window = Product(plan.window);
  if (s_count == 0) {  // [N, C] -> [N, 1, C, 1]
    return {ExpandInto(state, loc, padded, {batch, 1, features, 1}, Runs({2, 2})), false};
  }
  const bool by_window = window <= outputs;
  const std::vector<int64_t>& stacked = by_window ? plan.window : plan.out_spatial;
  const std::vector<int64_t>& kept = by_window ? plan.out_spatial : plan.window;
  // The new dimension: before the features (by window) or after the batch (by output).
  const int64_t joined_dim = by_window ? rank - 1 : 1;
  llvm::SmallVector<Value> slices;
  for (int64_t i = 0; i < (by_window ? window : outputs); ++i) {
    const llvm::SmallVector<int64_t> at = Coordinates(i, stacked);
    llvm::SmallVector<int64_t> offsets(rank, 0), sizes(type.getShape()), strides(rank, 1);
    for (int64_t s = 0; s < s_count; ++s) {
      // Window position k of output position o reads o * stride + k * rhs_dilation.
      offsets[1 + s] = at[s] * (by_window ? plan.rhs_dilation[s] : plan.strides[s]);
      sizes[1 + s] = kept[s];
      strides[1 + s] = by_window ? plan.strides[s] : plan.rhs_dilation[s];
    }
    Value slice = SliceOf(state, loc, padded, offsets, sizes, strides);
    llvm::SmallVector<int64_t> shape(sizes);
    shape.insert(shape.begin() + joined_dim, 1);
    // The unit dimension joins the dimension after it (the features) or before it (the batch).
    llvm::SmallVector<mlir::ReassociationIndices> groups;
    for (int64_t d = 0; d < rank; ++d) {
      const int64_t at_new = d < joined_dim ? d : d + 1;
      if (by_window && d == rank - 1) {
        groups.push_back({at_new - 1, at_new});
      } else if (!by_window && d == 0) {
        groups.push_back({0, 1});
      } else {
        groups.push_back({at_new});
      }
    }
    slices.push_back(ExpandInto(state, loc, slice, shape, groups));
  }
  Value joined =
      slices.size() == 1
          ? slices[0]
          : mlir::tensor::ConcatOp::create(state.builder(), loc, joined_dim, slices).getResult();
  if (by_window) {  // [N, O..., K, C] -> [N, O, K, C]
    return {CollapseRuns(state, loc, joined, Runs({1, s_count, 1, 1})), true};
  }
  // [N, O, K..., C] -> [N, O, K, C] -> [N, O, C, K].
  Value patches = CollapseRuns(state, loc, joined, Runs({1, 1, s_count, 1}));
  return {PermuteDims(state, loc, patches, {0, 1, 3, 2}), false};
}

// Patches [N, O, C, K] of the input [N, L..., C] (neither dilated nor padded) by one generic that
// reads each window position (zero in the padding and between dilated elements).
Value GatheredPatches(ImportState& state, mlir::Location loc, const ConvPlan& plan, Value x) {
  const int64_t s_count = plan.spatial;
  mlir::RankedTensorType x_type = TypeOf(x);
  const int64_t features = x_type.getDimSize(s_count + 1);
  llvm::SmallVector<int64_t> shape = {x_type.getDimSize(0)};
  shape.append(plan.out_spatial.begin(), plan.out_spatial.end());
  shape.push_back(features);
  shape.append(plan.window.begin(), plan.window.end());
  const mlir::Type element = x_type.getElementType();
  auto type = mlir::RankedTensorType::get(shape, element);
  const int64_t loops = static_cast<int64_t>(shape.size());
  llvm::SmallVector<mlir::AffineMap> maps = {
      mlir::AffineMap::getMultiDimIdentityMap(loops, state.builder().getContext())};
  llvm::SmallVector<mlir::utils::IteratorType> iterators(loops,
                                                         mlir::utils::IteratorType::parallel);
  auto generic = mlir::linalg::GenericOp::create(
      state.builder(), loc, mlir::TypeRange{type}, mlir::ValueRange{},
      mlir::ValueRange{state.Empty(loc, type)}, maps, iterators,
      [&](mlir::OpBuilder& b, mlir::Location l, mlir::ValueRange) {
        auto loop = [&](int64_t i) { return mlir::linalg::IndexOp::create(b, l, i); };
        llvm::SmallVector<Value> position = {loop(0)};
        Value valid = mlir::arith::ConstantIntOp::create(b, l, b.getI1Type(), 1);
        for (int64_t s = 0; s < s_count; ++s) {
          const WindowRead read = ReadInWindow(b, l, loop(1 + s), loop(s_count + 2 + s),
                                               plan.strides[s], plan.rhs_dilation[s], plan.low[s],
                                               plan.lhs_dilation[s], plan.input_extent[s]);
          valid = mlir::arith::AndIOp::create(b, l, valid, read.inside);
          position.push_back(read.index);
        }
        position.push_back(loop(s_count + 1));
        Value read = mlir::tensor::ExtractOp::create(b, l, x, position);
        Value zero = mlir::arith::ConstantOp::create(
            b, l, mlir::cast<mlir::TypedAttr>(b.getZeroAttr(element)));
        mlir::linalg::YieldOp::create(
            b, l, Value(mlir::arith::SelectOp::create(b, l, valid, read, zero)));
      });
  return CollapseRuns(state, loc, generic.getResult(0), Runs({1, s_count, 1, s_count}));
}

// The patches as the matmul's left operand: [N * O, C * K] (or K * C), or with groups
// [G, N/G * O, C * K] (batch groups) or [G, N * O, C/G * K] (feature groups).
Value GroupPatches(ImportState& state, mlir::Location loc, const ConvPlan& plan,
                   const Patches& patches) {
  if (plan.groups == 1) return CollapseRuns(state, loc, patches.value, Runs({2, 2}));
  mlir::RankedTensorType type = TypeOf(patches.value);
  const int64_t n = type.getDimSize(0), o = type.getDimSize(1), g = plan.groups;
  if (plan.batch_groups) {
    Value split =
        ExpandInto(state, loc, patches.value, {g, n / g, o, type.getDimSize(2), type.getDimSize(3)},
                   Runs({2, 1, 1, 1}));
    return CollapseRuns(state, loc, split, Runs({1, 2, 2}));
  }
  if (patches.window_major) {  // [N, O, K, C] -> [N, O, K, G, C/G] -> [G, N, O, K, C/G]
    const int64_t k = type.getDimSize(2), c = type.getDimSize(3);
    Value split = ExpandInto(state, loc, patches.value, {n, o, k, g, c / g}, Runs({1, 1, 1, 2}));
    return CollapseRuns(state, loc, PermuteDims(state, loc, split, {3, 0, 1, 2, 4}),
                        Runs({1, 2, 2}));
  }
  const int64_t c = type.getDimSize(2), k = type.getDimSize(3);
  Value split = ExpandInto(state, loc, patches.value, {n, o, g, c / g, k}, Runs({1, 1, 2, 1}));
  return CollapseRuns(state, loc, PermuteDims(state, loc, split, {2, 0, 1, 3, 4}), Runs({1, 2, 2}));
}

// `value` (of old element type `from`) in the result's element type `to`.
Value InResultType(ImportState& state, mlir::Location loc, Value value, mlir::RankedTensorType type,
                   mlir::Type to) {
  const mlir::Type from = type.getElementType();
  if (from == to) return value;
  return BuildElementwise(state, loc, mlir::RankedTensorType::get(type.getShape(), to), {value}, {},
                          [&](mlir::OpBuilder& b, mlir::Location l, mlir::ValueRange x) {
                            return ConvertElement(b, l, x[0], from, to);
                          });
}

// The kernel `rhs` (old type `rhs_type`) as the matmul's right operand: [C/G * K, outputs] (or
// [K * C/G, outputs] for window-major patches), or [G, ..., outputs / G] with groups; its
// reversed spatial dimensions read from their ends.
Value ArrangeKernel(ImportState& state, mlir::Location loc, const ConvPlan& plan, Value rhs,
                    mlir::RankedTensorType rhs_type, bool window_major) {
  const ConvDimensions& d = plan.dims;
  if (llvm::is_contained(plan.reversal, true)) {
    std::vector<bool> reversed(plan.spatial + 2, false);
    for (int64_t s = 0; s < plan.spatial; ++s) reversed[d.kernel_spatial[s]] = plan.reversal[s];
    rhs = ReverseDims(state, loc, rhs, rhs_type, reversed);
  }
  std::vector<int64_t> order = d.kernel_spatial;
  order.insert(window_major ? order.end() : order.begin(), d.kernel_input_feature);
  order.push_back(d.kernel_output_feature);
  Value kernel =
      CollapseRuns(state, loc, PermuteDims(state, loc, rhs, order), Runs({plan.spatial + 1, 1}));
  if (plan.groups == 1) return kernel;
  mlir::RankedTensorType type = TypeOf(kernel);
  Value split = ExpandInto(state, loc, kernel,
                           {type.getDimSize(0), plan.groups, plan.outputs_per_group}, Runs({1, 2}));
  return PermuteDims(state, loc, split, {1, 0, 2});
}

absl::Status ConvertConvolution(ImportState& state, mlir::Operation* op) {
  TESSERA_RETURN_IF_ERROR(ImportState::CheckArity(op, 2, 1));
  TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType lhs_type, state.OperandType(op, 0));
  TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType rhs_type, state.OperandType(op, 1));
  TESSERA_ASSIGN_OR_RETURN(mlir::RankedTensorType result_type, state.ResultType(op, 0));
  TESSERA_ASSIGN_OR_RETURN(ConvPlan plan, PlanConvolution(op, lhs_type, rhs_type, result_type));
  TESSERA_ASSIGN_OR_RETURN(Value lhs, state.Operand(op, 0));
  TESSERA_ASSIGN_OR_RETURN(Value rhs, state.Operand(op, 1));
  const mlir::Location loc = op->getLoc();
  mlir::OpBuilder& builder = state.builder();
  // Booleans are computed as i32 (an element is true where some product is), then compared.
  const bool booleans = result_type.getElementType().isInteger(1);
  const mlir::Type result_old = booleans ? builder.getI32Type() : result_type.getElementType();
  mlir::RankedTensorType new_result =
      ImportState::NewType(mlir::RankedTensorType::get(result_type.getShape(), result_old));
  auto zero = mlir::cast<mlir::TypedAttr>(builder.getZeroAttr(new_result.getElementType()));
  if (result_type.getNumElements() == 0 || lhs_type.getNumElements() == 0 ||
      plan.features_per_group * Product(plan.window) == 0) {  // nothing to add: zeros
    state.Map(op->getResult(0), state.Fill(loc, ImportState::NewType(result_type),
                                           mlir::cast<mlir::TypedAttr>(builder.getZeroAttr(
                                               SignlessType(result_type.getElementType())))));
    return absl::OkStatus();
  }
  const ConvDimensions& d = plan.dims;
  const int64_t s_count = plan.spatial;

  // The input as [N, L..., C] in the result's type; its patches [N, O, C, K].
  std::vector<int64_t> order = {d.input_batch};
  order.insert(order.end(), d.input_spatial.begin(), d.input_spatial.end());
  order.push_back(d.input_feature);
  Value x = PermuteDims(state, loc, InResultType(state, loc, lhs, lhs_type, result_old), order);
  const bool sliced = CropsFit(plan) &&
                      std::min(Product(plan.out_spatial), Product(plan.window)) <= kMaxSlices &&
                      PaddedInputFits(plan, lhs_type.getDimSize(d.input_batch),
                                      lhs_type.getDimSize(d.input_feature));
  const Patches patches = sliced
                              ? SlicedPatches(state, loc, plan, DilateAndPad(state, loc, plan, x))
                              : Patches{GatheredPatches(state, loc, plan, x), false};
  Value a = GroupPatches(state, loc, plan, patches);
  Value b = ArrangeKernel(state, loc, plan, InResultType(state, loc, rhs, rhs_type, result_old),
                          mlir::RankedTensorType::get(rhs_type.getShape(), result_old),
                          patches.window_major);
  llvm::SmallVector<int64_t> product_shape(TypeOf(a).getShape().drop_back());
  product_shape.push_back(TypeOf(b).getShape().back());
  auto product_type = mlir::RankedTensorType::get(product_shape, new_result.getElementType());
  Value init = state.Fill(loc, product_type, zero);
  Value product =
      plan.groups == 1
          ? mlir::linalg::MatmulOp::create(builder, loc, mlir::TypeRange{product_type},
                                           mlir::ValueRange{a, b}, mlir::ValueRange{init})
                ->getResult(0)
          : mlir::linalg::BatchMatmulOp::create(builder, loc, mlir::TypeRange{product_type},
                                                mlir::ValueRange{a, b}, mlir::ValueRange{init})
                ->getResult(0);
  if (plan.groups > 1) {  // [G, rows, outputs per group] -> [rows, G * outputs per group]
    product = CollapseRuns(state, loc, PermuteDims(state, loc, product, {1, 0, 2}), Runs({1, 2}));
  }
  // [batch * O, outputs] -> [batch, O..., outputs] -> the result's dimension order.
  if (s_count > 0) {
    llvm::SmallVector<int64_t> unfolded = {plan.batch_per_group};
    unfolded.append(plan.out_spatial.begin(), plan.out_spatial.end());
    unfolded.push_back(new_result.getDimSize(d.output_feature));
    product = ExpandInto(state, loc, product, unfolded, Runs({1 + s_count, 1}));
  }
  std::vector<int64_t> result_order(s_count + 2);
  result_order[d.output_batch] = 0;
  result_order[d.output_feature] = s_count + 1;
  for (int64_t s = 0; s < s_count; ++s) result_order[d.output_spatial[s]] = 1 + s;
  Value result = PermuteDims(state, loc, product, result_order);
  if (booleans) {
    result = BuildElementwise(state, loc, result_type, {result}, {},
                              [&](mlir::OpBuilder& b, mlir::Location l, mlir::ValueRange x) {
                                return ConvertElement(b, l, x[0], result_old, b.getI1Type());
                              });
  }
  state.Map(op->getResult(0), result);
  return absl::OkStatus();
}

}  // namespace

void AddConvolutionConversions(ConversionTable& table) {
  table["stablehlo.convolution"] = ConvertConvolution;
}

}  // namespace tessera::compiler::stablehlo
