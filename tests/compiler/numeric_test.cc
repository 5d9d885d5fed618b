// Numeric tests of compiled plans: each program is compiled for 4 devices, run by the reference
// SPMD interpreter (spmd_interpreter.h: kernels through LoadCpuKernel, collectives in test code)
// and compared with a plain C++ computation (f32 within 1e-4 relative, integers exactly), per op
// and per sharding: replicated, rows, columns, contraction dimension, and a 2-D mesh.

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "backends/cpu/kernel_loader.h"
#include "backends/cpu/kernel_scratch.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/compiler/spmd_interpreter.h"
#include "tests/compiler/test_programs.h"
#include "tests/testing/status_matchers.h"

namespace tessera {
namespace {

using ::tessera::testing::CompileText;
using ::tessera::testing::HostArray;
using ::tessera::testing::SpmdInterpreter;
using ::tessera::testing::StatusIs;
using ::testing::HasSubstr;

using Dims = std::vector<int64_t>;

std::string TensorType(const Dims& shape, const std::string& element = "f32") {
  std::string text = "tensor<";
  for (int64_t d : shape) absl::StrAppend(&text, d, "x");
  return text + element + ">";
}

// Deterministic values in [-1, 1) (integers: in [-8, 8)).
HostArray Random(DType dtype, Dims shape, uint32_t seed) {
  HostArray a = HostArray::Zeros(dtype, std::move(shape));
  uint32_t state = seed * 2654435761u + 1;
  for (int64_t i = 0; i < a.num_elements(); ++i) {
    state = state * 1664525u + 1013904223u;
    double unit = static_cast<double>(state >> 8) / static_cast<double>(1u << 24);
    switch (dtype.kind()) {
      case DType::kF32:
        a.data<float>()[i] = static_cast<float>(2 * unit - 1);
        break;
      case DType::kF64:
        a.data<double>()[i] = 2 * unit - 1;
        break;
      case DType::kS32:
        a.data<int32_t>()[i] = static_cast<int32_t>(unit * 16) - 8;
        break;
      default:
        a.data<int64_t>()[i] = static_cast<int64_t>(unit * 16) - 8;
        break;
    }
  }
  return a;
}

double Get(const HostArray& a, int64_t i) {
  switch (a.dtype.kind()) {
    case DType::kF32:
      return a.data<float>()[i];
    case DType::kF64:
      return a.data<double>()[i];
    case DType::kS32:
      return a.data<int32_t>()[i];
    default:
      return static_cast<double>(a.data<int64_t>()[i]);
  }
}

void Set(HostArray& a, int64_t i, double v) {
  switch (a.dtype.kind()) {
    case DType::kF32:
      a.data<float>()[i] = static_cast<float>(v);
      break;
    case DType::kF64:
      a.data<double>()[i] = v;
      break;
    case DType::kS32:
      a.data<int32_t>()[i] = static_cast<int32_t>(v);
      break;
    default:
      a.data<int64_t>()[i] = static_cast<int64_t>(v);
      break;
  }
}

void ExpectNear(const HostArray& actual, const HostArray& expected) {
  ASSERT_EQ(actual.shape, expected.shape);
  bool exact = expected.dtype.kind() == DType::kS32 || expected.dtype.kind() == DType::kS64;
  int mismatches = 0;
  for (int64_t i = 0; i < expected.num_elements() && mismatches < 5; ++i) {
    double a = Get(actual, i), e = Get(expected, i);
    double tolerance = exact ? 0 : 1e-4 * std::max(1.0, std::abs(e));
    if (!(std::abs(a - e) <= tolerance)) {
      ADD_FAILURE() << "element " << i << ": " << a << " != expected " << e;
      ++mismatches;
    }
  }
}

int Count(const std::string& text, const std::string& word) {
  int n = 0;
  for (size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) ++n;
  return n;
}

// Compiles `program` for 4 devices, runs it on `inputs`, and compares with `expected`.
void CompileRunAndCompare(const std::string& program, const std::vector<HostArray>& inputs,
                          const std::vector<HostArray>& expected,
                          std::vector<ProgramSharding> params = {},
                          std::vector<ProgramSharding> results = {}) {
  ASSERT_OK_AND_ASSIGN(ProgramPlan plan, CompileText(program, 4, params, results));
  // No kernel leaks: every temporary buffer it allocates it frees (outputs are the caller's), all
  // through the loader's scratch cache (MLIR's generic allocation functions), none by malloc.
  for (const ProgramStep& step : plan.steps) {
    if (step.kind != ProgramStep::Kind::kKernel) continue;
    const std::string& code = step.kernel.artifacts.at("cpu").code;
    EXPECT_EQ(Count(code, "llvm.call @_mlir_memref_to_llvm_aligned_alloc("),
              Count(code, "llvm.call @_mlir_memref_to_llvm_free("))
        << step.kernel.name;
    EXPECT_EQ(Count(code, "llvm.call @malloc("), 0) << step.kernel.name;
    EXPECT_EQ(Count(code, "llvm.call @_mlir_memref_to_llvm_alloc("), 0) << step.kernel.name;
  }
  SpmdInterpreter interpreter(plan);
  ASSERT_OK_AND_ASSIGN(std::vector<HostArray> outputs, interpreter.Run(inputs));
  ASSERT_EQ(outputs.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    SCOPED_TRACE(absl::StrCat("result ", i));
    ExpectNear(outputs[i], expected[i]);
  }
}

std::string Attr(const std::string& mesh, const std::string& spec) {
  return "{tessera.sharding = \"" + mesh + " " + spec + "\"}";
}

// ---- matmul and batch_matmul ---------------------------------------------------------------

struct MatmulCase {
  std::string name;
  int64_t m, k, n;
  std::string mesh, a, b, c;
};

HostArray ReferenceMatmul(const HostArray& a, const HostArray& b, int64_t batch, int64_t m,
                          int64_t k, int64_t n) {
  HostArray c = HostArray::Zeros(a.dtype, batch > 0 ? Dims{batch, m, n} : Dims{m, n});
  for (int64_t p = 0; p < std::max<int64_t>(batch, 1); ++p) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0;
        for (int64_t l = 0; l < k; ++l) {
          sum += Get(a, (p * m + i) * k + l) * Get(b, (p * k + l) * n + j);
        }
        Set(c, (p * m + i) * n + j, sum);
      }
    }
  }
  return c;
}

class MatmulTest : public ::testing::TestWithParam<MatmulCase> {};

TEST_P(MatmulTest, MatchesReference) {
  const MatmulCase& t = GetParam();
  std::string ta = TensorType({t.m, t.k}), tb = TensorType({t.k, t.n}), tc = TensorType({t.m, t.n});
  std::string program = "func.func @main(%a: " + ta + " " + Attr(t.mesh, t.a) + ", %b: " + tb +
                        " " + Attr(t.mesh, t.b) + ") -> (" + tc + " " + Attr(t.mesh, t.c) +
                        ") {\n  %zero = arith.constant 0.0 : f32\n  %e = tensor.empty() : " + tc +
                        "\n  %f = linalg.fill ins(%zero : f32) outs(%e : " + tc + ") -> " + tc +
                        "\n  %c = linalg.matmul ins(%a, %b : " + ta + ", " + tb +
                        ") outs(%f : " + tc + ") -> " + tc + "\n  return %c : " + tc + "\n}";
  HostArray a = Random(DType(DType::kF32), {t.m, t.k}, 1);
  HostArray b = Random(DType(DType::kF32), {t.k, t.n}, 2);
  CompileRunAndCompare(program, {a, b}, {ReferenceMatmul(a, b, 0, t.m, t.k, t.n)});
}

INSTANTIATE_TEST_SUITE_P(
    Shardings, MatmulTest,
    ::testing::Values(
        MatmulCase{"Replicated1x1x1", 1, 1, 1, "mesh{x=4}", "P()", "P()", "P()"},
        MatmulCase{"ReplicatedPrimes", 3, 5, 7, "mesh{x=4}", "P()", "P()", "P()"},
        MatmulCase{"ReplicatedZeroRows", 0, 5, 7, "mesh{x=4}", "P()", "P()", "P()"},
        MatmulCase{"ReplicatedZeroContraction", 3, 0, 7, "mesh{x=4}", "P()", "P()", "P()"},
        MatmulCase{"RowsOneEach", 4, 3, 5, "mesh{x=4}", "P(x,None)", "P()", "P(x,None)"},
        MatmulCase{"Rows", 28, 7, 5, "mesh{x=4}", "P(x,None)", "P()", "P(x,None)"},
        MatmulCase{"Columns", 3, 7, 20, "mesh{x=4}", "P()", "P(None,x)", "P(None,x)"},
        MatmulCase{"ContractionAllReduce", 5, 12, 7, "mesh{x=4}", "P(None,x)", "P(x,None)", "P()"},
        MatmulCase{"RowsToReplicated", 12, 5, 3, "mesh{x=4}", "P(x,None)", "P()", "P()"},
        MatmulCase{"Mesh2D", 6, 7, 10, "mesh{x=2,y=2}", "P(x,None)", "P(None,y)", "P(x,y)"},
        MatmulCase{"Mesh2DContraction", 6, 8, 10, "mesh{x=2,y=2}", "P(x,y)", "P(y,None)",
                   "P(x,None)"},
        MatmulCase{"Large", 132, 67, 71, "mesh{x=4}", "P(x,None)", "P()", "P(x,None)"}),
    [](const ::testing::TestParamInfo<MatmulCase>& info) { return info.param.name; });

