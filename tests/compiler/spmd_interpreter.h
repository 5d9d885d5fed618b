// tests/compiler/spmd_interpreter.h: a reference SPMD interpreter of ProgramPlans for the tests.
// It runs a plan over simulated devices on the host: parameters are sliced from global host arrays
// by their shardings, kernel steps run through LoadCpuKernel (every device on its own thread, to
// exercise the kernel's thread-safety), collective steps are done here from the CollectiveStep
// definitions in ifrt/spi/program_plan.h, and results are assembled from the devices' shards
// (checking that every replica of a tile agrees). Not thread-safe itself; test-only.

#ifndef TESSERA_TESTS_COMPILER_SPMD_INTERPRETER_H_
#define TESSERA_TESTS_COMPILER_SPMD_INTERPRETER_H_

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "backends/cpu/kernel_loader.h"
#include "ifrt/spi/program_plan.h"
#include "sharding/mesh.h"
#include "sharding/partition_spec.h"

namespace tessera::testing {

// A host array: dtype, shape and row-major bytes.
struct HostArray {
  DType dtype{DType::kInvalid};
  std::vector<int64_t> shape;
  std::vector<char> bytes;

  int64_t num_elements() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
  int element_size() const { return *dtype.byte_size(); }
  template <typename T>
  T* data() {
    return reinterpret_cast<T*>(bytes.data());
  }
  template <typename T>
  const T* data() const {
    return reinterpret_cast<const T*>(bytes.data());
  }
  static HostArray Zeros(DType dtype, std::vector<int64_t> shape) {
    HostArray a{dtype, std::move(shape), {}};
    a.bytes.assign(a.num_elements() * a.element_size(), 0);
    return a;
  }
};

inline std::vector<int64_t> RowMajorStrides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  return strides;
}

// Copies the box of `size` at `src_origin` in `src` to `dst_origin` in `dst`.
inline void CopyBox(const HostArray& src, const std::vector<int64_t>& src_origin, HostArray& dst,
                    const std::vector<int64_t>& dst_origin, const std::vector<int64_t>& size) {
  int64_t count = 1;
  for (int64_t s : size) count *= s;
  if (count == 0) return;
  const int es = src.element_size();
  std::vector<int64_t> ss = RowMajorStrides(src.shape), ds = RowMajorStrides(dst.shape);
  std::vector<int64_t> index(size.size(), 0);
  for (int64_t n = 0; n < count; ++n) {
    int64_t s_off = 0, d_off = 0;
    for (size_t d = 0; d < size.size(); ++d) {
      s_off += (src_origin[d] + index[d]) * ss[d];
      d_off += (dst_origin[d] + index[d]) * ds[d];
    }
    std::memcpy(dst.bytes.data() + d_off * es, src.bytes.data() + s_off * es, es);
    for (size_t d = size.size(); d-- > 0;) {
      if (++index[d] < size[d]) break;
      index[d] = 0;
    }
  }
}

// Runs a plan on grid_shape-many simulated devices.
class SpmdInterpreter {
 public:
  explicit SpmdInterpreter(const ProgramPlan& plan) : plan_(plan) {
    num_devices_ = 1;
    for (int64_t s : plan.grid_shape) num_devices_ *= s;
  }

  absl::StatusOr<std::vector<HostArray>> Run(const std::vector<HostArray>& inputs) {
    if (inputs.size() != plan_.parameters.size()) {
      return absl::InvalidArgumentError("wrong number of inputs");
    }
    values_.assign(num_devices_, std::vector<HostArray>(plan_.values.size()));
    for (size_t p = 0; p < inputs.size(); ++p) {
      for (int dev = 0; dev < num_devices_; ++dev) {
        auto local = Slice(inputs[p], plan_.parameter_shardings[p], dev);
        if (!local.ok()) return local.status();
        values_[dev][plan_.parameters[p]] = *std::move(local);
      }
    }
    for (const ProgramStep& step : plan_.steps) {
      absl::Status status = step.kind == ProgramStep::Kind::kKernel
                                ? RunKernel(step.kernel)
                                : RunCollective(step.collective);
      if (!status.ok()) return status;
    }
    std::vector<HostArray> results;
    for (size_t r = 0; r < plan_.results.size(); ++r) {
      auto global = Assemble(plan_.results[r], plan_.result_shardings[r], plan_.global_results[r]);
      if (!global.ok()) return global.status();
      results.push_back(*std::move(global));
    }
    return results;
  }

