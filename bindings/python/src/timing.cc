// tessera._tessera._time_put_fetch_cpp: the C++ side of the Python-vs-C++ timing
// (bindings/python/benchmarks/put_fetch.py): the same put + copy-to-host as the Python calls.

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "bindings/python/src/common.h"

namespace tessera::python {
namespace {

// Seconds of each of `repeats` runs of: MakeArrayFromHostBuffer (f32, `rows` x `cols`) with
// `sharding`, then CopyToHostBuffer into a new buffer and await. Runs without the GIL.
std::vector<double> TimePutFetch(const PyClient& c, int64_t rows, int64_t cols, nb::handle sharding,
                                 int repeats) {
  ShardingRef s = ShardingFromPython(c.client, sharding);
  const size_t n = static_cast<size_t>(rows * cols);
  std::vector<float> data(n, 1.0f);
  std::vector<double> seconds;
  absl::Status status;
  {
    nb::gil_scoped_release release;
    for (int r = 0; r < repeats && status.ok(); ++r) {
      auto start = std::chrono::steady_clock::now();
      absl::StatusOr<ArrayRef> a = c.client->MakeArrayFromHostBuffer(
          data.data(), DType(DType::kF32), Shape({rows, cols}), std::nullopt, s,
          HostBufferSemantics::kImmutableOnlyDuringCall, nullptr);
      if (!a.ok()) {
        status = a.status();
        break;
      }
      std::unique_ptr<float[]> back(new float[n]);
      status =
          (*a)->CopyToHostBuffer(back.get(), std::nullopt, ArrayCopySemantics::kAlwaysCopy).Await();
      seconds.push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
  }
  ThrowIfError(status);
  return seconds;
}

}  // namespace

void RegisterTiming(nb::module_& m) {
  m.def("_time_put_fetch_cpp", &TimePutFetch, nb::arg("client"), nb::arg("rows"), nb::arg("cols"),
        nb::arg("sharding"), nb::arg("repeats"),
        "Seconds of each run of put + copy-to-host of an f32[rows, cols] in C++ (for timing).");
}

}  // namespace tessera::python
