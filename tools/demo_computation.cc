// tessera demo, the computation section: the Megatron MLP compiled once and run SPMD over the
// demo's devices, checked against the same program on one device.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"
#include "tools/cli.h"
#include "tools/demo_sections.h"

namespace tessera::tools {
namespace {

using Clock = std::chrono::steady_clock;

// The sizes of the MLP: y = relu(x @ w1 + b1) @ w2 + b2, x [batch, width], w1 [width, hidden].
struct MlpSize {
  int64_t batch, width, hidden;
};

// examples/mlp2_megatron.mlir at `size` over mesh{x=devices}: w1 column-sharded, w2 row-sharded,
// x, b2 and y replicated; one all-reduce of y's partial sums. `size.hidden` is a multiple of
// `devices`.
std::string MegatronProgram(const MlpSize& size, int64_t devices) {
  const std::string b = absl::StrCat(size.batch), d = absl::StrCat(size.width),
                    h = absl::StrCat(size.hidden), mesh = absl::StrCat("mesh{x=", devices, "}");
  auto attr = [&](absl::string_view spec) {
    return absl::StrCat("{tessera.sharding = \"", mesh, " ", spec, "\"}");
  };
  const std::string bh = absl::StrCat("tensor<", b, "x", h, "xf32>");
  const std::string bd = absl::StrCat("tensor<", b, "x", d, "xf32>");
  return absl::StrCat("func.func @main(%x: ", bd, " ", attr("P()"), ",\n  %w1: tensor<", d, "x", h,
                      "xf32> ", attr("P(None,x)"), ",\n  %b1: tensor<", h, "xf32> ", attr("P(x)"),
                      ",\n  %w2: tensor<", h, "x", d, "xf32> ", attr("P(x,None)"),
                      ",\n  %b2: tensor<", d, "xf32> ", attr("P()"), ")\n    -> (", bd, " ",
                      attr("P()"), ") {\n",
                      "  %zero = arith.constant 0.0 : f32\n",  //
                      "  %e1 = tensor.empty() : ", bh, "\n",   //
                      "  %acc1 = linalg.fill ins(%zero : f32) outs(%e1 : ", bh, ") -> ", bh, "\n",
                      "  %mm1 = linalg.matmul ins(%x, %w1 : ", bd, ", tensor<", d, "x", h,
                      "xf32>) outs(%acc1 : ", bh, ") -> ", bh, "\n",  //
                      "  %bias1 = linalg.broadcast ins(%b1 : tensor<", h, "xf32>) outs(%e1 : ", bh,
                      ") dimensions = [0]\n",  //
                      "  %pre = arith.addf %mm1, %bias1 : ", bh, "\n",
                      "  %zeros = linalg.fill ins(%zero : f32) outs(%e1 : ", bh, ") -> ", bh, "\n",
                      "  %hid = arith.maximumf %pre, %zeros : ", bh, "\n",  //
                      "  %e2 = tensor.empty() : ", bd, "\n",
                      "  %acc2 = linalg.fill ins(%zero : f32) outs(%e2 : ", bd, ") -> ", bd, "\n",
                      "  %mm2 = linalg.matmul ins(%hid, %w2 : ", bh, ", tensor<", h, "x", d,
                      "xf32>) outs(%acc2 : ", bd, ") -> ", bd, "\n",  //
                      "  %bias2 = linalg.broadcast ins(%b2 : tensor<", d, "xf32>) outs(%e2 : ", bd,
                      ") dimensions = [0]\n",                         //
                      "  %y = arith.addf %mm2, %bias2 : ", bd, "\n",  //
                      "  return %y : ", bd, "\n}\n");
}

// Deterministic inputs, one vector per parameter of `exe`: uniform in [-1, 1), a matrix's scaled
// by 1/sqrt(its rows) so that every value of the MLP stays near 1 whatever its size.
std::vector<std::vector<float>> MakeInputs(const LoadedExecutable& exe) {
  std::vector<std::vector<float>> inputs;
  uint32_t state = 12345;
  for (const ArraySpec& spec : exe.GetParameterSpecs()) {
    const auto dims = spec.shape.dims();
    const float scale = dims.size() == 2 ? 1.0f / std::sqrt(static_cast<float>(dims[0])) : 1.0f;
    std::vector<float>& v = inputs.emplace_back(spec.shape.num_elements());
    for (float& f : v) {
      state = state * 1664525u + 1013904223u;
      f = scale * (static_cast<float>(state >> 8) / static_cast<float>(1 << 23) - 1.0f);
    }
  }
  return inputs;
}

// A compiled program with its arguments in place.
struct Prepared {
  LoadedExecutableRef exe;
  std::vector<ArrayRef> args;
  double compile_seconds = 0;
};

absl::StatusOr<Prepared> Prepare(Client& client, const std::string& program,
                                 absl::Span<Device* const> devices,
                                 const std::vector<std::vector<float>>* inputs) {
  Prepared p;
  TESSERA_ASSIGN_OR_RETURN(DeviceListRef list, client.MakeDeviceList(devices));
  const Clock::time_point start = Clock::now();
  TESSERA_ASSIGN_OR_RETURN(
      p.exe, client.GetDefaultCompiler()->Compile(std::make_unique<MlirProgram>(program),
                                                  CompileOptions{.devices = std::move(list)}));
  p.compile_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const std::vector<std::vector<float>> made = inputs == nullptr ? MakeInputs(*p.exe) : *inputs;
  std::vector<ArraySpec> specs = p.exe->GetParameterSpecs();
  for (size_t i = 0; i < specs.size(); ++i) {
    TESSERA_ASSIGN_OR_RETURN(
        ArrayRef arg, client.MakeArrayFromHostBuffer(
                          made[i].data(), specs[i].dtype, specs[i].shape, std::nullopt,
                          specs[i].sharding, HostBufferSemantics::kImmutableOnlyDuringCall, {}));
    p.args.push_back(std::move(arg));
  }
  return p;
}

// Runs `p` once and waits for it; the output in `y` (on process 0 of a multi-process client; `read`
// says whether it was filled).
absl::Status RunOnce(Client& client, Prepared& p, std::vector<float>* y, bool* read) {
  TESSERA_ASSIGN_OR_RETURN(ExecuteResult result, p.exe->Execute(absl::MakeSpan(p.args)));
  TESSERA_RETURN_IF_ERROR(result.status.Await());
  *read = false;
  if (y == nullptr) return absl::OkStatus();
  y->resize(result.outputs[0]->shape().num_elements());
  return ReadBack(client, result.outputs[0], reinterpret_cast<uint8_t*>(y->data()), read);
}

// Median seconds of `repeat` runs after one warm-up.
absl::StatusOr<double> TimeRuns(Client& client, Prepared& p, int repeat) {
  std::vector<double> times;
  bool read = false;
  for (int r = -1; r < repeat; ++r) {
    const Clock::time_point start = Clock::now();
    TESSERA_RETURN_IF_ERROR(RunOnce(client, p, nullptr, &read));
    if (r >= 0) times.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  return Median(times);
}

// The largest difference between `a` and `b`, relative to 1 + |b|.
double MaxRelativeDifference(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double diff = std::fabs(static_cast<double>(a[i]) - b[i]) / (1 + std::fabs(b[i]));
    worst = std::isnan(diff) ? INFINITY : std::max(worst, diff);
  }
  return worst;
}

// The first of `devices` this process holds (in a multi-process client the others run elsewhere).
Device* FirstAddressable(absl::Span<Device* const> devices) {
  for (Device* d : devices) {
    if (d->IsAddressable()) return d;
  }
  return devices.front();
}

// The lines of Explain() from "steps" up to the communication summary.
void PrintSteps(const LoadedExecutable& exe) {
  bool in_steps = false;
  for (absl::string_view line : absl::StrSplit(exe.Explain(), '\n')) {
    if (absl::StartsWith(line, "steps")) in_steps = true;
    if (absl::StartsWith(line, "communication")) break;
    if (in_steps && !line.empty()) std::cout << "  " << line << "\n";
  }
}

// The section's body over `devices`, once a program compiler exists. `reference` is the 1-device
// run of the same program on the same inputs; the result must match it.
class ComputationTour {
 public:
  ComputationTour(Client& client, bool quick) : client_(client), quick_(quick) {}

