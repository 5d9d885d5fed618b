// A 2-process reshard (rows -> columns of a 256 MiB f32 array over 4 CPU devices, 2 per
// process) beside its floor measured in the same run: the bytes that cross between the processes
// (64 MiB each way), moved by MPI between the same processes as a ping-pong (one way, then back)
// and as a simultaneous exchange, through the same transport. Process 0 prints.
//
//   export OMPI_MCA_btl_vader_single_copy_mechanism=none
//   mpirun -np 2 build/benchmarks/mpi/multi_process_benchmark [MiB]
//
// TESSERA_SHM=0 (docs/multi-process.md) makes the reshard's copies between the processes
// messages instead of reads from mapped shards; process 0 prints which carried its bytes.
//
// docs/multi-process.md records the figures of this machine and the transport settings chosen
// from them.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "backends/mpi/transport_factory.h"
#include "tessera.h"

namespace tessera {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

ShardingRef Tiles(Client& client, const Shape& shape, std::vector<int64_t> tile) {
  std::vector<Device*> all(client.devices().begin(), client.devices().end());
  return *ConcreteEvenSharding::Create(*client.MakeDeviceList(all), {}, shape, Shape(tile));
}

// Best of `reps` rows -> columns reshards (each awaited), in seconds.
double TimeReshard(Client& client, int64_t side, int reps) {
  const Shape shape({side, side});
  const DType f32(DType::kF32);
  const int n = static_cast<int>(client.devices().size());
  ShardingRef rows = Tiles(client, shape, {side / n, side});
  ShardingRef cols = Tiles(client, shape, {side, side / n});
  std::vector<float> host(static_cast<size_t>(side * side));
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>(i % 1000);
  absl::StatusOr<ArrayRef> a =
      client.MakeArrayFromHostBuffer(host.data(), f32, shape, std::nullopt, rows,
                                     HostBufferSemantics::kImmutableOnlyDuringCall, nullptr);
  if (!a.ok() || !(*a)->GetReadyFuture().Await().ok()) std::abort();
  double best = 1e30;
  for (int r = 0; r < reps + 1; ++r) {  // the first one warms up
    std::vector<ArrayRef> in = {*a};
    const Clock::time_point start = Clock::now();
    absl::StatusOr<std::vector<ArrayRef>> out = client.ReshardArrays(
        absl::MakeSpan(in), {ArraySpec{f32, shape, cols}}, ArrayCopySemantics::kAlwaysCopy);
    if (!out.ok() || !(*out)[0]->GetReadyFuture().Await().ok()) {
      std::fprintf(stderr, "reshard failed: %s\n",
                   std::string(out.ok() ? "ready future" : out.status().message()).c_str());
      std::abort();
    }
    if (r > 0) best = std::min(best, Seconds(start));
  }
  return best;
}

// Best of `reps` exchanges of `bytes` between processes 0 and 1: a ping-pong (0 -> 1, then
// 1 -> 0) when `both_ways_at_once` is false, else both directions at once.
// With `strided_send`, each process sends every other 8 KiB piece of a buffer twice the size, as
// the reshard's sends read 8 KiB column pieces out of row shards (the receives stay contiguous).
double TimeExchange(Transport& t, int64_t bytes, int reps, bool both_ways_at_once,
                    bool strided_send = false) {
  constexpr int64_t kPiece = 8192;  // 2048 f32: a row of a column block of the 8192^2 reshard
  std::vector<char> out(strided_send ? 2 * bytes : bytes, 1), in(bytes, 0);
  HostRegion send_region =
      strided_send ? HostRegion{out.data(), 0, 1, {bytes / kPiece, kPiece}, {2 * kPiece, 1}}
                   : HostRegion{out.data(), 0, 1, {bytes}, {1}};
  HostRegion recv_region{in.data(), 0, 1, {bytes}, {1}};
  const int peer = 1 - t.process_index();
  double best = 1e30;
  for (int r = 0; r < reps + 1; ++r) {
    absl::StatusOr<int64_t> tag = t.Agree("exchange", 1, 2, absl::OkStatus());  // also a barrier
    if (!tag.ok()) std::abort();
    const Clock::time_point start = Clock::now();
    if (both_ways_at_once) {
      Future<> s = t.Send(peer, *tag, send_region, MakeReadyFuture(), nullptr);
      Future<> v = t.Receive(peer, *tag, recv_region, nullptr);
      if (!s.Await().ok() || !v.Await().ok()) std::abort();
    } else if (t.process_index() == 0) {
      if (!t.Send(peer, *tag, send_region, MakeReadyFuture(), nullptr).Await().ok()) std::abort();
      if (!t.Receive(peer, *tag + 1, recv_region, nullptr).Await().ok()) std::abort();
    } else {
      if (!t.Receive(peer, *tag, recv_region, nullptr).Await().ok()) std::abort();
      if (!t.Send(peer, *tag + 1, send_region, MakeReadyFuture(), nullptr).Await().ok()) {
        std::abort();
      }
    }
    if (r > 0) best = std::min(best, Seconds(start));
  }
  return best;
}

int Main(int argc, char** argv) {
  const int64_t mib = argc > 1 ? std::atoll(argv[1]) : 256;
  int64_t side = 1;
  while (side * side * 4 < mib * (int64_t{1} << 20)) side *= 2;
  absl::StatusOr<std::shared_ptr<Client>> client = CreateClient({.cpu_devices = 2,
                                                                 .vulkan = VulkanMode::kOff,
                                                                 .transfer_guard = guard::Policy(),
                                                                 .distributed = Distributed::kMpi});
  if (!client.ok()) {
    std::fprintf(stderr, "CreateClient: %s\n", std::string(client.status().message()).c_str());
    return 1;
  }
  if ((*client)->process_count() != 2) {
    std::fprintf(stderr, "run under mpirun -np 2\n");
    return 1;
  }
  const int me = (*client)->process_index();
  const MpiTransportCounters before = GetMpiTransportCounters();
  const double reshard = TimeReshard(**client, side, 5);
  const MpiTransportCounters after = GetMpiTransportCounters();
  // What crosses between the processes: a quarter of the array each way.
  const int64_t crossing = side * side * 4 / 4;
  absl::StatusOr<std::unique_ptr<Transport>> transport = CreateMpiTransport();
  if (!transport.ok()) return 1;
  const double ping_pong = TimeExchange(**transport, crossing, 5, false);
  const double exchange = TimeExchange(**transport, crossing, 5, true);
  const double strided = TimeExchange(**transport, crossing, 5, true, /*strided_send=*/true);
  transport->reset();
  client->reset();
  if (me == 0) {
    const double total_mib = static_cast<double>(side * side * 4) / (1 << 20);
    const double cross_mib = static_cast<double>(crossing) / (1 << 20);
    std::printf("array %.0f MiB (%lldx%lld f32), 4 devices on 2 processes, %.0f MiB each way\n",
                total_mib, static_cast<long long>(side), static_cast<long long>(side), cross_mib);
    std::printf(
        "  reshard rows->columns   %8.2f ms  (received %.0f MiB from mapped shards, %.0f MiB "
        "in messages, over 6 reshards)\n",
        reshard * 1e3,
        static_cast<double>(after.bytes_received_mapped - before.bytes_received_mapped) / (1 << 20),
        static_cast<double>(after.bytes_received_by_message - before.bytes_received_by_message) /
            (1 << 20));
    std::printf("  MPI ping-pong (floor)   %8.2f ms  (%.2f GB/s one way)  reshard/floor %.2fx\n",
                ping_pong * 1e3, 2 * crossing / ping_pong / 1e9, reshard / ping_pong);
    std::printf("  MPI exchange, both ways %8.2f ms  reshard/exchange %.2fx\n", exchange * 1e3,
                reshard / exchange);
    std::printf("  MPI exchange, strided   %8.2f ms  (sends read 8 KiB pieces, as the reshard's)\n",
                strided * 1e3);
  }
  return 0;
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) { return tessera::Main(argc, argv); }
