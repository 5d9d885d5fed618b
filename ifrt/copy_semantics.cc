#include "ifrt/copy_semantics.h"

namespace tessera {

const char* ArrayCopySemanticsName(ArrayCopySemantics semantics) {
  switch (semantics) {
    case ArrayCopySemantics::kAlwaysCopy:
      return "kAlwaysCopy";
    case ArrayCopySemantics::kReuseInput:
      return "kReuseInput";
    case ArrayCopySemantics::kDonateInput:
      return "kDonateInput";
  }
  return "unknown";
}

const char* HostBufferSemanticsName(HostBufferSemantics semantics) {
  switch (semantics) {
    case HostBufferSemantics::kImmutableOnlyDuringCall:
      return "kImmutableOnlyDuringCall";
    case HostBufferSemantics::kImmutableUntilTransferCompletes:
      return "kImmutableUntilTransferCompletes";
    case HostBufferSemantics::kImmutableZeroCopy:
      return "kImmutableZeroCopy";
  }
  return "unknown";
}

}  // namespace tessera
