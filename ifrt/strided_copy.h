#ifndef TESSERA_IFRT_STRIDED_COPY_H_
#define TESSERA_IFRT_STRIDED_COPY_H_

// StridedCopy: the geometry of one n-dimensional box copy between two byte-addressed regions.
//
// Element (i0, ..., ik) of the box, 0 <= ij < extent[j], is read at
//   src_offset + sum_j ij * src_byte_strides[j]
// and written at
//   dst_offset + sum_j ij * dst_byte_strides[j],
// each `element_bytes` long. A dense row-major shard and a user's strided host buffer are both
// described this way, so one copy routine serves host<->buffer and buffer<->buffer copies.
//
//   // Rows 2..5 of a 8x16 f32 shard into rows 0..3 of a 4x16 one:
//   StridedCopy c = StridedCopy::BetweenDenseArrays(4, {8, 16}, {2, 0}, {4, 16}, {0, 0}, {4, 16});
//
// A value type; thread-compatible.

#include <cstdint>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ifrt/shape.h"

namespace tessera {

struct StridedCopy {
  int64_t element_bytes = 1;
  Index extent;  // elements per dimension; empty for a scalar (one element)
  int64_t src_offset = 0;
  Index src_byte_strides;
  int64_t dst_offset = 0;
  Index dst_byte_strides;

  // Product of the extent; -1 (never a wrapped value) when it overflows int64_t.
  int64_t num_elements() const;
  int64_t bytes() const { return num_elements() * element_bytes; }

  // Byte strides of a dense row-major array of `shape`. Precondition: the shape is valid
  // (ValidateShape(shape, dtype) is OK), so that no stride overflows.
  static Index RowMajorByteStrides(absl::Span<const int64_t> shape, int64_t element_bytes);

  // Box `extent` at `src_origin` of a dense row-major array of `src_shape` to `dst_origin` of a
  // dense row-major array of `dst_shape`.
  static StridedCopy BetweenDenseArrays(int64_t element_bytes, absl::Span<const int64_t> src_shape,
                                        absl::Span<const int64_t> src_origin,
                                        absl::Span<const int64_t> dst_shape,
                                        absl::Span<const int64_t> dst_origin,
                                        absl::Span<const int64_t> extent);

  // The same copy with dimensions of extent 1 dropped and dimensions that are contiguous on both
  // sides merged; the innermost dimension is contiguous on both sides exactly when
  // inner_contiguous() is true afterwards. A zero-element copy normalises to extent {0}.
  StridedCopy Normalized() const;
  // True when the innermost dimension's strides are element_bytes on both sides (or rank 0).
  bool inner_contiguous() const;

  // Calls fn(src_byte_offset, dst_byte_offset, bytes) for each contiguous run, in row-major order,
  // after normalisation. Runs of one element are reported when the inner dimension is strided.
  void ForEachRun(absl::FunctionRef<void(int64_t, int64_t, int64_t)> fn) const;

  std::string DebugString() const;
};

// The number of bytes a strided host buffer of `dims` spans from its first byte: one past the last
// byte of its last element, (dims[0]-1)*byte_strides[0] + ... + element_bytes; 0 when a dimension
// is 0. Every product and sum is checked, so that no offset a copy engine computes from these
// strides wraps. INVALID_ARGUMENT (naming the problem) when the ranks differ, a dimension or stride
// is negative, element_bytes < 1, or an offset overflows int64_t. Call it on every user-given
// byte_strides (MakeArrayFromHostBuffer, CopyToHostBuffer) before any copy is planned.
absl::StatusOr<int64_t> HostSpanBytes(absl::Span<const int64_t> dims,
                                      absl::Span<const int64_t> byte_strides,
                                      int64_t element_bytes);

// INVALID_ARGUMENT when the `span_bytes` bytes from `data` run past the end of the address space
// (a host pointer plus HostSpanBytes would wrap).
absl::Status CheckHostRange(const void* data, int64_t span_bytes);

}  // namespace tessera

#endif  // TESSERA_IFRT_STRIDED_COPY_H_
