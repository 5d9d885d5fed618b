// A randomised property test of the runtime on an 8-device CPU client: random
// dtypes, shapes (with dimensions 0, 1 and primes), random shardings
// (NamedSharding over random meshes and specs, ShardingParamSharding,
// ConcreteEvenSharding, replicated, single device) over random device subsets
// and orders, and random chains of reshards, copies, remaps and
// disassemble/assemble round trips. After every step the array reads back bit
// for bit, and the device-to-device bytes the client counted grew by exactly
// the bytes the plans it ran copy between memories of different devices. Seeds are fixed and
// printed through SCOPED_TRACE.

// GCC 12 reports false -Wmaybe-uninitialized inside absl::InlinedVector moves
// (Shape, Index).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <algorithm>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ifrt/introspection.h"
#include "tests/ifrt/test_util.h"

namespace tessera {
namespace {

using ::tessera::testing::IsOk;

constexpr int kDevices = 8;

class PropertyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::shared_ptr<Client>> c = testing::CreateCpuTestClient(kDevices);
    ASSERT_THAT(c, IsOk());
    client_ = *std::move(c);
    runtime_ = client_->introspection();
    ASSERT_NE(runtime_, nullptr);
  }

  int Uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  template <typename T>
  const T& Pick(const std::vector<T>& v) {
    return v[Uniform(0, static_cast<int>(v.size()) - 1)];
  }

  // Bytes of `plan`'s copies between memories of different devices: what transfer_stats() counts
  // as device-to-device. The plan's locations are memory ids; each maps to its memory's device.
  int64_t DeviceToDeviceBytes(const sharding::ReshardPlan& plan) const {
    std::map<int64_t, int32_t> device_of;  // memory id -> device id
    for (Device* d : client_->devices()) {
      for (Memory* m : d->Memories()) device_of[m->Id().value] = d->Id().value;
    }
    int64_t bytes = 0;
    for (const sharding::BoxCopy& c : plan.copies) {
      EXPECT_TRUE(device_of.contains(c.src_location) && device_of.contains(c.dst_location))
          << "copy between locations " << c.src_location << " and " << c.dst_location
          << ", not both memories of this client";
      if (c.kind != sharding::BoxCopy::Kind::kAlias &&
          device_of[c.src_location] != device_of[c.dst_location]) {
        bytes += c.bytes;
      }
    }
    return bytes;
  }

  // `k` distinct devices in a random order.
  DeviceListRef RandomDevices(int k) {
    std::vector<Device*> all(client_->devices().begin(), client_->devices().end());
    std::shuffle(all.begin(), all.end(), rng_);
    all.resize(k);
    return *client_->MakeDeviceList(all);
  }

  // A random factorisation of k (k a power of two) into mesh axis sizes.
  std::vector<int> RandomAxes(int k) {
    std::vector<int> axes;
    while (k > 1) {
      int f = 2;
      while (f * 2 <= k && Uniform(0, 1) == 1) f *= 2;
      axes.push_back(f);
      k /= f;
    }
    if (axes.empty()) axes.push_back(1);
    std::shuffle(axes.begin(), axes.end(), rng_);
    return axes;
  }

