#ifndef TESSERA_BACKENDS_COMMON_SHARED_HOST_MEMORY_H_
#define TESSERA_BACKENDS_COMMON_SHARED_HOST_MEMORY_H_

// Shared host memory: large host blocks that another process of the same host can map, so that
// a copy between processes reads the sender's buffer in place (one copy per byte, by the
// receiver) instead of going through the message engine's copy-in/copy-out.
//
// A block is an anonymous memory file (Linux memfd_create + ftruncate + mmap MAP_SHARED), kept
// open for the block's life and recorded in one process-wide registry: its address range, its
// file descriptor, its inode and a generation number unique within the process. A peer process
// opens /proc/<pid>/fd/<fd>, checks the inode, and maps it (backends/mpi does so).
//
// Allocation is off until EnableSharedHostMemory() is called (the MPI transport calls it when
// another process of its job runs on this host); TESSERA_SHM=0 in the environment keeps it off.
// AllocateSharedHostMemory returns nullptr (and the caller uses its ordinary allocator) when it
// is off, when the request is below kSharedHostMemoryMinBytes, when more than the machine's
// memory is asked for (the overcommit check malloc makes), when this process holds too many file
// descriptors already, or when a system call fails: never an error of its own.
//
//   void* p = AllocateSharedHostMemory(bytes);   // page-aligned, or nullptr
//   if (p == nullptr) p = std::aligned_alloc(64, bytes);
//   ...
//   if (!FreeSharedHostMemory(p)) std::free(p);
//
// Thread-safe: every function may be called from any thread.

#include <cstdint>
#include <optional>

namespace tessera::backends {

// Requests below this many bytes are never shared.
inline constexpr int64_t kSharedHostMemoryMinBytes = int64_t{1} << 20;

// Turns allocation of shared blocks on for this process (unless TESSERA_SHM=0).
void EnableSharedHostMemory();
// True when EnableSharedHostMemory() was called and TESSERA_SHM is not "0".
bool SharedHostMemoryEnabled();

// A new shared block of `bytes` (page-aligned, zero-filled, lazily backed like malloc's large
// blocks), or nullptr when sharing is off or fails (see above).
void* AllocateSharedHostMemory(int64_t bytes);
// Unmaps and closes the block that starts at `data` and returns true; false (touching nothing)
// when `data` is not the start of a shared block.
bool FreeSharedHostMemory(void* data);

// The registry's record of one live block.
struct SharedHostBlock {
  const char* base = nullptr;  // the block's first byte in this process
  int64_t size = 0;            // bytes mapped (the file's size)
  int fd = -1;                 // this process's descriptor of the file
  uint64_t generation = 0;     // unique among this process's blocks, never reused
  uint64_t inode = 0;          // the file's inode (to tell a reused descriptor number apart)
};

// The block that holds every byte of [begin, begin + bytes), if one does.
std::optional<SharedHostBlock> FindSharedHostBlock(const void* begin, int64_t bytes);

// Blocks allocated so far by this process (for tests).
int64_t SharedHostBlocksAllocated();

}  // namespace tessera::backends

#endif  // TESSERA_BACKENDS_COMMON_SHARED_HOST_MEMORY_H_
