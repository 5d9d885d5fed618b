#ifndef TESSERA_IFRT_RUNTIME_PROGRAM_RUNTIME_COMPILER_H_
#define TESSERA_IFRT_RUNTIME_PROGRAM_RUNTIME_COMPILER_H_

// RuntimeCompiler: the generic runtime's Compiler. Validates CompileOptions against its client,
// hands the program to the client's ProgramCompiler (ifrt/spi/program_compiler.h; compiler/ in this
// repository), binds the plan to devices (loads each kernel on each device's platform, resolves
// shardings and memories) and caches the result by its compile key (the text, devices, shardings
// and donated indices, the devices' kernel targets; at most 256 programs, then it starts over):
// compiling the same text with equal options again is a cache hit that runs no compiler.
//
// In a multi-process client, the devices may belong to several processes (each process then loads
// the kernels of its own devices only; runtime_executable.h); devices of one other process alone
// are INVALID_ARGUMENT. A Compile over the devices of several processes is collective, like the
// Execute it prepares: every process calls it (in the same order as its other collective calls),
// and after compiling they agree (distributed_runtime.h) on the outcome and on a fingerprint of
// the program and options, so that a compile that fails on one process (a kernel one platform
// cannot build, an argument error there) fails on every process with that process's message, and
// different programs or options are INVALID_ARGUMENT everywhere: never a process left waiting in
// Execute for one whose Compile failed.
//
// Thread-safe.

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "ifrt/compiler.h"
#include "ifrt/introspection.h"
#include "ifrt/runtime/program/runtime_executable.h"
#include "ifrt/spi/program_compiler.h"

namespace tessera::runtime {

class RuntimeClient;

class RuntimeCompiler final : public Compiler {
 public:
  // `compiler` may be null: then Compile is UNIMPLEMENTED.
  RuntimeCompiler(RuntimeClient* client, std::unique_ptr<ProgramCompiler> compiler);

  absl::StatusOr<LoadedExecutableRef> Compile(std::unique_ptr<Program> program,
                                              CompileOptions options) override;
  PlanCacheStats cache_stats() const;

 private:
  // Compile, with allocation failures (std::bad_alloc) as RESOURCE_EXHAUSTED by Compile.
  absl::StatusOr<LoadedExecutableRef> CompileImpl(std::unique_ptr<Program> program,
                                                  CompileOptions options);
  absl::Status CheckOptions(const CompileOptions& options, size_t* num_devices) const;
  absl::StatusOr<ProgramCompileRequest> MakeRequest(const std::string& text, ProgramFormat format,
                                                    const CompileOptions& options) const;
  absl::StatusOr<std::shared_ptr<const CompiledProgram>> Bind(ProgramPlan plan,
                                                              const CompileOptions& options,
                                                              std::string fingerprint) const;
  absl::Status BindShardings(const CompileOptions& options, CompiledProgram& program) const;
  absl::Status LoadKernels(CompiledProgram& program) const;

  static constexpr size_t kMaxCachedPrograms = 256;

  RuntimeClient* client_;
  std::unique_ptr<ProgramCompiler> compiler_;
  mutable std::mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<const CompiledProgram>> cache_
      ABSL_GUARDED_BY(mu_);
  int64_t hits_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t misses_ ABSL_GUARDED_BY(mu_) = 0;
};

// The fingerprint of `text` compiled with `options`: a hex digest over the text, the devices, the
// shardings and the donated indices.
std::string ProgramFingerprint(const std::string& text, const CompileOptions& options);

}  // namespace tessera::runtime

#endif  // TESSERA_IFRT_RUNTIME_PROGRAM_RUNTIME_COMPILER_H_
