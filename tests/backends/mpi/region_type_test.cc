// tests/backends/mpi/region_type_test.cc: the MPI datatypes of strided host regions
// (backends/mpi/region_type.h), run by ctest under `mpirun -np 1`. Types of regions larger than
// 2 GiB are checked by their size and extent alone (nothing that large is allocated); small ones
// also move bytes, from this process to itself.

#include "backends/mpi/region_type.h"

#include <mpi.h>

#include <cstdint>
#include <numeric>
#include <vector>

#include "gtest/gtest.h"

namespace tessera::mpi {
namespace {

constexpr int64_t kGiB = int64_t{1} << 30;

struct Described {
  MPI_Count size = 0;
  MPI_Count true_lb = 0;
  MPI_Count true_extent = 0;
};

Described Describe(const HostRegion& r) {
  MPI_Datatype type = RegionType(r);
  Described d;
  MPI_Type_size_x(type, &d.size);
  MPI_Type_get_true_extent_x(type, &d.true_lb, &d.true_extent);
  MPI_Type_free(&type);
  return d;
}

TEST(RegionTypeTest, ADenseRunIsItsBytes) {
  const Described d = Describe(HostRegion{nullptr, 0, 4, {3, 5}, {20, 4}});
  EXPECT_EQ(d.size, 60);
  EXPECT_EQ(d.true_lb, 0);
  EXPECT_EQ(d.true_extent, 60);
}

TEST(RegionTypeTest, AStridedBoxSpansItsRows) {
  // 4 rows of 3 f32 out of rows of 10.
  const Described d = Describe(HostRegion{nullptr, 0, 4, {4, 3}, {40, 4}});
  EXPECT_EQ(d.size, 48);
  EXPECT_EQ(d.true_extent, 3 * 40 + 12);
}

TEST(RegionTypeTest, ARunOfMoreThanIntMaxBytesIsDescribedWhole) {
  const int64_t bytes = 3 * kGiB + 7;
  const Described d = Describe(HostRegion{nullptr, 0, 1, {bytes}, {1}});
  EXPECT_EQ(d.size, bytes);
  EXPECT_EQ(d.true_lb, 0);
  EXPECT_EQ(d.true_extent, bytes);
  // Exactly a multiple of the chunk, too.
  EXPECT_EQ(Describe(HostRegion{nullptr, 0, 4, {kGiB}, {4}}).size, 4 * kGiB);
}

TEST(RegionTypeTest, AnExtentOfMoreThanIntMaxElementsIsDescribedWhole) {
  // 2^31 + 5 f32, every other one.
  const int64_t n = 2 * kGiB + 5;
  const Described d = Describe(HostRegion{nullptr, 0, 4, {n}, {8}});
  EXPECT_EQ(d.size, 4 * n);
  EXPECT_EQ(d.true_extent, (n - 1) * 8 + 4);
}

TEST(RegionTypeTest, HugeRunsUnderAnOuterDimension) {
  // 3 rows of 2.5 GiB each, 3 GiB apart.
  const int64_t run = 2 * kGiB + kGiB / 2;
  const Described d = Describe(HostRegion{nullptr, 0, 1, {3, run}, {3 * kGiB, 1}});
  EXPECT_EQ(d.size, 3 * run);
  EXPECT_EQ(d.true_extent, 2 * 3 * kGiB + run);
}

TEST(RegionTypeTest, MovesAStridedBoxIntoAnotherLayout) {
  // Rows 1..3, columns 2..5 of a 5 x 8 u16 array into a dense 3 x 4 one.
  std::vector<uint16_t> src(40), dst(12, 0);
  std::iota(src.begin(), src.end(), 100);
  MPI_Datatype send = RegionType(HostRegion{src.data(), 0, 2, {3, 4}, {16, 2}});
  MPI_Datatype recv = RegionType(HostRegion{dst.data(), 0, 2, {3, 4}, {8, 2}});
  MPI_Sendrecv(src.data() + 8 + 2, 1, send, 0, 5, dst.data(), 1, recv, 0, 5, MPI_COMM_SELF,
               MPI_STATUS_IGNORE);
  MPI_Type_free(&send);
  MPI_Type_free(&recv);
  for (int r = 0; r < 3; ++r) {
    for (int c = 0; c < 4; ++c) EXPECT_EQ(dst[r * 4 + c], src[(1 + r) * 8 + 2 + c]) << r << c;
  }
}

}  // namespace
}  // namespace tessera::mpi

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  const int result = RUN_ALL_TESTS();
  MPI_Finalize();
  return result;
}
