// Zero-copy host buffers at every 16-byte alignment: MakeArrayFromHostBuffer with
// kImmutableZeroCopy uses caller memory in place on a CPU device when it is 16-byte aligned (what
// numpy gives a large array, and so every row block JAX hands the PJRT plugin), not only at 64
// bytes. The CPU kernels that then read it — the vectorized elementwise code, the vectorized row
// reduction, the blocked transpose, the matmul — must give the same bits as from a 64-byte aligned
// copy. Memory aligned to less than 16 bytes is copied, never wrapped.

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tessera.h"
#include "tests/ifrt/test_util.h"

namespace tessera {
namespace {

using ::tessera::testing::StatusIs;

constexpr int kRows = 64, kInner = 96, kCols = 40;

// y = a @ b, the row sums of a, a transposed, a * 2 + 1: one kernel of each kind on one device.
constexpr char kProgram[] = R"mlir(
func.func @main(%a: tensor<64x96xf32> {tessera.sharding = "mesh{x=1} P()"},
                %b: tensor<96x40xf32> {tessera.sharding = "mesh{x=1} P()"})
    -> (tensor<64x40xf32> {tessera.sharding = "mesh{x=1} P()"},
        tensor<64xf32> {tessera.sharding = "mesh{x=1} P()"},
        tensor<96x64xf32> {tessera.sharding = "mesh{x=1} P()"},
        tensor<64x96xf32> {tessera.sharding = "mesh{x=1} P()"}) {
  %zero = arith.constant 0.0 : f32
  %two = arith.constant 2.0 : f32
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<64x40xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<64x40xf32>) -> tensor<64x40xf32>
  %y = linalg.matmul ins(%a, %b : tensor<64x96xf32>, tensor<96x40xf32>)
                     outs(%acc : tensor<64x40xf32>) -> tensor<64x40xf32>
  %re = tensor.empty() : tensor<64xf32>
  %rf = linalg.fill ins(%zero : f32) outs(%re : tensor<64xf32>) -> tensor<64xf32>
  %r = linalg.reduce ins(%a : tensor<64x96xf32>) outs(%rf : tensor<64xf32>) dimensions = [1]
    (%in: f32, %s: f32) {
      %t = arith.addf %in, %s : f32
      linalg.yield %t : f32
    }
  %te = tensor.empty() : tensor<96x64xf32>
  %t = linalg.transpose ins(%a : tensor<64x96xf32>) outs(%te : tensor<96x64xf32>)
                        permutation = [1, 0]
  %me = tensor.empty() : tensor<64x96xf32>
  %m = linalg.map ins(%a : tensor<64x96xf32>) outs(%me : tensor<64x96xf32>)
    (%x: f32, %unused: f32) {
      %p = arith.mulf %x, %two : f32
      %q = arith.addf %p, %one : f32
      linalg.yield %q : f32
    }
  return %y, %r, %t, %m : tensor<64x40xf32>, tensor<64xf32>, tensor<96x64xf32>, tensor<64x96xf32>
}
)mlir";

// Values that are multiples of 1/8 below 2: every sum and product here is exact in any order.
std::vector<float> Values(int64_t n, uint32_t seed) {
  std::vector<float> v(n);
  uint32_t x = seed * 2654435761u + 1;
  for (float& f : v) {
    x = x * 1664525u + 1013904223u;
    f = static_cast<float>(static_cast<int>(x >> 27) - 16) / 8.0f;
  }
  return v;
}

// `values` at byte offset `offset` from a 64-byte aligned block.
struct PlacedHostBuffer {
  PlacedHostBuffer(const std::vector<float>& values, int offset)
      : block(static_cast<char*>(std::aligned_alloc(64, 64 + values.size() * sizeof(float))),
              &std::free),
        data(reinterpret_cast<float*>(block.get() + offset)) {
    std::memcpy(data, values.data(), values.size() * sizeof(float));
  }
  std::unique_ptr<char, decltype(&std::free)> block;
  float* data;
};

class ZeroCopyAlignmentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(client_, testing::CreateCpuTestClient(1));
    ASSERT_OK_AND_ASSIGN(DeviceListRef devices, client_->MakeDeviceList(client_->devices()));
    CompileOptions options;
    options.devices = devices;
    ASSERT_OK_AND_ASSIGN(exe_, client_->GetDefaultCompiler()->Compile(
                                   std::make_unique<MlirProgram>(kProgram), options));
  }

  ArrayRef Put(const float* data, std::vector<int64_t> dims, HostBufferSemantics semantics,
               std::function<void()> on_done = nullptr) {
    absl::StatusOr<ArrayRef> a = client_->MakeArrayFromHostBuffer(
        data, DType(DType::kF32), Shape(std::move(dims)), std::nullopt,
        SingleDeviceSharding::Create(client_->devices()[0], MemoryKind()), semantics,
        std::move(on_done));
    EXPECT_OK(a.status());
    return *a;
  }

  // The program's four results, as bytes.
  std::vector<std::vector<uint8_t>> Run(const ArrayRef& a, const ArrayRef& b) {
    std::vector<ArrayRef> args = {a, b};
    absl::StatusOr<ExecuteResult> result = exe_->Execute(absl::MakeSpan(args));
    EXPECT_OK(result.status());
    std::vector<std::vector<uint8_t>> out;
    for (const ArrayRef& o : result->outputs) {
      std::vector<uint8_t> bytes(o->shape().num_elements() * sizeof(float));
      EXPECT_OK(
          o->CopyToHostBuffer(bytes.data(), std::nullopt, ArrayCopySemantics::kAlwaysCopy).Await());
      out.push_back(std::move(bytes));
    }
    return out;
  }

  std::shared_ptr<Client> client_;
  LoadedExecutableRef exe_;
};

TEST_F(ZeroCopyAlignmentTest, KernelsReadWrappedMemoryAtEvery16ByteAlignment) {
  const std::vector<float> a = Values(kRows * kInner, 1), b = Values(kInner * kCols, 2);
  const std::vector<std::vector<uint8_t>> want =
      Run(Put(a.data(), {kRows, kInner}, HostBufferSemantics::kImmutableOnlyDuringCall),
          Put(b.data(), {kInner, kCols}, HostBufferSemantics::kImmutableOnlyDuringCall));
  ASSERT_EQ(want.size(), 4u);
  for (int offset : {0, 16, 32, 48}) {
    SCOPED_TRACE(::testing::Message() << "inputs at 64n + " << offset << " bytes");
    PlacedHostBuffer ha(a, offset), hb(b, 48 - offset);
    int released = 0;
    ArrayRef wa = Put(ha.data, {kRows, kInner}, HostBufferSemantics::kImmutableZeroCopy,
                      [&released] { ++released; });
    ArrayRef wb = Put(hb.data, {kInner, kCols}, HostBufferSemantics::kImmutableZeroCopy,
                      [&released] { ++released; });
    // Used in place: the arrays' bytes are the caller's.
    ASSERT_OK_AND_ASSIGN(std::shared_ptr<void> ra, wa->AcquireExternalReference());
    ASSERT_OK_AND_ASSIGN(std::shared_ptr<void> rb, wb->AcquireExternalReference());
    EXPECT_EQ(ra.get(), static_cast<void*>(ha.data));
    EXPECT_EQ(rb.get(), static_cast<void*>(hb.data));
    const std::vector<std::vector<uint8_t>> got = Run(wa, wb);
    ASSERT_EQ(got.size(), 4u);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(got[i], want[i]) << "result " << i;
    // Never written: the caller's memory still holds the inputs.
    EXPECT_EQ(std::memcmp(ha.data, a.data(), a.size() * sizeof(float)), 0);
    EXPECT_EQ(std::memcmp(hb.data, b.data(), b.size() * sizeof(float)), 0);
    EXPECT_EQ(released, 0);
    ra.reset();
    rb.reset();
    wa.reset();
    wb.reset();
    EXPECT_TRUE(testing::Eventually([&] { return released == 2; }))
        << "each wrapped buffer released once";
  }
}

TEST_F(ZeroCopyAlignmentTest, MemoryAlignedToLessThan16BytesIsCopied) {
  const std::vector<float> a = Values(kRows * kInner, 3);
  for (int offset : {4, 8, 12, 20}) {
    SCOPED_TRACE(::testing::Message() << "input at 64n + " << offset << " bytes");
    PlacedHostBuffer ha(a, offset);
    int released = 0;
    ArrayRef wa = Put(ha.data, {kRows, kInner}, HostBufferSemantics::kImmutableZeroCopy,
                      [&released] { ++released; });
    ASSERT_OK(wa->GetReadyFuture().Await());
    ASSERT_OK_AND_ASSIGN(std::shared_ptr<void> ra, wa->AcquireExternalReference());
    EXPECT_NE(ra.get(), static_cast<void*>(ha.data));
    EXPECT_EQ(std::memcmp(ra.get(), a.data(), a.size() * sizeof(float)), 0);
    EXPECT_TRUE(testing::Eventually([&] { return released == 1; }))
        << "a copy releases the caller's buffer once read";
  }
}

}  // namespace
}  // namespace tessera
