// The differential program test: random programs, each run sharded and compared with the same
// program run on one CPU device. A program (ProgramGenerator) is an elementwise op of two inputs
// (addf / subf / mulf / maximumf / minimumf / maxnumf / minnumf, perhaps then negf or absf, on
// floats; addi / subi / muli / andi / ori / xori / maxsi / minsi / maxui / minui on integers),
// then a reduction of it over one or two dimensions (linalg.reduce or linalg.generic) with any
// combiner of its dtype from any init; it returns the reduction and the elementwise result.
// Dtypes f32, f64, i32, i64; shapes of rank 2 or 3 from dimensions 1, 2, 3, 4, 5, 6, 7, 8, 12, 13
// (now and then 512: Vulkan's two-pass reduction); inputs with NaN, +-inf, +-0 and INT_MIN / MAX.
// The shardings are random over the topology's mesh (reduced dimensions sharded often, so that
// reductions become all-reduces).
//
// Topologies: 4 or 2 CPU devices; 2 lavapipe devices; 2 or 4 devices mixing CPU and lavapipe
// (the all-reduce spans both platforms). Results are compared bit by bit (NaN as one value:
// payloads and signs of NaN are not compared), except float sums and products of a reduction,
// within 1e-5 (f32) / 1e-12 (f64) of the larger magnitude: reassociated across devices. (The
// float inputs are multiples of 1/4 up to 16, so that sums are exact in any order in practice.)
//
// Seeds: TESSERA_DIFFERENTIAL_SEED (first, default 1) and TESSERA_DIFFERENTIAL_PROGRAMS (count,
// default 40 per topology: a few seconds each on lavapipe), printed at the start; a failure names
// its seed, topology, shardings and program. A program a sharded compile refuses as UNIMPLEMENTED
// (a partitioner limit) is counted and printed, not compared. TESSERA_DIFFERENTIAL_VERBOSE=1
// prints every program; TESSERA_DIFFERENTIAL_SHARDINGS replays the seeds under given shardings
// (Override).
//
// What it found: andi all-reduced as a sum, maxui / minui as signed, float max / min dropping a
// later device's NaN (issue 25); lavapipe's max / min ordering -0 and +0 by operand order (15 of
// seeds 1..100 on two lavapipe devices without compiler/float_min_max.cc); a reduction MLIR's
// partitioner leaves partial on a 2-D mesh (seed 91, mixed; now UNIMPLEMENTED at Compile); lavapipe
// folding a product from a constant -0.0 to +0.0 and dropping its NaN (seed 33; now the kernels
// declare SignedZeroInfNanPreserve). Known failure beyond the default slice: seed 239 on cpu
// (INTERNAL: the partitioned plan gives result 1 a local shape its replicated sharding does not
// have). MLIR 22's partitioner crashes on a result sharded over another mesh axis than its
// operand's dimension, so ResultSpec does not generate those.

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"
#include "gtest/gtest.h"
#include "tessera.h"
#include "tests/ifrt/test_util.h"
#include "tests/testing/vulkan_icds.h"

namespace tessera {
namespace {

// splitmix64: the same numbers on every platform (std's distributions are not specified).
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed * 0x9E3779B97F4A7C15ull + 1) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  int Below(int n) { return static_cast<int>(Next() % static_cast<uint64_t>(n)); }
  bool Percent(int p) { return Below(100) < p; }
  template <typename T>
  const T& Pick(const std::vector<T>& v) {
    return v[Below(static_cast<int>(v.size()))];
  }

 private:
  uint64_t state_;
};

struct Element {
  std::string mlir;  // "f32", ...
  DType dtype{DType::kInvalid};
  int bytes;
  bool is_float;
};
const std::vector<Element>& Elements() {
  static const auto* elements = new std::vector<Element>{{"f32", DType(DType::kF32), 4, true},
                                                         {"f64", DType(DType::kF64), 8, true},
                                                         {"i32", DType(DType::kS32), 4, false},
                                                         {"i64", DType(DType::kS64), 8, false}};
  return *elements;
}

// One generated program, before shardings: its text takes them from CompileOptions.
struct Program {
  uint64_t seed = 0;
  Element element;
  std::vector<int64_t> shape;      // of both inputs and the elementwise result
  std::vector<int64_t> reduced;    // reduced dimensions, ascending
  std::vector<int64_t> out_shape;  // of the reduction
  std::string op, unary, combiner, init;
  bool generic = false;  // linalg.generic instead of linalg.reduce
  std::string text;
  std::vector<std::vector<uint8_t>> inputs;  // a, b: row-major

