// Latency benchmark: the fixed cost of small operations, and how it gives way to bandwidth as the
// bytes grow. Prints CSV on stdout, one row per case:
//
//   op,bytes,median_us,best_us,reps
//
//   latency_benchmark [--targets] [--sweep] [--max-bytes B] [--min-seconds S]
//
// --targets (the default when neither is given) times the cases docs/performance.md states
// targets for:
//   reshard_8x8          f32[8,8] rows -> columns over 8 CPU devices, ready future awaited
//   reshard_8x8_log      the same with the transfer guard at `log` and a trace attached then
//                        detached
//   h2d_8xf32            MakeArrayFromHostBuffer of f32[8] to one CPU device, awaited
//   d2h_8xf32            CopyToHostBuffer of that array, awaited
//   execute_tiny_4dev    Execute + await of x * 2 + 1 over f32[8,8] rows-sharded on 4 devices
// --sweep times, up to --max-bytes (default 64 MiB):
//   reshard              f32[n,n] rows -> columns over 8 devices, n = 8, 16, ... (256 B up, 4x)
//   h2d                  MakeArrayFromHostBuffer of u8[bytes] to one device, awaited (1 B up, 4x)
//   d2h                  CopyToHostBuffer of u8[bytes] from one device, awaited
// Each case runs once to warm up, then until --min-seconds (default 0.2) have passed, at least 5
// and at most 20000 times; the median and the best are printed. benchmarks/latency/run_latency.py
// runs this binary beside JAX and writes the combined CSV.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ifrt/introspection.h"
#include "ifrt/transfer_trace.h"
#include "tessera.h"

namespace {

using namespace tessera;
using Clock = std::chrono::steady_clock;

double min_seconds = 0.2;

[[noreturn]] void Die(const std::string& what, const absl::Status& status) {
  std::fprintf(stderr, "%s: %s\n", what.c_str(), status.ToString().c_str());
  std::exit(1);
}

void Check(const std::string& what, const absl::Status& status) {
  if (!status.ok()) Die(what, status);
}

// Runs `fn` once, then repeatedly; prints the CSV row.
void Time(const std::string& op, int64_t bytes, const std::function<void()>& fn) {
  fn();
  std::vector<double> times;
  const auto begin = Clock::now();
  while (times.size() < 5 ||
         (times.size() < 20000 &&
          std::chrono::duration<double>(Clock::now() - begin).count() < min_seconds)) {
    const auto start = Clock::now();
    fn();
    times.push_back(std::chrono::duration<double>(Clock::now() - start).count() * 1e6);
  }
  std::sort(times.begin(), times.end());
  std::printf("%s,%lld,%.3f,%.3f,%zu\n", op.c_str(), static_cast<long long>(bytes),
              times[times.size() / 2], times[0], times.size());
  std::fflush(stdout);
}

struct Setup {
  std::shared_ptr<Client> client;
  DeviceListRef devices;
  int num_devices;

  explicit Setup(int n) : num_devices(n) {
    absl::StatusOr<std::shared_ptr<Client>> c =
        CreateClient({.cpu_devices = n, .vulkan = VulkanMode::kOff});
    if (!c.ok()) Die("CreateClient", c.status());
    client = *c;
    absl::StatusOr<DeviceListRef> list = client->MakeDeviceList(client->devices());
    if (!list.ok()) Die("MakeDeviceList", list.status());
    devices = *list;
  }

  ShardingRef Named(const std::string& spec) const {
    return *NamedSharding::Create(*sharding::Mesh::Parse(absl::StrCat("mesh{x=", num_devices, "}")),
                                  *sharding::PartitionSpec::Parse(spec), devices, MemoryKind());
  }
  ShardingRef One() const { return SingleDeviceSharding::Create(client->devices()[0], {}); }

  ArrayRef Put(const void* data, DType dtype, Shape shape, ShardingRef sharding) const {
    absl::StatusOr<ArrayRef> a = client->MakeArrayFromHostBuffer(
        data, dtype, std::move(shape), std::nullopt, std::move(sharding),
        HostBufferSemantics::kImmutableUntilTransferCompletes, nullptr);
    if (!a.ok()) Die("MakeArrayFromHostBuffer", a.status());
    Check("MakeArrayFromHostBuffer (await)", (*a)->GetReadyFuture().Await());
    return *a;
  }

