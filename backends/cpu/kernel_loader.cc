#include "backends/cpu/kernel_loader.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "backends/cpu/kernel_scratch.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"

#ifdef TESSERA_CPU_BLAS
#include <cblas.h>  // OpenBLAS's (Debian: libopenblas-dev)

#include "backends/cpu/sgemm_choice.h"
#include "backends/cpu/shared_sgemm.h"
#include "backends/cpu/streaming_sgemm.h"
#endif

namespace tessera {
namespace {

std::string ErrorText(llvm::Error error) { return llvm::toString(std::move(error)); }

#ifdef TESSERA_CPU_BLAS
// A 2-D strided memref descriptor, as MLIR's C interface passes it.
template <typename T>
struct Memref2D {
  T* allocated;
  T* aligned;
  int64_t offset;
  int64_t sizes[2];
  int64_t strides[2];
};

// Which operands the compiler passes stored transposed (cpu_codegen.cc's `transposes` argument).
constexpr int64_t kATransposed = 1, kBTransposed = 2;

// C = beta * C + A @ B (beta 0 or 1) for the compiler's tessera_blas_{s,d}gemm{,_overwrite} calls
// (compiler/targets/llvm_cpu/cpu_codegen.cc): inner strides are 1 (the compiler casts to
// strided<[?, 1]>); A is stored (k, m) where `transposes` has kATransposed, B (n, k) where it has
// kBTransposed. Sizes BLAS cannot take (over INT_MAX) or cannot describe (an empty dimension) run
// as plain loops.
template <typename T, typename Gemm>
void Gemm2D(Memref2D<T>* a, Memref2D<T>* b, Memref2D<T>* c, T beta, int64_t transposes, Gemm gemm) {
  const bool ta = (transposes & kATransposed) != 0, tb = (transposes & kBTransposed) != 0;
  const int64_t m = c->sizes[0], n = c->sizes[1], k = a->sizes[ta ? 0 : 1];
  T* pa = a->aligned + a->offset;
  T* pb = b->aligned + b->offset;
  T* pc = c->aligned + c->offset;
  const int64_t lda = a->strides[0], ldb = b->strides[0], ldc = c->strides[0];
  auto fits = [](int64_t v) { return v > 0 && v <= INT_MAX; };
  if (fits(m) && fits(n) && fits(k) && fits(lda) && fits(ldb) && fits(ldc)) {
    gemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k,
         T(1), pa, lda, pb, ldb, beta, pc, ldc);
    return;
  }
  for (int64_t i = 0; i < m; ++i) {
    if (beta == T(0)) std::fill(pc + i * ldc, pc + i * ldc + n, T(0));
    for (int64_t p = 0; p < k; ++p) {
      const T x = ta ? pa[p * lda + i] : pa[i * lda + p];
      for (int64_t j = 0; j < n; ++j)
        pc[i * ldc + j] += x * (tb ? pb[j * ldb + p] : pb[p * ldb + j]);
    }
  }
}

// The kernels SgemmChooser times: C = A @ B, packed.
void StreamingOverwrite(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c) {
  cpu::StreamingSgemmOverwrite(m, n, k, a, k, b, n, c, n);
}
void BlasOverwrite(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m), static_cast<int>(n),
              static_cast<int>(k), 1.0f, a, static_cast<int>(k), b, static_cast<int>(n), 0.0f, c,
              static_cast<int>(n));
}

// TESSERA_CPU_SGEMM's policy, read once; LoadCpuKernel fails on a value it does not name.
const absl::StatusOr<cpu::SgemmPolicy>& ProcessSgemmPolicy() {
  static const auto* policy = new absl::StatusOr<cpu::SgemmPolicy>(
      cpu::SgemmPolicyFromText(std::getenv("TESSERA_CPU_SGEMM")));
  return *policy;
}

