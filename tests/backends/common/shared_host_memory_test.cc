// tests/backends/common/shared_host_memory_test.cc: shared host blocks
// (backends/common/shared_host_memory.h): off until enabled, the registry's lookups, what a peer
// process sees through /proc/<pid>/fd, and the host allocator of the CPU platform over them.
// ctest runs each test in a process of its own, so that enabling sharing stays within it.

#include "backends/common/shared_host_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "backends/cpu/host_allocator.h"
#include "gtest/gtest.h"

namespace tessera::backends {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

TEST(SharedHostMemoryTest, OffUntilEnabled) {
  EXPECT_FALSE(SharedHostMemoryEnabled());
  EXPECT_EQ(AllocateSharedHostMemory(4 * kMiB), nullptr);
}

TEST(SharedHostMemoryTest, TesseraShmZeroKeepsItOff) {
  setenv("TESSERA_SHM", "0", 1);
  EnableSharedHostMemory();
  EXPECT_FALSE(SharedHostMemoryEnabled());
  EXPECT_EQ(AllocateSharedHostMemory(4 * kMiB), nullptr);
}

TEST(SharedHostMemoryTest, SmallAndImpossibleRequestsAreNotShared) {
  EnableSharedHostMemory();
  EXPECT_EQ(AllocateSharedHostMemory(kSharedHostMemoryMinBytes - 4096), nullptr);
  EXPECT_EQ(AllocateSharedHostMemory(int64_t{1} << 60), nullptr);  // more than the machine has
  EXPECT_EQ(SharedHostBlocksAllocated(), 0);
}

TEST(SharedHostMemoryTest, BlocksAreRegisteredByTheirWholeRange) {
  EnableSharedHostMemory();
  char* a = static_cast<char*>(AllocateSharedHostMemory(2 * kMiB));
  char* b = static_cast<char*>(AllocateSharedHostMemory(3 * kMiB));
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 4096, 0u);
  EXPECT_EQ(a[0], 0);
  EXPECT_EQ(a[2 * kMiB - 1], 0);
  std::memset(a, 7, 2 * kMiB);  // writable

  std::optional<SharedHostBlock> whole = FindSharedHostBlock(a, 2 * kMiB);
  ASSERT_TRUE(whole.has_value());
  EXPECT_EQ(whole->base, a);
  EXPECT_EQ(whole->size, 2 * kMiB);
  std::optional<SharedHostBlock> inner = FindSharedHostBlock(a + 4096, kMiB);
  ASSERT_TRUE(inner.has_value());
  EXPECT_EQ(inner->generation, whole->generation);
  EXPECT_EQ(inner->fd, whole->fd);
  EXPECT_FALSE(FindSharedHostBlock(a + 1, 2 * kMiB).has_value());  // one byte past the end
  EXPECT_FALSE(FindSharedHostBlock(a - 1, 2).has_value());
  std::optional<SharedHostBlock> other = FindSharedHostBlock(b + 100, 100);
  ASSERT_TRUE(other.has_value());
  EXPECT_NE(other->generation, whole->generation);
  EXPECT_EQ(SharedHostBlocksAllocated(), 2);

  int local = 0;
  EXPECT_FALSE(FreeSharedHostMemory(&local));
  EXPECT_FALSE(FreeSharedHostMemory(a + 4096));
  EXPECT_TRUE(FreeSharedHostMemory(a));
  EXPECT_FALSE(FindSharedHostBlock(a, 1).has_value());
  EXPECT_TRUE(FreeSharedHostMemory(b));
}

TEST(SharedHostMemoryTest, APeerSeesTheBytesThroughProcFd) {
  EnableSharedHostMemory();
  char* a = static_cast<char*>(AllocateSharedHostMemory(kMiB));
  ASSERT_NE(a, nullptr);
  std::optional<SharedHostBlock> block = FindSharedHostBlock(a, kMiB);
  ASSERT_TRUE(block.has_value());
  // What backends/mpi/peer_mappings.cc does in the other process.
  const std::string path = "/proc/" + std::to_string(getpid()) + "/fd/" + std::to_string(block->fd);
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0) << path;
  struct stat st;
  ASSERT_EQ(fstat(fd, &st), 0);
  EXPECT_EQ(static_cast<uint64_t>(st.st_ino), block->inode);
  EXPECT_EQ(st.st_size, kMiB);
  void* view = mmap(nullptr, kMiB, PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  ASSERT_NE(view, MAP_FAILED);
  a[12345] = 42;
  EXPECT_EQ(static_cast<const char*>(view)[12345], 42);
  munmap(view, kMiB);
  EXPECT_TRUE(FreeSharedHostMemory(a));
}

TEST(SharedHostMemoryTest, TheCpuHostAllocatorSharesItsLargeBlocks) {
  EnableSharedHostMemory();
  cpu::HostAllocator allocator(int64_t{64} << 20);
  const int64_t large = cpu::HostAllocator::RoundedSize(4 * kMiB + 3);
  void* p = allocator.Allocate(large);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % cpu::HostAllocator::kAlignment, 0u);
  EXPECT_TRUE(FindSharedHostBlock(p, large).has_value());
  const int64_t small = cpu::HostAllocator::RoundedSize(64 << 10);
  void* q = allocator.Allocate(small);
  ASSERT_NE(q, nullptr);
  EXPECT_FALSE(FindSharedHostBlock(q, small).has_value());
  // A freed block is cached and comes back, still shared, with the same generation.
  const uint64_t generation = FindSharedHostBlock(p, 1)->generation;
  allocator.Free(p, large);
  EXPECT_EQ(allocator.Allocate(large), p);
  EXPECT_EQ(FindSharedHostBlock(p, 1)->generation, generation);
  allocator.Free(p, large);
  allocator.Free(q, small);
}

}  // namespace
}  // namespace tessera::backends