// A matmul into a fill of another value than +0.0 accumulates onto it (only a zero fill lets the
// CPU code generator drop the fill and overwrite C), sharded or not, also when the contraction is
// sharded (the init is added once, before the all-reduce).
TEST(MatmulTest, IntoANonZeroFillAccumulates) {
  for (const auto& [a_spec, b_spec, c_spec] :
       {std::tuple<std::string, std::string, std::string>{"P()", "P()", "P()"},
        {"P(x,None)", "P()", "P(x,None)"},
        {"P(None,x)", "P(x,None)", "P()"}}) {
    SCOPED_TRACE(a_spec + " " + b_spec + " " + c_spec);
    std::string ta = TensorType({8, 12}), tb = TensorType({12, 5}), tc = TensorType({8, 5});
    std::string program = "func.func @main(%a: " + ta + " " + Attr("mesh{x=4}", a_spec) +
                          ", %b: " + tb + " " + Attr("mesh{x=4}", b_spec) + ") -> (" + tc + " " +
                          Attr("mesh{x=4}", c_spec) +
                          ") {\n  %init = arith.constant 1.5 : f32\n  %e = tensor.empty() : " + tc +
                          "\n  %f = linalg.fill ins(%init : f32) outs(%e : " + tc + ") -> " + tc +
                          "\n  %c = linalg.matmul ins(%a, %b : " + ta + ", " + tb +
                          ") outs(%f : " + tc + ") -> " + tc + "\n  return %c : " + tc + "\n}";
    HostArray a = Random(DType(DType::kF32), {8, 12}, 30);
    HostArray b = Random(DType(DType::kF32), {12, 5}, 31);
    HostArray c = ReferenceMatmul(a, b, 0, 8, 12, 5);
    for (int64_t i = 0; i < c.num_elements(); ++i) Set(c, i, Get(c, i) + 1.5);
    CompileRunAndCompare(program, {a, b}, {c});
  }
}

// Two matmuls into one zero fill: both overwrite their C (the fill is dropped once).
TEST(MatmulTest, TwoMatmulsIntoOneZeroFill) {
  const std::string program = R"mlir(
func.func @main(%a: tensor<8x12xf32>, %b: tensor<12x5xf32>, %b2: tensor<12x5xf32>)
    -> (tensor<8x5xf32>, tensor<8x5xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x5xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x5xf32>) -> tensor<8x5xf32>
  %c = linalg.matmul ins(%a, %b : tensor<8x12xf32>, tensor<12x5xf32>)
                     outs(%f : tensor<8x5xf32>) -> tensor<8x5xf32>
  %c2 = linalg.matmul ins(%a, %b2 : tensor<8x12xf32>, tensor<12x5xf32>)
                      outs(%f : tensor<8x5xf32>) -> tensor<8x5xf32>
  return %c, %c2 : tensor<8x5xf32>, tensor<8x5xf32>
})mlir";
  HostArray a = Random(DType(DType::kF32), {8, 12}, 32);
  HostArray b = Random(DType(DType::kF32), {12, 5}, 33);
  HostArray b2 = Random(DType(DType::kF32), {12, 5}, 34);
  CompileRunAndCompare(program, {a, b, b2},
                       {ReferenceMatmul(a, b, 0, 8, 12, 5), ReferenceMatmul(a, b2, 0, 8, 12, 5)});
}

TEST(BatchMatmulTest, BatchShardedAndReplicated) {
  for (auto [batch, m, k, n, spec] :
       std::vector<std::tuple<int64_t, int64_t, int64_t, int64_t, std::string>>{
           {4, 3, 5, 7, "P(x)"},
           {1, 1, 1, 1, "P()"},
           {8, 2, 3, 5, "P(x)"},
           {2, 4, 5, 3, "P(None,x)"}}) {
    SCOPED_TRACE(absl::StrCat(batch, "x", m, "x", k, "x", n, " ", spec));
    std::string ta = TensorType({batch, m, k}), tb = TensorType({batch, k, n}),
                tc = TensorType({batch, m, n});
    std::string s = Attr("mesh{x=4}", spec), rep = Attr("mesh{x=4}", "P()");
    std::string program = "func.func @main(%a: " + ta + " " + s + ", %b: " + tb + " " + rep +
                          ") -> (" + tc + " " + s +
                          ") {\n  %zero = arith.constant 0.0 : f32\n  %e = tensor.empty() : " + tc +
                          "\n  %f = linalg.fill ins(%zero : f32) outs(%e : " + tc + ") -> " + tc +
                          "\n  %c = linalg.batch_matmul ins(%a, %b : " + ta + ", " + tb +
                          ") outs(%f : " + tc + ") -> " + tc + "\n  return %c : " + tc + "\n}";
    HostArray a = Random(DType(DType::kF32), {batch, m, k}, 3);
    HostArray b = Random(DType(DType::kF32), {batch, k, n}, 4);
    CompileRunAndCompare(program, {a, b}, {ReferenceMatmul(a, b, batch, m, k, n)});
  }
}

// ---- contractions in any layout (einsum) ------------------------------------------------------

// An einsum "ab,bc->ac" (one letter per loop; sizes from `size`) as a linalg.generic contraction
// into a fill of `init`, and its value in plain C++.
struct Einsum {
  std::string a, b, c;  // each operand's letters
  std::map<char, int64_t> size;

  Dims Shape(const std::string& letters) const {
    Dims dims;
    for (char l : letters) dims.push_back(size.at(l));
    return dims;
  }
  std::string Loops() const {
    std::string loops;
    for (const auto& [letter, n] : size) loops += letter;
    return loops;
  }
  std::string Map(const std::string& letters) const {
    std::string loops = Loops(), text = "affine_map<(";
    for (size_t i = 0; i < loops.size(); ++i) absl::StrAppend(&text, i ? ", " : "", "d", i);
    text += ") -> (";
    for (size_t i = 0; i < letters.size(); ++i) {
      absl::StrAppend(&text, i ? ", " : "", "d", loops.find(letters[i]));
    }
    return text + ")>";
  }
  std::string Program(const std::string& element, const std::string& init,
                      const std::string& sharding_a, const std::string& sharding_c) const {
    std::string ta = TensorType(Shape(a), element), tb = TensorType(Shape(b), element),
                tc = TensorType(Shape(c), element);
    std::string iterators;
    for (char l : Loops()) {
      absl::StrAppend(&iterators, iterators.empty() ? "" : ", ",
                      c.find(l) == std::string::npos ? "\"reduction\"" : "\"parallel\"");
    }
    return "func.func @main(%a: " + ta + " " + sharding_a + ", %b: " + tb + ") -> (" + tc + " " +
           sharding_c + ") {\n  %init = arith.constant " + init + " : " + element +
           "\n  %e = tensor.empty() : " + tc + "\n  %f = linalg.fill ins(%init : " + element +
           ") outs(%e : " + tc + ") -> " + tc + "\n  %c = linalg.generic {indexing_maps = [" +
           Map(a) + ", " + Map(b) + ", " + Map(c) + "], iterator_types = [" + iterators +
           "]} ins(%a, %b : " + ta + ", " + tb + ") outs(%f : " + tc +
           ") {\n  ^bb0(%x: " + element + ", %y: " + element + ", %acc: " + element +
           "):\n    %p = arith.mulf %x, %y : " + element +
           "\n    %s = arith.addf %acc, %p : " + element + "\n    linalg.yield %s : " + element +
           "\n  } -> " + tc + "\n  return %c : " + tc + "\n}";
  }
  // The element offset of `letters`' operand at the loop position `at`.
  int64_t Offset(const std::string& letters, const std::map<char, int64_t>& at) const {
    int64_t offset = 0;
    for (char l : letters) offset = offset * size.at(l) + at.at(l);
    return offset;
  }
  HostArray Reference(const HostArray& x, const HostArray& y, double init) const {
    HostArray z = HostArray::Zeros(x.dtype, Shape(c));
    for (int64_t i = 0; i < z.num_elements(); ++i) Set(z, i, init);
    std::map<char, int64_t> at;
    for (const auto& [letter, n] : size) at[letter] = 0;
    const std::string loops = Loops();
    while (true) {
      Set(z, Offset(c, at), Get(z, Offset(c, at)) + Get(x, Offset(a, at)) * Get(y, Offset(b, at)));
      size_t d = loops.size();
      while (d > 0 && ++at[loops[d - 1]] == size.at(loops[d - 1])) at[loops[--d]] = 0;
      if (d == 0) return z;
    }
  }
};

