// Programs compiled to SPIR-V and run on lavapipe, through the public API: each op at several
// shapes (1, primes) and dtypes, and both examples, on 4 Vulkan devices (2 lavapipe devices, 2
// logical devices each) and on 2 Vulkan + 2 CPU devices (each device runs its platform's kernel;
// the Megatron all-reduce spans both platforms). Results against reference loops in this file
// (f32 within 1e-4 relative, f64 1e-10, integers exactly), with the Khronos validation layer on:
// any validation message fails. Skipped, with the reason, only where no Vulkan driver exists.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "backends/client_factory.h"
#include "backends/vulkan/vulkan_platform.h"
#include "base/status_macros.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ifrt/runtime/program/kernel_targets.h"
#include "ifrt/runtime/program/runtime_compiler.h"
#include "tessera.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/vulkan_icds.h"

namespace tessera {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

struct Topology {
  std::string name;
  int cpu_devices;
  int vulkan_logical_devices_per_gpu;
};

// A host array: dtype, dims, values as doubles (converted on upload and download).
struct Host {
  DType::Kind kind;
  std::vector<int64_t> dims;
  std::vector<double> values;
};

int64_t Elements(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

Host Random(DType::Kind kind, std::vector<int64_t> dims, uint32_t seed) {
  Host h{kind, dims, std::vector<double>(Elements(dims))};
  uint32_t state = seed * 2654435761u + 7;
  for (double& v : h.values) {
    state = state * 1664525u + 1013904223u;
    const double unit = static_cast<double>(state >> 8) / (1u << 24);
    v = (kind == DType::kS32 || kind == DType::kS64) ? std::floor(unit * 16) - 8 : 2 * unit - 1;
  }
  return h;
}

std::vector<char> Encode(const Host& h) {
  const int bytes = *DType(h.kind).byte_size();
  std::vector<char> out(h.values.size() * bytes);
  for (size_t i = 0; i < h.values.size(); ++i) {
    char* p = out.data() + i * bytes;
    const double v = h.values[i];
    if (h.kind == DType::kF32) {
      const float f = static_cast<float>(v);
      std::memcpy(p, &f, 4);
    } else if (h.kind == DType::kF64) {
      std::memcpy(p, &v, 8);
    } else if (h.kind == DType::kS32) {
      const int32_t x = static_cast<int32_t>(v);
      std::memcpy(p, &x, 4);
    } else {
      const int64_t x = static_cast<int64_t>(v);
      std::memcpy(p, &x, 8);
    }
  }
  return out;
}

std::vector<double> Decode(DType::Kind kind, const std::vector<char>& bytes) {
  const int size = *DType(kind).byte_size();
  std::vector<double> out(bytes.size() / size);
  for (size_t i = 0; i < out.size(); ++i) {
    const char* p = bytes.data() + i * size;
    if (kind == DType::kF32) {
      float f;
      std::memcpy(&f, p, 4);
      out[i] = f;
    } else if (kind == DType::kF64) {
      std::memcpy(&out[i], p, 8);
    } else if (kind == DType::kS32) {
      int32_t x;
      std::memcpy(&x, p, 4);
      out[i] = x;
    } else {
      int64_t x;
      std::memcpy(&x, p, 8);
      out[i] = static_cast<double>(x);
    }
  }
  return out;
}

void ExpectNear(const Host& actual, const Host& expected) {
  ASSERT_EQ(actual.values.size(), expected.values.size());
  const double rel = expected.kind == DType::kF32 ? 1e-4 : expected.kind == DType::kF64 ? 1e-10 : 0;
  int mismatches = 0;
  for (size_t i = 0; i < expected.values.size() && mismatches < 5; ++i) {
    const double a = actual.values[i], e = expected.values[i];
    if (!(std::abs(a - e) <= rel * std::max(1.0, std::abs(e)))) {
      ADD_FAILURE() << "element " << i << ": " << a << " != expected " << e;
      ++mismatches;
    }
  }
}

class VulkanProgramTest : public ::testing::TestWithParam<Topology> {
 protected:
  void SetUp() override {
    testing::SetVulkanIcdsIfUnset(TESSERA_VULKAN_PROGRAM_TEST_ICDS);
    setenv("TESSERA_VULKAN_VALIDATION", "1", /*overwrite=*/0);
    absl::StatusOr<std::shared_ptr<Client>> client =
        CreateClient({.cpu_devices = GetParam().cpu_devices,
                      .cpu_threads_per_device = 1,
                      .vulkan = VulkanMode::kRequired,
                      .vulkan_logical_devices_per_gpu = GetParam().vulkan_logical_devices_per_gpu,
                      .transfer_guard = guard::Policy()});
    if (absl::IsNotFound(client.status())) GTEST_SKIP() << "no Vulkan driver: " << client.status();
    ASSERT_OK(client.status());
    client_ = *std::move(client);
    ASSERT_EQ(client_->devices().size(), 4u);
    ASSERT_OK_AND_ASSIGN(devices_, client_->MakeDeviceList(client_->devices()));
    validation_messages_ = VulkanValidationMessageCount();
  }
  void TearDown() override {
    EXPECT_EQ(VulkanValidationMessageCount(), validation_messages_) << "validation messages";
  }

  // Compiles `text` (its shardings in attributes, over mesh{x=4}), runs it on `inputs` (uploaded
  // replicated: the executable reshards them), returns its results.
  absl::StatusOr<std::vector<Host>> Run(const std::string& text, const std::vector<Host>& inputs) {
    TESSERA_ASSIGN_OR_RETURN(std::vector<ArrayRef> results, Execute(text, inputs));
    std::vector<Host> outputs;
    for (const ArrayRef& out : results) {
      TESSERA_ASSIGN_OR_RETURN(Host host, Download(*out));
      outputs.push_back(std::move(host));
    }
    return outputs;
  }

  // As Run, for a program whose first result is replicated: that result as each device holds it
  // (the device, then its copy; Run reads one copy, the first device's, a CPU device's on the
  // mixed topology).
  absl::StatusOr<std::vector<std::pair<std::string, Host>>> RunEveryCopy(
      const std::string& text, const std::vector<Host>& inputs) {
    TESSERA_ASSIGN_OR_RETURN(std::vector<ArrayRef> results, Execute(text, inputs));
    TESSERA_ASSIGN_OR_RETURN(
        std::vector<ArrayRef> copies,
        results.at(0)->DisassembleIntoSingleDeviceArrays(ArrayCopySemantics::kAlwaysCopy));
    std::vector<std::pair<std::string, Host>> outputs;
    for (const ArrayRef& copy : copies) {
      TESSERA_ASSIGN_OR_RETURN(Host host, Download(*copy));
      const Device* device = copy->sharding().devices()->devices().front();
      outputs.emplace_back(device->DebugString(), std::move(host));
    }
    return outputs;
  }

  absl::StatusOr<std::vector<ArrayRef>> Execute(const std::string& text,
                                                const std::vector<Host>& inputs) {
    TESSERA_ASSIGN_OR_RETURN(LoadedExecutableRef exe, client_->GetDefaultCompiler()->Compile(
                                                          std::make_unique<MlirProgram>(text),
                                                          CompileOptions{.devices = devices_}));
    std::vector<ArrayRef> args;
    for (size_t i = 0; i < inputs.size(); ++i) {
      std::vector<char> bytes = Encode(inputs[i]);
      TESSERA_ASSIGN_OR_RETURN(
          ArrayRef a, client_->MakeArrayFromHostBuffer(
                          bytes.data(), DType(inputs[i].kind), Shape(inputs[i].dims), std::nullopt,
                          exe->GetParameterShardings()[i],
                          HostBufferSemantics::kImmutableOnlyDuringCall, nullptr));
      args.push_back(std::move(a));
    }
    TESSERA_ASSIGN_OR_RETURN(ExecuteResult result, exe->Execute(absl::MakeSpan(args)));
    TESSERA_RETURN_IF_ERROR(result.status.Await());
    return result.outputs;
  }

  static absl::StatusOr<Host> Download(Array& array) {
    std::vector<char> bytes(array.shape().num_elements() * *array.dtype().byte_size());
    TESSERA_RETURN_IF_ERROR(
        array.CopyToHostBuffer(bytes.data(), std::nullopt, ArrayCopySemantics::kAlwaysCopy)
            .Await());
    std::vector<int64_t> dims(array.shape().dims().begin(), array.shape().dims().end());
    return Host{array.dtype().kind(), dims, Decode(array.dtype().kind(), bytes)};
  }

  std::shared_ptr<Client> client_;
  DeviceListRef devices_;
  int64_t validation_messages_ = 0;
};

std::string Attr(const std::string& spec) {
  return " {tessera.sharding = \"mesh{x=4} " + spec + "\"}";
}

std::string Tensor(const std::vector<int64_t>& dims, const std::string& element) {
  std::string t = "tensor<";
  for (int64_t d : dims) absl::StrAppend(&t, d, "x");
  return t + element + ">";
}

Host MatMul(const Host& a, const Host& b, int64_t m, int64_t k, int64_t n) {
  Host c{a.kind, {m, n}, std::vector<double>(m * n)};
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t p = 0; p < k; ++p) sum += a.values[i * k + p] * b.values[p * n + j];
      c.values[i * n + j] = sum;
    }
  }
  return c;
}

