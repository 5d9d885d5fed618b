// A consumer that computes: compiles examples/mlp2_megatron.mlir (the path is its one argument)
// for 4 CPU devices through the installed Tessera, runs it on deterministic inputs and checks y
// against the same MLP computed here in plain loops. Exits 0 only when every element matches.
#include <cmath>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <vector>

#include "tessera.h"

namespace {

using namespace tessera;

// y = relu(x @ w1 + b1) @ w2 + b2 over the shapes of the example (x 8x16, w1 16x32, w2 32x16).
std::vector<float> Reference(const std::vector<std::vector<float>>& in) {
  const std::vector<float>&x = in[0], &w1 = in[1], &b1 = in[2], &w2 = in[3], &b2 = in[4];
  std::vector<float> h(8 * 32), y(8 * 16);
  for (int i = 0; i < 8; ++i) {
    for (int j = 0; j < 32; ++j) {
      float s = b1[j];
      for (int k = 0; k < 16; ++k) s += x[i * 16 + k] * w1[k * 32 + j];
      h[i * 32 + j] = s > 0 ? s : 0;
    }
    for (int j = 0; j < 16; ++j) {
      float s = b2[j];
      for (int k = 0; k < 32; ++k) s += h[i * 32 + k] * w2[k * 16 + j];
      y[i * 16 + j] = s;
    }
  }
  return y;
}

int Fail(const absl::Status& status, const char* what) {
  std::cerr << what << ": " << status << "\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: compile_example PATH/TO/mlp2_megatron.mlir\n";
    return 2;
  }
  std::ifstream file(argv[1]);
  std::stringstream text;
  text << file.rdbuf();
  if (!file || text.str().empty()) {
    std::cerr << "cannot read " << argv[1] << "\n";
    return 2;
  }
  absl::StatusOr<std::shared_ptr<Client>> client =
      CreateClient({.cpu_devices = 4, .vulkan = VulkanMode::kOff});
  if (!client.ok()) return Fail(client.status(), "CreateClient");
  DeviceListRef devices = *(*client)->MakeDeviceList((*client)->devices().first(4));
  absl::StatusOr<LoadedExecutableRef> exe = (*client)->GetDefaultCompiler()->Compile(
      std::make_unique<MlirProgram>(text.str()), CompileOptions{.devices = devices});
  if (!exe.ok()) return Fail(exe.status(), "Compile");

  std::vector<ArraySpec> specs = (*exe)->GetParameterSpecs();
  std::vector<std::vector<float>> inputs;
  std::vector<ArrayRef> args;
  for (size_t a = 0; a < specs.size(); ++a) {
    std::vector<float>& data = inputs.emplace_back(specs[a].shape.num_elements());
    for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>((i * 7 + a * 3) % 11) - 5;
    absl::StatusOr<ArrayRef> arg = (*client)->MakeArrayFromHostBuffer(
        data.data(), specs[a].dtype, specs[a].shape, std::nullopt, specs[a].sharding,
        HostBufferSemantics::kImmutableOnlyDuringCall, nullptr);
    if (!arg.ok()) return Fail(arg.status(), "MakeArrayFromHostBuffer");
    args.push_back(*arg);
  }
  absl::StatusOr<ExecuteResult> result = (*exe)->Execute(absl::MakeSpan(args));
  if (!result.ok()) return Fail(result.status(), "Execute");
  if (absl::Status s = result->status.Await(); !s.ok()) return Fail(s, "Execute's status");
  std::vector<float> y(8 * 16);
  absl::Status read =
      result->outputs[0]
          ->CopyToHostBuffer(y.data(), std::nullopt, ArrayCopySemantics::kAlwaysCopy)
          .Await();
  if (!read.ok()) return Fail(read, "CopyToHostBuffer");
  std::vector<float> want = Reference(inputs);
  for (size_t i = 0; i < y.size(); ++i) {
    if (std::fabs(y[i] - want[i]) > 1e-4f * (1 + std::fabs(want[i]))) {
      std::cerr << "y[" << i << "] = " << y[i] << ", want " << want[i] << "\n";
      return 1;
    }
  }
  std::cout << "compiled and ran " << argv[1] << " on 4 CPU devices: y matches (" << y.size()
            << " elements)\n";
  return 0;
}