// Contractions with batch dimensions and in any layout (attention's `bhsd,bhtd->bhst` and
// `bhst,bthd->bshd`, transposed outputs, several m and k dimensions) compute their einsum. The
// CPU code generator runs them as one matmul per batch element (contractions_as_matmuls.cc).
TEST(ContractionTest, EinsumsInAnyLayoutMatchReference) {
  const std::vector<std::tuple<Einsum, std::string, std::string>> cases = {
      {{"bhsd", "bhtd", "bhst", {{'b', 4}, {'h', 3}, {'s', 5}, {'t', 6}, {'d', 7}}},
       "P(x)",
       "P(x)"},
      {{"bhst", "bthd", "bshd", {{'b', 4}, {'h', 3}, {'s', 5}, {'t', 6}, {'d', 7}}}, "P()", "P()"},
      {{"bhst", "bthd", "bshd", {{'b', 2}, {'h', 4}, {'s', 5}, {'t', 6}, {'d', 7}}},
       "P(None,x)",
       "P(None,None,x)"},
      {{"kn", "mk", "nm", {{'m', 5}, {'k', 7}, {'n', 3}}}, "P()", "P()"},
      {{"pkqj", "jkn", "pqn", {{'p', 4}, {'q', 3}, {'k', 5}, {'j', 2}, {'n', 6}}}, "P(x)", "P(x)"},
      {{"bmk", "bkn", "bmn", {{'b', 1}, {'m', 1}, {'k', 1}, {'n', 1}}}, "P()", "P()"},
  };
  for (const auto& [einsum, spec_a, spec_c] : cases) {
    for (const auto& [element, dtype] : std::vector<std::pair<std::string, DType>>{
             {"f32", DType(DType::kF32)}, {"f64", DType(DType::kF64)}}) {
      for (double init : {0.0, 1.5}) {
        SCOPED_TRACE(absl::StrCat(einsum.a, ",", einsum.b, "->", einsum.c, " ", element, " a ",
                                  spec_a, " c ", spec_c, " init ", init));
        HostArray a = Random(dtype, einsum.Shape(einsum.a), 21);
        HostArray b = Random(dtype, einsum.Shape(einsum.b), 22);
        CompileRunAndCompare(einsum.Program(element, init == 0 ? "0.0" : "1.5",
                                            Attr("mesh{x=4}", spec_a), Attr("mesh{x=4}", spec_c)),
                             {a, b}, {einsum.Reference(a, b, init)});
      }
    }
  }
}

// A linalg.matmul with indexing maps that transpose B (C = A @ B^T) runs as a BLAS matmul too.
TEST(ContractionTest, MatmulWithTransposingMapsMatchesReference) {
  HostArray a = Random(DType(DType::kF32), {8, 5}, 23), b = Random(DType(DType::kF32), {3, 5}, 24);
  HostArray bt = HostArray::Zeros(DType(DType::kF32), {5, 3});
  for (int64_t k = 0; k < 5; ++k) {
    for (int64_t n = 0; n < 3; ++n) Set(bt, k * 3 + n, Get(b, n * 5 + k));
  }
  const std::string row = Attr("mesh{x=4}", "P(x,None)");
  CompileRunAndCompare("func.func @main(%a: tensor<8x5xf32> " + row +
                           ", %b: tensor<3x5xf32>) -> (tensor<8x3xf32> " + row + R"mlir() {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x3xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x3xf32>) -> tensor<8x3xf32>
  %c = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
                                      affine_map<(m, n, k) -> (n, k)>,
                                      affine_map<(m, n, k) -> (m, n)>]
      ins(%a, %b : tensor<8x5xf32>, tensor<3x5xf32>) outs(%f : tensor<8x3xf32>) -> tensor<8x3xf32>
  return %c : tensor<8x3xf32>
})mlir",
                       {a, b}, {ReferenceMatmul(a, bt, 0, 8, 5, 3)});
}

// A matmul whose operand is a transpose or a reshape copy of another tensor (as the StableHLO of a
// backward pass has them: dy @ W^T, x^T @ dy) reads that tensor where it lies on CPU devices
// (matmul_operands_in_place.cc): A, B or both transposed, a transpose of a 3-D tensor collapsed to
// 2-D, a reshape alone, a transpose also returned, f32 and f64, into a zero fill and onto a
// fill of 1.5, replicated and with C's rows sharded; and with m, k or n of 1.
TEST(ContractionTest, TransposedAndReshapedOperandsMatchReference) {
  // m, k and n, then each of them 1 (a row, a column: both layouts are the same memory).
  for (const auto& [m, k, n] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
           {36, 40, 20}, {1, 40, 20}, {36, 1, 20}, {36, 40, 1}}) {
    struct Case {
      std::string name;
      Dims a_shape, b_shape;
      std::string a_ops, b_ops;  // the ops making %am (m x k) of %a and %bm (k x n) of %b
      std::string a_spec, c_spec;
      bool returns_transpose;
    };
    auto transpose = [](const std::string& out, const std::string& in, const Dims& from,
                        const Dims& to, const std::string& permutation,
                        const std::string& element) {
      return "  %" + out + "_e = tensor.empty() : " + TensorType(to, element) + "\n  %" + out +
             " = linalg.transpose ins(%" + in + " : " + TensorType(from, element) + ") outs(%" +
             out + "_e : " + TensorType(to, element) + ") permutation = [" + permutation + "]\n";
    };
    for (const std::string element : {"f32", "f64"}) {
      const DType dtype(element == "f32" ? DType::kF32 : DType::kF64);
      const std::vector<Case> cases = {
          {"A transposed",
           {k, m},
           {k, n},
           transpose("am", "a", {k, m}, {m, k}, "1, 0", element),
           "",
           "P()",
           "P()",
           false},
          {"B transposed",
           {m, k},
           {n, k},
           "",
           transpose("bm", "b", {n, k}, {k, n}, "1, 0", element),
           "P()",
           "P()",
           false},
          {"both transposed, rows sharded",
           {k, m},
           {n, k},
           transpose("am", "a", {k, m}, {m, k}, "1, 0", element),
           transpose("bm", "b", {n, k}, {k, n}, "1, 0", element),
           "P(None,x)",
           "P(x,None)",
           false},
          {"3-D transpose collapsed",
           {k, 2, m / 2},
           {k, n},
           transpose("a3", "a", {k, 2, m / 2}, {2, m / 2, k}, "1, 2, 0", element) +
               "  %am = tensor.collapse_shape %a3 [[0, 1], [2]] : " +
               TensorType({2, m / 2, k}, element) + " into " + TensorType({m, k}, element) + "\n",
           "",
           "P()",
           "P()",
           false},
          {"reshape alone",
           {2, m / 2, k},
           {k, n},
           "  %am = tensor.collapse_shape %a [[0, 1], [2]] : " +
               TensorType({2, m / 2, k}, element) + " into " + TensorType({m, k}, element) + "\n",
           "",
           "P()",
           "P()",
           false},
          {"transpose also returned",
           {k, m},
           {k, n},
           transpose("am", "a", {k, m}, {m, k}, "1, 0", element),
           "",
           "P()",
           "P()",
           true},
      };
      for (const Case& c : cases) {
        // The 3-D cases split m in two; the sharded one splits m over 4 devices.
        if ((c.a_shape.size() == 3 && m % 2 != 0) || (c.a_spec != "P()" && m % 4 != 0)) continue;
        for (const std::string init : {"0.0", "1.5"}) {
          SCOPED_TRACE(
              absl::StrCat(c.name, " ", element, " init ", init, ", m k n ", m, " ", k, " ", n));
          const std::string ta = TensorType(c.a_shape, element),
                            tb = TensorType(c.b_shape, element), tam = TensorType({m, k}, element),
                            tc = TensorType({m, n}, element);
          const std::string a_value = c.a_ops.empty() ? "a" : "am",
                            b_value = c.b_ops.empty() ? "b" : "bm";
          const std::string program =
              "func.func @main(%a: " + ta + " " + Attr("mesh{x=4}", c.a_spec) + ", %b: " + tb +
              ") -> (" + tc + " " + Attr("mesh{x=4}", c.c_spec) +
              (c.returns_transpose ? ", " + tam : "") + ") {\n" + c.a_ops + c.b_ops +
              "  %init = arith.constant " + init + " : " + element +
              "\n  %e = tensor.empty() : " + tc + "\n  %f = linalg.fill ins(%init : " + element +
              ") outs(%e : " + tc + ") -> " + tc + "\n  %c = linalg.matmul ins(%" + a_value +
              ", %" + b_value + " : " + tam + ", " + TensorType({k, n}, element) +
              ") outs(%f : " + tc + ") -> " + tc + "\n  return %c" +
              (c.returns_transpose ? ", %am" : "") + " : " +
              (c.returns_transpose ? tc + ", " + tam : tc) + "\n}";
          HostArray a = Random(dtype, c.a_shape, 31), b = Random(dtype, c.b_shape, 32);
          // The operands as the matmul sees them: A (m x k), B (k x n).
          HostArray am = HostArray::Zeros(dtype, {m, k}), bm = HostArray::Zeros(dtype, {k, n});
          for (int64_t i = 0; i < m; ++i) {
            for (int64_t l = 0; l < k; ++l) {
              const bool transposed = c.a_ops.find("transpose") != std::string::npos;
              Set(am, i * k + l, Get(a, transposed ? l * m + i : i * k + l));
            }
          }
          for (int64_t l = 0; l < k; ++l) {
            for (int64_t j = 0; j < n; ++j) {
              Set(bm, l * n + j, Get(b, c.b_ops.empty() ? l * n + j : j * k + l));
            }
          }
          HostArray expected = ReferenceMatmul(am, bm, 0, m, k, n);
          for (int64_t i = 0; i < m * n; ++i) Set(expected, i, Get(expected, i) + std::stod(init));
          std::vector<HostArray> outputs = {expected};
          if (c.returns_transpose) outputs.push_back(am);
          CompileRunAndCompare(program, {a, b}, outputs);
        }
      }
    }
  }
}