TEST_P(VulkanProgramTest, MatmulAtSeveralShapesAndShardings) {
  struct Case {
    int64_t m, k, n;
    std::string a, b, c;
  };
  for (const Case& t : std::vector<Case>{{4, 1, 1, "P(x,None)", "P()", "P(x,None)"},
                                         {8, 0, 4, "P(x,None)", "P()", "P(x,None)"},
                                         {0, 3, 4, "P()", "P()", "P()"},
                                         {8, 7, 13, "P(x,None)", "P()", "P(x,None)"},
                                         {12, 8, 20, "P()", "P(None,x)", "P(None,x)"},
                                         {5, 16, 3, "P(None,x)", "P(x,None)", "P()"},
                                         {68, 36, 72, "P(x,None)", "P()", "P(x,None)"},
                                         // The register-blocked kernel's edges: size 1, K = 1,
                                         // N a multiple of 4 (vec4) or not, blocks cut by M and N.
                                         {1, 1, 1, "P()", "P()", "P()"},
                                         {1, 1, 4, "P()", "P()", "P()"},
                                         {3, 1, 8, "P()", "P()", "P()"},
                                         {5, 9, 1, "P()", "P()", "P()"},
                                         {17, 33, 12, "P()", "P()", "P()"},
                                         {19, 5, 70, "P()", "P()", "P()"},
                                         {33, 2, 68, "P()", "P(None,x)", "P(None,x)"},
                                         // K a multiple of 4 too: A's rows as vec4s.
                                         {9, 12, 36, "P()", "P()", "P()"},
                                         {1, 4, 4, "P()", "P()", "P()"},
                                         {72, 20, 132, "P(x,None)", "P()", "P(x,None)"}}) {
    SCOPED_TRACE(absl::StrCat(t.m, "x", t.k, "x", t.n, " ", t.a, " ", t.b, " ", t.c));
    const std::string ta = Tensor({t.m, t.k}, "f32"), tb = Tensor({t.k, t.n}, "f32"),
                      tc = Tensor({t.m, t.n}, "f32");
    const std::string text = "func.func @main(%a: " + ta + Attr(t.a) + ", %b: " + tb + Attr(t.b) +
                             ") -> (" + tc + Attr(t.c) + ") {\n" +
                             "  %z = arith.constant 0.0 : f32\n  %e = tensor.empty() : " + tc +
                             "\n  %f = linalg.fill ins(%z : f32) outs(%e : " + tc + ") -> " + tc +
                             "\n  %c = linalg.matmul ins(%a, %b : " + ta + ", " + tb +
                             ") outs(%f : " + tc + ") -> " + tc + "\n  return %c : " + tc + "\n}";
    const Host a = Random(DType::kF32, {t.m, t.k}, 1), b = Random(DType::kF32, {t.k, t.n}, 2);
    ASSERT_OK_AND_ASSIGN(std::vector<Host> out, Run(text, {a, b}));
    ExpectNear(out[0], MatMul(a, b, t.m, t.k, t.n));
  }
}