  std::string ReductionInput() const { return unary.empty() ? "%e" : "%u"; }

  bool Tolerant() const { return combiner == "arith.addf" || combiner == "arith.mulf"; }
  std::string Summary() const {
    return absl::StrCat("seed ", seed, ": ", element.mlir, "[", absl::StrJoin(shape, "x"), "] ", op,
                        unary.empty() ? "" : " then " + unary, ", ",
                        generic ? "linalg.generic " : "linalg.reduce ", combiner, " over [",
                        absl::StrJoin(reduced, ","), "] from ", init);
  }
};

std::string TensorType(const std::vector<int64_t>& shape, const std::string& element) {
  std::string t = "tensor<";
  for (int64_t d : shape) absl::StrAppend(&t, d, "x");
  return t + element + ">";
}

// A float constant as its bits (exact for NaN, infinities and -0).
std::string FloatConstant(double v, bool f32) {
  if (f32) return absl::StrFormat("0x%08X", std::bit_cast<uint32_t>(static_cast<float>(v)));
  return absl::StrFormat("0x%016X", std::bit_cast<uint64_t>(v));
}

double FloatValue(Rng& rng) {
  const int r = rng.Below(100);
  if (r < 4) return std::numeric_limits<double>::quiet_NaN();
  if (r < 7) return std::numeric_limits<double>::infinity();
  if (r < 10) return -std::numeric_limits<double>::infinity();
  if (r < 18) return 0.0;
  if (r < 26) return -0.0;
  int k = rng.Below(128) - 64;  // k / 4 in [-16, 16], not 0
  if (k == 0) k = 1;
  return k / 4.0;
}

int64_t IntegerValue(Rng& rng, bool i32) {
  const int64_t lo =
      i32 ? std::numeric_limits<int32_t>::min() : std::numeric_limits<int64_t>::min();
  const int64_t hi =
      i32 ? std::numeric_limits<int32_t>::max() : std::numeric_limits<int64_t>::max();
  const int r = rng.Below(100);
  if (r < 10) return lo;
  if (r < 15) return hi;
  if (r < 25) return -1;
  if (r < 35) return 0;
  if (r < 40) return 1;
  if (r < 70) return rng.Below(33) - 16;
  const uint64_t bits = rng.Next();
  return i32 ? static_cast<int32_t>(bits) : static_cast<int64_t>(bits);
}

void AppendValue(const Element& e, Rng& rng, std::vector<uint8_t>& out) {
  uint8_t bytes[8];
  if (e.mlir == "f32") {
    const float f = static_cast<float>(FloatValue(rng));
    std::memcpy(bytes, &f, 4);
  } else if (e.mlir == "f64") {
    const double d = FloatValue(rng);
    std::memcpy(bytes, &d, 8);
  } else if (e.mlir == "i32") {
    const int32_t i = static_cast<int32_t>(IntegerValue(rng, true));
    std::memcpy(bytes, &i, 4);
  } else {
    const int64_t i = IntegerValue(rng, false);
    std::memcpy(bytes, &i, 8);
  }
  out.insert(out.end(), bytes, bytes + e.bytes);
}

std::string InitConstant(const Element& e, Rng& rng) {
  if (e.is_float) return FloatConstant(FloatValue(rng), e.mlir == "f32");
  return absl::StrCat(IntegerValue(rng, e.mlir == "i32"));
}

std::vector<int64_t> RandomShape(Rng& rng) {
  static const std::vector<int64_t> dims = {1, 2, 3, 4, 5, 6, 7, 8, 12, 13};
  std::vector<int64_t> shape(rng.Percent(50) ? 2 : 3);
  for (int64_t& d : shape) d = rng.Pick(dims);
  if (rng.Percent(10)) {  // one long dimension, the others short
    for (int64_t& d : shape) d = rng.Pick(std::vector<int64_t>{1, 2});
    shape[rng.Below(static_cast<int>(shape.size()))] = 512;
  }
  return shape;
}

std::vector<int64_t> RandomReduced(Rng& rng, size_t rank) {
  if (rank == 2) return {rng.Below(2)};
  static const std::vector<std::vector<int64_t>> choices = {{0}, {1}, {2}, {0, 1}, {1, 2}, {0, 2}};
  return rng.Pick(choices);
}