// ---- fill, transpose, broadcast --------------------------------------------------------------

TEST(FillTest, ShardedReplicatedAndEmpty) {
  for (auto [shape, spec] : std::vector<std::pair<Dims, std::string>>{
           {{12, 7}, "P(x,None)"}, {{1}, "P()"}, {{0, 3}, "P()"}, {{3, 8}, "P(None,x)"}}) {
    std::string t = TensorType(shape);
    std::string program = "func.func @main(%a: " + t + ") -> (" + t + " " +
                          Attr("mesh{x=4}", spec) +
                          ") {\n  %v = arith.constant 2.5 : f32\n  %e = tensor.empty() : " + t +
                          "\n  %f = linalg.fill ins(%v : f32) outs(%e : " + t + ") -> " + t +
                          "\n  return %f : " + t + "\n}";
    HostArray expected = HostArray::Zeros(DType(DType::kF32), shape);
    for (int64_t i = 0; i < expected.num_elements(); ++i) Set(expected, i, 2.5);
    CompileRunAndCompare(program, {Random(DType(DType::kF32), shape, 5)}, {expected});
  }
}

TEST(TransposeTest, TwoAndThreeDimensions) {
  HostArray a = Random(DType(DType::kF32), {12, 5}, 6);
  HostArray at = HostArray::Zeros(DType(DType::kF32), {5, 12});
  for (int i = 0; i < 12; ++i) {
    for (int j = 0; j < 5; ++j) Set(at, j * 12 + i, Get(a, i * 5 + j));
  }
  std::string program = "func.func @main(%a: tensor<12x5xf32> " + Attr("mesh{x=4}", "P(x,None)") +
                        ") -> (tensor<5x12xf32> " + Attr("mesh{x=4}", "P(None,x)") + R"mlir() {
  %e = tensor.empty() : tensor<5x12xf32>
  %t = linalg.transpose ins(%a : tensor<12x5xf32>) outs(%e : tensor<5x12xf32>) permutation = [1, 0]
  return %t : tensor<5x12xf32>
})mlir";
  CompileRunAndCompare(program, {a}, {at});
  // The same program, the result replicated: an all-gather after the transpose.
  CompileRunAndCompare(program, {a}, {at}, {}, {{"mesh{x=4}", "P()"}});

  HostArray b = Random(DType(DType::kF32), {4, 3, 7}, 7);
  HostArray bt = HostArray::Zeros(DType(DType::kF32), {7, 4, 3});
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 3; ++j) {
      for (int l = 0; l < 7; ++l) Set(bt, (l * 4 + i) * 3 + j, Get(b, (i * 3 + j) * 7 + l));
    }
  }
  std::string program3 = "func.func @main(%a: tensor<4x3x7xf32> " + Attr("mesh{x=4}", "P(x)") +
                         ") -> (tensor<7x4x3xf32> " + Attr("mesh{x=4}", "P(None,x)") + R"mlir() {
  %e = tensor.empty() : tensor<7x4x3xf32>
  %t = linalg.transpose ins(%a : tensor<4x3x7xf32>) outs(%e : tensor<7x4x3xf32>)
                        permutation = [2, 0, 1]
  return %t : tensor<7x4x3xf32>
})mlir";
  CompileRunAndCompare(program3, {b}, {bt});
}

// Transposes that move the innermost dimension run in 32x32 blocks on CPU devices
// (targets/llvm_cpu/blocked_transposes.cc): exact for sizes below, at and past a block, ragged
// last blocks, a dimension of 1 and a batch dimension kept outermost.
TEST(TransposeTest, BlockedTransposesOfEdgeShapesAreExact) {
  struct Case {
    Dims shape;
    std::vector<int64_t> permutation;
  };
  for (const Case& c : std::vector<Case>{{{33, 70}, {1, 0}},
                                         {{64, 96}, {1, 0}},
                                         {{1, 100}, {1, 0}},
                                         {{40, 3}, {1, 0}},
                                         {{3, 40, 37}, {2, 0, 1}},
                                         {{5, 33, 65}, {0, 2, 1}}}) {
    const int64_t rank = static_cast<int64_t>(c.shape.size());
    Dims out_shape(rank);
    for (int64_t d = 0; d < rank; ++d) out_shape[d] = c.shape[c.permutation[d]];
    HostArray a = Random(DType(DType::kF32), c.shape, 11);
    HostArray expected = HostArray::Zeros(DType(DType::kF32), out_shape);
    std::vector<int64_t> index(rank, 0);  // an output index, in row-major order
    for (int64_t i = 0; i < expected.num_elements(); ++i) {
      int64_t source = 0;
      for (int64_t d = 0; d < rank; ++d) {
        int64_t coordinate = 0;  // the input's coordinate along its dimension d
        for (int64_t o = 0; o < rank; ++o) {
          if (c.permutation[o] == d) coordinate = index[o];
        }
        source = source * c.shape[d] + coordinate;
      }
      Set(expected, i, Get(a, source));
      for (int64_t d = rank; d-- > 0;) {
        if (++index[d] < out_shape[d]) break;
        index[d] = 0;
      }
    }
    std::string permutation;
    for (int64_t p : c.permutation) {
      permutation += (permutation.empty() ? "" : ", ") + std::to_string(p);
    }
    const std::string in = TensorType(c.shape), out = TensorType(out_shape);
    const std::string program =
        "func.func @main(%a: " + in + " " + Attr("mesh{x=4}", "P()") + ") -> (" + out + " " +
        Attr("mesh{x=4}", "P()") + ") {\n  %e = tensor.empty() : " + out +
        "\n  %t = linalg.transpose ins(%a : " + in + ") outs(%e : " + out + ") permutation = [" +
        permutation + "]\n  return %t : " + out + "\n}";
    CompileRunAndCompare(program, {a}, {expected});
  }
}

TEST(BroadcastTest, RowsAndColumns) {
  HostArray v = Random(DType(DType::kF32), {7}, 8);
  HostArray rows = HostArray::Zeros(DType(DType::kF32), {12, 7});
  for (int i = 0; i < 12; ++i) {
    for (int j = 0; j < 7; ++j) Set(rows, i * 7 + j, Get(v, j));
  }
  CompileRunAndCompare("func.func @main(%v: tensor<7xf32>) -> (tensor<12x7xf32> " +
                           Attr("mesh{x=4}", "P(x,None)") + R"mlir() {
  %e = tensor.empty() : tensor<12x7xf32>
  %b = linalg.broadcast ins(%v : tensor<7xf32>) outs(%e : tensor<12x7xf32>) dimensions = [0]
  return %b : tensor<12x7xf32>
})mlir",
                       {v}, {rows});
  HostArray w = Random(DType(DType::kF32), {12}, 9);
  HostArray cols = HostArray::Zeros(DType(DType::kF32), {12, 5});
  for (int i = 0; i < 12; ++i) {
    for (int j = 0; j < 5; ++j) Set(cols, i * 5 + j, Get(w, i));
  }
  CompileRunAndCompare("func.func @main(%v: tensor<12xf32> " + Attr("mesh{x=4}", "P(x)") +
                           ") -> (tensor<12x5xf32> " + Attr("mesh{x=4}", "P()") + R"mlir() {
  %e = tensor.empty() : tensor<12x5xf32>
  %b = linalg.broadcast ins(%v : tensor<12xf32>) outs(%e : tensor<12x5xf32>) dimensions = [1]
  return %b : tensor<12x5xf32>
})mlir",
                       {w}, {cols});
}

// ---- reduce -------------------------------------------------------------------------------

// Reduces an 8x20 array over `dim` with `combiner` from `init`.
void CheckReduce(const std::string& element, DType dtype, const std::string& combiner,
                 const std::string& init, double init_value, int dim, const std::string& spec,
                 std::function<double(double, double)> fn) {
  SCOPED_TRACE(absl::StrCat(combiner, " over ", dim, " of ", spec));
  Dims out_shape = dim == 1 ? Dims{8} : Dims{20};
  std::string tin = TensorType({8, 20}, element), tout = TensorType(out_shape, element);
  std::string program =
      "func.func @main(%x: " + tin + " " + Attr("mesh{x=4}", spec) + ") -> (" + tout + " " +
      Attr("mesh{x=4}", "P()") + ") {\n  %init = arith.constant " + init + " : " + element +
      "\n  %e = tensor.empty() : " + tout + "\n  %f = linalg.fill ins(%init : " + element +
      ") outs(%e : " + tout + ") -> " + tout + "\n  %r = linalg.reduce ins(%x : " + tin +
      ") outs(%f : " + tout + ") dimensions = [" + std::to_string(dim) + "]\n    (%in: " + element +
      ", %acc: " + element + ") {\n      %s = " + combiner + " %in, %acc : " + element +
      "\n      linalg.yield %s : " + element + "\n    }\n  return %r : " + tout + "\n}";
  HostArray x = Random(dtype, {8, 20}, 10);
  HostArray expected = HostArray::Zeros(dtype, out_shape);
  for (int64_t o = 0; o < expected.num_elements(); ++o) {
    double acc = init_value;
    for (int64_t r = 0; r < (dim == 1 ? 20 : 8); ++r) {
      acc = fn(Get(x, dim == 1 ? o * 20 + r : r * 20 + o), acc);
    }
    Set(expected, o, acc);
  }
  CompileRunAndCompare(program, {x}, {expected});
}