// The process's choice between them (sgemm_choice.h).
cpu::SgemmChooser& ProcessSgemmChooser() {
  static auto* chooser =
      new cpu::SgemmChooser(&StreamingOverwrite, &BlasOverwrite,
                            ProcessSgemmPolicy().value_or(cpu::SgemmPolicy::kMeasure));
  return *chooser;
}

// f32 with few rows (a sharded batch) may stream B instead of letting OpenBLAS pack it (see
// streaming_sgemm.h), where that is faster on this machine (sgemm_choice.h), in blocks idle device
// threads may share (shared_sgemm.h); the rest, and every matmul with a transposed operand, goes
// to OpenBLAS.
void Sgemm(Memref2D<float>* a, Memref2D<float>* b, Memref2D<float>* c, bool accumulate,
           int64_t transposes) {
  // (m, n, k) as stored when nothing is transposed, the only case the streaming kernel takes.
  const int64_t m = c->sizes[0], n = c->sizes[1], k = transposes == 0 ? a->sizes[1] : 0;
  if (transposes == 0 && cpu::StreamingSgemmUsable(m, n, k) &&
      ProcessSgemmChooser().Choose(m, n, k) == cpu::SgemmKernel::kStreaming) {
    cpu::SharedStreamingSgemm(m, n, k, a->aligned + a->offset, a->strides[0],
                              b->aligned + b->offset, b->strides[0], c->aligned + c->offset,
                              c->strides[0], accumulate);
    return;
  }
  Gemm2D(a, b, c, accumulate ? 1.0f : 0.0f, transposes, cblas_sgemm);
}

// C += A @ B.
extern "C" void TesseraBlasSgemm(Memref2D<float>* a, Memref2D<float>* b, Memref2D<float>* c,
                                 int64_t transposes) {
  Sgemm(a, b, c, /*accumulate=*/true, transposes);
}
extern "C" void TesseraBlasDgemm(Memref2D<double>* a, Memref2D<double>* b, Memref2D<double>* c,
                                 int64_t transposes) {
  Gemm2D(a, b, c, 1.0, transposes, cblas_dgemm);
}
// C = A @ B: a matmul whose init was a fill of +0.0 (the compiler dropped the fill).
extern "C" void TesseraBlasSgemmOverwrite(Memref2D<float>* a, Memref2D<float>* b,
                                          Memref2D<float>* c, int64_t transposes) {
  Sgemm(a, b, c, /*accumulate=*/false, transposes);
}
extern "C" void TesseraBlasDgemmOverwrite(Memref2D<double>* a, Memref2D<double>* b,
                                          Memref2D<double>* c, int64_t transposes) {
  Gemm2D(a, b, c, 0.0, transposes, cblas_dgemm);
}
#endif

// The allocation functions of the kernels' temporaries (MLIR's generic allocation functions,
// compiler/targets/llvm_cpu/cpu_codegen.cc): the per-thread cache of kernel_scratch.h.
extern "C" void* TesseraScratchAlloc(size_t bytes) { return cpu::ScratchAllocate(64, bytes); }
extern "C" void* TesseraScratchAlignedAlloc(size_t alignment, size_t bytes) {
  return cpu::ScratchAllocate(alignment, bytes);
}
extern "C" void TesseraScratchFree(void* block) { cpu::ScratchFree(block); }

// The symbols every kernel may call besides libc and libm: the allocation functions of its
// temporaries and, with OpenBLAS, the matmuls. OpenBLAS runs each call on its caller's thread
// (each device's kernel already has one).
llvm::orc::SymbolMap KernelSymbols(llvm::orc::MangleAndInterner interner) {
  llvm::orc::SymbolMap symbols;
  auto bind = [&](const char* name, auto* function) {
    symbols[interner(name)] = {llvm::orc::ExecutorAddr::fromPtr(function),
                               llvm::JITSymbolFlags::Exported};
  };
  bind("_mlir_memref_to_llvm_alloc", &TesseraScratchAlloc);
  bind("_mlir_memref_to_llvm_aligned_alloc", &TesseraScratchAlignedAlloc);
  bind("_mlir_memref_to_llvm_free", &TesseraScratchFree);
#ifdef TESSERA_CPU_BLAS
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
  bind("_mlir_ciface_tessera_blas_sgemm", &TesseraBlasSgemm);
  bind("_mlir_ciface_tessera_blas_dgemm", &TesseraBlasDgemm);
  bind("_mlir_ciface_tessera_blas_sgemm_overwrite", &TesseraBlasSgemmOverwrite);
  bind("_mlir_ciface_tessera_blas_dgemm_overwrite", &TesseraBlasDgemmOverwrite);
#endif
  return symbols;
}