// The contraction dimension sharded and a non-zero accumulator: the partitioner adds the init on
// the device at position 0 only (an scf.if on shard.process_multi_index): the Vulkan kernel is
// specialized per position.
TEST_P(VulkanProgramTest, KernelUsingTheDevicePosition) {
  const std::string text = R"mlir(
func.func @main(%a: tensor<5x8xf32> {tessera.sharding = "mesh{x=4} P(None,x)"},
                %b: tensor<8x3xf32> {tessera.sharding = "mesh{x=4} P(x,None)"})
    -> (tensor<5x3xf32> {tessera.sharding = "mesh{x=4} P()"}) {
  %one = arith.constant 1.5 : f32
  %e = tensor.empty() : tensor<5x3xf32>
  %f = linalg.fill ins(%one : f32) outs(%e : tensor<5x3xf32>) -> tensor<5x3xf32>
  %c = linalg.matmul ins(%a, %b : tensor<5x8xf32>, tensor<8x3xf32>)
                     outs(%f : tensor<5x3xf32>) -> tensor<5x3xf32>
  return %c : tensor<5x3xf32>
}
)mlir";
  const Host a = Random(DType::kF32, {5, 8}, 31), b = Random(DType::kF32, {8, 3}, 32);
  Host want = MatMul(a, b, 5, 8, 3);
  for (double& v : want.values) v += 1.5;
  ASSERT_OK_AND_ASSIGN(std::vector<Host> out, Run(text, {a, b}));
  ExpectNear(out[0], want);
}

TEST_P(VulkanProgramTest, TiledMatmulInEveryDtype) {
  for (const std::string element : {"f64", "i32", "i64"}) {
    SCOPED_TRACE(element);
    const DType::Kind kind = element == "f64"   ? DType::kF64
                             : element == "i32" ? DType::kS32
                                                : DType::kS64;
    const std::string ta = Tensor({36, 19}, element), tb = Tensor({19, 21}, element),
                      tc = Tensor({36, 21}, element);
    const std::string zero = element == "f64" ? "0.0" : "0";
    const std::string text =
        "func.func @main(%a: " + ta + Attr("P(x,None)") + ", %b: " + tb + Attr("P()") + ") -> (" +
        tc + Attr("P(x,None)") + ") {\n  %z = arith.constant " + zero + " : " + element +
        "\n  %e = tensor.empty() : " + tc + "\n  %f = linalg.fill ins(%z : " + element +
        ") outs(%e : " + tc + ") -> " + tc + "\n  %c = linalg.matmul ins(%a, %b : " + ta + ", " +
        tb + ") outs(%f : " + tc + ") -> " + tc + "\n  return %c : " + tc + "\n}";
    const Host a = Random(kind, {36, 19}, 21), b = Random(kind, {19, 21}, 22);
    ASSERT_OK_AND_ASSIGN(std::vector<Host> out, Run(text, {a, b}));
    ExpectNear(out[0], MatMul(a, b, 36, 19, 21));
  }
}

TEST_P(VulkanProgramTest, ElementwiseInEveryDtype) {
  for (const std::string element : {"f32", "f64", "i32", "i64"}) {
    SCOPED_TRACE(element);
    const bool fp = element[0] == 'f';
    const DType::Kind kind = element == "f32"   ? DType::kF32
                             : element == "f64" ? DType::kF64
                             : element == "i32" ? DType::kS32
                                                : DType::kS64;
    const std::string t = Tensor({12, 5}, element);
    const std::string add = fp ? "arith.addf" : "arith.addi",
                      mul = fp ? "arith.mulf" : "arith.muli",
                      sub = fp ? "arith.subf" : "arith.subi";
    const std::string text = "func.func @main(%a: " + t + Attr("P(x,None)") + ", %b: " + t +
                             Attr("P(x,None)") + ") -> (" + t + Attr("P(x,None)") + ") {\n" +
                             "  %s = " + add + " %a, %b : " + t + "\n  %p = " + mul +
                             " %s, %a : " + t + "\n  %d = " + sub + " %p, %b : " + t +
                             "\n  return %d : " + t + "\n}";
    const Host a = Random(kind, {12, 5}, 3), b = Random(kind, {12, 5}, 4);
    Host want = a;
    for (size_t i = 0; i < want.values.size(); ++i) {
      want.values[i] = (a.values[i] + b.values[i]) * a.values[i] - b.values[i];
      if (kind == DType::kF32) {
        const float s = static_cast<float>(a.values[i]) + static_cast<float>(b.values[i]);
        want.values[i] = s * static_cast<float>(a.values[i]) - static_cast<float>(b.values[i]);
      }
    }
    ASSERT_OK_AND_ASSIGN(std::vector<Host> out, Run(text, {a, b}));
    ExpectNear(out[0], want);
  }
}

// The vec4 elementwise kernel and its scalar tail at sizes around multiples of 4 (1 to 3: the
// tail alone), f32 and i32, with a constant operand: the same bits as the scalar arithmetic.
TEST_P(VulkanProgramTest, VectorElementwiseIsExactAtEverySize) {
  for (const int64_t n : {1, 2, 3, 4, 5, 7, 8, 9, 1001, 4099}) {
    for (const std::string element : {"f32", "i32"}) {
      SCOPED_TRACE(absl::StrCat(element, "[", n, "]"));
      const bool fp = element == "f32";
      const DType::Kind kind = fp ? DType::kF32 : DType::kS32;
      const std::string t = Tensor({n}, element);
      const std::string three = fp ? "3.0" : "3";
      const std::string text = "func.func @main(%a: " + t + Attr("P()") + ", %b: " + t +
                               Attr("P()") + ") -> (" + t + Attr("P()") +
                               ") {\n  %c = arith.constant dense<" + three + "> : " + t +
                               "\n  %s = " + (fp ? "arith.addf" : "arith.addi") + " %a, %b : " + t +
                               "\n  %p = " + (fp ? "arith.mulf" : "arith.muli") + " %s, %c : " + t +
                               "\n  %d = " + (fp ? "arith.subf" : "arith.subi") + " %p, %a : " + t +
                               "\n  return %d : " + t + "\n}";
      const Host a = Random(kind, {n}, 41), b = Random(kind, {n}, 42);
      ASSERT_OK_AND_ASSIGN(std::vector<Host> out, Run(text, {a, b}));
      ASSERT_EQ(out[0].values.size(), static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        double want;
        if (fp) {
          const float x = static_cast<float>(a.values[i]), y = static_cast<float>(b.values[i]);
          want = (x + y) * 3.0f - x;
        } else {
          const int32_t x = static_cast<int32_t>(a.values[i]),
                        y = static_cast<int32_t>(b.values[i]);
          want = static_cast<int32_t>((static_cast<uint32_t>(x) + static_cast<uint32_t>(y)) * 3u -
                                      static_cast<uint32_t>(x));
        }
        ASSERT_EQ(out[0].values[i], want) << "element " << i;
      }
    }
  }
}