  // A random sharding of an array of `shape` over a random subset of the
  // devices.
  ShardingRef RandomSharding(const Shape& shape, std::string* how) {
    const int k = Pick(std::vector<int>{1, 2, 4, 8});
    DeviceListRef devices = RandomDevices(k);
    const int rank = shape.rank();
    const int kind = Uniform(0, 4);
    if (kind == 0) {  // NamedSharding over a random mesh and spec
      std::vector<int> axes = RandomAxes(k);
      std::vector<sharding::Mesh::Axis> mesh_axes;
      std::vector<std::string> names;
      for (size_t i = 0; i < axes.size(); ++i) {
        names.push_back(std::string(1, static_cast<char>('a' + i)));
        mesh_axes.push_back({names.back(), axes[i]});
      }
      absl::StatusOr<sharding::Mesh> mesh = sharding::Mesh::Create(mesh_axes);
      if (mesh.ok()) {
        std::shuffle(names.begin(), names.end(), rng_);
        std::vector<sharding::PartitionSpec::Dim> dims(rank);
        for (const std::string& name : names) {
          if (rank > 0 && Uniform(0, 3) > 0) dims[Uniform(0, rank - 1)].push_back(name);
        }
        absl::StatusOr<sharding::PartitionSpec> spec = sharding::PartitionSpec::Create(dims);
        if (spec.ok()) {
          absl::StatusOr<ShardingRef> s = NamedSharding::Create(*mesh, *spec, devices, {});
          if (s.ok()) {
            *how = (*s)->DebugString();
            return *s;
          }
          ADD_FAILURE() << s.status();
        }
      }
    } else if (kind == 1 && rank > 0) {  // ShardingParamSharding
      std::vector<int64_t> dim_shards(rank, 1);
      int left = k;
      for (int d = 0; d < rank && left > 1; ++d) {
        if (Uniform(0, 1) == 1) {
          const int f = Pick(std::vector<int>{2, 4, 8});
          if (left % f == 0) {
            dim_shards[d] = f;
            left /= f;
          }
        }
      }
      std::vector<int> sizes;
      for (int64_t s : dim_shards) {
        if (s > 1) sizes.push_back(static_cast<int>(s));
      }
      if (left > 1) sizes.push_back(left);
      if (sizes.empty()) sizes.push_back(1);
      std::vector<int> perm(sizes.size());
      for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int>(i);
      std::shuffle(perm.begin(), perm.end(), rng_);
      absl::StatusOr<sharding::ShardingParam> param =
          sharding::ShardingParam::Create(dim_shards, {perm, sizes});
      if (param.ok()) {
        absl::StatusOr<ShardingRef> s = ShardingParamSharding::Create(*param, devices, {});
        if (s.ok()) {
          *how = (*s)->DebugString();
          return *s;
        }
      }
    } else if (kind == 2 && rank > 0) {  // ConcreteEvenSharding tiles
      std::vector<int64_t> tile(shape.dims().begin(), shape.dims().end());
      int left = k;
      for (int d = 0; d < rank && left > 1; ++d) {
        const int f = Pick(std::vector<int>{1, 2, 4});
        if (left % f == 0 && shape.dims()[d] >= f) {
          tile[d] = (shape.dims()[d] + f - 1) / f;
          left /= f;
        }
      }
      absl::StatusOr<ShardingRef> s = ConcreteEvenSharding::Create(devices, {}, shape, Shape(tile));
      if (s.ok()) {
        *how = (*s)->DebugString();
        return *s;
      }
    } else if (kind == 3) {
      ShardingRef s = SingleDeviceSharding::Create(devices->devices()[0], {});
      *how = s->DebugString();
      return s;
    }
    ShardingRef s = testing::ReplicatedSharding(devices, shape);
    *how = s->DebugString();
    return s;
  }

  Shape RandomShape() {
    const std::vector<int64_t> sizes = {0, 1, 2, 3, 7, 13, 16};
    const int rank = Uniform(0, 3);
    std::vector<int64_t> dims;
    for (int d = 0; d < rank; ++d) dims.push_back(Pick(sizes));
    // One in three shapes with a zero dimension is plenty.
    return Shape(dims);
  }

  std::mt19937 rng_;
  std::shared_ptr<Client> client_;
  ClientIntrospection* runtime_ = nullptr;
};

