// Reshard benchmark: times the reshards JAX users run most, each beside the
// floor measured in the same run — a parallel memcpy (one thread per device) of
// the bytes the reshard moves.
//
//   reshard_benchmark [--size N] [--devices D] [--repeat R]
//
// Prints one row per case: median and best time, GiB/s of bytes moved, the
// memcpy floor and the ratio. The array is N x N f32 (default 4096: 64 MiB)
// over D CPU devices (default 8).

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "benchmarks/ifrt/memcpy_floor.h"
#include "ifrt/introspection.h"
#include "tessera.h"

namespace {

using namespace tessera;
using bench::Clock;
using bench::Median;
using bench::ParallelMemcpySeconds;
using bench::Seconds;

struct Row {
  std::string name;
  int64_t bytes_moved;
  double median_s, best_s, floor_s;
};

}  // namespace

int main(int argc, char** argv) {
  int64_t n = 4096;
  int num_devices = 8;
  int repeat = 7;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--size")
      n = std::atoll(argv[i + 1]);
    else if (flag == "--devices")
      num_devices = std::atoi(argv[i + 1]);
    else if (flag == "--repeat")
      repeat = std::atoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "usage: %s [--size N] [--devices D] [--repeat R]\n", argv[0]);
      return 2;
    }
  }
  auto client_or = CreateClient({.cpu_devices = num_devices, .vulkan = VulkanMode::kOff});
  if (!client_or.ok()) {
    std::fprintf(stderr, "%s\n", client_or.status().ToString().c_str());
    return 1;
  }
  std::shared_ptr<Client> client = *client_or;
  auto* runtime = client->introspection();
  std::vector<Device*> devs(client->devices().begin(), client->devices().end());
  std::vector<Device*> reversed(devs.rbegin(), devs.rend());
  DeviceListRef list = *client->MakeDeviceList(devs);
  DeviceListRef rev_list = *client->MakeDeviceList(reversed);
  const DType f32(DType::kF32);
  const Shape shape({n, n});
  const int64_t array_bytes = n * n * 4;
  auto named = [&](const std::string& mesh, const std::string& spec, DeviceListRef l) {
    return *NamedSharding::Create(*sharding::Mesh::Parse(mesh),
                                  *sharding::PartitionSpec::Parse(spec), l, MemoryKind());
  };
  const std::string mesh1 = "mesh{x=" + std::to_string(num_devices) + "}";
  int mx = 1;
  while (mx * mx * 2 <= num_devices) mx *= 2;
  const std::string mesh2 =
      "mesh{x=" + std::to_string(mx) + ",y=" + std::to_string(num_devices / mx) + "}";
  ShardingRef rows = named(mesh1, "P(x,None)", list);
  ShardingRef cols = named(mesh1, "P(None,x)", list);
  ShardingRef repl = named(mesh1, "P()", list);
  ShardingRef rows_rev = named(mesh1, "P(x,None)", rev_list);
  ShardingRef xy = named(mesh2, "P(x,y)", list);
  ShardingRef yx = named(mesh2, "P(y,x)", list);

  std::vector<float> host(n * n);
  std::iota(host.begin(), host.end(), 0.0f);
  std::printf(
      "Tessera reshard benchmark: f32[%lld,%lld] (%.0f MiB) over %d CPU "
      "devices, median of %d\n",
      static_cast<long long>(n), static_cast<long long>(n), array_bytes / 1048576.0, num_devices,
      repeat);

  std::vector<Row> rows_out;
  auto time_it = [&](const std::string& name, int64_t bytes_moved,
                     const std::function<void()>& fn) {
    std::vector<double> times;
    fn();  // warm: plans cached, pages touched
    for (int r = 0; r < repeat; ++r) {
      auto start = Clock::now();
      fn();
      times.push_back(Seconds(Clock::now() - start));
    }
    const double floor = ParallelMemcpySeconds(std::max<int64_t>(bytes_moved, 1), num_devices, 3);
    rows_out.push_back(
        {name, bytes_moved, Median(times), *std::min_element(times.begin(), times.end()), floor});
  };

  ArrayRef base =
      *client->MakeArrayFromHostBuffer(host.data(), f32, shape, std::nullopt, rows,
                                       HostBufferSemantics::kImmutableOnlyDuringCall, nullptr);
  if (!base->GetReadyFuture().Await().ok()) return 1;

  auto reshard_case = [&](const std::string& name, ShardingRef from, ShardingRef to) {
    std::vector<ArrayRef> in = {*client->ReshardArrays(
        absl::MakeSpan(&base, 1), {ArraySpec{f32, shape, from}}, ArrayCopySemantics::kAlwaysCopy)};
    (void)in[0]->GetReadyFuture().Await();
    auto plan = *runtime->PlanReshard(*in[0], ArraySpec{f32, shape, to});
    const int64_t moved = plan->cross_location_bytes + plan->local_bytes;
    time_it(name, moved, [&] {
      auto out = client->ReshardArrays(absl::MakeSpan(in), {ArraySpec{f32, shape, to}},
                                       ArrayCopySemantics::kReuseInput);
      if (!out.ok() || !(*out)[0]->GetReadyFuture().Await().ok()) std::abort();
    });
  };
  reshard_case("rows -> columns", rows, cols);
  reshard_case("rows -> replicated", rows, repl);
  reshard_case("2D transpose P(x,y)->P(y,x)", xy, yx);
  reshard_case("rows, reversed device order", rows, rows_rev);
  time_it("host -> row shards", array_bytes, [&] {
    auto a = client->MakeArrayFromHostBuffer(host.data(), f32, shape, std::nullopt, rows,
                                             HostBufferSemantics::kImmutableUntilTransferCompletes,
                                             nullptr);
    if (!a.ok() || !(*a)->GetReadyFuture().Await().ok()) std::abort();
  });
  std::vector<float> back(n * n);
  time_it("row shards -> host", array_bytes, [&] {
    if (!base->CopyToHostBuffer(back.data(), std::nullopt, ArrayCopySemantics::kAlwaysCopy)
             .Await()
             .ok())
      std::abort();
  });
  if (back != host) {
    std::fprintf(stderr, "read-back mismatch\n");
    return 1;
  }
  {
    std::vector<float> tiny(64);
    ArrayRef small = *client->MakeArrayFromHostBuffer(
        tiny.data(), f32, Shape({8, 8}), std::nullopt, named(mesh1, "P(x,None)", list),
        HostBufferSemantics::kImmutableOnlyDuringCall, nullptr);
    std::vector<ArrayRef> in = {small};
    ShardingRef to = named(mesh1, "P(None,x)", list);
    time_it("8x8 rows -> columns (latency)", 8 * 8 * 4, [&] {
      auto out = client->ReshardArrays(absl::MakeSpan(in), {ArraySpec{f32, Shape({8, 8}), to}},
                                       ArrayCopySemantics::kReuseInput);
      if (!out.ok() || !(*out)[0]->GetReadyFuture().Await().ok()) std::abort();
    });
  }

  std::printf("\n%-32s %12s %11s %11s %10s %13s %8s\n", "case", "bytes moved", "median ms",
              "best ms", "GiB/s", "memcpy ms", "x floor");
  for (const Row& r : rows_out) {
    std::printf("%-32s %12lld %11.3f %11.3f %10.2f %13.3f %8.2f\n", r.name.c_str(),
                static_cast<long long>(r.bytes_moved), r.median_s * 1e3, r.best_s * 1e3,
                r.bytes_moved / r.median_s / (1 << 30), r.floor_s * 1e3, r.median_s / r.floor_s);
  }
  auto cache = runtime->plan_cache_stats();
  std::printf("\nplan cache: %lld hits, %lld misses\n", static_cast<long long>(cache.hits),
              static_cast<long long>(cache.misses));
  return 0;
}
