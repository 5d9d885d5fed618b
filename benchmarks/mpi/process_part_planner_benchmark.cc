// One process's part of a reshard over 1024 processes x 8 devices (8192 slots), planned without
// any process: rows -> columns of a 65536 x 65536 array. A process receives, for its 8
// destination (column) slots, a box from every one of the 8192 source (row) slots: the plan of
// the full source layout onto its own destination slots. It sends, from its 8 row slots, a box
// to every column slot: for layouts without replicas that is the same geometry transposed (the
// plan of columns -> its rows). A layout must cover the array, so the rest of it is two more
// destination slots, whose copies a process drops. Target: both under 50 ms. Printed beside a floor
// measured in the same run: writing the same number of BoxCopy records.
//
//   build/benchmarks/mpi/process_part_planner_benchmark
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "sharding/planner.h"
#include "sharding/shard_layout.h"

namespace tessera::sharding {
namespace {

constexpr int kProcesses = 1024;
constexpr int kDevicesPerProcess = 8;
constexpr int kSlots = kProcesses * kDevicesPerProcess;
constexpr int64_t kSide = 65536;
constexpr int64_t kTile = kSide / kSlots;

using Clock = std::chrono::steady_clock;

Box Strip(int dim, int64_t begin, int64_t end) {
  Index origin = {0, 0}, shape = {kSide, kSide};
  origin[dim] = begin;
  shape[dim] = end - begin;
  return Box(origin, shape);
}

// Tiles of `kTile` along `dim` of the square array, one per slot.
ShardLayout Strips(int dim) {
  std::vector<Box> boxes;
  for (int s = 0; s < kSlots; ++s) boxes.push_back(Strip(dim, s * kTile, (s + 1) * kTile));
  return *ShardLayout::FromBoxes({kSide, kSide}, boxes);
}

// The tiles of slots `first` .. `first + count - 1` along `dim`, then the rest of the array as
// (at most) two more slots, before and after them: a layout covers the whole array.
ShardLayout MyStrips(int dim, int first, int count) {
  std::vector<Box> boxes;
  for (int s = first; s < first + count; ++s) {
    boxes.push_back(Strip(dim, s * kTile, (s + 1) * kTile));
  }
  if (first > 0) boxes.push_back(Strip(dim, 0, first * kTile));
  if (first + count < kSlots) boxes.push_back(Strip(dim, (first + count) * kTile, kSide));
  return *ShardLayout::FromBoxes({kSide, kSide}, boxes);
}

std::vector<int64_t> Locations(int first, int count) {
  std::vector<int64_t> v(count);
  for (int i = 0; i < count; ++i) v[i] = first + i;
  return v;
}

template <typename F>
double BestMs(F&& fn, int reps = 5) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const Clock::time_point start = Clock::now();
    fn();
    best = std::min(best, std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  return best;
}

int Main() {
  const int me = kProcesses / 2;  // any process: the geometry is the same
  const int first = me * kDevicesPerProcess;
  const ShardLayout rows = Strips(0);
  const ShardLayout cols = Strips(1);
  const ShardLayout my_cols = MyStrips(1, first, kDevicesPerProcess);
  const ShardLayout my_rows = MyStrips(0, first, kDevicesPerProcess);
  const std::vector<int64_t> all = Locations(0, kSlots);
  // This process's slots at their locations; the rest of the array at a location of no source.
  std::vector<int64_t> mine = Locations(first, kDevicesPerProcess);
  mine.resize(my_cols.num_slots(), -1);
  size_t copies = 0;
  const double receive_ms = BestMs([&] {
    absl::StatusOr<ReshardPlan> p = PlanReshard(rows, all, my_cols, mine, 4);
    if (!p.ok()) std::abort();
    copies = 0;
    for (const BoxCopy& c : p->copies) copies += c.dst_slot < kDevicesPerProcess ? 1 : 0;
  });
  size_t send_copies = 0;
  const double send_ms = BestMs([&] {
    absl::StatusOr<ReshardPlan> p = PlanReshard(cols, all, my_rows, mine, 4);
    if (!p.ok()) std::abort();
    send_copies = 0;
    for (const BoxCopy& c : p->copies) send_copies += c.dst_slot < kDevicesPerProcess ? 1 : 0;
  });
  const double floor_ms = BestMs([&] {
    std::vector<BoxCopy> v;
    v.reserve(copies + send_copies);
    for (size_t i = 0; i < copies + send_copies; ++i) {
      v.push_back(BoxCopy{.src_slot = static_cast<int>(i % kSlots),
                          .src_box = Box({0, 0}, {kTile, kTile}),
                          .dst_slot = static_cast<int>(i % kDevicesPerProcess),
                          .dst_box = Box({0, 0}, {kTile, kTile}),
                          .bytes = kTile * kTile * 4});
    }
    if (v.size() != copies + send_copies) std::abort();
  });
  std::printf("one process's part of rows->columns over %d processes x %d devices (%d slots)\n",
              kProcesses, kDevicesPerProcess, kSlots);
  std::printf("  receive part: %zu copies in %.2f ms\n", copies, receive_ms);
  std::printf("  send part:    %zu copies in %.2f ms\n", send_copies, send_ms);
  std::printf("  total %.2f ms (target < 50 ms); floor (writing the records) %.2f ms\n",
              receive_ms + send_ms, floor_ms);
  return receive_ms + send_ms < 50 ? 0 : 1;
}

}  // namespace
}  // namespace tessera::sharding

int main() { return tessera::sharding::Main(); }
