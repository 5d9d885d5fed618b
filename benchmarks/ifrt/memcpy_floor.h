#ifndef TESSERA_BENCHMARKS_IFRT_MEMCPY_FLOOR_H_
#define TESSERA_BENCHMARKS_IFRT_MEMCPY_FLOOR_H_

// What the ifrt/ benchmarks print their figures beside: the median of a list of times, and the
// memory-bandwidth floor for moving some bytes (a parallel memcpy, one thread per device, measured
// in the same run). Header-only, for the benchmark binaries.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

namespace tessera::bench {

using Clock = std::chrono::steady_clock;

inline double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

inline double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// One thread per device copies its slice of `bytes`; the median of `repeat` runs after one that
// warms the pages.
inline double ParallelMemcpySeconds(int64_t bytes, int threads, int repeat) {
  std::vector<char> src(bytes, 1), dst(bytes, 0);
  std::vector<double> times;
  for (int r = 0; r < repeat + 1; ++r) {
    auto start = Clock::now();
    std::vector<std::thread> workers;
    const int64_t slice = (bytes + threads - 1) / threads;
    for (int t = 0; t < threads; ++t) {
      const int64_t begin = std::min(bytes, t * slice), end = std::min(bytes, begin + slice);
      workers.emplace_back([&, begin, end] { std::memcpy(&dst[begin], &src[begin], end - begin); });
    }
    for (auto& w : workers) w.join();
    if (r > 0) times.push_back(Seconds(Clock::now() - start));
  }
  return Median(times);
}

}  // namespace tessera::bench

#endif  // TESSERA_BENCHMARKS_IFRT_MEMCPY_FLOOR_H_
