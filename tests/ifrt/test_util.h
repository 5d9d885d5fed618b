// tests/ifrt/test_util.h: matchers and helpers shared by the ifrt/ tests.
//
// Deterministic byte patterns (the status matchers come from
// tests/testing/status_matchers.h), an
// independent row-major box slicer (so that expected values never come from the
// code under test), and small wrappers around the Client API.

#ifndef TESSERA_TESTS_IFRT_TEST_UTIL_H_
#define TESSERA_TESTS_IFRT_TEST_UTIL_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tessera.h"
#include "tests/testing/status_matchers.h"

namespace tessera::testing {

// `bytes` bytes of a pattern that differs for every seed and (almost) every
// position.
inline std::vector<uint8_t> Pattern(int64_t bytes, uint32_t seed = 1) {
  std::vector<uint8_t> out(bytes);
  uint32_t x = seed * 2654435761u + 12345u;
  for (int64_t i = 0; i < bytes; ++i) {
    x = x * 1664525u + 1013904223u;
    out[i] = static_cast<uint8_t>(x >> 24);
  }
  return out;
}

// Polls `pred` every 5 ms for up to 10 s; true once it holds.
template <typename F>
bool Eventually(F pred) {
  for (int i = 0; i < 2000; ++i) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return pred();
}

inline int64_t NumElements(absl::Span<const int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

// The box (origin, size) of a dense row-major array, as dense row-major bytes.
// Written with plain loops, independently of StridedCopy.
inline std::vector<uint8_t> SliceBox(const std::vector<uint8_t>& full,
                                     absl::Span<const int64_t> dims, int64_t element_bytes,
                                     absl::Span<const int64_t> origin,
                                     absl::Span<const int64_t> size) {
  const int64_t n = NumElements(size);
  std::vector<uint8_t> out(n * element_bytes);
  const int rank = static_cast<int>(dims.size());
  std::vector<int64_t> idx(rank, 0);
  for (int64_t e = 0; e < n; ++e) {
    int64_t offset = 0;
    for (int d = 0; d < rank; ++d) offset = offset * dims[d] + origin[d] + idx[d];
    std::memcpy(out.data() + e * element_bytes, full.data() + offset * element_bytes,
                element_bytes);
    for (int d = rank - 1; d >= 0; --d) {
      if (++idx[d] < size[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

inline std::vector<uint8_t> SliceDomain(const std::vector<uint8_t>& full, const Shape& shape,
                                        int64_t element_bytes, const IndexDomain& domain) {
  return SliceBox(full, shape.dims(), element_bytes, domain.origin(), domain.shape().dims());
}

// A client of `devices` CPU devices of one thread each, without Vulkan, whose
// guard allows everything (whatever TESSERA_TRANSFER_GUARD says): for tests
// of the runtime itself.
inline absl::StatusOr<std::shared_ptr<Client>> CreateCpuTestClient(int devices) {
  return CreateClient({.cpu_devices = devices,
                       .cpu_threads_per_device = 1,
                       .vulkan = VulkanMode::kOff,
                       .transfer_guard = guard::Policy()});
}

inline int64_t ByteSize(DType dtype, const Shape& shape) {
  return shape.num_elements() * dtype.byte_size().value_or(0);
}

// Reads the whole array back row-major.
inline absl::StatusOr<std::vector<uint8_t>> ReadBack(const ArrayRef& array,
                                                     TransferOptions options = {}) {
  std::vector<uint8_t> out(ByteSize(array->dtype(), array->shape()));
  absl::Status s = array
                       ->CopyToHostBuffer(out.empty() ? nullptr : out.data(), std::nullopt,
                                          ArrayCopySemantics::kAlwaysCopy, options)
                       .Await();
  if (!s.ok()) return s;
  return out;
}

// Makes an array from row-major `data` (kImmutableOnlyDuringCall).
inline absl::StatusOr<ArrayRef> MakeArray(Client& client, const std::vector<uint8_t>& data,
                                          DType dtype, const Shape& shape, ShardingRef sharding,
                                          TransferOptions options = {}) {
  return client.MakeArrayFromHostBuffer(
      data.empty() ? nullptr : data.data(), dtype, shape, std::nullopt, std::move(sharding),
      HostBufferSemantics::kImmutableOnlyDuringCall, nullptr, options);
}

inline DeviceListRef MustDeviceList(Client& client, const std::vector<Device*>& devices) {
  absl::StatusOr<DeviceListRef> list = client.MakeDeviceList(devices);
  EXPECT_TRUE(list.ok()) << list.status();
  return list.ok() ? *list : nullptr;
}

// The devices of `client` at positions `positions` of client.devices().
inline DeviceListRef DevicesAt(Client& client, const std::vector<int>& positions) {
  std::vector<Device*> devices;
  for (int p : positions) devices.push_back(client.devices()[p]);
  return MustDeviceList(client, devices);
}

inline ShardingRef ReplicatedSharding(const DeviceListRef& devices, const Shape& shape,
                                      MemoryKind kind = MemoryKind()) {
  absl::StatusOr<ShardingRef> s = ConcreteEvenSharding::Create(devices, kind, shape, shape, true);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *s : nullptr;
}

// A ShardingParam sharding from its text form ("2x1 to [0] on 2").
inline ShardingRef ParamSharding(const std::string& text, const DeviceListRef& devices,
                                 MemoryKind kind = MemoryKind()) {
  absl::StatusOr<sharding::ShardingParam> param = sharding::ShardingParam::Parse(text);
  EXPECT_TRUE(param.ok()) << param.status();
  if (!param.ok()) return nullptr;
  absl::StatusOr<ShardingRef> s = ShardingParamSharding::Create(*param, devices, kind);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *s : nullptr;
}

// A NamedSharding from the text of a mesh and a spec ("mesh{x=2,y=2}",
// "P(x,None)").
inline ShardingRef Named(const std::string& mesh, const std::string& spec,
                         const DeviceListRef& devices, MemoryKind kind = MemoryKind()) {
  absl::StatusOr<sharding::Mesh> m = sharding::Mesh::Parse(mesh);
  EXPECT_TRUE(m.ok()) << m.status();
  absl::StatusOr<sharding::PartitionSpec> p = sharding::PartitionSpec::Parse(spec);
  EXPECT_TRUE(p.ok()) << p.status();
  if (!m.ok() || !p.ok()) return nullptr;
  absl::StatusOr<ShardingRef> s = NamedSharding::Create(*m, *p, devices, kind);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *s : nullptr;
}

// Rows of a rank-2 array split over all of `devices` ("Nx1 to [0] on N").
inline ShardingRef RowSharding(const DeviceListRef& devices, MemoryKind kind = MemoryKind()) {
  const int n = devices->size();
  return ParamSharding(std::to_string(n) + "x1 to [0] on " + std::to_string(n), devices, kind);
}

// The future's status, or nullopt when it is not set within `timeout` (a hang: the caller fails
// the test instead of waiting forever).
inline std::optional<absl::Status> AwaitWithin(
    const Future<>& future, std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    std::optional<absl::Status> status;
  };
  auto state = std::make_shared<State>();
  future.OnReady([state](const absl::Status& s) {
    std::lock_guard<std::mutex> lock(state->mu);
    state->status = s;
    state->cv.notify_all();
  });
  std::unique_lock<std::mutex> lock(state->mu);
  state->cv.wait_for(lock, timeout, [&] { return state->status.has_value(); });
  return state->status;
}

}  // namespace tessera::testing

#endif  // TESSERA_TESTS_IFRT_TEST_UTIL_H_
