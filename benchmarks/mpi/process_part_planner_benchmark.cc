// One process's part of a reshard over 1024 processes x 8 devices (8192 slots), planned without
// any process: rows -> columns of a 65536 x 65536 array, one memory (location) per device,
// process p owning locations 8p .. 8p+7. PlanReshardPart plans the copies that touch a process:
// its 8 column slots receive a box from every one of the 8192 row slots, its 8 row slots send a
// box to every column slot (131008 copies; the 64 between its own slots are counted once).
// Target (issue 13): under 50 ms per process. Printed beside a floor measured in the same run
// (writing the same number of BoxCopy records) and, for comparison, the whole plan at smaller
// scales (at 8192 slots it has 67M copies, beyond kMaxPlanCopies: no process could build it).
//
//   build/benchmarks/mpi/process_part_planner_benchmark [--part-only]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "sharding/planner.h"
#include "sharding/shard_layout.h"
#include "sharding/sharding_param.h"

namespace tessera::sharding {
namespace {

constexpr int kDevicesPerProcess = 8;
constexpr int64_t kSide = 65536;

using Clock = std::chrono::steady_clock;

// `slots` tiles along `dim` of the square array.
ShardLayout Strips(int dim, int slots) {
  const std::string text = dim == 0 ? absl::StrCat(slots, "x1 to [0] on ", slots)
                                    : absl::StrCat("1x", slots, " to [0] on ", slots);
  return *ShardLayout::FromShardingParam(*ShardingParam::Parse(text), {kSide, kSide});
}

std::vector<int64_t> Locations(int first, int count) {
  std::vector<int64_t> v(count);
  for (int i = 0; i < count; ++i) v[i] = first + i;
  return v;
}

double ThreadCpuMs() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

// The best wall-clock time of `reps` runs of `fn`, and the best CPU time of this thread (on a
// loaded machine the wall clock also counts the waits for a core).
struct Times {
  double wall_ms = 1e30, cpu_ms = 1e30;
};

template <typename F>
Times Best(F&& fn, int reps) {
  Times best;
  for (int r = 0; r < reps; ++r) {
    const double cpu = ThreadCpuMs();
    const Clock::time_point start = Clock::now();
    fn();
    best.wall_ms = std::min(
        best.wall_ms, std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    best.cpu_ms = std::min(best.cpu_ms, ThreadCpuMs() - cpu);
  }
  return best;
}

// The worst over a few processes of the best-of-`reps` time of one process's part; `copies`
// gets the part's size (the same for every process).
Times PartTimes(const ShardLayout& rows, const ShardLayout& cols, int processes, int reps,
                size_t* copies) {
  const std::vector<int64_t> all = Locations(0, rows.num_slots());
  Times worst{0, 0};
  for (int me : {0, processes / 2, processes - 1}) {
    const std::vector<int64_t> mine = Locations(me * kDevicesPerProcess, kDevicesPerProcess);
    const Times t = Best(
        [&] {
          absl::StatusOr<ReshardPlan> p = PlanReshardPart(rows, all, cols, all, 4, mine);
          if (!p.ok()) std::abort();
          *copies = p->copies.size();
        },
        reps);
    worst.wall_ms = std::max(worst.wall_ms, t.wall_ms);
    worst.cpu_ms = std::max(worst.cpu_ms, t.cpu_ms);
  }
  return worst;
}

// The whole plan (PlanReshard) at smaller scales, beside one part.
void PrintWholePlans() {
  std::printf("  the whole plan (PlanReshard), for comparison, at smaller scales:\n");
  for (int processes : {32, 64, 128}) {
    const int slots = processes * kDevicesPerProcess;
    const ShardLayout r = Strips(0, slots), c = Strips(1, slots);
    const std::vector<int64_t> all = Locations(0, slots);
    size_t whole = 0, part = 0;
    const Times whole_t = Best(
        [&] {
          absl::StatusOr<ReshardPlan> p = PlanReshard(r, all, c, all, 4);
          if (!p.ok()) std::abort();
          whole = p->copies.size();
        },
        2);
    const Times one = PartTimes(r, c, processes, 5, &part);
    std::printf(
        "    %4d processes: whole plan %8zu copies in %8.2f ms (cpu %8.2f); one part %6zu copies "
        "in %.2f ms (cpu %.2f)\n",
        processes, whole, whole_t.wall_ms, whole_t.cpu_ms, part, one.wall_ms, one.cpu_ms);
  }
}

int Main(bool part_only) {
  constexpr int kProcesses = 1024;
  constexpr int kSlots = kProcesses * kDevicesPerProcess;
  const Clock::time_point start = Clock::now();
  const ShardLayout rows = Strips(0, kSlots);
  const ShardLayout cols = Strips(1, kSlots);
  const double layouts_ms =
      std::chrono::duration<double, std::milli>(Clock::now() - start).count() / 2;
  size_t copies = 0;
  const Times part = PartTimes(rows, cols, kProcesses, 10, &copies);
  const size_t expected = 2 * size_t{kSlots} * kDevicesPerProcess - 64;
  if (copies != expected) {
    std::printf("part has %zu copies, expected %zu\n", copies, expected);
    return 2;
  }
  const Times floor = Best(
      [&] {
        std::vector<BoxCopy> v;
        v.reserve(copies);
        for (size_t i = 0; i < copies; ++i) {
          v.push_back(BoxCopy{.src_slot = static_cast<int>(i % kSlots),
                              .src_box = Box({0, 0}, {8, 8}),
                              .dst_slot = static_cast<int>(i % kDevicesPerProcess),
                              .dst_box = Box({0, 0}, {8, 8}),
                              .bytes = 8 * 8 * 4});
        }
        if (v.size() != copies) std::abort();
      },
      10);
  std::printf("rows->columns of [%lld, %lld] over %d processes x %d devices (%d slots)\n",
              static_cast<long long>(kSide), static_cast<long long>(kSide), kProcesses,
              kDevicesPerProcess, kSlots);
  std::printf(
      "  one process's part (PlanReshardPart): %zu copies in %.2f ms (cpu %.2f ms); target < 50 "
      "ms: %s\n",
      copies, part.wall_ms, part.cpu_ms, part.wall_ms < 50 ? "met" : "MISSED");
  std::printf(
      "  floor (writing %zu BoxCopy records): %.2f ms (cpu %.2f ms); one layout of %d slots: "
      "%.2f ms\n",
      copies, floor.wall_ms, floor.cpu_ms, kSlots, layouts_ms);
  if (!part_only) PrintWholePlans();
  return part.wall_ms < 50 ? 0 : 1;
}

}  // namespace
}  // namespace tessera::sharding

// --part-only: skip the whole-plan comparison (for profiling).
int main(int argc, char** argv) {
  return tessera::sharding::Main(argc > 1 && std::string_view(argv[1]) == "--part-only");
}