  int kernels_loaded() const { return kernels_loaded_; }

 private:
  std::vector<int64_t> Coords(int dev) const {
    std::vector<int64_t> c(plan_.grid_shape.size());
    for (size_t a = plan_.grid_shape.size(); a-- > 0;) {
      c[a] = dev % plan_.grid_shape[a];
      dev /= plan_.grid_shape[a];
    }
    return c;
  }

  // This device's box of a global array under a sharding: origin and size per dimension.
  absl::Status Box(const ProgramSharding& sharding, const std::vector<int64_t>& global, int dev,
                   std::vector<int64_t>& origin, std::vector<int64_t>& size) const {
    auto mesh = sharding::Mesh::Parse(sharding.mesh);
    if (!mesh.ok()) return mesh.status();
    auto spec = sharding::PartitionSpec::Parse(sharding.spec);
    if (!spec.ok()) return spec.status();
    std::vector<int64_t> coords = Coords(dev);
    origin.assign(global.size(), 0);
    size = global;
    for (int d = 0; d < spec->size(); ++d) {
      int64_t tile = 0, tiles = 1;
      for (const std::string& name : spec->dims()[d]) {
        int axis = *mesh->FindAxis(name);
        tile = tile * mesh->axes()[axis].size + coords[axis];
        tiles *= mesh->axes()[axis].size;
      }
      size[d] = global[d] / tiles;
      origin[d] = tile * size[d];
    }
    return absl::OkStatus();
  }

  absl::StatusOr<HostArray> Slice(const HostArray& global, const ProgramSharding& sharding,
                                  int dev) const {
    std::vector<int64_t> origin, size;
    absl::Status status = Box(sharding, global.shape, dev, origin, size);
    if (!status.ok()) return status;
    HostArray local = HostArray::Zeros(global.dtype, size);
    CopyBox(global, origin, local, std::vector<int64_t>(size.size(), 0), size);
    return local;
  }

  absl::StatusOr<HostArray> Assemble(int id, const ProgramSharding& sharding,
                                     const ProgramValue& global_value) {
    std::vector<int64_t> global_shape(global_value.local_shape.dims().begin(),
                                      global_value.local_shape.dims().end());
    HostArray global = HostArray::Zeros(global_value.dtype, global_shape);
    std::vector<bool> written(global.num_elements(), false);
    for (int dev = 0; dev < num_devices_; ++dev) {
      std::vector<int64_t> origin, size;
      absl::Status status = Box(sharding, global_shape, dev, origin, size);
      if (!status.ok()) return status;
      const HostArray& local = values_[dev][id];
      if (local.shape != size) return absl::InternalError("result shard has the wrong shape");
      HostArray before = global;
      CopyBox(local, std::vector<int64_t>(size.size(), 0), global, origin, size);
      // Replicas must agree: a tile written twice must not change.
      for (int64_t i = 0; i < global.num_elements(); ++i) {
        const int es = global.element_size();
        if (std::memcmp(before.bytes.data() + i * es, global.bytes.data() + i * es, es) == 0) {
          continue;
        }
        if (written[i]) {
          return absl::InternalError(absl::StrCat("replicas of result element ", i, " differ"));
        }
        written[i] = true;
      }
    }
    return global;
  }

