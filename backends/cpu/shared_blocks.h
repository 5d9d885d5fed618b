#ifndef TESSERA_BACKENDS_CPU_SHARED_BLOCKS_H_
#define TESSERA_BACKENDS_CPU_SHARED_BLOCKS_H_

// Shared blocks: work cut into independent blocks (a matmul's panels of columns) that its own
// thread runs in order while the CPU devices' idle threads may take some of them.
//
// Why: each CPU device runs its kernels on a thread of its own (cpu_stream.h), and the kernel
// places the threads on cores. With more devices than cores and another job holding a core, the
// threads are not spread evenly: on 2 cores beside a busy loop, 6 of 8 device threads queued on
// the free core while the 2 beside the busy loop finished their share early and slept, and each
// Execute took as long as the free core needed for 6 shares one after another. Threads that have
// nothing to do run blocks of the devices that are behind, so the cores that are free finish the
// work together, as the threads of JAX's shared pool do.
//
// When a helper helps: only where that shortens the work, by the wall times measured so far. The
// owner records the time of its own blocks; a helper takes one more block only while it expects to
// finish it (at its own last rate) before the owner, in the middle of a block, would reach the last
// block nobody has taken. A helper slower than the owner, or work nearly done, is left alone, so an
// owner seldom waits for a helper's block. Idle threads look for work when they go idle, and again
// every 200 us while any is shared (cpu_worker_pool.h).
//
// Results: each block runs exactly once, on the owner or on a helper; what a block computes must
// not depend on the thread (the streaming sgemm's results do not depend on its blocking).
//
// Thread-safety: every function may be called from any thread at once. RunSharedBlocks returns
// only after every helper has left its work (nothing of the work is touched after it returns).

#include <cstdint>

#include "absl/functional/function_ref.h"

namespace tessera::cpu {

// Runs body(b) for every b in [0, blocks), each once, and returns when all have run: the calling
// thread runs them in order, threads in HelpSharedBlocks may take some meanwhile. `block_work`
// (> 0): what one block costs in any unit the callers share (flops for matmuls), so that a helper
// can compare its rate on other work with the owner's. `body` must not throw and must be safe to
// call at once on distinct blocks from several threads. With fewer than 2 blocks, or nobody able
// to help, it is a plain loop.
void RunSharedBlocks(int64_t blocks, double block_work, absl::FunctionRef<void(int64_t)> body);

// Called by an idle CPU device thread: runs blocks of work other threads share, while that
// shortens it (see above) and `stop()` is false (checked before each block). Returns whether work
// was shared when it returned (the thread may poll again soon rather than sleep).
bool HelpSharedBlocks(absl::FunctionRef<bool()> stop);

// Whether any work is shared now (an atomic load: idle threads ask it before they sleep).
bool BlocksAreShared();

// Blocks run by helpers in this process (tests).
int64_t HelpedBlocks();

}  // namespace tessera::cpu

#endif  // TESSERA_BACKENDS_CPU_SHARED_BLOCKS_H_
