#ifndef TESSERA_IFRT_TRANSFER_OPTIONS_H_
#define TESSERA_IFRT_TRANSFER_OPTIONS_H_

// TransferOptions: how the transfer guard sees one call that moves data.
//
// `is_explicit` says whether the user asked for this movement. A framework that embeds Tessera
// passes `{.is_explicit = false}` for movements its own user did not ask for (an implicit
// host-to-device copy of a numpy argument, say), so that `log` / `disallow` guard levels catch
// them, and keeps the default `true` for explicit requests (device_put, np.asarray(x)).
//
// A plain value type; thread-compatible.

namespace tessera {

struct TransferOptions {
  bool is_explicit = true;
};

}  // namespace tessera

#endif  // TESSERA_IFRT_TRANSFER_OPTIONS_H_