TEST(ReduceTest, OverShardedAndUnshardedDimensions) {
  auto add = [](double a, double b) { return a + b; };
  auto max = [](double a, double b) { return std::max(a, b); };
  CheckReduce("f32", DType(DType::kF32), "arith.addf", "0.0", 0, 1, "P(None,x)", add);
  CheckReduce("f32", DType(DType::kF32), "arith.addf", "1.5", 1.5, 1, "P(None,x)", add);
  CheckReduce("f32", DType(DType::kF32), "arith.maximumf", "-1.0e30", -1e30, 0, "P(x,None)", max);
  CheckReduce("f32", DType(DType::kF32), "arith.addf", "0.0", 0, 1, "P(x,None)", add);
  CheckReduce("i32", DType(DType::kS32), "arith.addi", "0", 0, 1, "P(None,x)", add);
  CheckReduce("f64", DType(DType::kF64), "arith.addf", "0.0", 0, 0, "P()", add);
}

TEST(ReduceTest, UncombinableReductionsOverAShardedDimensionGatherItFirst) {
  // Partial results of these cannot be combined across devices (MLIR 22's partitioner aborted the
  // process on them): each device gathers the reduced dimension and reduces whole rows, in the
  // order one device would.
  auto sub = [](double in, double acc) { return in - acc; };
  auto div = [](double in, double acc) { return in / acc; };
  CheckReduce("f32", DType(DType::kF32), "arith.subf", "0.5", 0.5, 1, "P(None,x)", sub);
  CheckReduce("f32", DType(DType::kF32), "arith.subf", "0.5", 0.5, 0, "P(x,None)", sub);
  CheckReduce("f64", DType(DType::kF64), "arith.divf", "1.0", 1.0, 1, "P(x,None)", div);
  CheckReduce("f64", DType(DType::kF64), "arith.divf", "1.0", 1.0, 1, "P(None,x)", div);
  CheckReduce("i32", DType(DType::kS32), "arith.subi", "3", 3, 1, "P(None,x)", sub);
}

// Reductions over the innermost dimension of a width the CPU code generator vectorizes (a
// multiple of 8, at least 16: compiler/targets/llvm_cpu/vectorized_reductions.cc) and of widths it
// leaves scalar, rows sharded over 4 devices. The float inputs are multiples of 1/8 below 2, so
// that every sum is exact in any order: results are compared exactly.
void CheckInnerReduce(const std::string& element, DType dtype, const std::string& combiner,
                      const std::string& init, double init_value, int64_t rows, int64_t width,
                      std::function<double(double, double)> fn, bool vectorized) {
  SCOPED_TRACE(absl::StrCat(combiner, " over rows of ", width, " ", element));
  std::string tin = TensorType({rows, width}, element), tout = TensorType({rows}, element);
  std::string program =
      "func.func @main(%x: " + tin + " " + Attr("mesh{x=4}", "P(x,None)") + ") -> (" + tout + " " +
      Attr("mesh{x=4}", "P(x)") + ") {\n  %init = arith.constant " + init + " : " + element +
      "\n  %e = tensor.empty() : " + tout + "\n  %f = linalg.fill ins(%init : " + element +
      ") outs(%e : " + tout + ") -> " + tout + "\n  %r = linalg.reduce ins(%x : " + tin +
      ") outs(%f : " + tout + ") dimensions = [1]\n    (%in: " + element + ", %acc: " + element +
      ") {\n      %s = " + combiner + " %in, %acc : " + element +
      "\n      linalg.yield %s : " + element + "\n    }\n  return %r : " + tout + "\n}";
  HostArray x = Random(dtype, {rows, width}, 17);
  for (int64_t i = 0; i < x.num_elements(); ++i) Set(x, i, std::round(Get(x, i) * 16) / 8);
  HostArray expected = HostArray::Zeros(dtype, {rows});
  for (int64_t r = 0; r < rows; ++r) {
    double acc = init_value;
    for (int64_t c = 0; c < width; ++c) acc = fn(Get(x, r * width + c), acc);
    Set(expected, r, acc);
  }
  ASSERT_OK_AND_ASSIGN(ProgramPlan plan, CompileText(program, 4, {}, {}));
  bool has_vector_code = false;
  for (const ProgramStep& step : plan.steps) {
    if (step.kind != ProgramStep::Kind::kKernel) continue;
    has_vector_code |= step.kernel.artifacts.at("cpu").code.find("vector<") != std::string::npos;
  }
  EXPECT_EQ(has_vector_code, vectorized);
  CompileRunAndCompare(program, {x}, {expected});
}

TEST(ReduceTest, InnerReductionsOfEveryWidthMatchExactly) {
  auto add = [](double a, double b) { return a + b; };
  auto max = [](double a, double b) { return std::max(a, b); };
  auto min = [](double a, double b) { return std::min(a, b); };
  for (int64_t width : {16, 24, 64, 200, 4096}) {
    CheckInnerReduce("f32", DType(DType::kF32), "arith.addf", "0.5", 0.5, 8, width, add, true);
  }
  for (int64_t width : {1, 7, 15, 20, 100}) {  // below 16 or not a multiple of 8: scalar
    CheckInnerReduce("f32", DType(DType::kF32), "arith.addf", "0.0", 0, 8, width, add, false);
  }
  CheckInnerReduce("f32", DType(DType::kF32), "arith.maximumf", "-1.0e30", -1e30, 12, 64, max,
                   true);
  CheckInnerReduce("f32", DType(DType::kF32), "arith.minnumf", "1.0e30", 1e30, 4, 48, min, true);
  CheckInnerReduce("f64", DType(DType::kF64), "arith.addf", "0.0", 0, 4, 256, add, true);
  CheckInnerReduce("i32", DType(DType::kS32), "arith.addi", "3", 3, 8, 32, add, true);
  CheckInnerReduce("i64", DType(DType::kS64), "arith.maxsi", "-100", -100, 4, 40, max, true);
}

