// libFuzzer target for RemapPlan::Validate: 1-3 input and output specs over
// four fake devices (tiled, replicated, single-device and opaque shardings of
// small shapes) and 0-4 mappings whose array indices and intervals come from
// the bytes (extreme values included), or a valid plan with a few edits. Validate must never crash,
// fail only with INVALID_ARGUMENT (or UNIMPLEMENTED for an opaque sharding, which has no shard
// shapes), and accept only plans that an independent check finds valid: each output shard written
// exactly once, each input shard used at most once, by a shard of the same shape on the same
// device. Anything else aborts.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ifrt/array_spec.h"
#include "ifrt/device.h"
#include "ifrt/device_list.h"
#include "ifrt/remap_plan.h"
#include "ifrt/sharding.h"
#include "tests/fuzz/fuzz_input.h"

namespace tessera {
namespace {

using ::tessera::fuzzing::FuzzInput;

// A device with an id and nothing else: enough for shardings and RemapPlan.
class FakeDevice final : public Device {
 public:
  explicit FakeDevice(int id) : id_(id) {}
  Client* client() const override { return nullptr; }
  DeviceId Id() const override { return DeviceId{id_}; }
  std::string_view Kind() const override { return "cpu"; }
  const AttributeMap& Attributes() const override { return attributes_; }
  absl::StatusOr<Memory*> DefaultMemory() const override {
    return absl::NotFoundError("fake device");
  }
  absl::Span<Memory* const> Memories() const override { return {}; }
  std::string ToString() const override { return "fake:" + std::to_string(id_); }
  std::string DebugString() const override { return "FakeDevice(" + std::to_string(id_) + ")"; }

