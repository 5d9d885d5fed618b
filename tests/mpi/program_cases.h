// tests/mpi/program_cases.h: the programs, data and reference results shared by the
// multi-process program tests that run "processes" as threads (loopback_program_test) and under
// mpirun (multi_process_test): the examples' MLPs, an all_to_all + all_gather program, and a
// check of the addressable shards of an f32 result against a reference within a tolerance.
//
// Header-only; pure functions and constants (thread-safe).

#ifndef TESSERA_TESTS_MPI_PROGRAM_CASES_H_
#define TESSERA_TESTS_MPI_PROGRAM_CASES_H_

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tessera.h"
#include "tests/ifrt/test_util.h"
#include "tests/testing/megatron_mlp.h"

namespace tessera::testing {

// The text of examples/<name> (TESSERA_SOURCE_DIR: the source tree, a compile definition).
inline std::string ReadExample(const std::string& name) {
  std::ifstream in(std::string(TESSERA_SOURCE_DIR) + "/examples/" + name);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_FALSE(text.str().empty()) << "examples/" << name;
  return text.str();
}

// c = a @ b (+ bias broadcast over rows, when given), in double.
inline std::vector<double> MatMul(const std::vector<double>& a, const std::vector<float>& b, int m,
                                  int k, int n, const std::vector<float>* bias = nullptr) {
  std::vector<double> c(m * n, 0.0);
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      double sum = bias != nullptr ? (*bias)[j] : 0.0;
      for (int p = 0; p < k; ++p) sum += a[i * k + p] * b[p * n + j];
      c[i * n + j] = sum;
    }
  }
  return c;
}

inline std::vector<double> Relu(std::vector<double> v) {
  for (double& x : v) x = std::max(x, 0.0);
  return v;
}

inline std::vector<float> ToFloat(const std::vector<double>& v) { return {v.begin(), v.end()}; }
inline std::vector<double> ToDouble(const std::vector<float>& v) { return {v.begin(), v.end()}; }

// Every addressable shard of `array` (f32) is near its slice of `full`; returns how many there are.
inline int ExpectShardsNear(const ArrayRef& array, const std::vector<float>& full) {
  absl::StatusOr<std::vector<IndexDomain>> domains = array->sharding().IndexDomains(array->shape());
  EXPECT_TRUE(domains.ok()) << domains.status();
  absl::StatusOr<std::vector<ArrayRef>> shards =
      array->DisassembleIntoSingleDeviceArrays(ArrayCopySemantics::kReuseInput);
  EXPECT_TRUE(shards.ok()) << shards.status();
  if (!domains.ok() || !shards.ok()) return 0;
  std::vector<uint8_t> bytes(full.size() * 4);
  std::memcpy(bytes.data(), full.data(), bytes.size());
  const auto& devices = array->sharding().devices()->devices();
  int k = 0;
  for (size_t slot = 0; slot < devices.size(); ++slot) {
    if (!devices[slot]->IsAddressable()) continue;
    absl::StatusOr<std::vector<uint8_t>> got = ReadBack((*shards)[k++]);
    EXPECT_TRUE(got.ok()) << got.status();
    if (!got.ok()) continue;
    const std::vector<uint8_t> want = SliceDomain(bytes, array->shape(), 4, (*domains)[slot]);
    EXPECT_EQ(got->size(), want.size());
    for (size_t i = 0; i + 4 <= std::min(got->size(), want.size()); i += 4) {
      float g, w;
      std::memcpy(&g, got->data() + i, 4);
      std::memcpy(&w, want.data() + i, 4);
      EXPECT_NEAR(g, w, 1e-4 * std::max(1.0f, std::abs(w))) << "slot " << slot << " byte " << i;
    }
  }
  return k;
}

// examples/mlp2_megatron.mlir's arguments and result.
struct MegatronCase {
  std::vector<float> x = Random(8 * 16, 1), w1 = Random(16 * 32, 2), b1 = Random(32, 3),
                     w2 = Random(32 * 16, 4), b2 = Random(16, 5);
  std::vector<float> Reference() const {
    std::vector<double> h = Relu(MatMul(ToDouble(x), w1, 8, 16, 32, &b1));
    return ToFloat(MatMul(h, w2, 8, 32, 16, &b2));
  }
  // `put(data, dims, spec)` makes an f32 array of the executable's mesh in PartitionSpec `spec`.
  template <typename Put>
  std::vector<ArrayRef> Arguments(const Put& put) const {
    return {put(x, {8, 16}, "P()"), put(w1, {16, 32}, "P(None,x)"), put(b1, {32}, "P(x)"),
            put(w2, {32, 16}, "P(x,None)"), put(b2, {16}, "P()")};
  }
};

// examples/mlp.mlir's arguments and result: rows of x and y split, no communication.
struct RowMlpCase {
  std::vector<float> x = Random(16 * 32, 6), w = Random(32 * 64, 7), b = Random(64, 8);
  std::vector<float> Reference() const {
    return ToFloat(Relu(MatMul(ToDouble(x), w, 16, 32, 64, &b)));
  }
  template <typename Put>
  std::vector<ArrayRef> Arguments(const Put& put) const {
    return {put(x, {16, 32}, "P(x,None)"), put(w, {32, 64}, "P()"), put(b, {64}, "P()")};
  }
};

// z = a + b with a row-sharded, b column-sharded and z replicated: an all_to_all of b, the
// addition, an all_gather of z.
inline constexpr char kAllToAllGather[] = R"mlir(
func.func @main(%a: tensor<8x12xf32> {tessera.sharding = "mesh{x=4} P(x,None)"},
                %b: tensor<8x12xf32> {tessera.sharding = "mesh{x=4} P(None,x)"})
    -> (tensor<8x12xf32> {tessera.sharding = "mesh{x=4} P()"}) {
  %z = arith.addf %a, %b : tensor<8x12xf32>
  return %z : tensor<8x12xf32>
})mlir";

// kAllToAllGather's arguments and result (bytes: an f32 addition is exact to compare).
struct AllToAllGatherCase {
  std::vector<float> a = Random(96, 9), b = Random(96, 10);
  std::vector<uint8_t> Reference() const {
    std::vector<float> z(96);
    for (int i = 0; i < 96; ++i) z[i] = a[i] + b[i];
    std::vector<uint8_t> bytes(96 * 4);
    std::memcpy(bytes.data(), z.data(), bytes.size());
    return bytes;
  }
  template <typename Put>
  std::vector<ArrayRef> Arguments(const Put& put) const {
    return {put(a, {8, 12}, "P(x,None)"), put(b, {8, 12}, "P(None,x)")};
  }
};

}  // namespace tessera::testing

#endif  // TESSERA_TESTS_MPI_PROGRAM_CASES_H_
