// Program benchmark: compiles MLIR programs (built from text with sizes as parameters) and times
// them SPMD over D CPU devices, as JAX's `jit` with the same shardings would run them:
//   mlp          y = relu(x @ w + b)         x, y rows-sharded P(x,None); w, b replicated
//   megatron     y = relu(x @ w1 + b1) @ w2  x, y replicated; w1 P(None,x), b1 P(x),
//                                            w2 P(x,None): one all-reduce
//   elementwise  y = x * 2 + 1               f32[4096,4096] (64 MiB) rows-sharded, beside the
//                                            floor: a parallel memcpy (one thread per device) of
//                                            the same bytes, in the same run
//   latency      elementwise over f32[8,8]   the fixed cost of one Execute (dispatch, no work)
//   matmul       y = x @ w                   x f32[B,N], w f32[N,N], x and y rows-sharded
//   rowsum       y = sum(x, 1)               f32[S,S] rows-sharded
//
//   program_benchmark [--batch B] [--width N] [--size S] [--devices D] [--repeat R] [--only P]
//                     [--vulkan]
//
// B (default 256) is the batch, N (default 2048) the layers' width, S (default 4096) the
// elementwise array's side. Each program is compiled once (timed), run once to warm up, then
// timed R times (Execute + await of the status and outputs); one row per program: median, best,
// compile time, memcpy floor (elementwise only) and the ratio to it. Results are checked against
// reference values on a few rows. --only P runs program P alone (a profile of one program).
// --vulkan runs on the client's first D Vulkan devices instead of CPU devices (VK_DRIVER_FILES
// chooses the driver; lavapipe in CI).

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "benchmarks/ifrt/memcpy_floor.h"
#include "tessera.h"

namespace {

using namespace tessera;
using bench::Clock;
using bench::Median;
using bench::ParallelMemcpySeconds;
using bench::Seconds;

// Replaces $B, $N, $R, $C and $D in `text`.
std::string Fill(const char* text, int64_t b, int64_t n, int64_t rows, int64_t cols, int d) {
  return absl::StrReplaceAll(text, {{"$B", absl::StrCat(b)},
                                    {"$N", absl::StrCat(n)},
                                    {"$R", absl::StrCat(rows)},
                                    {"$C", absl::StrCat(cols)},
                                    {"$D", absl::StrCat(d)}});
}

constexpr char kMlp[] = R"mlir(
func.func @main(%x: tensor<$Bx$Nxf32> {tessera.sharding = "mesh{x=$D} P(x,None)"},
                %w: tensor<$Nx$Nxf32> {tessera.sharding = "mesh{x=$D} P()"},
                %b: tensor<$Nxf32> {tessera.sharding = "mesh{x=$D} P()"})
    -> (tensor<$Bx$Nxf32> {tessera.sharding = "mesh{x=$D} P(x,None)"}) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<$Bx$Nxf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<$Bx$Nxf32>) -> tensor<$Bx$Nxf32>
  %h = linalg.matmul ins(%x, %w : tensor<$Bx$Nxf32>, tensor<$Nx$Nxf32>)
                     outs(%acc : tensor<$Bx$Nxf32>) -> tensor<$Bx$Nxf32>
  %bias = linalg.broadcast ins(%b : tensor<$Nxf32>) outs(%e : tensor<$Bx$Nxf32>) dimensions = [0]
  %sum = arith.addf %h, %bias : tensor<$Bx$Nxf32>
  %y = arith.maximumf %sum, %acc : tensor<$Bx$Nxf32>
  return %y : tensor<$Bx$Nxf32>
}
)mlir";

constexpr char kMegatron[] = R"mlir(
func.func @main(%x: tensor<$Bx$Nxf32> {tessera.sharding = "mesh{x=$D} P()"},
                %w1: tensor<$Nx$Nxf32> {tessera.sharding = "mesh{x=$D} P(None,x)"},
                %b1: tensor<$Nxf32> {tessera.sharding = "mesh{x=$D} P(x)"},
                %w2: tensor<$Nx$Nxf32> {tessera.sharding = "mesh{x=$D} P(x,None)"})
    -> (tensor<$Bx$Nxf32> {tessera.sharding = "mesh{x=$D} P()"}) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<$Bx$Nxf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<$Bx$Nxf32>) -> tensor<$Bx$Nxf32>
  %mm1 = linalg.matmul ins(%x, %w1 : tensor<$Bx$Nxf32>, tensor<$Nx$Nxf32>)
                       outs(%acc : tensor<$Bx$Nxf32>) -> tensor<$Bx$Nxf32>
  %bias = linalg.broadcast ins(%b1 : tensor<$Nxf32>) outs(%e : tensor<$Bx$Nxf32>) dimensions = [0]
  %pre = arith.addf %mm1, %bias : tensor<$Bx$Nxf32>
  %h = arith.maximumf %pre, %acc : tensor<$Bx$Nxf32>
  %y = linalg.matmul ins(%h, %w2 : tensor<$Bx$Nxf32>, tensor<$Nx$Nxf32>)
                     outs(%acc : tensor<$Bx$Nxf32>) -> tensor<$Bx$Nxf32>
  return %y : tensor<$Bx$Nxf32>
}
)mlir";

