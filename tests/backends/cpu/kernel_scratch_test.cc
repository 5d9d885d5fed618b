// The scratch cache of compiled kernels' temporaries (backends/cpu/kernel_scratch.h): alignment,
// reuse of a freed block by the next request of its size and alignment on the same thread, blocks
// freed on another thread, the cap on a thread's cache, and bad alignments; ScratchRun (the first
// failed allocation of a kernel run, the blocks it left freed at its end).

#include "backends/cpu/kernel_scratch.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace tessera::cpu {
namespace {

bool AlignedTo(const void* p, uintptr_t alignment) {
  return reinterpret_cast<uintptr_t>(p) % alignment == 0;
}

TEST(KernelScratchTest, BlocksAreAlignedAndWritable) {
  for (size_t alignment : {1, 8, 64, 128, 4096}) {
    for (size_t bytes : {0, 1, 100, 4096, 300000}) {
      void* p = ScratchAllocate(alignment, bytes);
      ASSERT_NE(p, nullptr) << alignment << " " << bytes;
      EXPECT_TRUE(AlignedTo(p, std::max<size_t>(alignment, 64))) << alignment << " " << bytes;
      std::memset(p, 0xab, bytes);
      ScratchFree(p);
    }
  }
}

TEST(KernelScratchTest, AFreedBlockIsReusedForTheSameSizeAndAlignment) {
  std::thread([] {  // a fresh thread: an empty cache
    void* first = ScratchAllocate(64, 256 << 10);
    ASSERT_NE(first, nullptr);
    EXPECT_EQ(ScratchCachedBytes(), 0);
    ScratchFree(first);
    EXPECT_EQ(ScratchCachedBytes(), 256 << 10);
    void* other_size = ScratchAllocate(64, (256 << 10) + 4);
    void* other_alignment = ScratchAllocate(128, 256 << 10);
    EXPECT_NE(other_size, first);
    EXPECT_NE(other_alignment, first);
    void* again = ScratchAllocate(64, 256 << 10);
    EXPECT_EQ(again, first);
    EXPECT_EQ(ScratchCachedBytes(), 0);
    for (void* p : {other_size, other_alignment, again}) ScratchFree(p);
  })
      .join();
}

TEST(KernelScratchTest, ABlockFreedOnAnotherThreadJoinsThatThreadsCache) {
  void* block = nullptr;
  std::thread([&] { block = ScratchAllocate(64, 1000); }).join();
  ASSERT_NE(block, nullptr);
  std::thread([&] {
    ScratchFree(block);
    EXPECT_EQ(ScratchCachedBytes(), 1000);
    void* again = ScratchAllocate(64, 1000);
    EXPECT_EQ(again, block);
    ScratchFree(again);
  }).join();
}

TEST(KernelScratchTest, ACacheHoldsAtMostItsCap) {
  std::thread([] {
    const size_t bytes = kScratchCacheMaxBytes / 4 + 1;
    std::vector<void*> blocks;
    for (int i = 0; i < 5; ++i) blocks.push_back(ScratchAllocate(64, bytes));
    for (void* p : blocks) ScratchFree(p);
    // Three blocks fit under the cap; the last two went back to the system.
    EXPECT_EQ(ScratchCachedBytes(), 3 * static_cast<int64_t>(bytes));
  }).join();
}

TEST(KernelScratchTest, AnAlignmentThatIsNotAPowerOfTwoIsRefused) {
  EXPECT_EQ(ScratchAllocate(0, 16), nullptr);
  EXPECT_EQ(ScratchAllocate(48, 16), nullptr);
  ScratchFree(nullptr);  // nothing happens
}

TEST(ScratchRunTest, RecordsTheFirstFailedAllocationAndFreesWhatWasLeft) {
  std::thread([] {  // a fresh thread: an empty cache
    {
      ScratchRun run;
      void* kept = ScratchAllocate(64, 4096);
      void* freed = ScratchAllocate(64, 8192);
      ASSERT_NE(kept, nullptr);
      ScratchFree(freed);
      EXPECT_FALSE(run.failed_bytes().has_value());
      // Above the machine's memory: refused without asking the system (no overcommit).
      const size_t huge = size_t{1} << 62;
      EXPECT_EQ(ScratchAllocate(64, huge), nullptr);
      EXPECT_EQ(ScratchAllocate(64, huge / 2), nullptr);
      EXPECT_EQ(run.failed_bytes(), huge);  // the first one
      EXPECT_EQ(ScratchCachedBytes(), 8192);
    }
    // The run freed the block the "kernel" left: it is in the cache now.
    EXPECT_EQ(ScratchCachedBytes(), 8192 + 4096);
    ScratchRun next;
    EXPECT_FALSE(next.failed_bytes().has_value());
  })
      .join();
}

TEST(ScratchRunTest, RunsNestAndBlocksOutsideARunAreNotTracked) {
  std::thread([] {
    void* outside = ScratchAllocate(64, 1024);
    ScratchRun outer;
    {
      ScratchRun inner;
      ScratchFree(outside);  // not the run's: freed once, not again at the end of the run
      EXPECT_EQ(ScratchAllocate(0, 64), nullptr);  // a bad alignment fails too
      EXPECT_EQ(inner.failed_bytes(), 64u);
    }
    EXPECT_FALSE(outer.failed_bytes().has_value());
    EXPECT_EQ(ScratchCachedBytes(), 1024);
  }).join();
}

}  // namespace
}  // namespace tessera::cpu
