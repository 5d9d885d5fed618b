#include "backends/cpu/shared_sgemm.h"

#include <algorithm>
#include <cstdint>

#include "backends/cpu/shared_blocks.h"
#include "backends/cpu/streaming_sgemm.h"

namespace tessera::cpu {
namespace {
constexpr int64_t kPanelColumns = 64;  // the kernel's widest tile
constexpr int64_t kTileRows = 6;       // the height of its 6x64 tiles
constexpr double kBlockFlops = 16e6;   // 8e6 was no faster beside a busy loop, and more blocks
}  // namespace

void SharedStreamingSgemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                          const float* b, int64_t ldb, float* c, int64_t ldc, bool accumulate) {
  const auto kernel = accumulate ? StreamingSgemm : StreamingSgemmOverwrite;
  const int64_t panels = (n + kPanelColumns - 1) / kPanelColumns;
  const double panel_flops =
      2.0 * static_cast<double>(m) * static_cast<double>(k) * static_cast<double>(kPanelColumns);
  const int64_t tiles = (m + kTileRows - 1) / kTileRows;
  const int64_t wanted_bands =
      std::clamp<int64_t>(static_cast<int64_t>(panel_flops / kBlockFlops + 0.5), 1, tiles);
  const int64_t band_rows = (tiles + wanted_bands - 1) / wanted_bands * kTileRows;
  const int64_t bands = (m + band_rows - 1) / band_rows;
  const double block_flops = 2.0 * static_cast<double>(std::min(m, band_rows)) *
                             static_cast<double>(k) *
                             static_cast<double>(std::min(n, kPanelColumns));
  RunSharedBlocks(panels * bands, block_flops, [&](int64_t block) {
    const int64_t j = block / bands * kPanelColumns, i = block % bands * band_rows;
    kernel(std::min(band_rows, m - i), std::min(kPanelColumns, n - j), k, a + i * lda, lda, b + j,
           ldb, c + i * ldc + j, ldc);
  });
}

}  // namespace tessera::cpu
