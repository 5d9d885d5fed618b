// libFuzzer target for the PJRT plugin's reader of serialized xla.CompileOptionsProto
// (bindings/pjrt/compile_options.h), which reads bytes a framework hands PJRT_Client_Compile: it
// must never crash, fail only with INVALID_ARGUMENT, and what it accepts must hold its
// invariants (counts in [1, 65536], a device assignment of num_partitions x num_replicas). The
// device assignment PJRT_LoadedExecutable_GetDeviceAssignment serializes must read back equal.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "bindings/pjrt/compile_options.h"
#include "bindings/pjrt/proto_writer.h"

namespace {

void Fail(const char* what) {
  std::fprintf(stderr, "%s\n", what);
  std::abort();
}

// The partitions' devices, serialized and wrapped as CompileOptionsProto.executable_build_options,
// read back.
void CheckRoundTrip(const std::vector<int64_t>& ids) {
  tessera::pjrt::ProtoWriter build;
  build.Varint(5, ids.size()).String(9, tessera::pjrt::SerializeDeviceAssignment(ids));
  absl::StatusOr<tessera::pjrt::CompileOptions> read =
      tessera::pjrt::ParseCompileOptions(tessera::pjrt::ProtoWriter().Message(3, build).bytes());
  if (!read.ok()) Fail("a serialized device assignment does not read back");
  if (read->device_ids.size() != ids.size()) Fail("the device assignment read back differs");
  for (size_t p = 0; p < ids.size(); ++p) {
    if (read->device_ids[p] != std::vector<int64_t>{ids[p]}) Fail("a device id read back differs");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<tessera::pjrt::CompileOptions> options = tessera::pjrt::ParseCompileOptions(bytes);
  if (!options.ok()) {
    if (options.status().code() != absl::StatusCode::kInvalidArgument) {
      std::fprintf(stderr, "unexpected code: %s\n", options.status().ToString().c_str());
      std::abort();
    }
    return 0;
  }
  if (options->num_replicas < 1 || options->num_replicas > 65536 || options->num_partitions < 1 ||
      options->num_partitions > 65536) {
    Fail("a count out of range was accepted");
  }
  if (!options->device_ids.empty()) {
    if (static_cast<int64_t>(options->device_ids.size()) != options->num_partitions)
      Fail("a device assignment of another partition count was accepted");
    std::vector<int64_t> first;
    for (const std::vector<int64_t>& replicas : options->device_ids) {
      if (static_cast<int64_t>(replicas.size()) != options->num_replicas)
        Fail("a device assignment of another replica count was accepted");
      first.push_back(replicas[0]);
    }
    CheckRoundTrip(first);
  }
  return 0;
}