  absl::Status RunKernel(const KernelStep& step) {
    auto artifact = step.artifacts.find("cpu");
    if (artifact == step.artifacts.end()) return absl::InternalError("no cpu artifact");
    auto kernel = LoadCpuKernel(artifact->second);
    if (!kernel.ok()) return kernel.status();
    ++kernels_loaded_;
    std::vector<absl::Status> statuses(num_devices_);
    std::vector<std::thread> threads;
    for (int dev = 0; dev < num_devices_; ++dev) {
      for (int out : step.outputs) {
        const ProgramValue& v = plan_.values[out];
        values_[dev][out] = HostArray::Zeros(
            v.dtype,
            std::vector<int64_t>(v.local_shape.dims().begin(), v.local_shape.dims().end()));
      }
      threads.emplace_back([&, dev] {
        std::vector<void*> buffers;
        std::vector<Shape> shapes;
        for (const std::vector<int>* ids : {&step.inputs, &step.outputs}) {
          for (int id : *ids) {
            buffers.push_back(values_[dev][id].bytes.data());
            shapes.push_back(plan_.values[id].local_shape);
          }
        }
        std::vector<int64_t> position;
        if (step.takes_device_position) position = Coords(dev);
        statuses[dev] = (*kernel)->Run(buffers, shapes, position);
      });
    }
    for (std::thread& t : threads) t.join();
    for (const absl::Status& s : statuses) {
      if (!s.ok()) return s;
    }
    return absl::OkStatus();
  }

  // The devices of `dev`'s group, in group order, and `dev`'s index among them.
  std::vector<int> Group(int dev, const std::vector<int>& axes, int& member) const {
    std::vector<int> group;
    std::vector<int64_t> mine = Coords(dev);
    for (int other = 0; other < num_devices_; ++other) {
      std::vector<int64_t> c = Coords(other);
      bool same = true;
      for (size_t a = 0; a < c.size(); ++a) {
        if (std::find(axes.begin(), axes.end(), static_cast<int>(a)) == axes.end() &&
            c[a] != mine[a]) {
          same = false;
        }
      }
      if (!same) continue;
      group.push_back(other);
    }
    auto rank = [&](int d) {
      std::vector<int64_t> c = Coords(d);
      int64_t r = 0;
      for (int a : axes) r = r * plan_.grid_shape[a] + c[a];
      return r;
    };
    std::sort(group.begin(), group.end(), [&](int a, int b) { return rank(a) < rank(b); });
    member = static_cast<int>(std::find(group.begin(), group.end(), dev) - group.begin());
    return group;
  }

  // One element of a reduction of `kind` (ReductionKind, program_plan.h): floats' max / min order
  // -0 < +0 (the AND / OR of equal operands' bits), maximum / minimum propagate NaN, maxnum /
  // minnum ignore it.
  template <typename T>
  static T Combine(ReductionKind kind, T x, T y) {
    if constexpr (std::is_floating_point_v<T>) {
      using B = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
      const B bx = std::bit_cast<B>(x), by = std::bit_cast<B>(y);
      const bool max = kind == ReductionKind::kMax || kind == ReductionKind::kMaxNum;
      const bool num = kind == ReductionKind::kMinNum || kind == ReductionKind::kMaxNum;
      switch (kind) {
        case ReductionKind::kSum:
          return x + y;
        case ReductionKind::kProduct:
          return x * y;
        default:
          if (max ? x > y : x < y) return x;
          if (max ? y > x : y < x) return y;
          if (x == y) return std::bit_cast<T>(static_cast<B>(max ? bx & by : bx | by));
          return std::isnan(x) == num ? y : x;
      }
    } else {
      using U = std::make_unsigned_t<T>;
      switch (kind) {
        case ReductionKind::kSum:
          return static_cast<T>(U(x) + U(y));
        case ReductionKind::kProduct:
          return static_cast<T>(U(x) * U(y));
        case ReductionKind::kMin:
          return std::min(x, y);
        case ReductionKind::kMax:
          return std::max(x, y);
        case ReductionKind::kMinUnsigned:
          return U(x) < U(y) ? x : y;
        case ReductionKind::kMaxUnsigned:
          return U(x) > U(y) ? x : y;
        case ReductionKind::kAnd:
          return x & y;
        case ReductionKind::kOr:
          return x | y;
        default:
          return x ^ y;  // kXor (the float kinds do not reach integers)
      }
    }
  }

  template <typename T>
  static void Reduce(ReductionKind kind, T* acc, const T* in, int64_t n) {
    for (int64_t i = 0; i < n; ++i) acc[i] = Combine(kind, acc[i], in[i]);
  }