  int Run(absl::Span<Device* const> cpu, absl::Span<Device* const> vulkan) {
    const int64_t n = static_cast<int64_t>(cpu.size());
    const MlpSize size = quick_ ? MlpSize{16, 64, 64 * n} : MlpSize{256, 1024, 1024 * n};
    absl::StatusOr<Prepared> sharded = Prepare(client_, MegatronProgram(size, n), cpu, nullptr);
    if (absl::IsUnimplemented(sharded.status()) &&
        absl::StrContains(sharded.status().message(), "no program compiler")) {
      std::cout << "  (skipped: " << sharded.status().message() << ")\n";
      return kExitOk;
    }
    if (!sharded.ok()) return Fail(kExitFailure, sharded.status().ToString());
    std::vector<std::vector<float>> inputs = MakeInputs(*sharded->exe);
    std::cout << "  y = relu(x @ w1 + b1) @ w2 + b2, x f32[" << size.batch << "," << size.width
              << "], w1 f32[" << size.width << "," << size.hidden << "] column-sharded, w2 row-"
              << "sharded over " << DeviceRange(cpu) << "\n  compiled once in "
              << FormatDuration(sharded->compile_seconds) << "; what each device runs:\n\n";
    PrintSteps(*sharded->exe);
    if (int code = CompareWithOneDevice(*sharded, inputs, size, FirstAddressable(cpu));
        code != kExitOk) {
      return code;
    }
    if (int code = GuardRefusal(*sharded); code != kExitOk) return code;
    if (!vulkan.empty() && cpu.front()->Kind() == "cpu") return Mixed(cpu, vulkan);
    return kExitOk;
  }

