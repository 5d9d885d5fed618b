#ifndef TESSERA_TOOLS_DEMO_SECTIONS_H_
#define TESSERA_TOOLS_DEMO_SECTIONS_H_

// Sections of `tessera demo` kept in files of their own (demo.cc runs them in order). Each prints
// to std::cout and returns an exit code (tools/cli.h); called from the tool's main thread.

#include <string_view>

#include "absl/types/span.h"
#include "tessera.h"

namespace tessera::tools {

// "5. Title", underlined, then the explanation and a blank line.
void PrintHeading(int number, std::string_view title, std::string_view explanation);

// Section `number`: the Megatron MLP (examples/mlp2_megatron.mlir's program at the demo's sizes)
// compiled once for the CPU devices `cpu` and run; its steps, one line per kernel and collective;
// the all-reduce's bytes (transfer_stats); the guard refusing its communication under
// d2d=disallow_explicit; its time beside the same program on one device, whose result it must
// match. With Vulkan devices, the same program once more as one executable over CPU and Vulkan
// devices together. A build without the program compiler says so and returns kExitOk. In a
// multi-process client every process calls it (Compile and Execute are collective).
int RunComputationSection(Client& client, absl::Span<Device* const> cpu,
                          absl::Span<Device* const> vulkan, bool quick, int number);

}  // namespace tessera::tools

#endif  // TESSERA_TOOLS_DEMO_SECTIONS_H_