// The text of the reduction op (linalg.reduce or linalg.generic) of %u into %f.
std::string ReductionText(const Program& p) {
  const std::string el = p.element.mlir;
  const std::string in = TensorType(p.shape, el), out = TensorType(p.out_shape, el);
  const std::string body = absl::StrCat("      %s = ", p.combiner, " %in, %acc : ", el,
                                        "\n      linalg.yield %s : ", el, "\n");
  if (!p.generic) {
    return absl::StrCat("  %r = linalg.reduce ins(", p.ReductionInput(), " : ", in,
                        ") outs(%f : ", out, ") dimensions = [", absl::StrJoin(p.reduced, ", "),
                        "]\n    (%in: ", el, ", %acc: ", el, ") {\n", body, "    }\n");
  }
  std::vector<std::string> all, kept, iterators;
  for (size_t d = 0; d < p.shape.size(); ++d) {
    const bool is_reduced = absl::c_linear_search(p.reduced, static_cast<int64_t>(d));
    all.push_back(absl::StrCat("d", d));
    if (!is_reduced) kept.push_back(absl::StrCat("d", d));
    iterators.push_back(is_reduced ? "\"reduction\"" : "\"parallel\"");
  }
  const std::string dims = absl::StrJoin(all, ", ");
  return absl::StrCat("  %r = linalg.generic {indexing_maps = [affine_map<(", dims, ") -> (", dims,
                      ")>, affine_map<(", dims, ") -> (", absl::StrJoin(kept, ", "),
                      ")>], iterator_types = [", absl::StrJoin(iterators, ", "), "]}\n      ins(",
                      p.ReductionInput(), " : ", in, ") outs(%f : ", out, ") {\n    ^bb0(%in: ", el,
                      ", %acc: ", el, "):\n", body, "  } -> ", out, "\n");
}

void WriteText(Program& p) {
  const std::string el = p.element.mlir;
  const std::string t = TensorType(p.shape, el), r = TensorType(p.out_shape, el);
  std::string text = absl::StrCat("func.func @main(%a: ", t, ", %b: ", t, ") -> (", r, ", ", t,
                                  ") {\n  %e = ", p.op, " %a, %b : ", t, "\n");
  if (!p.unary.empty()) absl::StrAppend(&text, "  %u = ", p.unary, " %e : ", t, "\n");
  absl::StrAppend(&text, "  %init = arith.constant ", p.init, " : ", el,
                  "\n  %empty = tensor.empty() : ", r, "\n  %f = linalg.fill ins(%init : ", el,
                  ") outs(%empty : ", r, ") -> ", r, "\n", ReductionText(p),
                  "  return %r, %e : ", r, ", ", t, "\n}\n");
  p.text = std::move(text);
}

Program Generate(uint64_t seed) {
  Rng rng(seed);
  Program p;
  p.seed = seed;
  p.element = rng.Pick(Elements());
  p.shape = RandomShape(rng);
  p.reduced = RandomReduced(rng, p.shape.size());
  int64_t extent = 1;
  for (size_t d = 0; d < p.shape.size(); ++d) {
    if (absl::c_linear_search(p.reduced, static_cast<int64_t>(d))) {
      extent *= p.shape[d];
    } else {
      p.out_shape.push_back(p.shape[d]);
    }
  }
  if (p.element.is_float) {
    p.op = rng.Pick(std::vector<std::string>{"arith.addf", "arith.subf", "arith.mulf",
                                             "arith.maximumf", "arith.minimumf", "arith.maxnumf",
                                             "arith.minnumf"});
    if (rng.Percent(30)) p.unary = rng.Pick(std::vector<std::string>{"arith.negf", "math.absf"});
    p.combiner =
        rng.Pick(std::vector<std::string>{"arith.addf", "arith.mulf", "arith.maximumf",
                                          "arith.minimumf", "arith.maxnumf", "arith.minnumf"});
    // Products of at most 12 factors in [1/16, 256] neither overflow nor underflow.
    if (p.combiner == "arith.mulf" && extent > 12) p.combiner = "arith.addf";
  } else {
    p.op = rng.Pick(std::vector<std::string>{"arith.addi", "arith.subi", "arith.muli", "arith.andi",
                                             "arith.ori", "arith.xori", "arith.maxsi",
                                             "arith.minsi", "arith.maxui", "arith.minui"});
    p.combiner = rng.Pick(std::vector<std::string>{"arith.addi", "arith.muli", "arith.andi",
                                                   "arith.ori", "arith.xori", "arith.maxsi",
                                                   "arith.minsi", "arith.maxui", "arith.minui"});
  }
  p.init = InitConstant(p.element, rng);
  p.generic = rng.Percent(30);
  int64_t elements = 1;
  for (int64_t d : p.shape) elements *= d;
  for (int i = 0; i < 2; ++i) {
    std::vector<uint8_t> data;
    for (int64_t k = 0; k < elements; ++k) AppendValue(p.element, rng, data);
    p.inputs.push_back(std::move(data));
  }
  WriteText(p);
  return p;
}