constexpr char kMatmul[] = R"mlir(
func.func @main(%x: tensor<$Bx$Nxf32> {tessera.sharding = "mesh{x=$D} P(x,None)"},
                %w: tensor<$Nx$Nxf32> {tessera.sharding = "mesh{x=$D} P()"})
    -> (tensor<$Bx$Nxf32> {tessera.sharding = "mesh{x=$D} P(x,None)"}) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<$Bx$Nxf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<$Bx$Nxf32>) -> tensor<$Bx$Nxf32>
  %y = linalg.matmul ins(%x, %w : tensor<$Bx$Nxf32>, tensor<$Nx$Nxf32>)
                     outs(%acc : tensor<$Bx$Nxf32>) -> tensor<$Bx$Nxf32>
  return %y : tensor<$Bx$Nxf32>
}
)mlir";

constexpr char kRowSum[] = R"mlir(
func.func @main(%x: tensor<$Rx$Cxf32> {tessera.sharding = "mesh{x=$D} P(x,None)"})
    -> (tensor<$Rxf32> {tessera.sharding = "mesh{x=$D} P(x)"}) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<$Rxf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<$Rxf32>) -> tensor<$Rxf32>
  %y = linalg.reduce ins(%x : tensor<$Rx$Cxf32>) outs(%acc : tensor<$Rxf32>) dimensions = [1]
    (%in: f32, %out: f32) {
      %s = arith.addf %in, %out : f32
      linalg.yield %s : f32
    }
  return %y : tensor<$Rxf32>
}
)mlir";

constexpr char kElementwise[] = R"mlir(
func.func @main(%x: tensor<$Rx$Cxf32> {tessera.sharding = "mesh{x=$D} P(x,None)"})
    -> (tensor<$Rx$Cxf32> {tessera.sharding = "mesh{x=$D} P(x,None)"}) {
  %two = arith.constant 2.0 : f32
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<$Rx$Cxf32>
  %y = linalg.map ins(%x : tensor<$Rx$Cxf32>) outs(%e : tensor<$Rx$Cxf32>)
    (%in: f32, %out: f32) {
      %m = arith.mulf %in, %two : f32
      %a = arith.addf %m, %one : f32
      linalg.yield %a : f32
    }
  return %y : tensor<$Rx$Cxf32>
}
)mlir";

