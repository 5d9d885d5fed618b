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
// Without -fsanitize=thread both functions (and ScopedIgnoreLibraryAccesses below) are empty.
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
// The dynamic annotations of the ThreadSanitizer runtime (not in its public header).
extern "C" void AnnotateIgnoreReadsBegin(const char* file, int line);
extern "C" void AnnotateIgnoreReadsEnd(const char* file, int line);
extern "C" void AnnotateIgnoreWritesBegin(const char* file, int line);
extern "C" void AnnotateIgnoreWritesEnd(const char* file, int line);
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

// While it lives, this thread's plain reads and writes are not checked (synchronisation still is).
// Only for a call whose plain accesses are all a library's own, made by its header code inlined
// into Tessera's function, where a release build's report names no library frame for a
// suppression to match: oneTBB's task_arena::enqueue, which constructs its task wrapper in memory
// its small-object pool recycles between threads without synchronisation TSan sees. Tessera's own
// state handed to that call is covered by HandoffRelease before it. Also for Tessera's own
// accesses to an object that library constructs in that memory (CpuStream's task): checking them
// would only compare them with the memory's earlier users', never with the unchecked construction.
class ScopedIgnoreLibraryAccesses {
 public:
  ScopedIgnoreLibraryAccesses() {
#if defined(TESSERA_TSAN_ANNOTATIONS)
    AnnotateIgnoreReadsBegin(__FILE__, __LINE__);
    AnnotateIgnoreWritesBegin(__FILE__, __LINE__);
#endif
  }
  ~ScopedIgnoreLibraryAccesses() {
#if defined(TESSERA_TSAN_ANNOTATIONS)
    AnnotateIgnoreWritesEnd(__FILE__, __LINE__);
    AnnotateIgnoreReadsEnd(__FILE__, __LINE__);
#endif
  }
  ScopedIgnoreLibraryAccesses(const ScopedIgnoreLibraryAccesses&) = delete;
  ScopedIgnoreLibraryAccesses& operator=(const ScopedIgnoreLibraryAccesses&) = delete;
};

}  // namespace tessera::backends

#endif  // TESSERA_BACKENDS_COMMON_TSAN_ANNOTATIONS_H_
