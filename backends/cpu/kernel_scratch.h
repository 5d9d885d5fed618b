#ifndef TESSERA_BACKENDS_CPU_KERNEL_SCRATCH_H_
#define TESSERA_BACKENDS_CPU_KERNEL_SCRATCH_H_

// The allocator of compiled CPU kernels' temporary buffers (compiler/cpu_codegen.cc lowers a
// kernel's memref.alloc / dealloc to these through MLIR's generic allocation functions; the
// kernel loader binds them). A kernel frees each temporary before it returns, and runs again
// with the same sizes on the next Execute: freed blocks wait in a cache of the freeing thread,
// keyed by size, so the next run reuses memory whose pages are mapped instead of taking a page
// fault per 4 KiB from a fresh malloc (glibc maps blocks of 128 KiB and more afresh each time).
//
// Ownership: ScratchAllocate returns a block the caller owns until ScratchFree. A thread's cache
// holds at most kScratchCacheMaxBytes (beyond it freed blocks go back to the system) and is
// released when the thread exits.
//
// Thread-safety: every function may be called from any thread; a block may be freed on another
// thread than the one that allocated it (it then joins that thread's cache). No locks: each
// thread has its own cache.
//
//   void* p = ScratchAllocate(64, 1 << 20);  // nullptr when out of memory
//   ScratchFree(p);                          // cached: the next 1 MiB request here reuses it

#include <cstddef>
#include <cstdint>

namespace tessera::cpu {

// The most a thread's cache holds (bytes of cached blocks).
inline constexpr int64_t kScratchCacheMaxBytes = int64_t{64} << 20;

// A block of `bytes` bytes aligned to `alignment` (a power of two; at least 64 is used), or
// nullptr when the system is out of memory or `alignment` is not a power of two.
void* ScratchAllocate(size_t alignment, size_t bytes);

// Returns a block from ScratchAllocate (nullptr: nothing happens).
void ScratchFree(void* block);

// The bytes of blocks in the calling thread's cache.
int64_t ScratchCachedBytes();

}  // namespace tessera::cpu

#endif  // TESSERA_BACKENDS_CPU_KERNEL_SCRATCH_H_
