#include "backends/common/parallel_memcpy.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "backends/common/parallel_for.h"
#include "oneapi/tbb/blocked_range.h"
#include "oneapi/tbb/task_arena.h"

namespace tessera::backends {
namespace {

// Parallel copies are cut into parts of about this many bytes: small enough that the threads of an
// arena share the work evenly when some are busy elsewhere, large enough that a part costs far more
// than the task that copies it.
constexpr int64_t kPartBytes = int64_t{256} << 10;

// Whether a copy of `total` bytes is split across the threads of the calling arena.
bool CopyInParallel(int64_t total) {
  return total >= kParallelMemcpyThresholdBytes && tbb::this_task_arena::max_concurrency() > 1;
}

// Copies one row: `count` elements of `element_bytes` at the given strides.
inline void CopyStridedRow(const uint8_t* src, int64_t src_stride, uint8_t* dst, int64_t dst_stride,
                           int64_t count, int64_t element_bytes) {
  switch (element_bytes) {
    case 1:
      for (int64_t i = 0; i < count; ++i) dst[i * dst_stride] = src[i * src_stride];
      return;
    case 2:
      for (int64_t i = 0; i < count; ++i)
        std::memcpy(dst + i * dst_stride, src + i * src_stride, 2);
      return;
    case 4:
      for (int64_t i = 0; i < count; ++i)
        std::memcpy(dst + i * dst_stride, src + i * src_stride, 4);
      return;
    case 8:
      for (int64_t i = 0; i < count; ++i)
        std::memcpy(dst + i * dst_stride, src + i * src_stride, 8);
      return;
    default:
      for (int64_t i = 0; i < count; ++i) {
        std::memcpy(dst + i * dst_stride, src + i * src_stride, element_bytes);
      }
  }
}

// A normalised copy viewed as rows: the innermost dimension is a row; the outer dimensions are
// enumerated in row-major order.
class RowView {
 public:
  explicit RowView(const StridedCopy& n) : n_(n) {
    rank_ = static_cast<int>(n_.extent.size());
    rows_ = 1;
    for (int d = 0; d + 1 < rank_; ++d) rows_ *= n_.extent[d];
    row_elements_ = n_.extent.back();
    contiguous_ = n_.inner_contiguous();
  }
  int64_t rows() const { return rows_; }
  int64_t row_bytes() const { return row_elements_ * n_.element_bytes; }
  bool contiguous() const { return contiguous_; }

  // Byte offsets of the start of `row`.
  void RowOffsets(int64_t row, int64_t* src, int64_t* dst) const {
    int64_t s = n_.src_offset, d = n_.dst_offset;
    for (int dim = rank_ - 2; dim >= 0; --dim) {
      int64_t i = row % n_.extent[dim];
      row /= n_.extent[dim];
      s += i * n_.src_byte_strides[dim];
      d += i * n_.dst_byte_strides[dim];
    }
    *src = s;
    *dst = d;
  }

  // Copies bytes [begin, end) of each row in [row_begin, row_end).
  void CopyRows(const uint8_t* src, uint8_t* dst, int64_t row_begin, int64_t row_end,
                int64_t byte_begin, int64_t byte_end) const {
    for (int64_t r = row_begin; r < row_end; ++r) {
      int64_t so, d_o;
      RowOffsets(r, &so, &d_o);
      if (contiguous_) {
        std::memcpy(dst + d_o + byte_begin, src + so + byte_begin, byte_end - byte_begin);
      } else {
        const int64_t eb = n_.element_bytes;
        const int64_t first = byte_begin / eb, last = byte_end / eb;
        CopyStridedRow(src + so + first * n_.src_byte_strides.back(), n_.src_byte_strides.back(),
                       dst + d_o + first * n_.dst_byte_strides.back(), n_.dst_byte_strides.back(),
                       last - first, eb);
      }
    }
  }

 private:
  const StridedCopy& n_;
  int rank_;
  int64_t rows_;
  int64_t row_elements_;
  bool contiguous_;
};

// Long rows: each row is cut into parts of `part` bytes (whole elements), copied in parallel.
void CopyLongRowsInParallel(const RowView& view, const uint8_t* src, uint8_t* dst, int64_t part) {
  const int64_t row_bytes = view.row_bytes();
  const int64_t parts = (row_bytes + part - 1) / part;
  ParallelFor(tbb::blocked_range<int64_t>(0, view.rows() * parts),
              [&](const tbb::blocked_range<int64_t>& r) {
                for (int64_t t = r.begin(); t < r.end(); ++t) {
                  const int64_t row = t / parts, p = t % parts;
                  view.CopyRows(src, dst, row, row + 1, p * part,
                                std::min(row_bytes, (p + 1) * part));
                }
              });
}

// Short rows: groups of whole rows, about `part` bytes each, copied in parallel.
void CopyShortRowsInParallel(const RowView& view, const uint8_t* src, uint8_t* dst, int64_t part) {
  const int64_t row_bytes = view.row_bytes();
  const int64_t rows_per_part = std::max<int64_t>(1, part / std::max<int64_t>(1, row_bytes));
  ParallelFor(tbb::blocked_range<int64_t>(0, view.rows(), rows_per_part),
              [&](const tbb::blocked_range<int64_t>& r) {
                view.CopyRows(src, dst, r.begin(), r.end(), 0, row_bytes);
              });
}

}  // namespace

void StridedMemcpy(const void* src_base, void* dst_base, const StridedCopy& copy) {
  const StridedCopy n = copy.Normalized();
  const int64_t total = n.bytes();
  if (total == 0) return;
  const auto* src = static_cast<const uint8_t*>(src_base);
  auto* dst = static_cast<uint8_t*>(dst_base);
  const RowView view(n);
  if (!CopyInParallel(total)) {
    view.CopyRows(src, dst, 0, view.rows(), 0, view.row_bytes());
  } else if (view.row_bytes() >= kPartBytes) {
    const int64_t whole_elements = std::max<int64_t>(1, kPartBytes / n.element_bytes);
    CopyLongRowsInParallel(view, src, dst, whole_elements * n.element_bytes);
  } else {
    CopyShortRowsInParallel(view, src, dst, kPartBytes);
  }
}

void CopyPieces(absl::Span<const MemcpyPiece> pieces) {
  int64_t total = 0;
  for (const MemcpyPiece& p : pieces) total += static_cast<int64_t>(p.size);
  if (!CopyInParallel(total)) {
    for (const MemcpyPiece& p : pieces) std::memcpy(p.dst, p.src, p.size);
    return;
  }
  // Every piece cut into parts of at most kPartBytes, copied in parallel: one long piece and many
  // short ones alike spread over the threads.
  constexpr size_t kMaxPart = static_cast<size_t>(kPartBytes);
  std::vector<MemcpyPiece> parts;
  parts.reserve(pieces.size() + static_cast<size_t>(total / kPartBytes) + 1);
  for (const MemcpyPiece& p : pieces) {
    for (size_t off = 0; off < p.size; off += kMaxPart) {
      parts.push_back({p.dst + off, p.src + off, std::min(kMaxPart, p.size - off)});
    }
  }
  ParallelFor(tbb::blocked_range<size_t>(0, parts.size()),
              [&](const tbb::blocked_range<size_t>& r) {
                for (size_t i = r.begin(); i < r.end(); ++i) {
                  std::memcpy(parts[i].dst, parts[i].src, parts[i].size);
                }
              });
}

}  // namespace tessera::backends