TEST_F(PropertyTest, RandomChainsPreserveDataAndCountBytes) {
  const std::vector<DType> dtypes = {DType(DType::kPred), DType(DType::kS8),  DType(DType::kS16),
                                     DType(DType::kF32),  DType(DType::kS64), DType(DType::kBF16),
                                     DType(DType::kU32),  DType(DType::kF64)};
  const std::vector<ArrayCopySemantics> semantics = {ArrayCopySemantics::kAlwaysCopy,
                                                     ArrayCopySemantics::kReuseInput,
                                                     ArrayCopySemantics::kDonateInput};
  constexpr int kSeeds = 10;
  constexpr int kStepsPerSeed = 20;
  int steps = 0;
  int64_t total_d2d = 0;
  std::map<std::string, int> classes;  // sharding classes reached, for coverage
  for (int seed = 1; seed <= kSeeds; ++seed) {
    SCOPED_TRACE(absl::StrCat("seed ", seed));
    rng_.seed(seed);
    const DType dtype = Pick(dtypes);
    const Shape shape = RandomShape();
    const int64_t element_bytes = *dtype.byte_size();
    const std::vector<uint8_t> data = testing::Pattern(shape.num_elements() * element_bytes, seed);
    std::string how;
    ShardingRef sharding = RandomSharding(shape, &how);
    SCOPED_TRACE(absl::StrCat(dtype.DebugString(), shape.DebugString(), " made with ", how));
    absl::StatusOr<ArrayRef> made = testing::MakeArray(*client_, data, dtype, shape, sharding);
    ASSERT_THAT(made, IsOk());
    ArrayRef a = *made;

    for (int step = 0; step < kStepsPerSeed; ++step, ++steps) {
      const TransferStats before = client_->transfer_stats();
      int64_t expected_d2d = 0;
      const ArrayCopySemantics sem = Pick(semantics);
      const int op = Uniform(0, 9);
      std::string what;
      ArrayRef next;
      if (op <= 4) {  // reshard
        ShardingRef target = RandomSharding(shape, &how);
        what = absl::StrCat("reshard (", ArrayCopySemanticsName(sem), ") to ", how);
        ArraySpec spec{dtype, shape, target};
        absl::StatusOr<std::shared_ptr<const sharding::ReshardPlan>> plan =
            runtime_->PlanReshard(*a, spec);
        ASSERT_THAT(plan, IsOk()) << what;
        expected_d2d = DeviceToDeviceBytes(**plan);
        std::vector<ArrayRef> in = {a};
        std::vector<ArraySpec> specs = {spec};
        absl::StatusOr<std::vector<ArrayRef>> out =
            client_->ReshardArrays(absl::MakeSpan(in), specs, sem);
        ASSERT_THAT(out, IsOk()) << what;
        EXPECT_EQ((*out)[0]->sharding(), *target) << what;
        next = (*out)[0];
      } else if (op <= 6) {  // copy to a random device list of the same size
        const int k = a->sharding().devices()->size();
        DeviceListRef devices = RandomDevices(k);
        what = absl::StrCat("copy (", ArrayCopySemanticsName(sem), ") to ", devices->DebugString());
        absl::StatusOr<ShardingRef> moved = a->sharding().WithDeviceAssignment(devices, {});
        ASSERT_THAT(moved, IsOk()) << what;
        absl::StatusOr<std::shared_ptr<const sharding::ReshardPlan>> plan =
            runtime_->PlanReshard(*a, ArraySpec{dtype, shape, *moved});
        ASSERT_THAT(plan, IsOk()) << what;
        expected_d2d = DeviceToDeviceBytes(**plan);
        std::vector<ArrayRef> in = {a};
        absl::StatusOr<std::vector<ArrayRef>> out =
            client_->CopyArrays(absl::MakeSpan(in), devices, std::nullopt, sem);
        ASSERT_THAT(out, IsOk()) << what;
        EXPECT_EQ((*out)[0]->sharding(), **moved) << what;
        next = (*out)[0];
      } else if (op <= 8) {  // identity remap in random interval pieces,
                             // through an alias
        const int k = a->sharding().devices()->size();
        what = "remap";
        std::vector<ArrayRef> in = {a};
        absl::StatusOr<std::vector<ArrayRef>> alias = client_->CopyArrays(
            absl::MakeSpan(in), std::nullopt, std::nullopt, ArrayCopySemantics::kReuseInput);
        ASSERT_THAT(alias, IsOk());
        RemapPlan plan;
        plan.input_specs = {{dtype, shape, a->shared_ptr_sharding()}};
        plan.output_specs = plan.input_specs;
        RemapPlan::Mapping m;
        for (int start = 0; start < k;) {
          const int end = Uniform(start + 1, k);
          m.from.push_back({start, end, 1});
          m.to.push_back({start, end, 1});
          start = end;
        }
        plan.mappings = {m};
        absl::StatusOr<std::vector<ArrayRef>> out =
            client_->RemapArrays(plan, absl::MakeSpan(*alias), ArrayCopySemantics::kDonateInput);
        ASSERT_THAT(out, IsOk()) << plan.DebugString();
        EXPECT_TRUE((*alias)[0]->IsDeleted());
        EXPECT_FALSE(a->IsDeleted());
        if (sem == ArrayCopySemantics::kDonateInput) static_cast<void>(a->Delete());
        next = (*out)[0];
      } else {  // disassemble and assemble
        what = absl::StrCat("disassemble/assemble (", ArrayCopySemanticsName(sem), ")");
        absl::StatusOr<std::vector<ArrayRef>> parts = a->DisassembleIntoSingleDeviceArrays(sem);
        ASSERT_THAT(parts, IsOk()) << what;
        absl::StatusOr<ArrayRef> whole = client_->AssembleArrayFromSingleDeviceArrays(
            dtype, shape, a->shared_ptr_sharding(), absl::MakeSpan(*parts), sem);
        ASSERT_THAT(whole, IsOk()) << what;
        next = *whole;
      }
      SCOPED_TRACE(absl::StrCat("step ", step, ": ", what));
      total_d2d += expected_d2d;
      const std::string debug = next->sharding().DebugString();
      classes[debug.substr(0, debug.find('('))]++;
      EXPECT_EQ(a->IsDeleted(), sem == ArrayCopySemantics::kDonateInput);
      absl::StatusOr<std::vector<uint8_t>> back = testing::ReadBack(next);
      ASSERT_THAT(back, IsOk());
      ASSERT_TRUE(*back == data) << "read-back differs";
      const TransferStats after = client_->transfer_stats();
      EXPECT_EQ(after.device_to_device.bytes - before.device_to_device.bytes, expected_d2d);
      EXPECT_EQ(after.host_to_device, before.host_to_device);
      a = next;
    }
  }
  EXPECT_EQ(steps, kSeeds * kStepsPerSeed);
  // The chains moved bytes across devices and reached every sharding class.
  EXPECT_GT(total_d2d, 0);
  for (const char* name :
       {"NamedSharding", "ShardingParamSharding", "ConcreteEvenSharding", "SingleDeviceSharding"}) {
    EXPECT_GT(classes[name], 0) << name;
  }
}

}  // namespace
}  // namespace tessera
