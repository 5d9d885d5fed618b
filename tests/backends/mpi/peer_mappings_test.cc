// tests/backends/mpi/peer_mappings_test.cc: PeerMappings (backends/mpi/peer_mappings.h) over this
// process's own shared blocks, opened through /proc/self's pid as a peer would: the cache, the
// checks that refuse another file, and the bounds.

#include "backends/mpi/peer_mappings.h"

#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "backends/common/shared_host_memory.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace tessera::mpi {
namespace {

using ::testing::HasSubstr;
using testing::StatusIs;

constexpr int64_t kMiB = int64_t{1} << 20;

class PeerMappingsTest : public ::testing::Test {
 protected:
  void SetUp() override { backends::EnableSharedHostMemory(); }
  void TearDown() override {
    for (char* b : blocks_) backends::FreeSharedHostMemory(b);
  }

  // A new shared block of `bytes` filled with `value`, described as a peer would see it.
  PeerBlock NewBlock(int64_t bytes, char value) {
    char* p = static_cast<char*>(backends::AllocateSharedHostMemory(bytes));
    EXPECT_NE(p, nullptr);
    if (p == nullptr) return {};
    std::memset(p, value, bytes);
    blocks_.push_back(p);
    const backends::SharedHostBlock b = *backends::FindSharedHostBlock(p, bytes);
    return PeerBlock{getpid(), b.fd, b.generation, b.inode, b.size};
  }

  std::vector<char*> blocks_;
};

TEST_F(PeerMappingsTest, MapsABlockOnceAndKeepsIt) {
  PeerMappings maps(int64_t{1} << 30, 8);
  const PeerBlock block = NewBlock(2 * kMiB, 5);
  absl::StatusOr<const char*> first = maps.Map(1, block);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_NE(*first, blocks_[0]);  // a map of its own
  EXPECT_EQ((*first)[0], 5);
  EXPECT_EQ((*first)[2 * kMiB - 1], 5);
  blocks_[0][100] = 9;  // the same pages
  EXPECT_EQ((*first)[100], 9);
  absl::StatusOr<const char*> again = maps.Map(1, block);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *first);
  EXPECT_EQ(maps.mapping_count(), 1);
  EXPECT_EQ(maps.mapped_bytes(), 2 * kMiB);
  // The same generation number from another process is another block.
  ASSERT_TRUE(maps.Map(2, block).ok());
  EXPECT_EQ(maps.mapping_count(), 2);
}

TEST_F(PeerMappingsTest, AnotherFileIsUnavailable) {
  PeerMappings maps(int64_t{1} << 30, 8);
  PeerBlock block = NewBlock(kMiB, 1);
  PeerBlock wrong_inode = block;
  wrong_inode.inode += 1;
  EXPECT_THAT(maps.Map(1, wrong_inode),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("is not the shared block")));
  PeerBlock too_large = block;
  too_large.size = 2 * kMiB;
  EXPECT_THAT(maps.Map(1, too_large),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("is not the shared block")));
  PeerBlock closed = block;
  closed.fd = 1 << 20;
  EXPECT_THAT(maps.Map(1, closed),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("cannot open /proc/")));
  EXPECT_EQ(maps.mapping_count(), 0);
}

TEST_F(PeerMappingsTest, TheLeastRecentlyUsedMapsGoFirst) {
  PeerMappings maps(3 * kMiB, 2);
  const PeerBlock a = NewBlock(kMiB, 1), b = NewBlock(kMiB, 2), c = NewBlock(2 * kMiB, 3);
  ASSERT_TRUE(maps.Map(1, a).ok());
  ASSERT_TRUE(maps.Map(1, b).ok());
  ASSERT_TRUE(maps.Map(1, a).ok());  // b is now the least recently used
  absl::StatusOr<const char*> mapped_c = maps.Map(1, c);
  ASSERT_TRUE(mapped_c.ok());
  EXPECT_EQ((*mapped_c)[0], 3);
  EXPECT_EQ(maps.mapping_count(), 2);  // a and c
  EXPECT_EQ(maps.mapped_bytes(), 3 * kMiB);
  // A block larger than every bound is still mapped (alone).
  PeerMappings tiny(kMiB, 1);
  ASSERT_TRUE(tiny.Map(1, a).ok());
  ASSERT_TRUE(tiny.Map(1, c).ok());
  EXPECT_EQ(tiny.mapping_count(), 1);
  EXPECT_EQ(tiny.mapped_bytes(), 2 * kMiB);
}

// The number of calls of maps.Map(1, block), at most PeerMappings::kSweepInterval, after which
// `maps` holds `count` maps; kSweepInterval + 1 if it never does.
uint64_t CallsUntilCount(PeerMappings& maps, const PeerBlock& block, int count) {
  for (uint64_t calls = 1; calls <= PeerMappings::kSweepInterval; ++calls) {
    if (!maps.Map(1, block).ok()) break;
    if (maps.mapping_count() == count) return calls;
  }
  return PeerMappings::kSweepInterval + 1;
}

// A block the sender freed is not kept in memory by this process's map of it: the map goes within
// kSweepInterval calls, at once at a miss where there are few maps; a live block keeps its map.
TEST_F(PeerMappingsTest, MapsOfFreedBlocksAreDropped) {
  PeerMappings maps(int64_t{1} << 30, 8);
  const PeerBlock a = NewBlock(kMiB, 1), b = NewBlock(2 * kMiB, 2);
  ASSERT_TRUE(maps.Map(1, a).ok());
  ASSERT_TRUE(maps.Map(1, b).ok());
  absl::StatusOr<const char*> mapped_b = maps.Map(1, b);
  ASSERT_TRUE(mapped_b.ok());
  EXPECT_EQ(maps.mapping_count(), 2);
  ASSERT_TRUE(backends::FreeSharedHostMemory(blocks_[0]));  // the sender frees a
  blocks_.erase(blocks_.begin());
  const PeerBlock c = NewBlock(kMiB, 3);  // may take a's descriptor number: another inode
  absl::StatusOr<const char*> mapped_c = maps.Map(1, c);  // a miss, 2 calls after the last check
  ASSERT_TRUE(mapped_c.ok()) << mapped_c.status();
  EXPECT_EQ((*mapped_c)[0], 3);
  EXPECT_EQ(maps.mapping_count(), 2);  // b and c
  EXPECT_EQ(maps.mapped_bytes(), 3 * kMiB);

  // Hits alone: the sender frees b, this process reads c again and again.
  ASSERT_TRUE(backends::FreeSharedHostMemory(blocks_[0]));
  blocks_.erase(blocks_.begin());
  EXPECT_LE(CallsUntilCount(maps, c, 1), PeerMappings::kSweepInterval);
  EXPECT_EQ(maps.mapped_bytes(), kMiB);
  absl::StatusOr<const char*> again = maps.Map(1, c);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *mapped_c);  // the same map
  EXPECT_EQ((*again)[kMiB - 1], 3);
}

}  // namespace
}  // namespace tessera::mpi