 private:
  // Runs `sharded` and the same program on one device; prints both times and the bytes between
  // devices; fails when the results differ beyond float reassociation.
  int CompareWithOneDevice(Prepared& sharded, const std::vector<std::vector<float>>& inputs,
                           const MlpSize& size, Device* first) {
    absl::StatusOr<Prepared> single =
        Prepare(client_, MegatronProgram(size, 1), absl::MakeConstSpan(&first, 1), &inputs);
    if (!single.ok()) return Fail(kExitFailure, single.status().ToString());
    std::vector<float> y, want;
    bool read = false, read_want = false;
    const TransferStats before = client_.transfer_stats();
    absl::Status s = RunOnce(client_, sharded, &y, &read);
    const TransferStats after = client_.transfer_stats();
    if (s.ok()) s = RunOnce(client_, *single, &want, &read_want);
    if (!s.ok()) return Fail(kExitFailure, s.ToString());
    const int repeat = quick_ ? 3 : 5;
    absl::StatusOr<double> t_sharded = TimeRuns(client_, sharded, repeat);
    absl::StatusOr<double> t_single = TimeRuns(client_, *single, repeat);
    if (!t_sharded.ok() || !t_single.ok()) {
      return Fail(kExitFailure, (t_sharded.ok() ? t_single : t_sharded).status().ToString());
    }
    const double diff = read ? MaxRelativeDifference(y, want) : 0;
    Table table({"run", "devices", "time (median)", "between devices per run"});
    table.AddRow({"sharded", absl::StrCat(sharded.exe->devices()->size()),
                  FormatDuration(*t_sharded),
                  FormatBytes(after.device_to_device.bytes - before.device_to_device.bytes)});
    table.AddRow({"one device", "1", FormatDuration(*t_single), "0 B"});
    std::cout << "\n";
    table.Print(std::cout);
    std::cout << "\n  The all-reduce of y's partial sums is the only communication (its bytes "
                 "counted by\n  transfer_stats). The "
              << sharded.exe->devices()->size() << " devices share this machine's "
              << std::thread::hardware_concurrency()
              << " cores. y matches the one-device run: largest\n  difference "
              << absl::StrFormat("%.1e", diff) << " (float sums in another order).\n";
    if (diff > 1e-4) return Fail(kExitFailure, "the sharded MLP differs from the 1-device run");
    return kExitOk;
  }

