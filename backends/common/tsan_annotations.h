#ifndef TESSERA_BACKENDS_COMMON_TSAN_ANNOTATIONS_H_
#define TESSERA_BACKENDS_COMMON_TSAN_ANNOTATIONS_H_

// Handoff annotations: happens-before edges that ThreadSanitizer cannot see because the
// synchronisation that makes them lives in a library not built with -fsanitize=thread (Debian's
// oneTBB: its task deques, arena queues, mailboxes and wait contexts).
//
// Contract: everything a thread did before `HandoffRelease(key)` happens before everything another
// thread does after a later `HandoffAcquire(key)` on the same `key` (any address; by convention the
// object handed over). Releases accumulate: an acquire sees every earlier release on its key. Only
// state that really is handed over through that library may be annotated; an annotation that
// states an edge the library does not provide hides real races.
//
//   HandoffRelease(task);                 // the enqueuing thread, after filling `task`
//   tbb_queue.push(task);                 // synchronisation TSan does not see
//   ...
//   HandoffAcquire(task);                 // the worker, before reading `task`
//
// Without -fsanitize=thread both functions are empty.
// Stateless and thread-safe; used only in backends/ (the one layer that names oneTBB).

#if defined(__SANITIZE_THREAD__)
#define TESSERA_TSAN_ANNOTATIONS 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TESSERA_TSAN_ANNOTATIONS 1
#endif
#endif

#if defined(TESSERA_TSAN_ANNOTATIONS)
#include <sanitizer/tsan_interface.h>
#endif

namespace tessera::backends {

inline void HandoffRelease(const void* key) {
#if defined(TESSERA_TSAN_ANNOTATIONS)
  __tsan_release(const_cast<void*>(key));
#else
  (void)key;
#endif
}

inline void HandoffAcquire(const void* key) {
#if defined(TESSERA_TSAN_ANNOTATIONS)
  __tsan_acquire(const_cast<void*>(key));
#else
  (void)key;
#endif
}

}  // namespace tessera::backends

#endif  // TESSERA_BACKENDS_COMMON_TSAN_ANNOTATIONS_H_