TEST_P(VulkanProgramTest, MathTransposeBroadcastAndReduce) {
  const std::string text = R"mlir(
func.func @main(%a: tensor<8x3xf32> {tessera.sharding = "mesh{x=4} P(x,None)"},
                %v: tensor<3xf32> {tessera.sharding = "mesh{x=4} P()"})
    -> (tensor<3x8xf32> {tessera.sharding = "mesh{x=4} P()"},
        tensor<3xf32> {tessera.sharding = "mesh{x=4} P()"},
        tensor<f32> {tessera.sharding = "mesh{x=4} P()"}) {
  %z = arith.constant 0.0 : f32
  %ex = math.exp %a : tensor<8x3xf32>
  %e1 = tensor.empty() : tensor<8x3xf32>
  %bv = linalg.broadcast ins(%v : tensor<3xf32>) outs(%e1 : tensor<8x3xf32>) dimensions = [0]
  %s = arith.addf %ex, %bv : tensor<8x3xf32>
  %e2 = tensor.empty() : tensor<3x8xf32>
  %t = linalg.transpose ins(%s : tensor<8x3xf32>) outs(%e2 : tensor<3x8xf32>) permutation = [1, 0]
  %e3 = tensor.empty() : tensor<3xf32>
  %f3 = linalg.fill ins(%z : f32) outs(%e3 : tensor<3xf32>) -> tensor<3xf32>
  %r = linalg.reduce ins(%s : tensor<8x3xf32>) outs(%f3 : tensor<3xf32>) dimensions = [0]
    (%x: f32, %y: f32) { %q = arith.addf %x, %y : f32
                         linalg.yield %q : f32 }
  %e4 = tensor.empty() : tensor<f32>
  %f4 = linalg.fill ins(%z : f32) outs(%e4 : tensor<f32>) -> tensor<f32>
  %all = linalg.reduce ins(%r : tensor<3xf32>) outs(%f4 : tensor<f32>) dimensions = [0]
    (%x: f32, %y: f32) { %q = arith.addf %x, %y : f32
                         linalg.yield %q : f32 }
  return %t, %r, %all : tensor<3x8xf32>, tensor<3xf32>, tensor<f32>
}
)mlir";
  const Host a = Random(DType::kF32, {8, 3}, 5), v = Random(DType::kF32, {3}, 6);
  Host t{DType::kF32, {3, 8}, std::vector<double>(24)}, r{DType::kF32, {3}, {0, 0, 0}},
      all{DType::kF32, {}, {0}};
  for (int i = 0; i < 8; ++i) {
    for (int j = 0; j < 3; ++j) {
      const double s = std::exp(a.values[i * 3 + j]) + v.values[j];
      t.values[j * 8 + i] = s;
      r.values[j] += s;
      all.values[0] += s;
    }
  }
  ASSERT_OK_AND_ASSIGN(std::vector<Host> out, Run(text, {a, v}));
  ExpectNear(out[0], t);
  ExpectNear(out[1], r);
  ExpectNear(out[2], all);
}

// A reduction of `dims` of `in` into an output filled with `init` (`op`: arith.addf, maximumf
// or minimumf; arith.addi, muli, ... with `element` "i32"), as a program over replicated values.
std::string ReductionProgram(const std::vector<int64_t>& in, const std::vector<int64_t>& out,
                             int64_t dimension, const std::string& op, const std::string& init,
                             const std::string& element = "f32") {
  const std::string ti = Tensor(in, element), to = Tensor(out, element);
  return absl::StrCat("func.func @main(%a: ", ti, Attr("P()"), ") -> (", to, Attr("P()"),
                      ") {\n  %z = arith.constant ", init, " : ", element,
                      "\n  %e = tensor.empty() : ", to, "\n  %f = linalg.fill ins(%z : ", element,
                      ") outs(%e : ", to, ") -> ", to, "\n  %r = linalg.reduce ins(%a : ", ti,
                      ") outs(%f : ", to, ") dimensions = [", dimension, "]\n    (%x: ", element,
                      ", %y: ", element, ") { %s = ", op, " %x, %y : ", element,
                      "\n      linalg.yield %s : ", element, " }\n  return %r : ", to, "\n}");
}

// Sums, maxima and minima over extents from 1 to a million (the long ones run in two passes:
// work-groups reduce slices through workgroup memory, then the partials are combined), into
// initialized outputs, to a scalar and along either dimension of a matrix.
TEST_P(VulkanProgramTest, ReductionsAtEverySizeMatchReference) {
  struct Case {
    std::string op;
    std::string init;
    double init_value;
  };
  const std::vector<Case> cases = {
      {"arith.addf", "1.0", 1.0}, {"arith.maximumf", "0.5", 0.5}, {"arith.minimumf", "-0.5", -0.5}};
  auto combine = [](const std::string& op, double a, double b) {
    return op == "arith.addf" ? a + b : op == "arith.maximumf" ? std::max(a, b) : std::min(a, b);
  };
  for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{257}, int64_t{4099}, int64_t{1000003}}) {
    const Host a = Random(DType::kF32, {n}, static_cast<uint32_t>(n));
    for (const Case& c : cases) {
      SCOPED_TRACE(absl::StrCat(c.op, " over ", n));
      Host expected{DType::kF32, {}, {c.init_value}};
      for (double v : a.values) expected.values[0] = combine(c.op, expected.values[0], v);
      ASSERT_OK_AND_ASSIGN(std::vector<Host> out,
                           Run(ReductionProgram({n}, {}, 0, c.op, c.init), {a}));
      ExpectNear(out[0], expected);
    }
  }
  // Rows of 3 x 1031 and columns of 1031 x 5 (a strided input).
  const Host m = Random(DType::kF32, {3, 1031}, 31), t = Random(DType::kF32, {1031, 5}, 32);
  Host rows{DType::kF32, {3}, {1, 1, 1}}, columns{DType::kF32, {5}, {1, 1, 1, 1, 1}};
  for (int64_t i = 0; i < 3 * 1031; ++i) rows.values[i / 1031] += m.values[i];
  for (int64_t i = 0; i < 1031 * 5; ++i) columns.values[i % 5] += t.values[i];
  ASSERT_OK_AND_ASSIGN(std::vector<Host> out_rows,
                       Run(ReductionProgram({3, 1031}, {3}, 1, "arith.addf", "1.0"), {m}));
  ExpectNear(out_rows[0], rows);
  ASSERT_OK_AND_ASSIGN(std::vector<Host> out_columns,
                       Run(ReductionProgram({1031, 5}, {5}, 0, "arith.addf", "1.0"), {t}));
  ExpectNear(out_columns[0], columns);
}