// ---- topologies, shardings, runs -------------------------------------------------------------

struct Mesh {
  std::string text;
  std::vector<std::pair<std::string, int64_t>> axes;
};

// A device choice of a topology: positions in its CPU and Vulkan device lists, and its meshes.
struct Placement {
  std::vector<std::pair<bool, int>> devices;  // (is_vulkan, index)
  std::vector<Mesh> meshes;
};

struct Topology {
  std::string name;
  bool needs_vulkan;
  std::vector<Placement> placements;
};

void PrintTo(const Topology& t, std::ostream* os) { *os << t.name; }

const std::vector<Topology>& Topologies() {
  const Mesh x4{"mesh{x=4}", {{"x", 4}}}, x2y2{"mesh{x=2,y=2}", {{"x", 2}, {"y", 2}}},
      x2{"mesh{x=2}", {{"x", 2}}};
  static const auto* topologies =
      new std::vector<Topology>{{"cpu",
                                 false,
                                 {{{{false, 0}, {false, 1}, {false, 2}, {false, 3}}, {x4, x2y2}},
                                  {{{false, 0}, {false, 1}}, {x2}}}},
                                {"vulkan", true, {{{{true, 0}, {true, 1}}, {x2}}}},
                                {"mixed",
                                 true,
                                 {{{{false, 0}, {true, 0}, {false, 1}, {true, 1}}, {x4, x2y2}},
                                  {{{true, 0}, {false, 0}}, {x2}}}}};
  return *topologies;
}

// A PartitionSpec over `shape`, one entry per dimension (an axis name or "None"): each mesh axis,
// now and then, on one dimension it divides (a reduced one in `prefer` half the time), one axis
// per dimension.
using Spec = std::vector<std::string>;
Spec RandomSpec(Rng& rng, const std::vector<int64_t>& shape, const Mesh& mesh,
                const std::vector<int64_t>& prefer) {
  Spec dims(shape.size(), "None");
  for (const auto& [name, size] : mesh.axes) {
    if (!rng.Percent(75)) continue;
    std::vector<int64_t> candidates, preferred;
    for (size_t d = 0; d < shape.size(); ++d) {
      if (dims[d] != "None" || shape[d] % size != 0) continue;
      candidates.push_back(static_cast<int64_t>(d));
      if (absl::c_linear_search(prefer, static_cast<int64_t>(d))) {
        preferred.push_back(static_cast<int64_t>(d));
      }
    }
    if (candidates.empty()) continue;
    const int64_t d =
        !preferred.empty() && rng.Percent(50) ? rng.Pick(preferred) : rng.Pick(candidates);
    dims[d] = name;
  }
  return dims;
}

std::string SpecText(const Spec& spec) { return "P(" + absl::StrJoin(spec, ",") + ")"; }

