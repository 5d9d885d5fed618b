#ifndef TESSERA_IFRT_INTROSPECTION_H_
#define TESSERA_IFRT_INTROSPECTION_H_

// ClientIntrospection: an optional capability of a Client for tools, tests and curious users: the
// reshard plan a call would run, the plan cache's counters, and a trace of every copy. A client
// that has it returns it from Client::introspection(); one that does not returns nullptr, so
// callers check:
//
//   ClientIntrospection* inspect = client->introspection();
//   if (inspect == nullptr) return absl::UnimplementedError("no plans on this client");
//   absl::StatusOr<std::shared_ptr<const sharding::ReshardPlan>> plan =
//       inspect->PlanReshard(*array, spec);
//
// The object lives as long as its client. Thread-safe.

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "ifrt/array.h"
#include "ifrt/array_spec.h"
#include "ifrt/transfer_trace.h"
#include "sharding/reshard_plan.h"

namespace tessera {

// Counters of a client's plan cache since the client was created.
struct PlanCacheStats {
  int64_t hits = 0;
  int64_t misses = 0;
  int64_t size = 0;  // plans held now
};

class ClientIntrospection {
 public:
  virtual ~ClientIntrospection() = default;

  // The plan ReshardArrays would run to move `array` to `spec`: the cached plan itself (taken
  // from, and left in, the same cache as the real call's). Its locations are memory ids
  // (Memory::Id().value); a slot's device is its memory's. A copy between two memories of one
  // device (Vulkan "device" -> "pinned_host") is kCrossLocation although both memories belong to
  // one device; the guard and transfer_stats() count it as local (it crosses no device boundary).
  // Errors: those of ReshardArrays' validation (INVALID_ARGUMENT, FAILED_PRECONDITION, NOT_FOUND,
  // UNIMPLEMENTED).
  virtual absl::StatusOr<std::shared_ptr<const sharding::ReshardPlan>> PlanReshard(
      const Array& array, const ArraySpec& spec) = 0;

  virtual PlanCacheStats plan_cache_stats() const = 0;
  // The compile cache of Client::GetDefaultCompiler(): a hit is a Compile that ran no compiler.
  virtual PlanCacheStats program_cache_stats() const { return {}; }

  // Records every copy the client runs while set (see transfer_trace.h); nullptr detaches it.
  virtual void SetTransferTrace(std::shared_ptr<TransferTrace> trace) = 0;
};

}  // namespace tessera

#endif  // TESSERA_IFRT_INTROSPECTION_H_