class JitCpuKernel final : public CpuKernel {
 public:
  JitCpuKernel(std::string entry, unsigned num_llvm_args,
               std::unique_ptr<mlir::MLIRContext> context,
               std::unique_ptr<mlir::ExecutionEngine> engine, void (*function)(void**))
      : entry_(std::move(entry)),
        num_llvm_args_(num_llvm_args),
        context_(std::move(context)),
        engine_(std::move(engine)),
        function_(function) {}

  absl::Status Run(absl::Span<void* const> buffers, absl::Span<const Shape> shapes,
                   absl::Span<const int64_t> device_position) const override;
  const std::string& entry() const override { return entry_; }

 private:
  std::string entry_;
  unsigned num_llvm_args_;
  std::unique_ptr<mlir::MLIRContext> context_;
  std::unique_ptr<mlir::ExecutionEngine> engine_;
  void (*function_)(void**);
};

absl::Status JitCpuKernel::Run(absl::Span<void* const> buffers, absl::Span<const Shape> shapes,
                               absl::Span<const int64_t> device_position) const {
  if (buffers.size() != shapes.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(entry_, ": ", buffers.size(), " buffers but ", shapes.size(), " shapes"));
  }
  size_t num_scalars = device_position.size();
  for (const Shape& shape : shapes) num_scalars += 3 + 2 * shape.dims().size();
  if (num_scalars != num_llvm_args_) {
    return absl::InvalidArgumentError(
        absl::StrCat(entry_, ": the buffers' ranks and the device position make ", num_scalars,
                     " arguments, the kernel takes ", num_llvm_args_));
  }
  // Every descriptor field lives in `pointers` or `integers`; `args` points at each field. Both
  // are sized before any address is taken (on the stack for a few small buffers).
  absl::InlinedVector<void*, 16> pointers(2 * buffers.size());
  absl::InlinedVector<int64_t, 48> integers(num_scalars);
  absl::InlinedVector<void*, 64> args;
  args.reserve(num_scalars);
  size_t next_integer = 0;
  auto push_integer = [&](int64_t value) {
    integers[next_integer] = value;
    args.push_back(&integers[next_integer++]);
  };
  for (size_t i = 0; i < buffers.size(); ++i) {
    absl::Span<const int64_t> dims = shapes[i].dims();
    if (buffers[i] == nullptr && shapes[i].num_elements() != 0) {
      return absl::InvalidArgumentError(absl::StrCat(entry_, ": buffer ", i, " is null"));
    }
    pointers[2 * i] = pointers[2 * i + 1] = buffers[i];
    args.push_back(&pointers[2 * i]);      // allocated
    args.push_back(&pointers[2 * i + 1]);  // aligned
    push_integer(0);                       // offset
    for (int64_t dim : dims) push_integer(dim);
    // Row-major strides: stride[d] is the product of dims[d+1:].
    const size_t first_stride = next_integer;
    for (size_t d = 0; d < dims.size(); ++d) push_integer(1);
    for (size_t d = dims.size(); d-- > 1;) {
      integers[first_stride + d - 1] = integers[first_stride + d] * dims[d];
    }
  }
  for (int64_t coordinate : device_position) push_integer(coordinate);
  // The kernel returns at once when a temporary cannot be allocated; the run frees the others.
  cpu::ScratchRun run;
  function_(args.data());
  if (std::optional<size_t> bytes = run.failed_bytes()) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot allocate a temporary buffer of ", *bytes, " bytes of host memory"));
  }
  return absl::OkStatus();
}

void InitializeNativeTargetOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
}

std::unique_ptr<mlir::MLIRContext> CreateLlvmContext() {
  mlir::DialectRegistry registry;
  registry.insert<mlir::LLVM::LLVMDialect>();
  mlir::registerBuiltinDialectTranslation(registry);
  mlir::registerLLVMDialectTranslation(registry);
  return std::make_unique<mlir::MLIRContext>(registry, mlir::MLIRContext::Threading::DISABLED);
}

// The host's target machine at -O3 with its CPU's features.
absl::StatusOr<std::unique_ptr<llvm::TargetMachine>> HostTargetMachine() {
  llvm::Expected<llvm::orc::JITTargetMachineBuilder> builder =
      llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!builder) return absl::InternalError(ErrorText(builder.takeError()));
  builder->setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
  llvm::Expected<std::unique_ptr<llvm::TargetMachine>> machine = builder->createTargetMachine();
  if (!machine) return absl::InternalError(ErrorText(machine.takeError()));
  return std::move(*machine);
}

}  // namespace

absl::StatusOr<std::shared_ptr<CpuKernel>> LoadCpuKernel(const KernelArtifact& artifact) {
  if (artifact.format != "mlir-llvm") {
    return absl::InvalidArgumentError(
        absl::StrCat("the CPU loads \"mlir-llvm\" kernels, not \"", artifact.format, "\""));
  }
#ifdef TESSERA_CPU_BLAS
  if (!ProcessSgemmPolicy().ok()) return ProcessSgemmPolicy().status();
#endif
  InitializeNativeTargetOnce();
  std::unique_ptr<mlir::MLIRContext> context = CreateLlvmContext();
  std::string diagnostics;
  mlir::ScopedDiagnosticHandler handler(context.get(), [&](mlir::Diagnostic& diagnostic) {
    absl::StrAppend(&diagnostics, diagnostics.empty() ? "" : "; ", diagnostic.str());
    return mlir::success();
  });
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(artifact.code, mlir::ParserConfig(context.get()));
  if (!module) {
    return absl::InvalidArgumentError(
        absl::StrCat("kernel ", artifact.entry, " does not parse: ", diagnostics));
  }
  auto entry = module->lookupSymbol<mlir::LLVM::LLVMFuncOp>(artifact.entry);
  if (!entry || entry.isExternal()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the kernel module has no function @", artifact.entry));
  }
  unsigned num_llvm_args = entry.getNumArguments();

  absl::StatusOr<std::unique_ptr<llvm::TargetMachine>> machine = HostTargetMachine();
  if (!machine.ok()) return machine.status();
  mlir::ExecutionEngineOptions options;
  auto transformer =
      mlir::makeOptimizingTransformer(/*optLevel=*/3, /*sizeLevel=*/0, machine->get());
  options.transformer = transformer;
  options.jitCodeGenOptLevel = llvm::CodeGenOptLevel::Aggressive;
  options.enableGDBNotificationListener = false;
  auto engine = mlir::ExecutionEngine::create(*module, options, *std::move(machine));
  if (!engine) {
    return absl::InternalError(absl::StrCat("JIT compiling ", artifact.entry, ": ",
                                            ErrorText(engine.takeError()), " ", diagnostics));
  }
  (*engine)->registerSymbols(KernelSymbols);
  auto function = (*engine)->lookupPacked(artifact.entry);
  if (!function) {
    return absl::InternalError(absl::StrCat("no packed entry for ", artifact.entry, ": ",
                                            ErrorText(function.takeError())));
  }
  return std::shared_ptr<CpuKernel>(std::make_shared<JitCpuKernel>(
      artifact.entry, num_llvm_args, std::move(context), std::move(*engine), *function));
}

}  // namespace tessera