// A result's spec from its operand's `in` (result dimension i is operand dimension `source[i]`):
// each dimension keeps the operand's axis or drops it; one the operand leaves whole may take an
// axis the operand does not use, where it divides. (MLIR 22's partitioner crashes moving a
// dimension from one mesh axis to another, e.g. a reduction of f32[4x8] P(None,x) into P(y) on
// mesh{x=2,y=2}: TESSERA_DIFFERENTIAL_ANY_SHARDING=1 generates those too.)
Spec ResultSpec(Rng& rng, const Spec& in, const std::vector<int64_t>& source,
                const std::vector<int64_t>& shape, const Mesh& mesh) {
  if (std::getenv("TESSERA_DIFFERENTIAL_ANY_SHARDING") != nullptr) {
    return RandomSpec(rng, shape, mesh, {});
  }
  Spec out(source.size(), "None");
  std::vector<std::string> unused;
  for (const auto& axis : mesh.axes) {
    if (!absl::c_linear_search(in, axis.first)) unused.push_back(axis.first);
  }
  for (size_t i = 0; i < source.size(); ++i) {
    if (in[source[i]] != "None") {
      if (rng.Percent(60)) out[i] = in[source[i]];
      continue;
    }
    if (unused.empty() || !rng.Percent(40)) continue;
    const std::string axis = rng.Pick(unused);
    int64_t size = 1;
    for (const auto& [name, n] : mesh.axes) size = name == axis ? n : size;
    if (shape[i] % size != 0 || absl::c_linear_search(out, axis)) continue;
    out[i] = axis;
  }
  return out;
}

// The shardings of one sharded run: a, b, then the results r, e.
struct Shardings {
  Mesh mesh;
  std::vector<std::string> params, results;
  std::string Summary() const {
    return absl::StrCat(mesh.text, " a ", params[0], " b ", params[1], " -> r ", results[0], " e ",
                        results[1]);
  }
};

Shardings RandomShardings(Rng& rng, const Program& p, const Mesh& mesh) {
  Shardings s{mesh, {}, {}};
  const Spec a = RandomSpec(rng, p.shape, mesh, p.reduced);
  s.params = {SpecText(a), rng.Percent(70) ? SpecText(a) : "P()"};
  std::vector<int64_t> all, kept;
  for (size_t d = 0; d < p.shape.size(); ++d) {
    all.push_back(static_cast<int64_t>(d));
    if (!absl::c_linear_search(p.reduced, static_cast<int64_t>(d))) {
      kept.push_back(static_cast<int64_t>(d));
    }
  }
  s.results = {SpecText(ResultSpec(rng, a, kept, p.out_shape, mesh)),
               rng.Percent(50) ? SpecText(a) : SpecText(ResultSpec(rng, a, all, p.shape, mesh))};
  return s;
}

using Outputs = std::vector<std::vector<uint8_t>>;

// Compiles `p` for `devices` with `shardings`, runs it, reads the results back.
absl::StatusOr<Outputs> RunProgram(Client& client, const Program& p, const DeviceListRef& devices,
                                   const Shardings* shardings) {
  CompileOptions options;
  options.devices = devices;
  if (shardings != nullptr) {
    for (const std::string& spec : shardings->params) {
      options.input_shardings.push_back(testing::Named(shardings->mesh.text, spec, devices));
    }
    for (const std::string& spec : shardings->results) {
      options.output_shardings.push_back(testing::Named(shardings->mesh.text, spec, devices));
    }
  }
  TESSERA_ASSIGN_OR_RETURN(
      LoadedExecutableRef exe,
      client.GetDefaultCompiler()->Compile(std::make_unique<MlirProgram>(p.text), options));
  std::vector<ArrayRef> args;
  for (size_t i = 0; i < p.inputs.size(); ++i) {
    TESSERA_ASSIGN_OR_RETURN(
        ArrayRef arg, testing::MakeArray(client, p.inputs[i], p.element.dtype, Shape(p.shape),
                                         exe->GetParameterShardings()[i]));
    args.push_back(std::move(arg));
  }
  TESSERA_ASSIGN_OR_RETURN(ExecuteResult result, exe->Execute(absl::MakeSpan(args)));
  TESSERA_RETURN_IF_ERROR(result.status.Await());
  Outputs outputs;
  for (const ArrayRef& out : result.outputs) {
    TESSERA_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, testing::ReadBack(out));
    outputs.push_back(std::move(bytes));
  }
  return outputs;
}

// ---- comparison -------------------------------------------------------------------------------

template <typename T>
bool Same(T got, T want, bool tolerant) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(got) || std::isnan(want)) return std::isnan(got) && std::isnan(want);
    if (std::bit_cast<std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>(got) ==
        std::bit_cast<std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>(want)) {
      return true;
    }
    const double tolerance = sizeof(T) == 4 ? 1e-5 : 1e-12;
    return tolerant && std::isfinite(got) && std::isfinite(want) &&
           std::abs(double(got) - double(want)) <=
               tolerance * std::max(std::abs(double(got)), std::abs(double(want)));
  } else {
    return got == want;
  }
}