std::vector<float> Random(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

struct Row {
  std::string name;
  double median_s, best_s, compile_s, floor_s;  // floor_s 0: none
};

struct Bench {
  std::shared_ptr<Client> client;
  DeviceListRef devices;
  int num_devices;
  int repeat;

  ShardingRef Named(const std::string& spec) const {
    return *NamedSharding::Create(*sharding::Mesh::Parse(absl::StrCat("mesh{x=", num_devices, "}")),
                                  *sharding::PartitionSpec::Parse(spec), devices, MemoryKind());
  }

  ArrayRef Put(const std::vector<float>& data, std::vector<int64_t> dims,
               const std::string& spec) const {
    absl::StatusOr<ArrayRef> a = client->MakeArrayFromHostBuffer(
        data.data(), DType(DType::kF32), Shape(dims), std::nullopt, Named(spec),
        HostBufferSemantics::kImmutableOnlyDuringCall, nullptr);
    if (!a.ok() || !(*a)->GetReadyFuture().Await().ok()) Die("MakeArrayFromHostBuffer", a.status());
    return *a;
  }

  std::vector<float> Get(const ArrayRef& a) const {
    std::vector<float> out(a->shape().num_elements());
    absl::Status s =
        a->CopyToHostBuffer(out.data(), std::nullopt, ArrayCopySemantics::kAlwaysCopy).Await();
    if (!s.ok()) Die("CopyToHostBuffer", s);
    return out;
  }

  [[noreturn]] static void Die(const std::string& what, const absl::Status& status) {
    std::fprintf(stderr, "%s: %s\n", what.c_str(), status.ToString().c_str());
    std::exit(1);
  }

  // Compiles `text` (timed), runs it once, then R times; returns the row and the last outputs.
  Row Time(const std::string& name, const std::string& text, std::vector<ArrayRef> args,
           std::vector<ArrayRef>* outputs) const {
    auto start = Clock::now();
    absl::StatusOr<LoadedExecutableRef> exe = client->GetDefaultCompiler()->Compile(
        std::make_unique<MlirProgram>(text), CompileOptions{.devices = devices});
    const double compile_s = Seconds(Clock::now() - start);
    if (!exe.ok()) Die(absl::StrCat("compiling ", name), exe.status());
    auto run = [&] {
      absl::StatusOr<ExecuteResult> result = (*exe)->Execute(absl::MakeSpan(args));
      if (!result.ok()) Die(absl::StrCat("executing ", name), result.status());
      absl::Status ran = result->status.Await();
      for (const ArrayRef& out : result->outputs) {
        if (ran.ok()) ran = out->GetReadyFuture().Await();
      }
      if (!ran.ok()) Die(absl::StrCat("running ", name), ran);
      *outputs = result->outputs;
    };
    run();  // warm: kernels loaded, pages touched
    std::vector<double> times;
    for (int r = 0; r < repeat; ++r) {
      start = Clock::now();
      run();
      times.push_back(Seconds(Clock::now() - start));
    }
    return {name, Median(times), *std::min_element(times.begin(), times.end()), compile_s, 0};
  }
};

// relu(x @ w + b) for row `i` (b may be empty), or without relu.
std::vector<double> DenseRow(const std::vector<float>& x, const std::vector<float>& w,
                             const std::vector<float>& b, int64_t i, int64_t n, bool relu) {
  std::vector<double> y(n, 0.0);
  for (int64_t k = 0; k < n; ++k) {
    const double xv = x[i * n + k];
    for (int64_t j = 0; j < n; ++j) y[j] += xv * w[k * n + j];
  }
  for (int64_t j = 0; j < n; ++j) {
    if (!b.empty()) y[j] += b[j];
    if (relu) y[j] = std::max(0.0, y[j]);
  }
  return y;
}

bool CheckRows(const std::string& name, const std::vector<float>& got,
               const std::function<std::vector<double>(int64_t)>& want, int64_t rows, int64_t n) {
  for (int64_t i : {int64_t{0}, rows / 2, rows - 1}) {
    std::vector<double> row = want(i);
    for (int64_t j = 0; j < n; ++j) {
      if (std::abs(got[i * n + j] - row[j]) > 1e-3 * std::max(1.0, std::abs(row[j]))) {
        std::fprintf(stderr, "%s: y[%lld,%lld] = %g, want %g\n", name.c_str(),
                     static_cast<long long>(i), static_cast<long long>(j), got[i * n + j], row[j]);
        return false;
      }
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t batch = 256, width = 2048, size = 4096;
  int num_devices = 8, repeat = 7;
  std::string only;
  bool vulkan = false;
  auto usage = [&] {
    std::fprintf(stderr,
                 "usage: %s [--batch B] [--width N] [--size S] [--devices D] [--repeat R] "
                 "[--only P] [--vulkan]\n",
                 argv[0]);
    return 2;
  };
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--vulkan") {
      vulkan = true;
      continue;
    }
    if (i + 1 >= argc) return usage();
    const char* value = argv[++i];
    if (flag == "--batch") {
      batch = std::atoll(value);
    } else if (flag == "--width") {
      width = std::atoll(value);
    } else if (flag == "--size") {
      size = std::atoll(value);
    } else if (flag == "--devices") {
      num_devices = std::atoi(value);
    } else if (flag == "--repeat") {
      repeat = std::atoi(value);
    } else if (flag == "--only") {
      only = value;
    } else {
      return usage();
    }
  }
  auto client = CreateClient({.cpu_devices = vulkan ? 1 : num_devices,
                              .vulkan = vulkan ? VulkanMode::kRequired : VulkanMode::kOff});
  if (!client.ok()) Bench::Die("CreateClient", client.status());
  Bench bench{*client, nullptr, num_devices, repeat};
  std::vector<Device*> chosen;
  for (Device* device : (*client)->devices()) {
    const bool is_vulkan = device->Kind() == "vulkan";
    if (is_vulkan == vulkan && static_cast<int>(chosen.size()) < num_devices) {
      chosen.push_back(device);
    }
  }
  if (static_cast<int>(chosen.size()) < num_devices) {
    Bench::Die("choosing devices",
               absl::NotFoundError(absl::StrCat("fewer than ", num_devices,
                                                vulkan ? " Vulkan" : " CPU", " devices")));
  }
  bench.devices = *(*client)->MakeDeviceList(chosen);
  std::printf(
      "Tessera program benchmark: batch %lld, width %lld, elementwise f32[%lld,%lld], %d %s "
      "devices, median of %d\n",
      static_cast<long long>(batch), static_cast<long long>(width), static_cast<long long>(size),
      static_cast<long long>(size), num_devices, vulkan ? "Vulkan" : "CPU", repeat);
  const int64_t b = batch, n = width;
  std::vector<Row> rows;
  std::vector<ArrayRef> out;
  bool ok = true;

  auto want = [&](const char* name) { return only.empty() || only == name; };
  const std::vector<float> x = Random(b * n, 1), w = Random(n * n, 2), bias = Random(n, 3);
  if (want("mlp")) {
    rows.push_back(bench.Time("mlp", Fill(kMlp, b, n, 0, 0, num_devices),
                              {bench.Put(x, {b, n}, "P(x,None)"), bench.Put(w, {n, n}, "P()"),
                               bench.Put(bias, {n}, "P()")},
                              &out));
    ok &= CheckRows(
        "mlp", bench.Get(out[0]), [&](int64_t i) { return DenseRow(x, w, bias, i, n, true); }, b,
        n);
  }

  if (want("megatron")) {
    const std::vector<float> w2 = Random(n * n, 4);
    rows.push_back(bench.Time("megatron", Fill(kMegatron, b, n, 0, 0, num_devices),
                              {bench.Put(x, {b, n}, "P()"), bench.Put(w, {n, n}, "P(None,x)"),
                               bench.Put(bias, {n}, "P(x)"), bench.Put(w2, {n, n}, "P(x,None)")},
                              &out));
    ok &= CheckRows(
        "megatron", bench.Get(out[0]),
        [&](int64_t i) {
          std::vector<double> h = DenseRow(x, w, bias, i, n, true);
          std::vector<float> hf(h.begin(), h.end());
          return DenseRow(hf, w2, {}, 0, n, false);
        },
        b, n);
  }

  if (want("elementwise")) {
    const std::vector<float> big = Random(size * size, 5);
    rows.push_back(bench.Time("elementwise", Fill(kElementwise, 0, 0, size, size, num_devices),
                              {bench.Put(big, {size, size}, "P(x,None)")}, &out));
    rows.back().floor_s = ParallelMemcpySeconds(size * size * 4, num_devices, repeat);
    ok &= CheckRows(
        "elementwise", bench.Get(out[0]),
        [&](int64_t i) {
          std::vector<double> row(size);
          for (int64_t j = 0; j < size; ++j) row[j] = big[i * size + j] * 2.0f + 1.0f;
          return row;
        },
        size, size);
  }

  if (want("matmul")) {
    rows.push_back(bench.Time("matmul", Fill(kMatmul, b, n, 0, 0, num_devices),
                              {bench.Put(x, {b, n}, "P(x,None)"), bench.Put(w, {n, n}, "P()")},
                              &out));
    ok &= CheckRows(
        "matmul", bench.Get(out[0]), [&](int64_t i) { return DenseRow(x, w, {}, i, n, false); }, b,
        n);
  }

  if (want("rowsum")) {
    const std::vector<float> big = Random(size * size, 6);
    rows.push_back(bench.Time("rowsum", Fill(kRowSum, 0, 0, size, size, num_devices),
                              {bench.Put(big, {size, size}, "P(x,None)")}, &out));
    const std::vector<float> sums = bench.Get(out[0]);
    for (int64_t i : {int64_t{0}, size / 2, size - 1}) {
      double want_sum = 0;
      for (int64_t j = 0; j < size; ++j) want_sum += big[i * size + j];
      if (std::abs(sums[i] - want_sum) > 1e-3 * std::max(1.0, std::abs(want_sum))) {
        std::fprintf(stderr, "rowsum: y[%lld] = %g, want %g\n", static_cast<long long>(i), sums[i],
                     want_sum);
        ok = false;
      }
    }
  }

  if (want("latency")) {
    const int64_t tiny = 8 * ((num_devices + 7) / 8);
    rows.push_back(
        bench.Time("latency", Fill(kElementwise, 0, 0, tiny, 8, num_devices),
                   {bench.Put(std::vector<float>(tiny * 8, 1.0f), {tiny, 8}, "P(x,None)")}, &out));
  }

  std::printf("\n%-16s %11s %11s %11s %11s %8s\n", "program", "median ms", "best ms", "compile ms",
              "memcpy ms", "x floor");
  for (const Row& r : rows) {
    std::printf("%-16s %11.3f %11.3f %11.1f ", r.name.c_str(), r.median_s * 1e3, r.best_s * 1e3,
                r.compile_s * 1e3);
    if (r.floor_s > 0) {
      std::printf("%11.3f %8.2f\n", r.floor_s * 1e3, r.median_s / r.floor_s);
    } else {
      std::printf("%11s %8s\n", "-", "-");
    }
  }
  if (!ok) {
    std::fprintf(stderr, "results differ from the reference\n");
    return 1;
  }
  return 0;
}
