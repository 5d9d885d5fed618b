#ifndef TESSERA_BACKENDS_COMMON_PARALLEL_FOR_H_
#define TESSERA_BACKENDS_COMMON_PARALLEL_FOR_H_

// ParallelFor: tbb::parallel_for whose fork and join are also happens-before edges in the C++
// memory model as written in this translation unit. Both platforms' parallel host work goes through
// it (parallel_memcpy.h, the CPU platform's per-copy fan-out).
//
// Contract: `body(subrange)` runs for disjoint subranges covering `range`, on the calling thread
// and the threads of its task arena, as tbb::parallel_for does. Everything the caller wrote before
// the call is visible to every body, and everything every body wrote is visible to the caller after
// the call.
//
//   ParallelFor(tbb::blocked_range<size_t>(0, n), [&](const tbb::blocked_range<size_t>& r) {
//     for (size_t i = r.begin(); i < r.end(); ++i) Work(i);
//   });
//
// TBB guarantees both already, but inside the Debian libtbb, which is not built with
// -fsanitize=thread. ThreadSanitizer therefore cannot see the edges and reports the copies of a
// parallel memcpy as racing with whoever reads the bytes next (a Vulkan queue thread, a user
// thread). Those reports are suppressed for libtbb frames, but TSan still works through each one,
// which made a 6 MiB staged copy take minutes under TSan. The two atomics below state the edges in
// instrumented code; they cost one uncontended acquire per task and one release per task, nothing
// next to the >= 256 KiB each task copies.
//
// Stateless and thread-safe; only backends/ includes it (it includes oneTBB).

#include <atomic>

#include "oneapi/tbb/parallel_for.h"

namespace tessera::backends {

template <typename Range, typename Body>
void ParallelFor(const Range& range, const Body& body) {
  std::atomic<bool> forked{false};
  std::atomic<int> joined{0};
  forked.store(true, std::memory_order_release);
  tbb::parallel_for(range, [&](const Range& subrange) {
    (void)forked.load(std::memory_order_acquire);
    body(subrange);
    joined.fetch_add(1, std::memory_order_release);
  });
  (void)joined.load(std::memory_order_acquire);
}

}  // namespace tessera::backends

#endif  // TESSERA_BACKENDS_COMMON_PARALLEL_FOR_H_
