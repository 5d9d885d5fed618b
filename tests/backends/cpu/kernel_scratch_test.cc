// The scratch cache of compiled kernels' temporaries (backends/cpu/kernel_scratch.h): alignment,
// reuse of a freed block by the next request of its size and alignment on the same thread, blocks
// freed on another thread, the cap on a thread's cache, and bad alignments.

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

}  // namespace
}  // namespace tessera::cpu