template <typename T>
std::string Show(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    return absl::StrFormat(
        "%.17g (0x%X)", v,
        std::bit_cast<std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>(v));
  } else {
    return absl::StrCat(v);
  }
}

template <typename T>
std::string CompareAs(const std::vector<uint8_t>& got, const std::vector<uint8_t>& want,
                      bool tolerant) {
  if (got.size() != want.size()) return absl::StrCat(got.size(), " bytes, want ", want.size());
  std::string report;
  int shown = 0;
  for (size_t i = 0; i < got.size() / sizeof(T); ++i) {
    T g, w;
    std::memcpy(&g, got.data() + i * sizeof(T), sizeof(T));
    std::memcpy(&w, want.data() + i * sizeof(T), sizeof(T));
    if (Same(g, w, tolerant)) continue;
    if (shown++ < 4) absl::StrAppend(&report, " [", i, "] ", Show(g), " want ", Show(w), ";");
  }
  if (shown > 4) absl::StrAppend(&report, " ... ", shown, " elements differ");
  return report;
}

// "" when `got` equals `want` (result 0, the reduction, within the tolerance where it applies).
std::string Compare(const Program& p, const Outputs& got, const Outputs& want) {
  std::string report;
  for (size_t r = 0; r < want.size(); ++r) {
    const bool tolerant = r == 0 && p.Tolerant();
    std::string diff;
    if (p.element.mlir == "f32") diff = CompareAs<float>(got[r], want[r], tolerant);
    if (p.element.mlir == "f64") diff = CompareAs<double>(got[r], want[r], tolerant);
    if (p.element.mlir == "i32") diff = CompareAs<int32_t>(got[r], want[r], false);
    if (p.element.mlir == "i64") diff = CompareAs<int64_t>(got[r], want[r], false);
    if (!diff.empty()) absl::StrAppend(&report, r == 0 ? " reduction:" : " elementwise:", diff);
  }
  return report;
}

// ---- the test ---------------------------------------------------------------------------------

// TESSERA_DIFFERENTIAL_SHARDINGS="mesh|a|b|r|e" (one mesh of the topology, e.g.
// "mesh{x=2,y=2}|P(y,None,x)|P()|P()|P(y)"): every program of the run with these shardings, on
// the topology's placement of that mesh (to replay a failure under other shardings). False when
// the topology has no placement of that mesh.
bool Override(const Topology& topology, Shardings& shardings, std::vector<Device*>& devices,
              const std::vector<Device*>& cpus, const std::vector<Device*>& gpus) {
  const char* text = std::getenv("TESSERA_DIFFERENTIAL_SHARDINGS");
  if (text == nullptr || *text == '\0') return true;
  const std::vector<std::string> parts = absl::StrSplit(text, '|');
  if (parts.size() != 5) return false;
  for (const Placement& placement : topology.placements) {
    for (const Mesh& mesh : placement.meshes) {
      if (mesh.text != parts[0]) continue;
      shardings = Shardings{mesh, {parts[1], parts[2]}, {parts[3], parts[4]}};
      devices.clear();
      for (const auto& [is_vulkan, index] : placement.devices) {
        devices.push_back(is_vulkan ? gpus[index] : cpus[index]);
      }
      return true;
    }
  }
  return false;
}

uint64_t EnvOr(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::strtoull(v, nullptr, 10) : fallback;
}

class DifferentialTest : public ::testing::TestWithParam<Topology> {
 protected:
  static void SetUpTestSuite() {
    testing::SetVulkanIcdsIfUnset(TESSERA_DIFFERENTIAL_TEST_VULKAN_ICDS);
    absl::StatusOr<std::shared_ptr<Client>> client =
        CreateClient({.cpu_devices = 4,
                      .cpu_threads_per_device = 1,
                      .vulkan = VulkanMode::kIfAvailable,
                      .transfer_guard = guard::Policy()});
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = new std::shared_ptr<Client>(*std::move(client));
    references_ = new std::map<uint64_t, absl::StatusOr<Outputs>>();
  }
  static void TearDownTestSuite() {
    delete references_;
    delete client_;
  }

  Client& client() { return **client_; }

  std::vector<Device*> DevicesOfKind(std::string_view kind) {
    std::vector<Device*> devices;
    for (Device* d : client().devices()) {
      if (d->Kind() == kind) devices.push_back(d);
    }
    return devices;
  }

