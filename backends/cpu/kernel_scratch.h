#ifndef TESSERA_BACKENDS_CPU_KERNEL_SCRATCH_H_
#define TESSERA_BACKENDS_CPU_KERNEL_SCRATCH_H_

// The allocator of compiled CPU kernels' temporary buffers
// (compiler/targets/llvm_cpu/cpu_codegen.cc lowers a kernel's memref.alloc / dealloc to these
// through MLIR's generic allocation functions; the kernel loader binds them). A kernel frees each
// temporary before it returns, and runs again with the same sizes on the next Execute: freed blocks
// wait in a cache of the freeing thread, keyed by size, so the next run reuses memory whose pages
// are mapped instead of taking a page fault per 4 KiB from a fresh malloc (glibc maps blocks of 128
// KiB and more afresh each time).
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
//
// A kernel run is bracketed by a ScratchRun on its thread: a kernel whose allocation fails returns
// at once (compiler/targets/llvm_cpu/cpu_codegen.cc), and the run reports it and frees what the
// kernel left:
//
//   ScratchRun run;
//   kernel(args);
//   if (run.failed_bytes()) return absl::ResourceExhaustedError(...);

#include <cstddef>
#include <cstdint>
#include <optional>

#include "absl/container/inlined_vector.h"

namespace tessera::cpu {

// The scratch blocks one kernel run allocates on the calling thread, from construction to
// destruction: the first allocation that failed, and the blocks not freed, which the destructor
// frees (a kernel that stops at a failed allocation leaves its earlier temporaries behind).
// Thread-compatible: one thread constructs, allocates, frees and destroys it; runs on one thread
// nest (the innermost tracks). Not copyable.
class ScratchRun {
 public:
  ScratchRun();
  ~ScratchRun();
  ScratchRun(const ScratchRun&) = delete;
  ScratchRun& operator=(const ScratchRun&) = delete;

  // The size of the run's first allocation that failed; nullopt when none did.
  std::optional<size_t> failed_bytes() const { return failed_bytes_; }

 private:
  friend void* ScratchAllocate(size_t alignment, size_t bytes);
  friend void ScratchFree(void* block);

  absl::InlinedVector<void*, 16> live_;  // a kernel's temporaries: no allocation for the list
  std::optional<size_t> failed_bytes_;
  ScratchRun* outer_;
};

// The most a thread's cache holds (bytes of cached blocks).
inline constexpr int64_t kScratchCacheMaxBytes = int64_t{64} << 20;

// A block of `bytes` bytes aligned to `alignment` (a power of two; at least 64 is used), or
// nullptr when the system is out of memory, `bytes` exceeds the machine's physical memory (asked
// of the system, such a block could only come from overcommit, to be killed when touched), or
// `alignment` is not a power of two. A null return is recorded in the thread's ScratchRun.
void* ScratchAllocate(size_t alignment, size_t bytes);

// Returns a block from ScratchAllocate (nullptr: nothing happens).
void ScratchFree(void* block);

// The bytes of blocks in the calling thread's cache.
int64_t ScratchCachedBytes();

}  // namespace tessera::cpu

#endif  // TESSERA_BACKENDS_CPU_KERNEL_SCRATCH_H_
