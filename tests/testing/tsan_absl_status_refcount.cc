// Linked into every test binary of a ThreadSanitizer build (TESSERA_SANITIZE=thread; see
// tessera_add_test in the top-level CMakeLists.txt): absl::Status's reference count, compiled
// with -fsanitize=thread, in place of the uninstrumented one in Debian's libabsl_status.
//
// Why: an error absl::Status shares one heap rep between its copies. The copies are taken inline
// (instrumented), but the last release and the free of the rep happen in Status::UnrefNonInlined,
// which libabsl_status ends with a tail call to operator delete: TSan sees neither its
// acquire-release decrement nor a libabsl frame in the freeing stack. So a thread that read an
// error message and dropped its copy, then another thread freeing the rep (a JoinFutures state
// set from a Vulkan completion thread), was reported as a data race (the Mixed soak and the
// Vulkan fault injection, once skipped under TSan for it), and no suppression of Abseil frames
// could match it (build_tools/tsan.supp has none now). This definition (the executable's symbol
// wins over the shared library's) is Abseil 20220623's own, so TSan sees the synchronisation that
// is there; nothing is suppressed. With another Abseil release the file compiles to nothing.

#include "absl/base/config.h"

#if defined(__SANITIZE_THREAD__) && defined(ABSL_LTS_RELEASE_VERSION) && \
    ABSL_LTS_RELEASE_VERSION == 20220623

#include <atomic>
#include <cstdint>

#include "absl/status/status.h"

namespace absl {
ABSL_NAMESPACE_BEGIN

// As absl/status/status.cc (20220623): the last reference deletes the rep.
void Status::UnrefNonInlined(uintptr_t rep) {
  status_internal::StatusRep* r = RepToPointer(rep);
  if (r->ref.load(std::memory_order_acquire) == 1 ||
      r->ref.fetch_sub(1, std::memory_order_acq_rel) - 1 == 0) {
    delete r;
  }
}

ABSL_NAMESPACE_END
}  // namespace absl

#endif