  // The one-CPU-device run of `p`, once per seed.
  const absl::StatusOr<Outputs>& Reference(const Program& p) {
    auto it = references_->find(p.seed);
    if (it == references_->end()) {
      DeviceListRef one = testing::MustDeviceList(client(), {DevicesOfKind("cpu")[0]});
      const Shardings replicated{{"mesh{x=1}", {{"x", 1}}}, {"P()", "P()"}, {"P()", "P()"}};
      it = references_->emplace(p.seed, RunProgram(client(), p, one, &replicated)).first;
    }
    return it->second;
  }

  static std::shared_ptr<Client>* client_;
  static std::map<uint64_t, absl::StatusOr<Outputs>>* references_;
};

std::shared_ptr<Client>* DifferentialTest::client_ = nullptr;
std::map<uint64_t, absl::StatusOr<Outputs>>* DifferentialTest::references_ = nullptr;

TEST_P(DifferentialTest, ShardedRunsEqualTheOneDeviceRun) {
  const Topology& topology = GetParam();
  const std::vector<Device*> cpus = DevicesOfKind("cpu"), gpus = DevicesOfKind("vulkan");
  if (topology.needs_vulkan && gpus.size() < 2) GTEST_SKIP() << "fewer than 2 Vulkan devices";
  const uint64_t first = EnvOr("TESSERA_DIFFERENTIAL_SEED", 1);
  const uint64_t count = EnvOr("TESSERA_DIFFERENTIAL_PROGRAMS", 40);
  std::printf("differential %s: seeds %llu..%llu (TESSERA_DIFFERENTIAL_SEED, _PROGRAMS)\n",
              topology.name.c_str(), static_cast<unsigned long long>(first),
              static_cast<unsigned long long>(first + count - 1));
  int compared = 0, refused = 0, mismatched = 0, failed = 0;
  for (uint64_t seed = first; seed < first + count; ++seed) {
    const Program p = Generate(seed);
    Rng rng(seed * 1000003 + topology.name.size());
    const Placement& placement = rng.Pick(topology.placements);
    std::vector<Device*> devices;
    for (const auto& [is_vulkan, index] : placement.devices) {
      devices.push_back(is_vulkan ? gpus[index] : cpus[index]);
    }
    Shardings shardings = RandomShardings(rng, p, rng.Pick(placement.meshes));
    if (!Override(topology, shardings, devices, cpus, gpus)) continue;
    const std::string what =
        absl::StrCat(topology.name, " ", p.Summary(), "; ", shardings.Summary(), "\n", p.text);
    if (std::getenv("TESSERA_DIFFERENTIAL_VERBOSE") != nullptr) {
      std::printf("%s\n", what.c_str());
      std::fflush(stdout);
    }
    const absl::StatusOr<Outputs>& want = Reference(p);
    if (!want.ok()) {
      ADD_FAILURE() << "the one-device run failed: " << want.status() << "\n" << what;
      continue;
    }
    absl::StatusOr<Outputs> got =
        RunProgram(client(), p, testing::MustDeviceList(client(), devices), &shardings);
    if (absl::IsUnimplemented(got.status())) {
      if (refused++ < 3)
        std::printf("  refused: %s: %s\n", p.Summary().c_str(),
                    std::string(got.status().message()).c_str());
      continue;
    }
    if (!got.ok()) {
      ++failed;
      ADD_FAILURE() << "the sharded run failed: " << got.status() << "\n" << what;
      continue;
    }
    ++compared;
    const std::string diff = Compare(p, *got, *want);
    if (!diff.empty()) {
      ++mismatched;
      ADD_FAILURE() << "sharded run differs from the one-device run:" << diff << "\n" << what;
    }
  }
  std::printf(
      "differential %s: %d programs compared, %d refused as UNIMPLEMENTED, %d failed otherwise, "
      "%d differ\n",
      topology.name.c_str(), compared, refused, failed, mismatched);
  RecordProperty("programs_compared", compared);
  RecordProperty("programs_refused", refused);
}

INSTANTIATE_TEST_SUITE_P(Topologies, DifferentialTest, ::testing::ValuesIn(Topologies()),
                         [](const ::testing::TestParamInfo<Topology>& info) {
                           return info.param.name;
                         });

}  // namespace
}  // namespace tessera