// Max and min stay exact when vectorized: -0 < +0, maxnumf / minnumf skip a NaN, maximumf keeps it.
TEST(ReduceTest, VectorizedMaxAndMinKeepSignedZerosAndNaNs) {
  const std::string program = R"mlir(
func.func @main(%x: tensor<4x64xf32> {tessera.sharding = "mesh{x=4} P(x,None)"})
    -> (tensor<4xf32> {tessera.sharding = "mesh{x=4} P(x)"},
        tensor<4xf32> {tessera.sharding = "mesh{x=4} P(x)"},
        tensor<4xf32> {tessera.sharding = "mesh{x=4} P(x)"}) {
  %lowest = arith.constant 0xFF800000 : f32
  %highest = arith.constant 0x7F800000 : f32
  %e = tensor.empty() : tensor<4xf32>
  %lo = linalg.fill ins(%lowest : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %hi = linalg.fill ins(%highest : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %maxnum = linalg.reduce ins(%x : tensor<4x64xf32>) outs(%lo : tensor<4xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %m = arith.maxnumf %in, %acc : f32
      linalg.yield %m : f32
    }
  %minnum = linalg.reduce ins(%x : tensor<4x64xf32>) outs(%hi : tensor<4xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %m = arith.minnumf %in, %acc : f32
      linalg.yield %m : f32
    }
  %maximum = linalg.reduce ins(%x : tensor<4x64xf32>) outs(%lo : tensor<4xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %m = arith.maximumf %in, %acc : f32
      linalg.yield %m : f32
    }
  return %maxnum, %minnum, %maximum : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
})mlir";
  const float nan = std::nanf("");
  // Row 0: -0 and +0 only (max +0, min -0); row 1: -0 only; row 2: a NaN among negatives;
  // row 3: +0 then -0 at the end, and a NaN.
  HostArray x = HostArray::Zeros(DType(DType::kF32), {4, 64});
  float* v = x.data<float>();
  for (int64_t c = 0; c < 64; ++c) {
    v[c] = c % 3 == 0 ? 0.0f : -0.0f;
    v[64 + c] = -0.0f;
    v[128 + c] = -1.0f - static_cast<float>(c);
    v[192 + c] = c == 63 ? -0.0f : 0.0f;
  }
  v[128 + 40] = nan;
  v[192 + 5] = nan;
  auto bits = [](float f) { return std::bit_cast<uint32_t>(f); };
  HostArray maxnum = HostArray::Zeros(DType(DType::kF32), {4});
  HostArray minnum = maxnum, maximum = maxnum;
  const float expected_maxnum[] = {0.0f, -0.0f, -1.0f, 0.0f};
  const float expected_minnum[] = {-0.0f, -0.0f, -64.0f, -0.0f};
  ASSERT_OK_AND_ASSIGN(ProgramPlan plan, CompileText(program, 4, {}, {}));
  SpmdInterpreter interpreter(plan);
  ASSERT_OK_AND_ASSIGN(std::vector<HostArray> outputs, interpreter.Run({x}));
  ASSERT_EQ(outputs.size(), 3u);
  for (int r = 0; r < 4; ++r) {
    SCOPED_TRACE(absl::StrCat("row ", r));
    EXPECT_EQ(bits(outputs[0].data<float>()[r]), bits(expected_maxnum[r]));
    EXPECT_EQ(bits(outputs[1].data<float>()[r]), bits(expected_minnum[r]));
    const float got_maximum = outputs[2].data<float>()[r];
    if (r >= 2) {
      EXPECT_TRUE(std::isnan(got_maximum));
    } else {
      EXPECT_EQ(bits(got_maximum), bits(expected_maxnum[r]));
    }
  }
}

// Boolean reductions (jnp.any / all: an i1 linalg.reduce) over widths the float ones are vectorized
// at stay scalar and exact: an i1 memref holds a byte per element, a vector<8xi1> a byte of bits.
// Each row has one true element (any) / one false element (all), at every position; the last row
// has none.
TEST(ReduceTest, BooleanInnerReductionsFindEveryElement) {
  for (int64_t width : {16, 64}) {
    SCOPED_TRACE(absl::StrCat("width ", width));
    const std::string tin = TensorType({width + 1, width}, "i1"),
                      tout = TensorType({width + 1}, "i1");
    std::string program = "func.func @main(%x: " + tin + ") -> (" + tout + ", " + tout +
                          ") {\n  %f = arith.constant false\n  %t = arith.constant true\n"
                          "  %e = tensor.empty() : " +
                          tout + "\n";
    for (const auto& [name, init, combiner] :
         {std::tuple{"any", "%f", "arith.ori"}, std::tuple{"all", "%t", "arith.andi"}}) {
      absl::StrAppend(&program, "  %", name, "0 = linalg.fill ins(", init,
                      " : i1) outs(%e : ", tout, ") -> ", tout, "\n  %", name,
                      " = linalg.reduce ins(%x : ", tin, ") outs(%", name, "0 : ", tout,
                      ") dimensions = [1]\n    (%in: i1, %acc: ", "i1) {\n      %r = ", combiner,
                      " %in, %acc : i1\n      linalg.yield %r : ", "i1\n    }\n");
    }
    absl::StrAppend(&program, "  return %any, %all : ", tout, ", ", tout, "\n}");
    ASSERT_OK_AND_ASSIGN(ProgramPlan plan, CompileText(program, 1, {}, {}));
    HostArray one_true = HostArray::Zeros(DType(DType::kPred), {width + 1, width});
    for (int64_t r = 0; r < width; ++r) one_true.bytes[r * width + r] = 1;
    HostArray one_false = one_true;
    for (char& b : one_false.bytes) b = b == 0 ? 1 : 0;
    SpmdInterpreter interpreter(plan);
    for (const HostArray* x : {&one_true, &one_false}) {
      const bool rows_true = x == &one_true;  // any of a one-true row; all of a one-false row
      ASSERT_OK_AND_ASSIGN(std::vector<HostArray> outputs, interpreter.Run({*x}));
      ASSERT_EQ(outputs.size(), 2u);
      for (int64_t r = 0; r <= width; ++r) {
        const bool last = r == width;
        const HostArray& out = outputs[rows_true ? 0 : 1];
        EXPECT_EQ(out.bytes[r], rows_true != last ? 1 : 0) << "row " << r;
      }
    }
  }
}

// A while loop whose body writes into a tensor.empty made outside it (as jax.lax.while_loop bodies
// reach the code generator), run three times on this thread: the same results each time, and
// from the second run on the thread's scratch cache in its steady state (every temporary freed
// once, none kept).
TEST(WhileTest, ALoopWritingIntoAnOuterEmptyTensorFreesEachBufferOnce) {
  // jax.vmap of a while_loop (x, v) = (0, -1); while v <= 0: x += c; v += x, as the importer
  // lowers it: every op of the body writes into the one tensor.empty of f32[16] made before it.
  const std::string program = R"mlir(
#map = affine_map<(d0) -> (d0)>
func.func @main(%c: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>) {
  %false = arith.constant false
  %minus_one = arith.constant -1.0 : f32
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<f32>
  %zero0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %e = tensor.empty() : tensor<16xf32>
  %x0 = linalg.fill ins(%zero : f32) outs(%e : tensor<16xf32>) -> tensor<16xf32>
  %v0 = linalg.fill ins(%minus_one : f32) outs(%e : tensor<16xf32>) -> tensor<16xf32>
  %r:2 = scf.while (%x = %x0, %v = %v0) : (tensor<16xf32>, tensor<16xf32>)
      -> (tensor<16xf32>, tensor<16xf32>) {
    %zeros = linalg.broadcast ins(%zero0 : tensor<f32>) outs(%e : tensor<16xf32>) dimensions = [0]
    %e1 = tensor.empty() : tensor<16xi1>
    %le = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel"]}
        ins(%v, %zeros : tensor<16xf32>, tensor<16xf32>) outs(%e1 : tensor<16xi1>) {
    ^bb0(%a: f32, %b: f32, %out: i1):
      %le1 = arith.cmpf ole, %a, %b : f32
      linalg.yield %le1 : i1
    } -> tensor<16xi1>
    %s = tensor.empty() : tensor<i1>
    %s0 = linalg.fill ins(%false : i1) outs(%s : tensor<i1>) -> tensor<i1>
    %any = linalg.reduce { arith.ori } ins(%le : tensor<16xi1>) outs(%s0 : tensor<i1>) dimensions = [0]
    %go = tensor.extract %any[] : tensor<i1>
    scf.condition(%go) %x, %v : tensor<16xf32>, tensor<16xf32>
  } do {
  ^bb0(%x: tensor<16xf32>, %v: tensor<16xf32>):
    %nx = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel"]}
        ins(%x, %c : tensor<16xf32>, tensor<16xf32>) outs(%e : tensor<16xf32>) {
    ^bb0(%a: f32, %b: f32, %out: f32):
      %sum = arith.addf %a, %b : f32
      linalg.yield %sum : f32
    } -> tensor<16xf32>
    %nv = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel"]}
        ins(%v, %nx : tensor<16xf32>, tensor<16xf32>) outs(%e : tensor<16xf32>) {
    ^bb0(%a: f32, %b: f32, %out: f32):
      %sum = arith.addf %a, %b : f32
      linalg.yield %sum : f32
    } -> tensor<16xf32>
    %zeros = linalg.broadcast ins(%zero0 : tensor<f32>) outs(%e : tensor<16xf32>) dimensions = [0]
    %e1 = tensor.empty() : tensor<16xi1>
    %le = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel"]}
        ins(%v, %zeros : tensor<16xf32>, tensor<16xf32>) outs(%e1 : tensor<16xi1>) {
    ^bb0(%a: f32, %b: f32, %out: i1):
      %le1 = arith.cmpf ole, %a, %b : f32
      linalg.yield %le1 : i1
    } -> tensor<16xi1>
    %sx = linalg.generic {indexing_maps = [#map, #map, #map, #map], iterator_types = ["parallel"]}
        ins(%le, %nx, %x : tensor<16xi1>, tensor<16xf32>, tensor<16xf32>) outs(%e : tensor<16xf32>) {
    ^bb0(%p: i1, %a: f32, %b: f32, %out: f32):
      %pick = arith.select %p, %a, %b : f32
      linalg.yield %pick : f32
    } -> tensor<16xf32>
    %sv = linalg.generic {indexing_maps = [#map, #map, #map, #map], iterator_types = ["parallel"]}
        ins(%le, %nv, %v : tensor<16xi1>, tensor<16xf32>, tensor<16xf32>) outs(%e : tensor<16xf32>) {
    ^bb0(%p: i1, %a: f32, %b: f32, %out: f32):
      %pick = arith.select %p, %a, %b : f32
      linalg.yield %pick : f32
    } -> tensor<16xf32>
    scf.yield %sx, %sv : tensor<16xf32>, tensor<16xf32>
  }
  return %r#0, %r#1 : tensor<16xf32>, tensor<16xf32>
})mlir";
  ASSERT_OK_AND_ASSIGN(ProgramPlan plan, CompileText(program, 1, {}, {}));
  ASSERT_EQ(plan.steps.size(), 1u);
  ASSERT_EQ(plan.steps[0].kind, ProgramStep::Kind::kKernel);
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<CpuKernel> kernel,
                       LoadCpuKernel(plan.steps[0].kernel.artifacts.at("cpu")));
  // c = 1/8 .. 2: each element's x grows by c while its v (from -1) is not above 0; all exact.
  std::vector<float> c(16), x(16), v(16);
  for (int i = 0; i < 16; ++i) c[i] = static_cast<float>(i + 1) / 8;
  std::vector<float> expected_x(16, 0.0f), expected_v(16, -1.0f);
  while (std::any_of(expected_v.begin(), expected_v.end(), [](float f) { return f <= 0; })) {
    for (int i = 0; i < 16; ++i) {
      if (expected_v[i] > 0) continue;
      expected_x[i] += c[i];
      expected_v[i] += expected_x[i];
    }
  }
  const Shape shape({16});
  int64_t cached_after_second = -1;
  for (int run = 0; run < 3; ++run) {
    SCOPED_TRACE(absl::StrCat("run ", run));
    std::fill(x.begin(), x.end(), std::nanf(""));
    std::fill(v.begin(), v.end(), std::nanf(""));
    ASSERT_OK(kernel->Run({c.data(), x.data(), v.data()}, {shape, shape, shape}, {}));
    EXPECT_EQ(x, expected_x);
    EXPECT_EQ(v, expected_v);
    if (run == 1) {
      cached_after_second = cpu::ScratchCachedBytes();
    } else if (run == 2) {
      EXPECT_EQ(cpu::ScratchCachedBytes(), cached_after_second);
    }
  }
}

// ---- map, generic, elementwise ------------------------------------------------------------

TEST(MapTest, UnaryAndBinary) {
  HostArray a = Random(DType(DType::kF32), {12, 7}, 11);
  HostArray b = Random(DType(DType::kF32), {12, 7}, 12);
  HostArray exp = HostArray::Zeros(DType(DType::kF32), {12, 7});
  HostArray sum = exp;
  for (int64_t i = 0; i < exp.num_elements(); ++i) {
    Set(exp, i, std::exp(Get(a, i)));
    Set(sum, i, Get(a, i) * Get(b, i));
  }
  std::string row = Attr("mesh{x=4}", "P(x,None)");
  CompileRunAndCompare(
      "func.func @main(%a: tensor<12x7xf32> " + row + ") -> (tensor<12x7xf32> " + row + R"mlir() {
  %e = tensor.empty() : tensor<12x7xf32>
  %m = linalg.map { math.exp } ins(%a : tensor<12x7xf32>) outs(%e : tensor<12x7xf32>)
  return %m : tensor<12x7xf32>
})mlir",
      {a}, {exp});
  CompileRunAndCompare("func.func @main(%a: tensor<12x7xf32> " + row + ", %b: tensor<12x7xf32> " +
                           Attr("mesh{x=4}", "P()") + ") -> (tensor<12x7xf32> " + row + R"mlir() {
  %e = tensor.empty() : tensor<12x7xf32>
  %m = linalg.map { arith.mulf } ins(%a, %b : tensor<12x7xf32>, tensor<12x7xf32>)
                  outs(%e : tensor<12x7xf32>)
  return %m : tensor<12x7xf32>
})mlir",
                       {a, b}, {sum});
}