// The reference of one combining op: sums; float max / min with the semantics of
// compiler/float_min_max.cc (-0 < +0; maximumf / minimumf propagate NaN, maxnumf / minnumf drop
// it unless both are NaN); integer max / min.
double CombineReference(const std::string& op, double a, double b) {
  if (op == "arith.addf" || op == "arith.addi") return a + b;
  if (op == "arith.maxsi") return std::max(a, b);
  if (op == "arith.minsi") return std::min(a, b);
  const bool is_max = op == "arith.maximumf" || op == "arith.maxnumf";
  const bool propagates = op == "arith.maximumf" || op == "arith.minimumf";
  if (std::isnan(a) || std::isnan(b)) {
    if (propagates) return std::nan("");
    return std::isnan(a) ? b : a;
  }
  if (a == b && a == 0) {
    if (is_max) return std::signbit(a) && std::signbit(b) ? -0.0 : 0.0;
    return std::signbit(a) || std::signbit(b) ? -0.0 : 0.0;
  }
  return is_max ? std::max(a, b) : std::min(a, b);
}

// Equal values, NaN equal to NaN, and zeros of the same sign.
void ExpectSame(const Host& actual, const Host& expected) {
  ASSERT_EQ(actual.values.size(), expected.values.size());
  int mismatches = 0;
  for (size_t i = 0; i < expected.values.size() && mismatches < 5; ++i) {
    const double a = actual.values[i], e = expected.values[i];
    const bool same = std::isnan(e) ? std::isnan(a) : a == e && std::signbit(a) == std::signbit(e);
    if (!same) {
      ADD_FAILURE() << "element " << i << ": " << a << " != expected " << e;
      ++mismatches;
    }
  }
}

// Reductions of the last dimension with many outputs (one invocation per row: vec4 loads where
// the row is a multiple of 4 elements of 32 bits, scalar loads otherwise), at edge widths (1, 3,
// 4, 5, 8, 1031, 4096) and row counts (256, 257, 1000, a 3-D batch), and on the other paths
// (one row, few rows, the first dimension): sums within tolerance, i32 and float max / min
// exactly, with rows of mixed -0 / +0, all -0, and one NaN, on every device's copy.
TEST_P(VulkanProgramTest, RowReductionsAtEdgeShapesAreExact) {
  struct Shape2 {
    std::vector<int64_t> in;
    std::vector<int64_t> out;
    int64_t dimension;
  };
  const std::vector<Shape2> shapes = {
      {{256, 1}, {256}, 1},    {{257, 3}, {257}, 1},    {{300, 4}, {300}, 1},
      {{259, 5}, {259}, 1},    {{256, 8}, {256}, 1},    {{260, 1031}, {260}, 1},
      {{256, 4096}, {256}, 1}, {{1000, 64}, {1000}, 1}, {{4, 65, 12}, {4, 65}, 2},
      {{1, 4099}, {1}, 1},     {{3, 5}, {3}, 1},        {{7, 300}, {300}, 0}};
  struct Op {
    std::string op;
    std::string init;
    double init_value;
    bool exact;
  };
  const std::vector<Op> float_ops = {{"arith.addf", "1.0", 1.0, false},
                                     {"arith.maximumf", "-1.0e30", -1.0e30f, true},
                                     {"arith.minimumf", "1.0e30", 1.0e30f, true},
                                     {"arith.maxnumf", "-1.0e30", -1.0e30f, true},
                                     {"arith.minnumf", "1.0e30", 1.0e30f, true}};
  const std::vector<Op> int_ops = {{"arith.addi", "3", 3, true},
                                   {"arith.maxsi", "-100", -100, true},
                                   {"arith.minsi", "100", 100, true}};
  for (const Shape2& shape : shapes) {
    const int64_t extent = shape.in[shape.dimension];
    const int64_t n = Elements(shape.in), outputs = Elements(shape.out);
    // Output o of element i: the row-major index without the reduced dimension.
    int64_t inner = 1;
    for (size_t d = shape.dimension + 1; d < shape.in.size(); ++d) inner *= shape.in[d];
    auto output_of = [&](int64_t i) { return i / (inner * extent) * inner + i % inner; };
    // Output (o + shift) % 3 == 0: mixed -0 / +0 (+0 where extent > 1), 1: all -0, 2: one NaN;
    // shifted until every row kind has had an output (the one output of 1x4099 each in turn).
    for (int64_t shift = 0; shift < 3 && (shift == 0 || outputs < 3); ++shift) {
      Host f = Random(DType::kF32, shape.in, static_cast<uint32_t>(n));
      const Host s = Random(DType::kS32, shape.in, static_cast<uint32_t>(n + 1));
      for (int64_t i = 0; i < n; ++i) {
        const int64_t kind = (output_of(i) + shift) % 3, k = i / inner % extent;
        if (kind == 0) f.values[i] = k % 2 == 0 ? -0.0 : 0.0;
        if (kind == 1) f.values[i] = -0.0;
        if (kind == 2 && k == extent / 2) f.values[i] = std::nan("");
      }
      for (const auto& [input, ops, element] :
           {std::tuple{f, float_ops, "f32"}, std::tuple{s, int_ops, "i32"}}) {
        for (const Op& op : ops) {
          SCOPED_TRACE(absl::StrCat(op.op, " of ", absl::StrJoin(shape.in, "x"), " over dimension ",
                                    shape.dimension, ", rows shifted by ", shift));
          Host expected{input.kind, shape.out, std::vector<double>(outputs, op.init_value)};
          for (int64_t i = 0; i < n; ++i) {
            double& e = expected.values[output_of(i)];
            e = CombineReference(op.op, e, input.values[i]);
          }
          ASSERT_OK_AND_ASSIGN(auto copies,
                               RunEveryCopy(ReductionProgram(shape.in, shape.out, shape.dimension,
                                                             op.op, op.init, element),
                                            {input}));
          for (auto& [device, out] : copies) {
            SCOPED_TRACE(device);
            if (op.exact) {
              ExpectSame(out, expected);
              continue;
            }
            // A sum: NaN where the row holds one, else within tolerance.
            Host want = expected;
            for (int64_t o = 0; o < outputs; ++o) {
              EXPECT_EQ(std::isnan(out.values[o]), std::isnan(want.values[o])) << o;
              if (std::isnan(want.values[o])) out.values[o] = want.values[o] = 0;
            }
            ExpectNear(out, want);
          }
        }
      }
    }
  }
}

