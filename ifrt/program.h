#ifndef TESSERA_IFRT_PROGRAM_H_
#define TESSERA_IFRT_PROGRAM_H_

// Program: something a Compiler (ifrt/compiler.h) turns into a LoadedExecutable. MlirProgram is a
// global program in MLIR's text form, as JAX's `jit` sees it before partitioning: a `func.func
// @main` over ranked, static-shape tensors (linalg, arith, math, tensor.empty), each argument and
// result optionally carrying its sharding as a `tessera.sharding` attribute:
//
//   func.func @main(%x: tensor<64x32xf32> {tessera.sharding = "mesh{x=4} P(x,None)"},
//                   %w: tensor<32x16xf32>) -> (tensor<64x16xf32> {tessera.sharding = "mesh{x=4}
//                   P(x,None)"})
//
// StableHloProgram is a global program as ML frameworks hand it to their runtime: StableHLO (with
// CHLO) in MLIR's generic op form, as `jax.jit(f, in_shardings=..., out_shardings=...).lower(...)
// .compiler_ir("stablehlo").operation.get_asm(print_generic_op_form=True)` prints it, shardings
// as Shardy attributes (`sdy.mesh`, `sdy.sharding`). docs/computations.md lists what it may use.
//
// Immutable value types; thread-safe.

#include <memory>
#include <string>

namespace tessera {

class Program {
 public:
  virtual ~Program() = default;
  virtual std::string DebugString() const = 0;
};

class MlirProgram final : public Program {
 public:
  explicit MlirProgram(std::string mlir_text) : text_(std::move(mlir_text)) {}
  const std::string& text() const { return text_; }
  // "MlirProgram(<bytes> bytes)" and the first line of the text.
  std::string DebugString() const override;

 private:
  std::string text_;
};

class StableHloProgram final : public Program {
 public:
  explicit StableHloProgram(std::string text) : text_(std::move(text)) {}
  const std::string& text() const { return text_; }
  // "StableHloProgram(<bytes> bytes)" and the first line of the text.
  std::string DebugString() const override;

 private:
  std::string text_;
};

// The program a text holds: a StableHloProgram when it uses StableHLO, CHLO or Shardy ops or
// attributes (it names "stablehlo.", "chlo." or "sdy."), else an MlirProgram. What the C API, the
// Python package and `tessera run` do with a program's text.
std::unique_ptr<Program> ProgramFromText(std::string text);

}  // namespace tessera

#endif  // TESSERA_IFRT_PROGRAM_H_