TEST(GenericTest, BroadcastingMultiplyAdd) {
  // z[i, j] = a[i, j] * v[j] + 1, rows sharded, v replicated.
  HostArray a = Random(DType(DType::kF32), {8, 5}, 13);
  HostArray v = Random(DType(DType::kF32), {5}, 14);
  HostArray z = HostArray::Zeros(DType(DType::kF32), {8, 5});
  for (int i = 0; i < 8; ++i) {
    for (int j = 0; j < 5; ++j) Set(z, i * 5 + j, Get(a, i * 5 + j) * Get(v, j) + 1);
  }
  std::string row = Attr("mesh{x=4}", "P(x,None)");
  CompileRunAndCompare("func.func @main(%a: tensor<8x5xf32> " + row +
                           ", %v: tensor<5xf32>) -> "
                           "(tensor<8x5xf32> " +
                           row + R"mlir() {
  %e = tensor.empty() : tensor<8x5xf32>
  %z = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>,
                                        affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%a, %v : tensor<8x5xf32>, tensor<5xf32>) outs(%e : tensor<8x5xf32>) {
    ^bb0(%x: f32, %y: f32, %out: f32):
      %one = arith.constant 1.0 : f32
      %p = arith.mulf %x, %y : f32
      %s = arith.addf %p, %one : f32
      linalg.yield %s : f32
  } -> tensor<8x5xf32>
  return %z : tensor<8x5xf32>
})mlir",
                       {a, v}, {z});
}

struct ElementwiseCase {
  std::string element, op;
  DType dtype;
  std::function<double(double, double)> fn;
};

TEST(ElementwiseTest, ArithAndMathOnTensorsUnderEveryResharding) {
  std::vector<ElementwiseCase> cases = {
      {"f32", "arith.addf", DType(DType::kF32), [](double a, double b) { return a + b; }},
      {"f32", "arith.subf", DType(DType::kF32), [](double a, double b) { return a - b; }},
      {"f32", "arith.mulf", DType(DType::kF32), [](double a, double b) { return a * b; }},
      {"f64", "arith.maximumf", DType(DType::kF64),
       [](double a, double b) { return std::max(a, b); }},
      {"i32", "arith.addi", DType(DType::kS32), [](double a, double b) { return a + b; }},
      {"i64", "arith.muli", DType(DType::kS64), [](double a, double b) { return a * b; }},
  };
  // Operand and result shardings: equal, all_to_all, all_slice, all_gather, 2-D; swapped mesh axes
  // and two axes gathered at once (MLIR 22's partitioner changes one axis per reshard: the
  // compiler splits the others into steps, reshard_steps.cc).
  std::vector<std::vector<std::string>> shardings = {
      {"mesh{x=4}", "P(x,None)", "P(x,None)", "P(x,None)"},
      {"mesh{x=4}", "P(x,None)", "P(None,x)", "P(x,None)"},
      {"mesh{x=4}", "P(None,x)", "P()", "P(None,x)"},
      {"mesh{x=4}", "P(x,None)", "P(x,None)", "P()"},
      {"mesh{x=2,y=2}", "P(x,y)", "P(x,None)", "P(None,y)"},
      {"mesh{x=2,y=2}", "P(x,y)", "P(x,y)", "P(x,None)"},
      {"mesh{x=2,y=2}", "P(x,y)", "P(y,x)", "P(x,y)"},
      {"mesh{x=2,y=2}", "P(y,x)", "P((x,y),None)", "P()"},
      {"mesh{x=2,y=2}", "P(None,(y,x))", "P()", "P(x,y)"},
  };
  for (const ElementwiseCase& c : cases) {
    for (const std::vector<std::string>& s : shardings) {
      SCOPED_TRACE(absl::StrCat(c.op, " ", c.element, " ", absl::StrJoin(s, " ")));
      std::string t = TensorType({8, 12}, c.element);
      std::string program = "func.func @main(%a: " + t + " " + Attr(s[0], s[1]) + ", %b: " + t +
                            " " + Attr(s[0], s[2]) + ") -> (" + t + " " + Attr(s[0], s[3]) +
                            ") {\n  %z = " + c.op + " %a, %b : " + t + "\n  return %z : " + t +
                            "\n}";
      HostArray a = Random(c.dtype, {8, 12}, 15), b = Random(c.dtype, {8, 12}, 16);
      HostArray z = HostArray::Zeros(c.dtype, {8, 12});
      for (int64_t i = 0; i < z.num_elements(); ++i) Set(z, i, c.fn(Get(a, i), Get(b, i)));
      CompileRunAndCompare(program, {a, b}, {z});
    }
  }
}

TEST(ElementwiseTest, MathFunctions) {
  HostArray a = Random(DType(DType::kF32), {4, 7}, 17);
  HostArray z = HostArray::Zeros(DType(DType::kF32), {4, 7});
  for (int64_t i = 0; i < z.num_elements(); ++i) {
    Set(z, i, std::tanh(Get(a, i)) + std::sqrt(std::abs(Get(a, i))) + std::erf(Get(a, i)));
  }
  std::string row = Attr("mesh{x=4}", "P(x,None)");
  CompileRunAndCompare(
      "func.func @main(%a: tensor<4x7xf32> " + row + ") -> (tensor<4x7xf32> " + row + R"mlir() {
  %t = math.tanh %a : tensor<4x7xf32>
  %b = math.absf %a : tensor<4x7xf32>
  %s = math.sqrt %b : tensor<4x7xf32>
  %r = math.erf %a : tensor<4x7xf32>
  %u = arith.addf %t, %s : tensor<4x7xf32>
  %z = arith.addf %u, %r : tensor<4x7xf32>
  return %z : tensor<4x7xf32>
})mlir",
      {a}, {z});
}