  // Reshards `in` to `to` and awaits the result.
  void Reshard(ArrayRef& in, const ShardingRef& to) const {
    absl::StatusOr<std::vector<ArrayRef>> out =
        client->ReshardArrays(absl::MakeSpan(&in, 1), {ArraySpec{in->dtype(), in->shape(), to}},
                              ArrayCopySemantics::kReuseInput);
    if (!out.ok()) Die("ReshardArrays", out.status());
    Check("ReshardArrays (await)", (*out)[0]->GetReadyFuture().Await());
  }
};

void ReshardCase(const Setup& s, const std::string& op, int64_t side) {
  std::vector<float> host(side * side);
  std::iota(host.begin(), host.end(), 0.0f);
  ArrayRef in = s.Put(host.data(), DType(DType::kF32), Shape({side, side}), s.Named("P(x,None)"));
  ShardingRef cols = s.Named("P(None,x)");
  Time(op, side * side * 4, [&] { s.Reshard(in, cols); });
}

void HostTransferCases(const Setup& s, const std::string& h2d, const std::string& d2h, DType dtype,
                       int64_t elements) {
  const int64_t bytes = elements * *dtype.byte_size();
  std::vector<uint8_t> host(bytes, 7), back(bytes, 0);
  ShardingRef one = s.One();
  Time(h2d, bytes, [&] { s.Put(host.data(), dtype, Shape({elements}), one); });
  ArrayRef a = s.Put(host.data(), dtype, Shape({elements}), one);
  Time(d2h, bytes, [&] {
    Check("CopyToHostBuffer",
          a->CopyToHostBuffer(back.data(), std::nullopt, ArrayCopySemantics::kAlwaysCopy).Await());
  });
  if (back != host) Die("read-back", absl::DataLossError("bytes differ"));
}

constexpr char kElementwise[] = R"mlir(
func.func @main(%x: tensor<8x8xf32> {tessera.sharding = "mesh{x=4} P(x,None)"})
    -> (tensor<8x8xf32> {tessera.sharding = "mesh{x=4} P(x,None)"}) {
  %two = arith.constant 2.0 : f32
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<8x8xf32>
  %y = linalg.map ins(%x : tensor<8x8xf32>) outs(%e : tensor<8x8xf32>)
    (%in: f32, %out: f32) {
      %m = arith.mulf %in, %two : f32
      %a = arith.addf %m, %one : f32
      linalg.yield %a : f32
    }
  return %y : tensor<8x8xf32>
}
)mlir";

void ExecuteCase() {
  Setup s(4);
  std::vector<float> host(64, 1.0f);
  std::vector<ArrayRef> args = {
      s.Put(host.data(), DType(DType::kF32), Shape({8, 8}), s.Named("P(x,None)"))};
  absl::StatusOr<LoadedExecutableRef> exe = s.client->GetDefaultCompiler()->Compile(
      std::make_unique<MlirProgram>(kElementwise), CompileOptions{.devices = s.devices});
  if (!exe.ok()) {
    std::fprintf(stderr, "execute_tiny_4dev skipped: %s\n", exe.status().ToString().c_str());
    return;
  }
  Time("execute_tiny_4dev", 256, [&] {
    absl::StatusOr<ExecuteResult> result = (*exe)->Execute(absl::MakeSpan(args));
    if (!result.ok()) Die("Execute", result.status());
    Check("Execute (status)", result->status.Await());
    for (const ArrayRef& out : result->outputs)
      Check("Execute (output)", out->GetReadyFuture().Await());
  });
}

void Targets() {
  Setup s(8);
  ReshardCase(s, "reshard_8x8", 8);
  HostTransferCases(s, "h2d_8xf32", "d2h_8xf32", DType(DType::kF32), 8);
  {
    // The guard at `log` (the reshard is explicit, so it is allowed without a message) and a trace
    // that was attached, then detached.
    absl::StatusOr<guard::Policy> log = guard::Policy::Parse("log");
    if (!log.ok()) Die("Policy::Parse", log.status());
    s.client->transfer_guard().SetPolicy(*log);
    auto trace = std::make_shared<TransferTrace>();
    s.client->introspection()->SetTransferTrace(trace);
    s.client->introspection()->SetTransferTrace(nullptr);
    ReshardCase(s, "reshard_8x8_log", 8);
    s.client->transfer_guard().SetPolicy(guard::Policy{});
  }
  ExecuteCase();
}

void Sweep(int64_t max_bytes) {
  Setup s(8);
  for (int64_t side = 8; side * side * 4 <= max_bytes; side *= 2) {
    ReshardCase(s, "reshard", side);
  }
  for (int64_t bytes = 1; bytes <= max_bytes; bytes *= 4) {
    HostTransferCases(s, "h2d", "d2h", DType(DType::kU8), bytes);
  }
}

}  // namespace

int main(int argc, char** argv) {
  bool targets = false, sweep = false;
  int64_t max_bytes = int64_t{64} << 20;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--targets") {
      targets = true;
    } else if (flag == "--sweep") {
      sweep = true;
    } else if (flag == "--max-bytes" && i + 1 < argc) {
      max_bytes = std::atoll(argv[++i]);
    } else if (flag == "--min-seconds" && i + 1 < argc) {
      min_seconds = std::atof(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: %s [--targets] [--sweep] [--max-bytes B] [--min-seconds S]\n",
                   argv[0]);
      return 2;
    }
  }
  if (!targets && !sweep) targets = true;
  std::printf("op,bytes,median_us,best_us,reps\n");
  if (targets) Targets();
  if (sweep) Sweep(max_bytes);
  return 0;
}