  static void ReduceInto(ReductionKind kind, HostArray& acc, const HostArray& in) {
    int64_t n = acc.num_elements();
    switch (acc.dtype.kind()) {
      case DType::kF32:
        Reduce(kind, acc.data<float>(), in.data<float>(), n);
        break;
      case DType::kF64:
        Reduce(kind, acc.data<double>(), in.data<double>(), n);
        break;
      case DType::kS32:
        Reduce(kind, acc.data<int32_t>(), in.data<int32_t>(), n);
        break;
      default:
        Reduce(kind, acc.data<int64_t>(), in.data<int64_t>(), n);
        break;
    }
  }

  // Piece `index` of `count` equal pieces of `in` along `axis`.
  static HostArray Piece(const HostArray& in, int64_t axis, int64_t index, int64_t count) {
    std::vector<int64_t> size = in.shape;
    size[axis] /= count;
    std::vector<int64_t> origin(size.size(), 0);
    origin[axis] = index * size[axis];
    HostArray out = HostArray::Zeros(in.dtype, size);
    CopyBox(in, origin, out, std::vector<int64_t>(size.size(), 0), size);
    return out;
  }

  static HostArray Concat(const std::vector<HostArray>& parts, int64_t axis) {
    std::vector<int64_t> shape = parts[0].shape;
    shape[axis] = 0;
    for (const HostArray& p : parts) shape[axis] += p.shape[axis];
    HostArray out = HostArray::Zeros(parts[0].dtype, shape);
    std::vector<int64_t> origin(shape.size(), 0);
    for (const HostArray& p : parts) {
      CopyBox(p, std::vector<int64_t>(shape.size(), 0), out, origin, p.shape);
      origin[axis] += p.shape[axis];
    }
    return out;
  }

  HostArray Collective(const CollectiveStep& step, int dev) const {
    int member = 0;
    std::vector<int> group = Group(dev, step.grid_axes, member);
    const int64_t n = static_cast<int64_t>(group.size());
    auto input = [&](int d) -> const HostArray& { return values_[d][step.input]; };
    switch (step.kind) {
      case CollectiveKind::kAllReduce:
      case CollectiveKind::kReduceScatter: {
        HostArray acc = input(group[0]);
        for (int64_t m = 1; m < n; ++m) ReduceInto(step.reduction, acc, input(group[m]));
        if (step.kind == CollectiveKind::kAllReduce) return acc;
        return Piece(acc, step.split_axis, member, n);
      }
      case CollectiveKind::kAllGather: {
        std::vector<HostArray> parts;
        for (int d : group) parts.push_back(input(d));
        return Concat(parts, step.gather_axis);
      }
      case CollectiveKind::kAllSlice:
        return Piece(input(dev), step.split_axis, member, n);
      case CollectiveKind::kAllToAll: {
        std::vector<HostArray> parts;
        for (int d : group) parts.push_back(Piece(input(d), step.split_axis, member, n));
        return Concat(parts, step.concat_axis);
      }
      case CollectiveKind::kCollectivePermute: {
        // Member `member` receives member (member - offset)'s input: modulo n when rotating,
        // else zeros where there is no such member.
        int64_t from = member - step.shift_offset;
        if (step.shift_rotates) from = ((from % n) + n) % n;
        if (from >= 0 && from < n) return input(group[from]);
        HostArray zeros = input(dev);
        std::fill(zeros.bytes.begin(), zeros.bytes.end(), 0);
        return zeros;
      }
    }
    return {};
  }

  absl::Status RunCollective(const CollectiveStep& step) {
    std::vector<HostArray> outputs;
    for (int dev = 0; dev < num_devices_; ++dev) outputs.push_back(Collective(step, dev));
    for (int dev = 0; dev < num_devices_; ++dev) {
      const ProgramValue& v = plan_.values[step.output];
      std::vector<int64_t> expected(v.local_shape.dims().begin(), v.local_shape.dims().end());
      if (outputs[dev].shape != expected) {
        return absl::InternalError("collective output has the wrong local shape");
      }
      values_[dev][step.output] = std::move(outputs[dev]);
    }
    return absl::OkStatus();
  }

  const ProgramPlan& plan_;
  int num_devices_ = 1;
  int kernels_loaded_ = 0;
  std::vector<std::vector<HostArray>> values_;  // [device][value id]
};

}  // namespace tessera::testing

#endif  // TESSERA_TESTS_COMPILER_SPMD_INTERPRETER_H_