// f32 tanh on CPU devices is a rational approximation (compiler/targets/llvm_cpu/
// tanh_approximation.h), not libm's tanhf: within a few ulp of std::tanh over the whole range,
// exactly +-1 beyond the clamp and at +-inf, x itself for tiny x (signed zeros kept), NaN for NaN;
// and no tanh is left in the kernel for LLVM to lower to a tanhf call (the loop vectorizes).
TEST(ElementwiseTest, TanhApproximationIsCloseAndKeepsSpecialValues) {
  std::vector<float> values = {0.0f,
                               -0.0f,
                               1e-30f,
                               -1e-30f,
                               1e-6f,
                               3.9e-4f,
                               4.1e-4f,
                               -0.3f,
                               0.5f,
                               1.0f,
                               -2.5f,
                               5.0f,
                               7.99f,
                               -8.5f,
                               20.0f,
                               1e30f,
                               std::numeric_limits<float>::infinity(),
                               -std::numeric_limits<float>::infinity(),
                               std::numeric_limits<float>::quiet_NaN(),
                               1e-45f};
  for (int i = 0; i < 4000; ++i) values.push_back(-10.0f + 20.0f * static_cast<float>(i) / 4000);
  while (values.size() % 16 != 0) values.push_back(0.25f);
  const int64_t n = static_cast<int64_t>(values.size());
  HostArray a = HostArray::Zeros(DType(DType::kF32), {n / 4, 4});
  std::memcpy(a.data<float>(), values.data(), values.size() * sizeof(float));
  const std::string type = TensorType({n / 4, 4});
  const std::string program = "func.func @main(%a: " + type + " " + Attr("mesh{x=4}", "P(x,None)") +
                              ") -> (" + type + " " + Attr("mesh{x=4}", "P(x,None)") +
                              ") {\n  %t = math.tanh %a : " + type + "\n  return %t : " + type +
                              "\n}";
  ASSERT_OK_AND_ASSIGN(ProgramPlan plan, CompileText(program, 4, {}, {}));
  for (const ProgramStep& step : plan.steps) {
    if (step.kind != ProgramStep::Kind::kKernel) continue;
    const std::string& code = step.kernel.artifacts.at("cpu").code;
    EXPECT_EQ(code.find("tanh"), std::string::npos)
        << step.kernel.name;  // no math.tanh, no llvm.intr.tanh
  }
  SpmdInterpreter interpreter(plan);
  ASSERT_OK_AND_ASSIGN(std::vector<HostArray> outputs, interpreter.Run({a}));
  ASSERT_EQ(outputs.size(), 1u);
  const float* got = outputs[0].data<float>();
  int max_ulps = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float x = values[i], want = std::tanh(x);
    SCOPED_TRACE(absl::StrCat("tanh(", x, ") = ", got[i], ", std::tanh ", want));
    if (std::isnan(x)) {
      EXPECT_TRUE(std::isnan(got[i]));
      continue;
    }
    if (std::abs(x) < 4e-4f) {  // tiny: x itself, bit for bit (so -0 stays -0)
      EXPECT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(x));
      continue;
    }
    EXPECT_EQ(std::signbit(got[i]), std::signbit(want));
    const int ulps =
        std::abs(static_cast<int>(std::bit_cast<int32_t>(got[i]) - std::bit_cast<int32_t>(want)));
    max_ulps = std::max(max_ulps, ulps);
    EXPECT_LE(ulps, 8);
    if (std::abs(x) >= 9.0f) {
      EXPECT_EQ(got[i], std::copysign(1.0f, x));
    }
  }
  std::printf("tanh approximation: at most %d ulp from std::tanh over %lld values\n", max_ulps,
              static_cast<long long>(n));
}

// ---- the examples ---------------------------------------------------------------------------

HostArray Relu(HostArray a) {
  for (int64_t i = 0; i < a.num_elements(); ++i) Set(a, i, std::max(0.0, Get(a, i)));
  return a;
}

HostArray AddRowVector(HostArray a, const HostArray& v) {
  int64_t n = v.num_elements();
  for (int64_t i = 0; i < a.num_elements(); ++i) Set(a, i, Get(a, i) + Get(v, i % n));
  return a;
}

TEST(ExamplesTest, MlpMatchesReference) {
  HostArray x = Random(DType(DType::kF32), {16, 32}, 18);
  HostArray w = Random(DType(DType::kF32), {32, 64}, 19);
  HostArray b = Random(DType(DType::kF32), {64}, 20);
  HostArray y = Relu(AddRowVector(ReferenceMatmul(x, w, 0, 16, 32, 64), b));
  CompileRunAndCompare(testing::ReadFile(std::string(TESSERA_SOURCE_DIR) + "/examples/mlp.mlir"),
                       {x, w, b}, {y});
}

TEST(ExamplesTest, MegatronMlpMatchesReference) {
  HostArray x = Random(DType(DType::kF32), {8, 16}, 21);
  HostArray w1 = Random(DType(DType::kF32), {16, 32}, 22);
  HostArray b1 = Random(DType(DType::kF32), {32}, 23);
  HostArray w2 = Random(DType(DType::kF32), {32, 16}, 24);
  HostArray b2 = Random(DType(DType::kF32), {16}, 25);
  HostArray h = Relu(AddRowVector(ReferenceMatmul(x, w1, 0, 8, 16, 32), b1));
  HostArray y = AddRowVector(ReferenceMatmul(h, w2, 0, 8, 32, 16), b2);
  CompileRunAndCompare(
      testing::ReadFile(std::string(TESSERA_SOURCE_DIR) + "/examples/mlp2_megatron.mlir"),
      {x, w1, b1, w2, b2}, {y});
}

// The Megatron MLP as benchmarks/ifrt/program_benchmark.cc writes it: one zero fill initializes
// both matmuls (column- and row-sharded) and is the ReLU's zero. The partitioner gathers the
// fill's column shards for the second matmul; the compiler folds that gather into a local fill.
TEST(ExamplesTest, MegatronWithOneSharedZeroFillMatchesReference) {
  ASSERT_OK_AND_ASSIGN(ProgramPlan plan, CompileText(testing::MegatronWithSharedFill(8, 16)));
  EXPECT_THAT(testing::StepKinds(plan), ::testing::ElementsAre("kernel", "all_reduce"));
  HostArray x = Random(DType(DType::kF32), {8, 16}, 26);
  HostArray w1 = Random(DType(DType::kF32), {16, 16}, 27);
  HostArray b1 = Random(DType(DType::kF32), {16}, 28);
  HostArray w2 = Random(DType(DType::kF32), {16, 16}, 29);
  HostArray h = Relu(AddRowVector(ReferenceMatmul(x, w1, 0, 8, 16, 16), b1));
  CompileRunAndCompare(testing::MegatronWithSharedFill(8, 16), {x, w1, b1, w2},
                       {ReferenceMatmul(h, w2, 0, 8, 16, 16)});
}

// Compile time of the examples and the speed of a 256^3 matmul kernel, recorded as test
// properties (and printed) for the report; asserts only that the kernel is right.
TEST(MeasurementTest, CompileTimesAndMatmulThroughput) {
  for (const char* example : {"/examples/mlp.mlir", "/examples/mlp2_megatron.mlir"}) {
    std::string text = testing::ReadFile(std::string(TESSERA_SOURCE_DIR) + example);
    auto start = std::chrono::steady_clock::now();
    ASSERT_OK(CompileText(text).status());
    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    std::printf("compile %s: %.1f ms\n", example, ms);
  }
  const int64_t n = 256;
  std::string t = TensorType({n, n});
  std::string program = "func.func @main(%a: " + t + ", %b: " + t + ") -> " + t +
                        " {\n  %zero = arith.constant 0.0 : f32\n  %e = tensor.empty() : " + t +
                        "\n  %f = linalg.fill ins(%zero : f32) outs(%e : " + t + ") -> " + t +
                        "\n  %c = linalg.matmul ins(%a, %b : " + t + ", " + t + ") outs(%f : " + t +
                        ") -> " + t + "\n  return %c : " + t + "\n}";
  ASSERT_OK_AND_ASSIGN(ProgramPlan plan, CompileText(program, 1));
  ASSERT_EQ(plan.steps.size(), 1u);
  auto start = std::chrono::steady_clock::now();
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<CpuKernel> kernel,
                       LoadCpuKernel(plan.steps[0].kernel.artifacts.at("cpu")));
  double jit_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  HostArray a = Random(DType(DType::kF32), {n, n}, 30), b = Random(DType(DType::kF32), {n, n}, 31);
  HostArray c = HostArray::Zeros(DType(DType::kF32), {n, n});
  std::vector<void*> buffers = {a.bytes.data(), b.bytes.data(), c.bytes.data()};
  std::vector<Shape> shapes(3, Shape({n, n}));
  start = std::chrono::steady_clock::now();
  const int reps = 5;
  for (int r = 0; r < reps; ++r) ASSERT_OK(kernel->Run(buffers, shapes, {}));
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / reps;
  std::printf("matmul %ldx%ldx%ld: JIT %.1f ms, %.3f ms/run, %.2f GFLOP/s\n", n, n, n, jit_ms,
              s * 1e3, 2.0 * n * n * n / s / 1e9);
  ExpectNear(c, ReferenceMatmul(a, b, 0, n, n, n));
}

// ---- the kernel loader ----------------------------------------------------------------------

TEST(KernelLoaderTest, RejectsBadArtifactsAndArguments) {
  EXPECT_THAT(LoadCpuKernel({"spirv", "", "k", {}, {}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("\"spirv\"")));
  EXPECT_THAT(LoadCpuKernel({"mlir-llvm", "module {", "k", {}, {}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("does not parse")));
  EXPECT_THAT(LoadCpuKernel({"mlir-llvm", "module {}", "k", {}, {}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no function @k")));

  ASSERT_OK_AND_ASSIGN(ProgramPlan plan, CompileText(R"mlir(
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %z = arith.addf %a, %a : tensor<4xf32>
  return %z : tensor<4xf32>
})mlir"));
  ASSERT_EQ(plan.steps.size(), 1u);
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<CpuKernel> kernel,
                       LoadCpuKernel(plan.steps[0].kernel.artifacts.at("cpu")));
  std::vector<float> in = {1, 2, 3, 4}, out(4);
  std::vector<void*> buffers = {in.data(), out.data()};
  std::vector<Shape> shapes = {Shape({4}), Shape({4})};
  ASSERT_OK(kernel->Run(buffers, shapes, {}));
  EXPECT_THAT(out, ::testing::ElementsAre(2, 4, 6, 8));
  EXPECT_THAT(in, ::testing::ElementsAre(1, 2, 3, 4));  // inputs are never written
  EXPECT_THAT(kernel->Run(buffers, {Shape({2, 2}), Shape({4})}, {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("arguments")));
  EXPECT_THAT(kernel->Run({in.data()}, {Shape({4}), Shape({4})}, {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("1 buffers but 2 shapes")));
  EXPECT_THAT(kernel->Run(buffers, shapes, {0}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("arguments")));
}

}  // namespace
}  // namespace tessera