// Max / min on the two-pass path (few outputs, a long reduced extent: one output, a scalar, a few
// rows, columns), every device's copy. Floats: rows of all -0, all -0 and one NaN, mixed -0 / +0,
// all -1.5 and all 1.5, each kind at every output, exactly as compiler/float_min_max.cc defines
// them (-0 < +0); i32: a maximum of negatives, a minimum of positives. The invocations of a pass
// with nothing to walk (the second pass over fewer partials than invocations) once put an
// undefined value (+0 on lavapipe) into the work-group tree (GuardZeroTripLoops, pipelines.cc).
TEST_P(VulkanProgramTest, TwoPassMaxMinAreExact) {
  struct Case {
    std::vector<int64_t> in;
    std::vector<int64_t> out;
    int64_t dimension;
  };
  const std::vector<Case> cases = {{{1, 4099}, {1}, 1},
                                   {{4099}, {}, 0},
                                   {{3, 1031}, {3}, 1},
                                   {{5, 300}, {5}, 1},
                                   {{1031, 3}, {3}, 0}};
  const std::vector<std::tuple<std::string, std::string, double>> ops = {
      {"arith.maxnumf", "-1.0e30", -1.0e30f},
      {"arith.minnumf", "1.0e30", 1.0e30f},
      {"arith.maximumf", "-1.0e30", -1.0e30f},
      {"arith.minimumf", "1.0e30", 1.0e30f}};
  constexpr int kPatterns = 5;
  for (const Case& c : cases) {
    const int64_t extent = c.in[c.dimension];
    const int64_t n = Elements(c.in), outputs = Elements(c.out);
    int64_t inner = 1;
    for (size_t d = c.dimension + 1; d < c.in.size(); ++d) inner *= c.in[d];
    auto output_of = [&](int64_t i) { return i / (inner * extent) * inner + i % inner; };
    for (int shift = 0; shift < kPatterns; ++shift) {
      // Output o: pattern (o + shift) % kPatterns: all -0, all -0 and one NaN, alternating -0 /
      // +0, all -1.5, all 1.5.
      Host input{DType::kF32, c.in, std::vector<double>(n)};
      for (int64_t i = 0; i < n; ++i) {
        const int64_t k = i / inner % extent;
        const int pattern = static_cast<int>((output_of(i) + shift) % kPatterns);
        const double values[kPatterns] = {-0.0, k == extent / 3 ? std::nan("") : -0.0,
                                          k % 2 == 0 ? -0.0 : 0.0, -1.5, 1.5};
        input.values[i] = values[pattern];
      }
      for (const auto& [op, init, init_value] : ops) {
        SCOPED_TRACE(absl::StrCat(op, " of ", absl::StrJoin(c.in, "x"), " over dimension ",
                                  c.dimension, ", patterns shifted by ", shift));
        Host expected{DType::kF32, c.out, std::vector<double>(outputs, init_value)};
        for (int64_t i = 0; i < n; ++i) {
          double& e = expected.values[output_of(i)];
          e = CombineReference(op, e, input.values[i]);
        }
        ASSERT_OK_AND_ASSIGN(
            auto copies,
            RunEveryCopy(ReductionProgram(c.in, c.out, c.dimension, op, init), {input}));
        ASSERT_EQ(copies.size(), 4u);
        for (const auto& [device, out] : copies) {
          SCOPED_TRACE(device);
          ExpectSame(out, expected);
        }
      }
    }
    // Integers likewise: a maximum of negative values, a minimum of positive ones.
    for (const auto& [op, init, value] :
         {std::tuple{"arith.maxsi", "-100", -7.0}, std::tuple{"arith.minsi", "100", 7.0}}) {
      SCOPED_TRACE(
          absl::StrCat(op, " of ", absl::StrJoin(c.in, "x"), " over dimension ", c.dimension));
      const Host input{DType::kS32, c.in, std::vector<double>(n, value)};
      ASSERT_OK_AND_ASSIGN(
          auto copies,
          RunEveryCopy(ReductionProgram(c.in, c.out, c.dimension, op, init, "i32"), {input}));
      for (const auto& [device, out] : copies) {
        SCOPED_TRACE(device);
        ExpectSame(out, Host{DType::kS32, c.out, std::vector<double>(outputs, value)});
      }
    }
  }
}

// Softmax's two reductions over rows (a maximum, then a sum of exp(x - max) whose body reads the
// maximum once per row), on the row path and off it (few rows).
TEST_P(VulkanProgramTest, SoftmaxReductionsMatchReference) {
  for (const auto& [rows, cols] : {std::pair<int64_t, int64_t>{300, 37}, {256, 64}, {5, 1000}}) {
    SCOPED_TRACE(absl::StrCat(rows, "x", cols));
    const std::string x = Tensor({rows, cols}, "f32"), v = Tensor({rows}, "f32");
    const std::string text = absl::StrCat(
        "func.func @main(%a: ", x, Attr("P()"), ") -> (", v, Attr("P()"), ", ", v, Attr("P()"),
        R"mlir() {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : )mlir",
        v, "\n  %e2 = tensor.empty() : ", x, "\n  %fm = linalg.fill ins(%ninf : f32) outs(%e : ", v,
        ") -> ", v, "\n  %m = linalg.reduce ins(%a : ", x, ") outs(%fm : ", v,
        R"mlir() dimensions = [1]
    (%p: f32, %q: f32) { %r = arith.maximumf %p, %q : f32
                         linalg.yield %r : f32 }
  %b = linalg.broadcast ins(%m : )mlir",
        v, ") outs(%e2 : ", x, ") dimensions = [1]\n  %d = arith.subf %a, %b : ", x,
        "\n  %x = math.exp %d : ", x, "\n  %fs = linalg.fill ins(%zero : f32) outs(%e : ", v,
        ") -> ", v, "\n  %s = linalg.reduce ins(%x : ", x, ") outs(%fs : ", v,
        R"mlir() dimensions = [1]
    (%p: f32, %q: f32) { %r = arith.addf %p, %q : f32
                         linalg.yield %r : f32 }
  return %m, %s : )mlir",
        v, ", ", v, "\n}");
    const Host a = Random(DType::kF32, {rows, cols}, static_cast<uint32_t>(rows * cols));
    Host max{DType::kF32, {rows}, std::vector<double>(rows, -INFINITY)};
    Host sum{DType::kF32, {rows}, std::vector<double>(rows, 0.0)};
    for (int64_t i = 0; i < rows * cols; ++i) {
      max.values[i / cols] = std::max(max.values[i / cols], a.values[i]);
    }
    for (int64_t i = 0; i < rows * cols; ++i) {
      sum.values[i / cols] +=
          std::exp(static_cast<float>(a.values[i]) - static_cast<float>(max.values[i / cols]));
    }
    ASSERT_OK_AND_ASSIGN(std::vector<Host> out, Run(text, {a}));
    ExpectSame(out[0], max);
    ExpectNear(out[1], sum);
  }
}

