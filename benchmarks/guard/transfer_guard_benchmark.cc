// The cost of TransferGuard::Check, which the runtime calls once per call and
// direction. The floor, measured in the same run, is the pure table lookup
// `Decide(level, is_explicit)`: what any guard must do at least. Allowed checks
// should stay within a small multiple of it (no allocation, no formatting);
// logged and refused checks format the description and may cost microseconds.

#include <memory>

#include "benchmark/benchmark.h"
#include "guard/level.h"
#include "guard/policy.h"
#include "guard/recording_transfer_sink.h"
#include "guard/scoped_transfer_guard.h"
#include "guard/transfer_event.h"
#include "guard/transfer_guard.h"

namespace tessera::guard {
namespace {

TransferEvent Event(bool is_explicit) {
  return TransferEvent{.direction = Direction::kDeviceToDevice,
                       .is_explicit = is_explicit,
                       .operation = "ReshardArrays",
                       .dtype = "f32",
                       .shape = {8192, 8192},
                       .bytes = 268435456,
                       .src_devices = {0, 1},
                       .dst_devices = {2, 3}};
}

void BM_Floor_Decide(benchmark::State& state) {
  Level level = Level::kDisallow;
  bool is_explicit = true;
  for (auto _ : state) {
    benchmark::DoNotOptimize(level);
    benchmark::DoNotOptimize(is_explicit);
    benchmark::DoNotOptimize(Decide(level, is_explicit));
  }
}
BENCHMARK(BM_Floor_Decide)->ThreadRange(1, 2);

void BM_Check_Allowed(benchmark::State& state) {
  static TransferGuard* guard = new TransferGuard(Policy::Uniform(Level::kDisallow));
  const TransferEvent event = Event(/*is_explicit=*/true);
  for (auto _ : state) benchmark::DoNotOptimize(guard->Check(event));
}
BENCHMARK(BM_Check_Allowed)->ThreadRange(1, 2);

void BM_Check_AllowedInsideNestedScopes(benchmark::State& state) {
  TransferGuard guard;
  TransferGuard other;
  ScopedTransferGuard all(Level::kDisallow);
  ScopedTransferGuard h2d(Direction::kHostToDevice, Level::kLog);
  ScopedTransferGuard other_only(other, Level::kDisallowExplicit);
  const TransferEvent event = Event(/*is_explicit=*/true);
  for (auto _ : state) benchmark::DoNotOptimize(guard.Check(event));
}
BENCHMARK(BM_Check_AllowedInsideNestedScopes);

void BM_Check_Refused(benchmark::State& state) {
  TransferGuard guard(Policy::Uniform(Level::kDisallow));
  guard.SetDefaultLogSinkEnabled(false);
  const TransferEvent event = Event(/*is_explicit=*/false);
  for (auto _ : state) benchmark::DoNotOptimize(guard.Check(event));
}
BENCHMARK(BM_Check_Refused);

}  // namespace
}  // namespace tessera::guard
