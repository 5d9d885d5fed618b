// Scale benchmark of the reshard planner over 4096 slots, printed beside
// a floor measured in the same run (emitting 4096 trivial BoxCopy records).
#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

#include "benchmark/benchmark.h"
#include "sharding/mesh.h"
#include "sharding/partition_spec.h"
#include "sharding/planner.h"
#include "sharding/shard_layout.h"

namespace tessera::sharding {
namespace {

constexpr int kSlots = 4096;

ShardLayout Named(const char* mesh, const char* spec, std::vector<int64_t> shape) {
  auto param = ToShardingParam(*Mesh::Parse(mesh), *PartitionSpec::Parse(spec),
                               static_cast<int>(shape.size()));
  return *ShardLayout::FromShardingParam(*param, shape);
}

std::vector<int64_t> Iota(int n) {
  std::vector<int64_t> v(n);
  std::iota(v.begin(), v.end(), 0);
  return v;
}

std::vector<int64_t> Shuffled(int n, int seed) {
  std::vector<int64_t> v = Iota(n);
  std::shuffle(v.begin(), v.end(), std::mt19937(seed));
  return v;
}

// 4096 ragged boxes covering [0, 4096*1000) (sizes uniform in [500, 1500],
// the last one taking the rest), in shuffled slot order.
std::vector<Box> Ragged1DBoxes() {
  std::mt19937 rng(7);
  const int64_t n = int64_t{kSlots} * 1000;
  std::vector<Box> boxes;
  int64_t at = 0;
  for (int i = 0; i < kSlots; ++i) {
    int64_t size = i + 1 == kSlots ? n - at : 500 + static_cast<int64_t>(rng() % 1001);
    size = std::min(size, n - at);
    boxes.emplace_back(Index{at}, Index{size});
    at += size;
  }
  std::shuffle(boxes.begin(), boxes.end(), rng);  // slot order != position
  return boxes;
}

ShardLayout Ragged1D() {
  return *ShardLayout::FromBoxes({int64_t{kSlots} * 1000}, Ragged1DBoxes());
}

void Report(benchmark::State& state, const ReshardPlan& plan) {
  state.counters["copies"] = static_cast<double>(plan.copies.size());
  state.counters["cross_MiB"] = static_cast<double>(plan.cross_location_bytes) / (1 << 20);
  state.counters["fwd_MiB"] = static_cast<double>(plan.forwarded_bytes) / (1 << 20);
}

// P(x,y) -> P(y,x) on mesh{x=64,y=64}, a 4096x4096 f32 array.
void BM_Transpose64x64Mesh(benchmark::State& state) {
  ShardLayout xy = Named("mesh{x=64,y=64}", "P(x,y)", {4096, 4096});
  ShardLayout yx = Named("mesh{x=64,y=64}", "P(y,x)", {4096, 4096});
  std::vector<int64_t> locations = Iota(kSlots);
  ReshardPlan plan;
  for (auto _ : state) {
    plan = *PlanReshard(xy, locations, yx, locations, 4);
    benchmark::DoNotOptimize(plan.copies.data());
  }
  Report(state, plan);
}
BENCHMARK(BM_Transpose64x64Mesh)->Unit(benchmark::kMillisecond);

// 1-D 4096*1000 elements: even 4096-way tiling -> a ragged 4096-way tiling.
void BM_OneDEvenToRagged(benchmark::State& state) {
  ShardLayout even = Named("mesh{x=4096}", "P(x)", {int64_t{kSlots} * 1000});
  ShardLayout ragged = Ragged1D();
  std::vector<int64_t> src_loc = Iota(kSlots), dst_loc = Shuffled(kSlots, 3);
  PlanOptions options{.fan_out = state.range(0) != 0};
  ReshardPlan plan;
  for (auto _ : state) {
    plan = *PlanReshard(even, src_loc, ragged, dst_loc, 4, options);
    benchmark::DoNotOptimize(plan.copies.data());
  }
  Report(state, plan);
}
BENCHMARK(BM_OneDEvenToRagged)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

// 1-D: 4096 tiles -> 2048 tiles each replicated twice (another
// ShardingParam, "2048 to [1,0] on 2x2048"), with and without fan-out.
void BM_OneDToReplicatedHalves(benchmark::State& state) {
  const int64_t n = int64_t{kSlots} * 1000;
  ShardLayout even = Named("mesh{x=4096}", "P(x)", {n});
  auto param = ShardingParam::Parse("2048 to [0,1] on 2x2048");
  ShardLayout halves = *ShardLayout::FromShardingParam(*param, {n});
  std::vector<int64_t> locations = Iota(kSlots), dst_loc = Shuffled(kSlots, 5);
  PlanOptions options{.fan_out = state.range(0) != 0};
  ReshardPlan plan;
  for (auto _ : state) {
    plan = *PlanReshard(even, locations, halves, dst_loc, 4, options);
    benchmark::DoNotOptimize(plan.copies.data());
  }
  Report(state, plan);
}
BENCHMARK(BM_OneDToReplicatedHalves)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

// Building the layouts themselves (ShardingParam grid, FromBoxes + coverage).
void BM_LayoutsFor4096Slots(benchmark::State& state) {
  const std::vector<Box> boxes = Ragged1DBoxes();
  for (auto _ : state) {
    ShardLayout xy = Named("mesh{x=64,y=64}", "P(x,y)", {4096, 4096});
    ShardLayout ragged = *ShardLayout::FromBoxes({int64_t{kSlots} * 1000}, boxes);
    benchmark::DoNotOptimize(&xy);
    benchmark::DoNotOptimize(&ragged);
  }
}
BENCHMARK(BM_LayoutsFor4096Slots)->Unit(benchmark::kMillisecond);

// Floor: emitting 4096 BoxCopy records of rank 2 with nothing to compute.
void BM_FloorEmit4096Copies(benchmark::State& state) {
  ShardLayout xy = Named("mesh{x=64,y=64}", "P(x,y)", {4096, 4096});
  for (auto _ : state) {
    std::vector<BoxCopy> copies;
    for (int s = 0; s < kSlots; ++s) {
      const Box& box = xy.slot_box(s);
      copies.push_back(BoxCopy{BoxCopy::Kind::kCrossLocation, false, s,
                               ShiftOrigin(box, box.origin()), s, ShiftOrigin(box, box.origin()), s,
                               s, 4});
    }
    benchmark::DoNotOptimize(copies.data());
  }
}
BENCHMARK(BM_FloorEmit4096Copies)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tessera::sharding
