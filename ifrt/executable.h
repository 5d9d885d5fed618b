#ifndef TESSERA_IFRT_EXECUTABLE_H_
#define TESSERA_IFRT_EXECUTABLE_H_

// LoadedExecutable: a compiled program, loaded on its devices, run SPMD over sharded arrays: each
// device runs its local part of the program on its shards, and the runtime does the communication
// between them (all-reduce, all-gather, ...) through its dispatcher.
//
//   std::vector<ArrayRef> args = {x, w};
//   absl::StatusOr<ExecuteResult> result = exe->Execute(absl::MakeSpan(args));
//   if (!result.ok()) return result.status();          // nothing ran
//   absl::Status ran = result->status.Await();         // the program's execution errors
//   ArrayRef y = result->outputs[0];                    // sharded as GetOutputShardings()[0]
//
// The transfer guard: an argument whose sharding differs from the executable's parameter sharding
// is resharded first, an implicit device-to-device transfer (JAX's `jit`); the program's own
// communication is an explicit device-to-device transfer. Both are checked before any kernel runs;
// a refusal fails Execute and leaves every argument intact.
//
// Donation (as in IFRT): an argument whose index is in CompileOptions::donated_input_indices and
// not in ExecuteOptions::non_donatable_input_indices is deleted when Execute succeeds. Such an
// argument may not be passed again as another argument of the same call (INVALID_ARGUMENT, as in
// PjRt and IFRT).
//
// Devices of several processes (a multi-process client, docs/multi-process.md): every process
// compiles the same program with the same options and calls Execute with the same arguments, in the
// same order as its other collective calls (Compile and Execute are then collective: a failure on
// one process fails the call on every process); each process runs its own devices' part, and the
// outputs' shards on other processes' devices are not addressable.
//
// Thread-safe: Execute may be called from several threads at once. Like its arrays, an executable
// must not outlive the client that compiled it.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ifrt/array.h"
#include "ifrt/array_spec.h"
#include "ifrt/device_list.h"
#include "ifrt/future.h"
#include "ifrt/sharding.h"

namespace tessera {

struct ExecuteOptions {
  absl::flat_hash_set<int> non_donatable_input_indices;
};

struct ExecuteResult {
  // Set when every kernel and communication of this run has finished; carries the first error.
  Future<> status;
  std::vector<ArrayRef> outputs;
};

class LoadedExecutable {
 public:
  LoadedExecutable() = default;
  LoadedExecutable(const LoadedExecutable&) = delete;
  LoadedExecutable& operator=(const LoadedExecutable&) = delete;
  virtual ~LoadedExecutable() = default;

  // Runs the program on `args` (one array per parameter, of its dtype and global shape, on this
  // client). `devices`, when given, must equal devices(). Errors returned here mean nothing ran
  // and nothing was deleted: INVALID_ARGUMENT (count, dtype, shape, foreign array, other devices,
  // a donated argument passed twice, a transfer the guard refuses), FAILED_PRECONDITION (a deleted
  // argument or executable). Errors while running arrive
  // on ExecuteResult::status and on the outputs' ready futures.
  virtual absl::StatusOr<ExecuteResult> Execute(
      absl::Span<ArrayRef> args, const ExecuteOptions& options = {},
      std::optional<DeviceListRef> devices = std::nullopt) = 0;

  virtual std::string name() const = 0;
  // Identifies the program and its compile options: equal for equal inputs to Compile.
  virtual std::string Fingerprint() const = 0;
  virtual std::vector<ShardingRef> GetParameterShardings() const = 0;
  virtual std::vector<ShardingRef> GetOutputShardings() const = 0;
  // Each parameter's and result's dtype, global shape and sharding (what Execute takes and gives).
  virtual std::vector<ArraySpec> GetParameterSpecs() const = 0;
  virtual std::vector<ArraySpec> GetOutputSpecs() const = 0;
  virtual DeviceListRef devices() const = 0;
  // Releases the loaded kernels once running executions finish; later Execute calls fail with
  // FAILED_PRECONDITION.
  virtual Future<> Delete() = 0;
  virtual bool IsDeleted() const = 0;
  // The partitioned program as text: each op with its local shapes and shardings, each
  // communication with its kind, devices and bytes.
  virtual std::string Explain() const = 0;
};

using LoadedExecutableRef = std::shared_ptr<LoadedExecutable>;

}  // namespace tessera

#endif  // TESSERA_IFRT_EXECUTABLE_H_