 private:
  int id_;
  AttributeMap attributes_;
};

constexpr int kDevices = 4;

Device* FakeDeviceAt(int i) {
  static FakeDevice* devices[kDevices] = {new FakeDevice(0), new FakeDevice(1), new FakeDevice(2),
                                          new FakeDevice(3)};
  return devices[i];
}

void Fail(const std::string& what) {
  std::fprintf(stderr, "remap fuzzer: %s\n", what.c_str());
  std::abort();
}

// A spec over 1-4 distinct devices in one of the 24 orders, or (rarely) over
// devices picked freely, which DeviceList may reject as repeated.
std::optional<ArraySpec> ReadSpec(FuzzInput& in) {
  const int n = static_cast<int>(in.Int(1, kDevices));
  std::vector<Device*> devices;
  if (in.Int(0, 7) == 0) {
    for (int i = 0; i < n; ++i) devices.push_back(FakeDeviceAt(static_cast<int>(in.Int(0, 3))));
  } else {
    int order[kDevices] = {0, 1, 2, 3};
    for (int64_t k = in.Int(0, 23), i = 0; i < kDevices; ++i) {  // the k-th permutation
      const int64_t j = i + k % (kDevices - i);
      k /= kDevices - i;
      std::swap(order[i], order[j]);
    }
    for (int i = 0; i < n; ++i) devices.push_back(FakeDeviceAt(order[i]));
  }
  absl::StatusOr<DeviceListRef> list = DeviceList::Create(devices);
  if (!list.ok()) return std::nullopt;
  const DType dtype(in.Int(0, 7) == 0 ? DType::kF32 : DType::kS32);
  // Rows: a multiple of the device count most of the time (equal shard shapes across arrays).
  const int64_t rows = in.Int(0, 3) == 0 ? in.Int(0, 2 * n) : n * in.Int(1, 2);
  const Shape shape({rows, in.Int(1, 2)});
  absl::StatusOr<ShardingRef> sharding;
  switch (in.Int(0, 7)) {
    case 0:
    case 1:
    case 2:  // n tiles along dim 0
      sharding = ShardingParamSharding::Create(sharding::ShardingParam({n, 1}, {{0}, {n}}), *list,
                                               MemoryKind());
      break;
    case 3:
    case 4:  // replicated n times
      sharding = ShardingParamSharding::Create(sharding::ShardingParam({1, 1}, {{0}, {n}}), *list,
                                               MemoryKind());
      break;
    case 5:
    case 6:
      sharding = SingleDeviceSharding::Create((*list)->devices()[0], MemoryKind());
      break;
    default:
      sharding = OpaqueSharding::Create(*list, MemoryKind());
      break;
  }
  if (!sharding.ok()) return std::nullopt;
  return ArraySpec{dtype, shape, *sharding};
}

// Mostly small intervals within 4 shards; one in eight has edge values.
RemapPlan::Interval ReadInterval(FuzzInput& in) {
  RemapPlan::Interval iv;
  if (in.Int(0, 7) == 0) {
    iv.start = in.EdgyInt();
    iv.end = in.EdgyInt();
    iv.step = in.EdgyInt();
  } else {
    iv.start = static_cast<int>(in.Int(0, 3));
    iv.end = iv.start + static_cast<int>(in.Int(0, 4));
    iv.step = static_cast<int>(in.Int(1, 2));
  }
  return iv;
}

// The independent check of a plan Validate accepted (inputs no mapping reads
// may have any sharding, even an opaque one).
void CheckAccepted(const RemapPlan& plan) {
  std::vector<std::vector<int>> read, written;
  std::vector<std::optional<sharding::ShardLayout>> in_layouts, out_layouts;
  for (const ArraySpec& s : plan.input_specs) {
    read.emplace_back(s.sharding->devices()->size(), 0);
    absl::StatusOr<sharding::ShardLayout> layout = s.sharding->Layout(s.shape);
    in_layouts.push_back(layout.ok() ? std::make_optional(*layout) : std::nullopt);
  }
  for (const ArraySpec& s : plan.output_specs) {
    written.emplace_back(s.sharding->devices()->size(), 0);
    absl::StatusOr<sharding::ShardLayout> layout = s.sharding->Layout(s.shape);
    if (!layout.ok()) Fail("accepted an output without a layout: " + layout.status().ToString());
    out_layouts.push_back(*layout);
  }
  for (const RemapPlan::Mapping& m : plan.mappings) {
    if (m.from.size() != m.to.size()) Fail("accepted unpaired intervals");
    for (size_t j = 0; j < m.from.size(); ++j) {
      const RemapPlan::Interval &f = m.from[j], &t = m.to[j];
      if (f.step <= 0 || t.step <= 0) Fail("accepted a non-positive step");
      // Walk both intervals in int64_t, independently of Interval::size().
      int64_t a = f.start, b = t.start;
      for (; a < f.end && b < t.end; a += f.step, b += t.step) {
        if (a < 0 || b < 0 || a >= static_cast<int64_t>(read[m.in_array].size()) ||
            b >= static_cast<int64_t>(written[m.out_array].size())) {
          Fail("accepted an out-of-range shard");
        }
        if (++read[m.in_array][a] > 1) Fail("accepted an input shard used twice");
        if (++written[m.out_array][b] > 1) Fail("accepted an output shard written twice");
        const ArraySpec& in = plan.input_specs[m.in_array];
        const ArraySpec& out = plan.output_specs[m.out_array];
        if (in.sharding->devices()->devices()[a] != out.sharding->devices()->devices()[b]) {
          Fail("accepted a move between devices");
        }
        if (!in_layouts[m.in_array]) Fail("accepted a read of an input without a layout");
        if (in_layouts[m.in_array]->shard_shape(static_cast<int>(a)) !=
            out_layouts[m.out_array]->shard_shape(static_cast<int>(b))) {
          Fail("accepted a shape change");
        }
      }
      if (a < f.end || b < t.end) Fail("accepted intervals of different lengths");
    }
  }
  for (const auto& w : written) {
    for (int n : w) {
      if (n != 1) Fail("accepted an unwritten output shard");
    }
  }
}

// A plan read field by field: mostly invalid, sometimes valid.
bool ReadRandomPlan(FuzzInput& in, RemapPlan& plan) {
  for (int64_t n = in.Int(1, 3); n > 0; --n) {
    std::optional<ArraySpec> spec = ReadSpec(in);
    if (!spec) return false;
    plan.input_specs.push_back(*spec);
  }
  for (int64_t n = in.Int(1, 3); n > 0; --n) {
    std::optional<ArraySpec> spec = ReadSpec(in);
    if (!spec) return false;
    plan.output_specs.push_back(*spec);
  }
  for (int64_t n = in.Int(0, 4); n > 0; --n) {
    RemapPlan::Mapping m;
    m.in_array = static_cast<int>(in.Int(-1, 3)) % static_cast<int>(plan.input_specs.size() + 1);
    m.out_array = static_cast<int>(in.Int(-1, 3)) % static_cast<int>(plan.output_specs.size() + 1);
    const int64_t pairs = in.Int(0, 2);
    for (int64_t k = 0; k < pairs; ++k) m.from.push_back(ReadInterval(in));
    for (int64_t k = pairs + (in.Int(0, 7) == 0 ? 1 : 0); k > 0; --k) {
      m.to.push_back(ReadInterval(in));
    }
    plan.mappings.push_back(std::move(m));
  }
  return true;
}

// A valid plan (each input copied whole to an output of the same spec), then
// 1-3 edits read from the bytes: fork a mapping into a new output, add an
// interval pair, overwrite an interval field, retarget a mapping, drop one.
bool ReadEditedPlan(FuzzInput& in, RemapPlan& plan) {
  for (int64_t n = in.Int(1, 3); n > 0; --n) {
    std::optional<ArraySpec> spec = ReadSpec(in);
    if (!spec) return false;
    const int shards = static_cast<int>(spec->sharding->devices()->size());
    plan.input_specs.push_back(*spec);
    plan.output_specs.push_back(*spec);
    const int i = static_cast<int>(plan.mappings.size());
    plan.mappings.push_back({i, i, {{0, shards, 1}}, {{0, shards, 1}}});
  }
  for (int64_t edits = in.Int(1, 3); edits > 0; --edits) {
    RemapPlan::Mapping& m = plan.mappings[in.Int(0, plan.mappings.size() - 1)];
    switch (in.Int(0, 4)) {
      case 0:  // the same input shards into a copy of the output
        plan.output_specs.push_back(plan.output_specs[m.out_array]);
        plan.mappings.push_back(m);
        plan.mappings.back().out_array = static_cast<int>(plan.output_specs.size()) - 1;
        break;
      case 1:
        m.from.push_back(ReadInterval(in));
        m.to.push_back(ReadInterval(in));
        break;
      case 2: {
        std::vector<RemapPlan::Interval>& side = in.Bool() ? m.from : m.to;
        if (side.empty()) break;
        RemapPlan::Interval& iv = side[in.Int(0, side.size() - 1)];
        int* field[] = {&iv.start, &iv.end, &iv.step};
        *field[in.Int(0, 2)] = in.EdgyInt();
        break;
      }
      case 3:
        m.out_array = static_cast<int>(in.Int(0, plan.output_specs.size() - 1));
        break;
      default:
        if (plan.mappings.size() > 1) plan.mappings.pop_back();
        break;
    }
  }
  return true;
}

void CheckOne(FuzzInput& in) {
  RemapPlan plan;
  if (!(in.Bool() ? ReadEditedPlan(in, plan) : ReadRandomPlan(in, plan))) return;
  const absl::Status status = plan.Validate();
  (void)plan.DebugString();
  if (status.ok()) {
    CheckAccepted(plan);
  } else if (status.code() != absl::StatusCode::kInvalidArgument &&
             status.code() != absl::StatusCode::kUnimplemented) {
    Fail("unexpected code: " + status.ToString());
  }
}

}  // namespace
}  // namespace tessera

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tessera::fuzzing::FuzzInput in(data, size);
  tessera::CheckOne(in);
  return 0;
}
