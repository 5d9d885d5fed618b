// Tests of the host memcpy both platforms share (backends/common/parallel_memcpy.h): every path
// (serial, long rows cut into parts, short rows grouped, element-strided rows, the piece list) is
// checked byte for byte against a reference that walks each element with plain loops.

#include "backends/common/parallel_memcpy.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "oneapi/tbb/task_arena.h"

namespace tessera::backends {
namespace {

std::vector<char> Pattern(int64_t bytes, uint32_t seed) {
  std::vector<char> out(bytes);
  std::mt19937 rng(seed);
  for (char& b : out) b = static_cast<char>(rng());
  return out;
}

// Applies `c` element by element, without StridedCopy's own run logic.
void ReferenceCopy(const StridedCopy& c, const char* src, char* dst) {
  const int rank = static_cast<int>(c.extent.size());
  int64_t elements = 1;
  for (int64_t e : c.extent) elements *= e;
  std::vector<int64_t> index(rank, 0);
  for (int64_t n = 0; n < elements; ++n) {
    int64_t s = c.src_offset, d = c.dst_offset;
    for (int dim = 0; dim < rank; ++dim) {
      s += index[dim] * c.src_byte_strides[dim];
      d += index[dim] * c.dst_byte_strides[dim];
    }
    std::memcpy(dst + d, src + s, c.element_bytes);
    for (int dim = rank - 1; dim >= 0 && ++index[dim] == c.extent[dim]; --dim) index[dim] = 0;
  }
}

struct Case {
  std::string name;
  StridedCopy copy;
  int64_t src_bytes, dst_bytes;
};

StridedCopy Make(int64_t element_bytes, Index extent, Index src_strides, Index dst_strides,
                 int64_t src_offset = 0, int64_t dst_offset = 0) {
  StridedCopy c;
  c.element_bytes = element_bytes;
  c.extent = std::move(extent);
  c.src_byte_strides = std::move(src_strides);
  c.dst_byte_strides = std::move(dst_strides);
  c.src_offset = src_offset;
  c.dst_offset = dst_offset;
  return c;
}

std::vector<Case> Cases() {
  return {
      // Below the threshold: the calling thread alone.
      {"small_dense", Make(1, {1000}, {1}, {1}, 3, 5), 1003, 1005},
      // One long contiguous row: cut into parts.
      {"long_dense_row", Make(1, {5 << 20}, {1}, {1}, 7, 11), (5 << 20) + 7, (5 << 20) + 11},
      // 3-byte elements (the generic element copy), long rows whose parts hold whole elements.
      {"long_rows_odd_elements", Make(3, {2, 700001}, {3 * 700003, 3}, {3 * 700001, 3}),
       3 * 700003 * 2, 3 * 700001 * 2},
      // Short contiguous rows (96 B) of a strided box: groups of rows.
      {"short_rows", Make(4, {30000, 24}, {128, 4}, {96, 4}, 16, 0), 128 * 30000 + 16, 96 * 30000},
      // A transpose of f32: every row element-strided, short.
      {"transpose_f32", Make(4, {1024, 1024}, {4, 4096}, {4096, 4}), 4 << 20, 4 << 20},
      // Long element-strided rows (every other f64): parts of whole elements.
      {"long_strided_rows", Make(8, {3, 200000}, {8 * 400000, 16}, {8 * 200000, 8}), 8 * 400000 * 3,
       8 * 200000 * 3},
      // 2-byte elements, strided on both sides.
      {"strided_u16", Make(2, {700, 800}, {4 * 800, 4}, {2 * 1600, 4}), 4 * 800 * 700,
       2 * 1600 * 700},
  };
}

class StridedMemcpyTest : public ::testing::TestWithParam<int> {};

TEST_P(StridedMemcpyTest, MatchesTheReferenceInEveryPath) {
  tbb::task_arena arena(GetParam());
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.name);
    const std::vector<char> src = Pattern(c.src_bytes, 1);
    std::vector<char> expected = Pattern(c.dst_bytes, 2);
    std::vector<char> actual = expected;
    ReferenceCopy(c.copy, src.data(), expected.data());
    arena.execute([&] { StridedMemcpy(src.data(), actual.data(), c.copy); });
    EXPECT_TRUE(actual == expected)
        << "first difference at byte "
        << std::mismatch(actual.begin(), actual.end(), expected.begin()).first - actual.begin();
  }
}

TEST_P(StridedMemcpyTest, ZeroElementsWriteNothing) {
  tbb::task_arena arena(GetParam());
  const std::vector<char> src = Pattern(64, 1);
  const std::vector<char> before = Pattern(64, 2);
  std::vector<char> dst = before;
  arena.execute([&] { StridedMemcpy(src.data(), dst.data(), Make(4, {0, 16}, {64, 4}, {64, 4})); });
  EXPECT_EQ(dst, before);
}

INSTANTIATE_TEST_SUITE_P(Threads, StridedMemcpyTest, ::testing::Values(1, 4),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return std::to_string(info.param) + "_threads";
                         });

// Pieces of many sizes (0 to 700 KiB) scattered over the destination in a shuffled order.
TEST(CopyPiecesTest, CopiesEveryPieceAcrossThreads) {
  std::mt19937 rng(7);
  std::vector<size_t> sizes;
  for (int i = 0; i < 40; ++i) sizes.push_back(rng() % (700 << 10));
  sizes.push_back(0);
  const size_t total = std::accumulate(sizes.begin(), sizes.end(), size_t{0});
  ASSERT_GT(total, size_t{1} << 20);
  const std::vector<char> src = Pattern(static_cast<int64_t>(total), 3);
  std::vector<char> dst(total + 4096, 'x');
  std::vector<char> expected = dst;

  std::vector<size_t> order(sizes.size());
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<size_t> src_offset(sizes.size());
  std::exclusive_scan(sizes.begin(), sizes.end(), src_offset.begin(), size_t{0});
  std::vector<MemcpyPiece> pieces;
  size_t at = 4096;  // destinations start past a gap that must stay untouched
  for (size_t i : order) {
    pieces.push_back({dst.data() + at, src.data() + src_offset[i], sizes[i]});
    std::memcpy(expected.data() + at, src.data() + src_offset[i], sizes[i]);
    at += sizes[i];
  }
  tbb::task_arena(4).execute([&] { CopyPieces(pieces); });
  EXPECT_TRUE(dst == expected);
}

TEST(CopyPiecesTest, SmallAndEmptyLists) {
  const std::vector<char> src = Pattern(100, 4);
  std::vector<char> dst(100, 0);
  CopyPieces({});
  CopyPieces({{dst.data() + 50, src.data(), 50}, {dst.data(), src.data() + 50, 50}});
  EXPECT_TRUE(std::equal(src.begin(), src.begin() + 50, dst.begin() + 50));
  EXPECT_TRUE(std::equal(src.begin() + 50, src.end(), dst.begin()));
}

}  // namespace
}  // namespace tessera::backends
