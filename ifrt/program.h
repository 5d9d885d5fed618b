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
// Immutable value types; thread-safe.

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

}  // namespace tessera

#endif  // TESSERA_IFRT_PROGRAM_H_
