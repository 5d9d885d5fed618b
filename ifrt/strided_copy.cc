#include "ifrt/strided_copy.h"

#include <cstdint>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/checked_math.h"

namespace tessera {

int64_t StridedCopy::num_elements() const { return base::CheckedProduct(extent).value_or(-1); }

Index StridedCopy::RowMajorByteStrides(absl::Span<const int64_t> shape, int64_t element_bytes) {
  Index strides(shape.size());
  int64_t stride = element_bytes;
  for (int i = static_cast<int>(shape.size()) - 1; i >= 0; --i) {
    strides[i] = stride;
    stride *= shape[i];
  }
  return strides;
}

StridedCopy StridedCopy::BetweenDenseArrays(int64_t element_bytes,
                                            absl::Span<const int64_t> src_shape,
                                            absl::Span<const int64_t> src_origin,
                                            absl::Span<const int64_t> dst_shape,
                                            absl::Span<const int64_t> dst_origin,
                                            absl::Span<const int64_t> extent) {
  StridedCopy c;
  c.element_bytes = element_bytes;
  c.extent.assign(extent.begin(), extent.end());
  c.src_byte_strides = RowMajorByteStrides(src_shape, element_bytes);
  c.dst_byte_strides = RowMajorByteStrides(dst_shape, element_bytes);
  for (size_t i = 0; i < extent.size(); ++i) {
    c.src_offset += src_origin[i] * c.src_byte_strides[i];
    c.dst_offset += dst_origin[i] * c.dst_byte_strides[i];
  }
  return c;
}

StridedCopy StridedCopy::Normalized() const {
  StridedCopy out;
  out.element_bytes = element_bytes;
  out.src_offset = src_offset;
  out.dst_offset = dst_offset;
  if (num_elements() == 0) {
    out.extent = {0};
    out.src_byte_strides = {element_bytes};
    out.dst_byte_strides = {element_bytes};
    return out;
  }
  // Walk from the innermost dimension outwards, merging a dimension into the one inside it when
  // it is contiguous with it on both sides. The kept dimensions fill the outputs from the back
  // (innermost last); the unused front is dropped at the end.
  const size_t rank = extent.size();
  out.extent.resize(rank);
  out.src_byte_strides.resize(rank);
  out.dst_byte_strides.resize(rank);
  size_t first = rank;  // the kept dimensions are [first, rank)
  for (size_t i = rank; i-- > 0;) {
    if (extent[i] == 1) continue;
    if (first < rank && src_byte_strides[i] == out.src_byte_strides[first] * out.extent[first] &&
        dst_byte_strides[i] == out.dst_byte_strides[first] * out.extent[first]) {
      out.extent[first] *= extent[i];
      continue;
    }
    --first;
    out.extent[first] = extent[i];
    out.src_byte_strides[first] = src_byte_strides[i];
    out.dst_byte_strides[first] = dst_byte_strides[i];
  }
  if (first == rank) {  // a single element
    out.extent.assign(1, 1);
    out.src_byte_strides.assign(1, element_bytes);
    out.dst_byte_strides.assign(1, element_bytes);
    return out;
  }
  out.extent.erase(out.extent.begin(), out.extent.begin() + first);
  out.src_byte_strides.erase(out.src_byte_strides.begin(), out.src_byte_strides.begin() + first);
  out.dst_byte_strides.erase(out.dst_byte_strides.begin(), out.dst_byte_strides.begin() + first);
  return out;
}

bool StridedCopy::inner_contiguous() const {
  if (extent.empty()) return true;
  return src_byte_strides.back() == element_bytes && dst_byte_strides.back() == element_bytes;
}

void StridedCopy::ForEachRun(absl::FunctionRef<void(int64_t, int64_t, int64_t)> fn) const {
  StridedCopy n = Normalized();
  if (n.num_elements() == 0) return;
  const int rank = static_cast<int>(n.extent.size());
  const bool contiguous = n.inner_contiguous();
  const int outer_rank = contiguous ? rank - 1 : rank;
  const int64_t run_bytes = contiguous ? n.extent.back() * element_bytes : element_bytes;
  Index idx(outer_rank, 0);
  int64_t so = n.src_offset, d_o = n.dst_offset;
  while (true) {
    fn(so, d_o, run_bytes);
    int d = outer_rank - 1;
    for (; d >= 0; --d) {
      ++idx[d];
      so += n.src_byte_strides[d];
      d_o += n.dst_byte_strides[d];
      if (idx[d] < n.extent[d]) break;
      so -= n.src_byte_strides[d] * n.extent[d];
      d_o -= n.dst_byte_strides[d] * n.extent[d];
      idx[d] = 0;
    }
    if (d < 0) return;
  }
}

absl::StatusOr<int64_t> HostSpanBytes(absl::Span<const int64_t> dims,
                                      absl::Span<const int64_t> byte_strides,
                                      int64_t element_bytes) {
  const auto error = [&](auto... what) {
    return absl::InvalidArgumentError(
        absl::StrCat("byte_strides [", absl::StrJoin(byte_strides, ","), "] for shape [",
                     absl::StrJoin(dims, ","), "]: ", what...));
  };
  if (dims.size() != byte_strides.size()) {
    return error("the ranks differ (", byte_strides.size(), " strides, ", dims.size(), " dims)");
  }
  if (element_bytes < 1) return error("element size ", element_bytes, " is not positive");
  bool empty = false;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] < 0) return error("dimension ", d, " is negative");
    if (byte_strides[d] < 0) return error("the stride of dimension ", d, " is negative");
    empty = empty || dims[d] == 0;
  }
  if (empty) return 0;
  int64_t span = element_bytes;
  for (size_t d = 0; d < dims.size(); ++d) {
    const std::optional<int64_t> reach = base::CheckedMul(dims[d] - 1, byte_strides[d]);
    const std::optional<int64_t> sum =
        reach.has_value() ? base::CheckedAdd(span, *reach) : std::nullopt;
    if (!sum.has_value()) {
      return error("the offset of the last element overflows int64 (in dimension ", d, ")");
    }
    span = *sum;
  }
  return span;
}

absl::Status CheckHostRange(const void* data, int64_t span_bytes) {
  const uintptr_t start = reinterpret_cast<uintptr_t>(data);
  if (span_bytes < 0 || static_cast<uint64_t>(span_bytes) > UINTPTR_MAX - start) {
    return absl::InvalidArgumentError(absl::StrCat("a host buffer of ", span_bytes,
                                                   " bytes at address ", absl::Hex(start),
                                                   " runs past the end of the address space"));
  }
  return absl::OkStatus();
}

std::string StridedCopy::DebugString() const {
  return absl::StrCat("StridedCopy(element_bytes=", element_bytes, ", extent=[",
                      absl::StrJoin(extent, ","), "], src=", src_offset, "+[",
                      absl::StrJoin(src_byte_strides, ","), "], dst=", dst_offset, "+[",
                      absl::StrJoin(dst_byte_strides, ","), "])");
}

}  // namespace tessera
