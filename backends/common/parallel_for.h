#ifndef TESSERA_BACKENDS_COMMON_PARALLEL_FOR_H_
#define TESSERA_BACKENDS_COMMON_PARALLEL_FOR_H_

// ParallelFor: tbb::parallel_for whose fork and join are also happens-before edges that
// ThreadSanitizer sees. Both platforms' parallel host work goes through it (parallel_memcpy.h, the
// CPU platform's per-copy fan-out).
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
// -fsanitize=thread. So the edges are also stated with handoff annotations (tsan_annotations.h):
// the caller releases before the fork, each body acquires before it runs and releases after, the
// caller acquires after the join (two keys: the bodies stay unordered among themselves, so TSan
// still sees two bodies writing the same bytes). Without them TSan reported every copy of a
// parallel memcpy as racing with whoever wrote or read the bytes before or after (a Vulkan queue
// thread, a user thread). Without -fsanitize=thread they compile to nothing.
//
// Stateless and thread-safe; only backends/ includes it (it includes oneTBB).

#include "absl/base/attributes.h"
#include "backends/common/tsan_annotations.h"
#include "oneapi/tbb/parallel_for.h"

namespace tessera::backends {

namespace parallel_for_internal {

// One body call: acquires the fork, runs, releases the join. Never inlined into TBB's task code, so
// that TSan names the body's accesses as Tessera's (build_tools/tsan.supp has `race_top:` entries
// for TBB's own task code; they must never match a body).
template <typename Range, typename Body>
ABSL_ATTRIBUTE_NOINLINE void RunBody(const Body& body, const Range& subrange, const char* fork,
                                     const char* join) {
  HandoffAcquire(fork);
  body(subrange);
  HandoffRelease(join);
}

}  // namespace parallel_for_internal

template <typename Range, typename Body>
void ParallelFor(const Range& range, const Body& body) {
  // This call's handoff keys: two, so that the bodies are not ordered among themselves.
  const struct {
    char fork;
    char join;
  } keys{};
  HandoffRelease(&keys.fork);
  tbb::parallel_for(range, [&](const Range& subrange) {
    parallel_for_internal::RunBody(body, subrange, &keys.fork, &keys.join);
  });
  HandoffAcquire(&keys.join);
}

}  // namespace tessera::backends

#endif  // TESSERA_BACKENDS_COMMON_PARALLEL_FOR_H_
