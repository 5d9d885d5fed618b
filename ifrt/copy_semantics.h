#ifndef TESSERA_IFRT_COPY_SEMANTICS_H_
#define TESSERA_IFRT_COPY_SEMANTICS_H_

// How an operation that produces arrays from arrays treats its inputs, and how
// MakeArrayFromHostBuffer treats the caller's host buffer.

namespace tessera {

enum class ArrayCopySemantics {
  // The outputs get buffers of their own; the inputs stay as they are.
  kAlwaysCopy,
  // Outputs may share the inputs' buffers where the data is already in place; inputs stay usable.
  kReuseInput,
  // Like kReuseInput, and the inputs are deleted when the call succeeds; a failed call leaves
  // them usable.
  kDonateInput,
};

enum class HostBufferSemantics {
  // The runtime reads the host buffer during the call only: on_done runs before the call returns.
  kImmutableOnlyDuringCall,
  // The host buffer must stay unchanged until on_done runs, once the transfer has completed.
  kImmutableUntilTransferCompletes,
  // The runtime may use the host buffer in place for the array's lifetime: on_done runs once the
  // array no longer needs it (at once after the transfer when the buffer had to be copied).
  kImmutableZeroCopy,
};

const char* ArrayCopySemanticsName(ArrayCopySemantics semantics);
const char* HostBufferSemanticsName(HostBufferSemantics semantics);

}  // namespace tessera

#endif  // TESSERA_IFRT_COPY_SEMANTICS_H_
