#include "backends/common/shared_host_memory.h"

#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>

namespace tessera::backends {
namespace {

struct Registry {
  std::mutex mu;
  std::map<uintptr_t, SharedHostBlock> blocks;  // by base address; guarded by mu
  uint64_t next_generation = 1;                 // guarded by mu
  int64_t allocated = 0;                        // guarded by mu
};

Registry& TheRegistry() {
  static Registry* registry = new Registry();
  return *registry;
}

std::atomic<bool> g_enabled{false};

bool DisabledByEnvironment() {
  static const bool disabled = [] {
    const char* env = std::getenv("TESSERA_SHM");
    return env != nullptr && std::strcmp(env, "0") == 0;
  }();
  return disabled;
}

// More than the machine's memory and swap: malloc's overcommit check would refuse it too, and a
// memory file would accept it and fail page by page later.
bool MoreThanTheMachineHas(int64_t bytes) {
  struct sysinfo info;
  if (sysinfo(&info) != 0) return true;
  const unsigned __int128 total =
      (static_cast<unsigned __int128>(info.totalram) + info.totalswap) * info.mem_unit;
  return static_cast<unsigned __int128>(bytes) > total;
}

// Each block holds a descriptor: leave at least half of the process's limit to the rest.
int64_t MaxBlocks() {
  static const int64_t max_blocks = [] {
    struct rlimit limit;
    if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return int64_t{0};
    if (limit.rlim_cur == RLIM_INFINITY) return int64_t{1} << 20;
    return static_cast<int64_t>(limit.rlim_cur / 2);
  }();
  return max_blocks;
}

}  // namespace

void EnableSharedHostMemory() { g_enabled.store(true, std::memory_order_relaxed); }

bool SharedHostMemoryEnabled() {
  return g_enabled.load(std::memory_order_relaxed) && !DisabledByEnvironment();
}

void* AllocateSharedHostMemory(int64_t bytes) {
  if (!SharedHostMemoryEnabled() || bytes < kSharedHostMemoryMinBytes ||
      MoreThanTheMachineHas(bytes)) {
    return nullptr;
  }
  Registry& r = TheRegistry();
  {
    std::lock_guard<std::mutex> lock(r.mu);
    if (static_cast<int64_t>(r.blocks.size()) >= MaxBlocks()) return nullptr;
  }
  const int fd = memfd_create("tessera-shard", MFD_CLOEXEC);
  if (fd < 0) return nullptr;
  struct stat st;
  if (ftruncate(fd, bytes) != 0 || fstat(fd, &st) != 0) {
    close(fd);
    return nullptr;
  }
  void* data = mmap(nullptr, static_cast<size_t>(bytes), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (data == MAP_FAILED) {
    close(fd);
    return nullptr;
  }
  std::lock_guard<std::mutex> lock(r.mu);
  r.blocks[reinterpret_cast<uintptr_t>(data)] =
      SharedHostBlock{.base = static_cast<const char*>(data),
                      .size = bytes,
                      .fd = fd,
                      .generation = r.next_generation++,
                      .inode = static_cast<uint64_t>(st.st_ino)};
  ++r.allocated;
  return data;
}

bool FreeSharedHostMemory(void* data) {
  Registry& r = TheRegistry();
  SharedHostBlock block;
  {
    std::lock_guard<std::mutex> lock(r.mu);
    auto it = r.blocks.find(reinterpret_cast<uintptr_t>(data));
    if (it == r.blocks.end()) return false;
    block = it->second;
    r.blocks.erase(it);
  }
  munmap(data, static_cast<size_t>(block.size));
  close(block.fd);
  return true;
}

std::optional<SharedHostBlock> FindSharedHostBlock(const void* begin, int64_t bytes) {
  const uintptr_t first = reinterpret_cast<uintptr_t>(begin);
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.blocks.upper_bound(first);
  if (it == r.blocks.begin()) return std::nullopt;
  const SharedHostBlock& block = std::prev(it)->second;
  const uintptr_t base = reinterpret_cast<uintptr_t>(block.base);
  if (bytes < 0 || first - base > static_cast<uintptr_t>(block.size) ||
      static_cast<uintptr_t>(bytes) > static_cast<uintptr_t>(block.size) - (first - base)) {
    return std::nullopt;
  }
  return block;
}

int64_t SharedHostBlocksAllocated() {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  return r.allocated;
}

}  // namespace tessera::backends