// lavapipe's driver ends a shader invocation's loops after 65535 iterations in all. An i32 sum is
// split over work-groups and exact at every size; a product (one invocation walking the extent) of
// 65535 elements is exact, one of 65536 is refused at Compile with the reason, never cut short on
// the device.
TEST_P(VulkanProgramTest, LoopsLongerThanLavapipeRunsAreRefused) {
  for (Device* d : client_->devices()) {
    if (d->Kind() == "vulkan") {
      EXPECT_EQ(d->Attributes().GetInt("max_shader_loop_iterations"), 65535) << d->DebugString();
    }
  }
  EXPECT_EQ(runtime::KernelTargetsOf(*devices_).at("vulkan").max_loop_iterations, 65535);
  struct Case {
    std::string op;
    int64_t n;
    bool refused;
  };
  for (const Case& c : {Case{"arith.addi", 65536, false}, Case{"arith.addi", 1000003, false},
                        Case{"arith.muli", 65535, false}, Case{"arith.muli", 65536, true}}) {
    SCOPED_TRACE(absl::StrCat(c.op, " over ", c.n));
    const bool sum = c.op == "arith.addi";
    Host a{DType::kS32, {c.n}, std::vector<double>(c.n)};
    int32_t expected = sum ? 0 : 1;
    for (int64_t i = 0; i < c.n; ++i) {
      const int32_t v = sum ? static_cast<int32_t>(i % 7) : (i % 1000 == 999 ? -1 : 1);
      a.values[i] = v;
      expected = sum ? expected + v : expected * v;
    }
    absl::StatusOr<std::vector<Host>> out =
        Run(ReductionProgram({c.n}, {}, 0, c.op, sum ? "0" : "1", "i32"), {a});
    if (c.refused) {
      EXPECT_THAT(out.status(),
                  testing::StatusIs(absl::StatusCode::kUnimplemented,
                                    ::testing::AllOf(::testing::HasSubstr("runs 65536 loop"),
                                                     ::testing::HasSubstr("llvmpipe"))));
    } else {
      ASSERT_OK(out.status());
      EXPECT_EQ(out->at(0).values, std::vector<double>{static_cast<double>(expected)});
    }
  }
}

TEST_P(VulkanProgramTest, MlpExampleMatchesReference) {
  const std::string text = ReadFile(std::string(TESSERA_SOURCE_DIR) + "/examples/mlp.mlir");
  const Host x = Random(DType::kF32, {16, 32}, 7), w = Random(DType::kF32, {32, 64}, 8),
             b = Random(DType::kF32, {64}, 9);
  Host y = MatMul(x, w, 16, 32, 64);
  for (int64_t i = 0; i < 16 * 64; ++i) y.values[i] = std::max(0.0, y.values[i] + b.values[i % 64]);
  ASSERT_OK_AND_ASSIGN(std::vector<Host> out, Run(text, {x, w, b}));
  ExpectNear(out[0], y);
}

TEST_P(VulkanProgramTest, MegatronExampleAllReducesAcrossDevicesAndPlatforms) {
  const std::string text =
      ReadFile(std::string(TESSERA_SOURCE_DIR) + "/examples/mlp2_megatron.mlir");
  const Host x = Random(DType::kF32, {8, 16}, 10), w1 = Random(DType::kF32, {16, 32}, 11),
             b1 = Random(DType::kF32, {32}, 12), w2 = Random(DType::kF32, {32, 16}, 13),
             b2 = Random(DType::kF32, {16}, 14);
  Host h = MatMul(x, w1, 8, 16, 32);
  for (int64_t i = 0; i < 8 * 32; ++i) h.values[i] = std::max(0.0, h.values[i] + b1.values[i % 32]);
  Host y = MatMul(h, w2, 8, 32, 16);
  for (int64_t i = 0; i < 8 * 16; ++i) y.values[i] += b2.values[i % 16];
  const TransferStats before = client_->transfer_stats();
  ASSERT_OK_AND_ASSIGN(std::vector<Host> out, Run(text, {x, w1, b1, w2, b2}));
  ExpectNear(out[0], y);
  // The one all-reduce of f32[8x16] (512 bytes) in two phases over 4 devices: each reads 2/4 of
  // it from each of its 3 peers.
  EXPECT_EQ(client_->transfer_stats().device_to_device.bytes - before.device_to_device.bytes,
            4 * 3 * (2 * 512 / 4));
}

// Each Vulkan device's limits reach the compiler (ProgramCompileRequest::targets) from its
// attributes; CPU devices report none.
TEST_P(VulkanProgramTest, KernelTargetsComeFromTheVulkanDevices) {
  const std::map<std::string, KernelTarget> targets = runtime::KernelTargetsOf(*devices_);
  EXPECT_FALSE(targets.contains("cpu"));
  ASSERT_TRUE(targets.contains("vulkan"));
  const KernelTarget& target = targets.at("vulkan");
  for (Device* d : client_->devices()) {
    if (d->Kind() != "vulkan") continue;
    const AttributeMap& a = d->Attributes();
    EXPECT_EQ(target.max_storage_buffer_range, a.GetInt("max_storage_buffer_range"));
    EXPECT_EQ(target.min_storage_buffer_offset_alignment,
              a.GetInt("min_storage_buffer_offset_alignment"));
    EXPECT_EQ(target.max_workgroup_invocations, a.GetInt("max_compute_work_group_invocations"));
    EXPECT_EQ(target.subgroup_size, a.GetInt("subgroup_size"));
  }
  EXPECT_TRUE(target.float64);  // lavapipe has shaderFloat64 and shaderInt64
  EXPECT_TRUE(target.int64);
  EXPECT_TRUE(target.cpu_device);  // lavapipe's device type is "cpu"
}