  // Under d2d=disallow_explicit the program's all-reduce (an explicit device-to-device transfer)
  // is refused before anything runs.
  int GuardRefusal(Prepared& sharded) {
    const guard::Policy saved = client_.transfer_guard().policy();
    client_.transfer_guard().SetPolicy(*guard::Policy::Parse("d2d=disallow_explicit"));
    bool read = false;
    const absl::Status refused = RunOnce(client_, sharded, nullptr, &read);
    client_.transfer_guard().SetPolicy(saved);
    std::cout << "\n  With the policy d2d=disallow_explicit the same Execute is "
              << (refused.ok() ? "allowed (unexpected!)" : "refused") << ":\n";
    if (refused.ok()) return Fail(kExitFailure, "the guard let the program's all-reduce through");
    std::cout << "    " << refused.message() << "\n";
    return kExitOk;
  }

  // The quick-sized program as one executable over CPU and Vulkan devices together.
  int Mixed(absl::Span<Device* const> cpu, absl::Span<Device* const> vulkan) {
    std::vector<Device*> both(cpu.begin(), cpu.end());
    both.insert(both.end(), vulkan.begin(), vulkan.end());
    const int64_t n = static_cast<int64_t>(both.size());
    const MlpSize size{16, 64, 64 * n};
    absl::StatusOr<Prepared> mixed = Prepare(client_, MegatronProgram(size, n), both, nullptr);
    if (!mixed.ok()) return Fail(kExitFailure, mixed.status().ToString());
    std::vector<std::vector<float>> inputs = MakeInputs(*mixed->exe);
    Device* first = FirstAddressable(cpu);
    absl::StatusOr<Prepared> single =
        Prepare(client_, MegatronProgram(size, 1), absl::MakeConstSpan(&first, 1), &inputs);
    if (!single.ok()) return Fail(kExitFailure, single.status().ToString());
    std::vector<float> y, want;
    bool read = false, read_want = false;
    absl::Status s = RunOnce(client_, *mixed, &y, &read);
    if (s.ok()) s = RunOnce(client_, *single, &want, &read_want);
    absl::StatusOr<double> time = s.ok() ? TimeRuns(client_, *mixed, 3) : s;
    if (!time.ok()) return Fail(kExitFailure, time.status().ToString());
    const double diff = read ? MaxRelativeDifference(y, want) : 0;
    std::cout << "\n  One executable over " << DeviceRange(both)
              << " (CPU and Vulkan kernels of one program),\n  f32[" << size.batch << ","
              << size.width << "] x f32[" << size.width << "," << size.hidden
              << "]: " << FormatDuration(*time) << " per run; y matches the one-device run ("
              << absl::StrFormat("%.1e", diff) << ").\n";
    if (diff > 1e-4) {
      return Fail(kExitFailure, "the mixed-device MLP differs from the 1-device run");
    }
    return kExitOk;
  }

  Client& client_;
  bool quick_;
};

}  // namespace

int RunComputationSection(Client& client, absl::Span<Device* const> cpu,
                          absl::Span<Device* const> vulkan, bool quick, int number) {
  PrintHeading(number, "A sharded computation",
               "A program is compiled once for a list of devices and run SPMD: each device runs "
               "its kernels\non its shards, and the runtime moves (and guards) every byte "
               "between them.");
  if (cpu.size() < 2) {
    std::cout << "  (one device: nothing to partition; see `tessera run examples/mlp.mlir`)\n";
    return kExitOk;
  }
  ComputationTour tour(client, quick);
  return tour.Run(cpu, vulkan);
}

}  // namespace tessera::tools
