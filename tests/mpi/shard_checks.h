// tests/mpi/shard_checks.h: shardings and checks shared by the multi-process tests that run
// "processes" as threads (loopback_test, loopback_fault_test) and under mpirun
// (multi_process_test).

#ifndef TESSERA_TESTS_MPI_SHARD_CHECKS_H_
#define TESSERA_TESTS_MPI_SHARD_CHECKS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tessera.h"
#include "tests/ifrt/test_util.h"

namespace tessera::testing {

// `shape` split along `dim` over the client's devices (global order), as few as cover it.
inline ShardingRef Split(Client& client, const Shape& shape, int dim) {
  const int n = static_cast<int>(client.devices().size());
  const int64_t step = (shape.dims()[dim] + n - 1) / n;
  const int tiles = static_cast<int>((shape.dims()[dim] + step - 1) / step);
  std::vector<Device*> devices(client.devices().begin(), client.devices().begin() + tiles);
  std::vector<int64_t> tile(shape.dims().begin(), shape.dims().end());
  tile[dim] = step;
  return *ConcreteEvenSharding::Create(*client.MakeDeviceList(devices), {}, shape, Shape(tile));
}

// Every addressable shard of `array` equals its slice of `full`; `context` names the check in
// failure messages.
inline void ExpectShards(const ArrayRef& array, const std::vector<uint8_t>& full,
                         const std::string& context = "") {
  absl::StatusOr<std::vector<IndexDomain>> domains = array->sharding().IndexDomains(array->shape());
  ASSERT_TRUE(domains.ok()) << domains.status();
  absl::StatusOr<std::vector<ArrayRef>> shards =
      array->DisassembleIntoSingleDeviceArrays(ArrayCopySemantics::kReuseInput);
  ASSERT_TRUE(shards.ok()) << shards.status();
  size_t k = 0;
  const auto& devices = array->sharding().devices()->devices();
  for (size_t slot = 0; slot < devices.size(); ++slot) {
    if (!devices[slot]->IsAddressable()) continue;
    ASSERT_LT(k, shards->size());
    absl::StatusOr<std::vector<uint8_t>> got = ReadBack((*shards)[k++]);
    ASSERT_TRUE(got.ok()) << got.status() << " " << context;
    EXPECT_EQ(*got,
              SliceDomain(full, array->shape(), *array->dtype().byte_size(), (*domains)[slot]))
        << context << ", slot " << slot << " on " << devices[slot]->DebugString();
  }
  EXPECT_EQ(k, shards->size()) << context;
}

}  // namespace tessera::testing

#endif  // TESSERA_TESTS_MPI_SHARD_CHECKS_H_