INSTANTIATE_TEST_SUITE_P(Topologies, VulkanProgramTest,
                         ::testing::Values(Topology{"vulkan4", 0, 2},
                                           Topology{"vulkan2_cpu2", 2, 1}),
                         [](const ::testing::TestParamInfo<Topology>& info) {
                           return info.param.name;
                         });

// The same topologies with every Vulkan device's maxStorageBufferRange lowered to 4 KiB
// (TESSERA_VULKAN_MAX_STORAGE_BUFFER_RANGE, a test knob): shards above it run split into ranges
// when the op is elementwise, and are a clear error otherwise.
class VulkanSmallRangeProgramTest : public VulkanProgramTest {
 protected:
  static constexpr int64_t kRange = 4096;
  void SetUp() override {
    setenv("TESSERA_VULKAN_MAX_STORAGE_BUFFER_RANGE", absl::StrCat(kRange).c_str(), 1);
    VulkanProgramTest::SetUp();
    unsetenv("TESSERA_VULKAN_MAX_STORAGE_BUFFER_RANGE");
  }
};

// Replicated (each device holds all n elements, about 5 times the range, with a ragged
// remainder); the result matches the same float arithmetic on the host within 1e-6.
TEST_P(VulkanSmallRangeProgramTest, ElementwiseShardAboveTheRangeRunsInRanges) {
  for (Device* d : client_->devices()) {
    if (d->Kind() != "vulkan") continue;
    EXPECT_EQ(d->Attributes().GetInt("max_storage_buffer_range"), kRange);
  }
  const int64_t n = 5 * kRange / 4 + 37;
  const std::string t = Tensor({n}, "f32");
  const std::string text = "func.func @main(%a: " + t + Attr("P()") + ", %b: " + t + Attr("P()") +
                           ") -> (" + t + Attr("P()") + ") {\n  %s = arith.addf %a, %b : " + t +
                           "\n  %m = arith.mulf %s, %a : " + t + "\n  return %m : " + t + "\n}";
  const Host a = Random(DType::kF32, {n}, 21), b = Random(DType::kF32, {n}, 22);
  ASSERT_OK_AND_ASSIGN(std::vector<Host> out, Run(text, {a, b}));
  ASSERT_EQ(out[0].values.size(), static_cast<size_t>(n));
  int mismatches = 0;
  for (int64_t i = 0; i < n && mismatches < 5; ++i) {
    const float x = static_cast<float>(a.values[i]), y = static_cast<float>(b.values[i]);
    const float expected = (x + y) * x;
    if (!(std::abs(out[0].values[i] - expected) <= 1e-6 * std::max(1.0f, std::abs(expected)))) {
      ADD_FAILURE() << "element " << i << ": " << out[0].values[i] << " != " << expected;
      ++mismatches;
    }
  }
}

// A matmul whose operands exceed the range cannot be split: Compile says so, naming the op, the
// buffer's size and the limit.
TEST_P(VulkanSmallRangeProgramTest, MatmulAboveTheRangeIsAClearError) {
  const std::string t = Tensor({64, 64}, "f32");
  const std::string text = "func.func @main(%a: " + t + Attr("P()") + ", %b: " + t + Attr("P()") +
                           ") -> (" + t + Attr("P()") +
                           ") {\n  %z = arith.constant 0.0 : f32\n  %e = tensor.empty() : " + t +
                           "\n  %f = linalg.fill ins(%z : f32) outs(%e : " + t + ") -> " + t +
                           "\n  %c = linalg.matmul ins(%a, %b : " + t + ", " + t +
                           ") outs(%f : " + t + ") -> " + t + "\n  return %c : " + t + "\n}";
  const Host a = Random(DType::kF32, {64, 64}, 23), b = Random(DType::kF32, {64, 64}, 24);
  EXPECT_THAT(Run(text, {a, b}).status(),
              testing::StatusIs(absl::StatusCode::kResourceExhausted,
                                ::testing::AllOf(::testing::HasSubstr("linalg.matmul"),
                                                 ::testing::HasSubstr("16384 bytes"),
                                                 ::testing::HasSubstr("(4096 bytes)"))));
}

// The compile cache key holds the devices' kernel targets: the same program and device ids on
// devices of another maxStorageBufferRange are another executable.
TEST_P(VulkanSmallRangeProgramTest, DevicesWithOtherLimitsCompileOtherKernels) {
  EXPECT_EQ(runtime::KernelTargetsOf(*devices_).at("vulkan").max_storage_buffer_range, kRange);
  absl::StatusOr<std::shared_ptr<Client>> other =
      CreateClient({.cpu_devices = GetParam().cpu_devices,
                    .cpu_threads_per_device = 1,
                    .vulkan = VulkanMode::kRequired,
                    .vulkan_logical_devices_per_gpu = GetParam().vulkan_logical_devices_per_gpu,
                    .transfer_guard = guard::Policy()});
  ASSERT_OK(other.status());
  ASSERT_OK_AND_ASSIGN(DeviceListRef other_devices, (*other)->MakeDeviceList((*other)->devices()));
  EXPECT_GT(runtime::KernelTargetsOf(*other_devices).at("vulkan").max_storage_buffer_range, kRange);
  const std::string text = ReadFile(std::string(TESSERA_SOURCE_DIR) + "/examples/mlp.mlir");
  EXPECT_NE(runtime::ProgramFingerprint(text, CompileOptions{.devices = devices_}),
            runtime::ProgramFingerprint(text, CompileOptions{.devices = other_devices}));
}

INSTANTIATE_TEST_SUITE_P(Topologies, VulkanSmallRangeProgramTest,
                         ::testing::Values(Topology{"vulkan4", 0, 2},
                                           Topology{"vulkan2_cpu2", 2, 1}),
                         [](const ::testing::TestParamInfo<Topology>& info) {
                           return info.param.name;
                         });

}  // namespace
}  // namespace tessera
