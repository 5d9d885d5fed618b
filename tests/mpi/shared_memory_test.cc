// tests/mpi/shared_memory_test.cc: copies between processes of one host read the sender's shard
// in place (backends/common/shared_host_memory.h, backends/mpi/mpi_transport.h), run by ctest
// under mpirun with TESSERA_SHM unset (-np 2 and -np 4: every large crossing byte is read from a
// mapped block), TESSERA_SHM=fallback (-np 2: every receiver refuses to map and asks for the
// data) and TESSERA_SHM=0 (-np 2: plain messages). Each process checks its shards bit for bit and
// what the transport counters say moved each byte.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "backends/common/shared_host_memory.h"
#include "backends/mpi/transport_factory.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tessera.h"
#include "tests/ifrt/test_util.h"
#include "tests/mpi/shard_checks.h"
#include "tests/testing/status_matchers.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;
using testing::Pattern;
using testing::StatusIs;

std::shared_ptr<Client>* g_client = nullptr;

enum class Mode { kOn, kFallback, kOff };

Mode ModeFromEnvironment() {
  const char* env = std::getenv("TESSERA_SHM");
  if (env == nullptr) return Mode::kOn;
  if (std::string(env) == "0") return Mode::kOff;
  if (std::string(env) == "fallback") return Mode::kFallback;
  return Mode::kOn;
}

int RankFromEnvironment() {
  const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
  return rank == nullptr ? 0 : std::atoi(rank);
}

int CpuDevicesOf(int process) { return 1 + (process + 1) % 3; }

// The bytes and the messages that cross into this process's shards of `to` from other processes'
// shards of `from` (every pair of shards that overlap is one message).
struct Crossing {
  int64_t bytes = 0;
  int64_t messages = 0;
};
Crossing CrossingInto(const Sharding& from, const Sharding& to, const Shape& shape,
                      int64_t element_bytes) {
  const std::vector<IndexDomain> src = *from.IndexDomains(shape);
  const std::vector<IndexDomain> dst = *to.IndexDomains(shape);
  Crossing c;
  for (size_t d = 0; d < dst.size(); ++d) {
    if (!to.devices()->devices()[d]->IsAddressable()) continue;
    for (size_t s = 0; s < src.size(); ++s) {
      if (from.devices()->devices()[s]->IsAddressable()) continue;
      int64_t n = element_bytes;
      for (size_t k = 0; k < shape.dims().size(); ++k) {
        const int64_t lo = std::max(src[s].origin()[k], dst[d].origin()[k]);
        const int64_t hi = std::min(src[s].origin()[k] + src[s].shape().dims()[k],
                                    dst[d].origin()[k] + dst[d].shape().dims()[k]);
        n *= std::max<int64_t>(0, hi - lo);
      }
      if (n > 0) {
        c.bytes += n;
        ++c.messages;
      }
    }
  }
  return c;
}

class SharedMemoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(g_client, nullptr);
    client_ = g_client->get();
  }
  Client* client_ = nullptr;
};

// 12 MiB of f32, rows to columns: every source shard is at least 1 MiB (a shared block) and every
// crossing box at least 64 KiB (framed), with 2 or 4 processes of 1 to 3 devices each.
TEST_F(SharedMemoryTest, RowsToColumnsReadsEachCrossingByteOnce) {
  const Shape shape({2048, 1536});
  const DType f32(DType::kF32);
  const std::vector<uint8_t> full = Pattern(2048 * 1536 * 4, 3);
  ShardingRef rows = testing::Split(*client_, shape, 0);
  ShardingRef cols = testing::Split(*client_, shape, 1);
  absl::StatusOr<ArrayRef> a = testing::MakeArray(*client_, full, f32, shape, rows);
  ASSERT_TRUE(a.ok()) << a.status();
  const Crossing crossing = CrossingInto(*rows, *cols, shape, 4);
  ASSERT_GT(crossing.messages, 0);
  for (int round = 0; round < 2; ++round) {  // the second one reuses the cached maps
    const MpiTransportCounters before = GetMpiTransportCounters();
    std::vector<ArrayRef> in = {*a};
    absl::StatusOr<std::vector<ArrayRef>> out = client_->ReshardArrays(
        absl::MakeSpan(in), {ArraySpec{f32, shape, cols}}, ArrayCopySemantics::kAlwaysCopy);
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_TRUE((*out)[0]->GetReadyFuture().Await().ok());
    testing::ExpectShards((*out)[0], full, "columns");
    const MpiTransportCounters after = GetMpiTransportCounters();
    const int64_t mapped = after.bytes_received_mapped - before.bytes_received_mapped;
    const int64_t messaged = after.bytes_received_by_message - before.bytes_received_by_message;
    const int64_t fallbacks = after.peer_map_fallbacks - before.peer_map_fallbacks;
    switch (ModeFromEnvironment()) {
      case Mode::kOn:
        EXPECT_EQ(mapped, crossing.bytes);
        EXPECT_EQ(messaged, 0);
        EXPECT_EQ(fallbacks, 0);
        break;
      case Mode::kFallback:
        EXPECT_EQ(mapped, 0);
        EXPECT_EQ(messaged, crossing.bytes);
        EXPECT_EQ(fallbacks, crossing.messages);
        break;
      case Mode::kOff:
        EXPECT_EQ(mapped, 0);
        EXPECT_EQ(messaged, crossing.bytes);
        EXPECT_EQ(fallbacks, 0);
        break;
    }
  }
}

// Columns back to rows, and a reshard of a small array (below the shared and framed sizes) in
// the same run: both paths side by side.
TEST_F(SharedMemoryTest, LargeAndSmallArraysInOneCall) {
  const DType u8(DType::kU8);
  const Shape big({1536, 3072}), small({40, 24});
  const std::vector<uint8_t> full_big = Pattern(1536 * 3072, 5);
  const std::vector<uint8_t> full_small = Pattern(40 * 24, 6);
  absl::StatusOr<ArrayRef> a =
      testing::MakeArray(*client_, full_big, u8, big, testing::Split(*client_, big, 1));
  absl::StatusOr<ArrayRef> b =
      testing::MakeArray(*client_, full_small, u8, small, testing::Split(*client_, small, 1));
  ASSERT_TRUE(a.ok() && b.ok());
  std::vector<ArrayRef> in = {*a, *b};
  absl::StatusOr<std::vector<ArrayRef>> out =
      client_->ReshardArrays(absl::MakeSpan(in),
                             {ArraySpec{u8, big, testing::Split(*client_, big, 0)},
                              ArraySpec{u8, small, testing::Split(*client_, small, 0)}},
                             ArrayCopySemantics::kAlwaysCopy);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_TRUE(client_->GetReadyFuture(*out).Await().ok());
  testing::ExpectShards((*out)[0], full_big, "big rows");
  testing::ExpectShards((*out)[1], full_small, "small rows");
}

// The transport alone, between processes 0 and 1 (the others take part in the collective calls
// only): a strided box out of a shared block into a region of another shape, and a failed source.
class SharedMemoryTransportTest : public SharedMemoryTest {
 protected:
  void SetUp() override {
    SharedMemoryTest::SetUp();
    absl::StatusOr<std::unique_ptr<Transport>> t = CreateMpiTransport();  // collective
    ASSERT_TRUE(t.ok()) << t.status();
    transport_ = *std::move(t);
  }
  void TearDown() override { transport_.reset(); }

  // A shared block (when sharing is on) of `bytes`, filled with `Pattern(bytes, seed)`.
  std::shared_ptr<char> Block(int64_t bytes, uint32_t seed) {
    char* p = static_cast<char*>(backends::AllocateSharedHostMemory(bytes));
    const bool shared = p != nullptr;
    if (!shared) p = static_cast<char*>(std::malloc(bytes));
    const std::vector<uint8_t> fill = Pattern(bytes, seed);
    std::memcpy(p, fill.data(), bytes);
    return std::shared_ptr<char>(p, [shared](char* q) {
      if (!shared || !backends::FreeSharedHostMemory(q)) std::free(q);
    });
  }

  std::unique_ptr<Transport> transport_;
};

TEST_F(SharedMemoryTransportTest, AStridedBoxIntoARegionOfAnotherShape) {
  // Process 0 sends rows 3..258, columns 16..527 of a 512 x 1024 u32 block (512 KiB of it);
  // process 1 receives them as one dense run of 131072 elements (another shape, the same bytes
  // in order, as MPI matches them).
  constexpr int64_t kRows = 512, kCols = 1024, kBoxRows = 256, kBoxCols = 512;
  absl::StatusOr<int64_t> tag = transport_->Agree("test", 7, 1, absl::OkStatus());
  ASSERT_TRUE(tag.ok()) << tag.status();
  const int me = transport_->process_index();
  if (me == 0) {
    std::shared_ptr<char> block = Block(kRows * kCols * 4, 9);
    HostRegion box{block.get(), (3 * kCols + 16) * 4, 4, {kBoxRows, kBoxCols}, {kCols * 4, 4}};
    EXPECT_TRUE(transport_->Send(1, *tag, box, MakeReadyFuture(), block).Await().ok());
  } else if (me == 1) {
    const MpiTransportCounters before = GetMpiTransportCounters();
    std::vector<uint32_t> got(kBoxRows * kBoxCols, 0);
    HostRegion dense{got.data(), 0, 4, {kBoxRows * kBoxCols}, {4}};
    ASSERT_TRUE(transport_->Receive(0, *tag, dense, nullptr).Await().ok());
    const std::vector<uint8_t> fill = Pattern(kRows * kCols * 4, 9);
    for (int64_t r = 0; r < kBoxRows; ++r) {
      ASSERT_EQ(std::memcmp(got.data() + r * kBoxCols, fill.data() + ((3 + r) * kCols + 16) * 4,
                            kBoxCols * 4),
                0)
          << "row " << r;
    }
    const MpiTransportCounters after = GetMpiTransportCounters();
    const int64_t bytes = kBoxRows * kBoxCols * 4;
    if (ModeFromEnvironment() == Mode::kOn) {
      EXPECT_EQ(after.bytes_received_mapped - before.bytes_received_mapped, bytes);
    } else {
      EXPECT_EQ(after.bytes_received_by_message - before.bytes_received_by_message, bytes);
    }
  }
}

TEST_F(SharedMemoryTransportTest, AFailedSourceIsAnErrorForTheReceiverNeverAHang) {
  constexpr int64_t kBytes = int64_t{2} << 20;
  absl::StatusOr<int64_t> tag = transport_->Agree("test", 8, 1, absl::OkStatus());
  ASSERT_TRUE(tag.ok()) << tag.status();
  const int me = transport_->process_index();
  if (me == 0) {
    std::shared_ptr<char> block = Block(kBytes, 1);
    HostRegion region{block.get(), 0, 1, {kBytes}, {1}};
    Future<> sent = transport_->Send(
        1, *tag, region, MakeReadyFuture(absl::DataLossError("the source failed")), block);
    EXPECT_THAT(sent.Await(), StatusIs(absl::StatusCode::kDataLoss, HasSubstr("source failed")));
  } else if (me == 1) {
    std::vector<char> got(kBytes);
    HostRegion region{got.data(), 0, 1, {kBytes}, {1}};
    EXPECT_THAT(transport_->Receive(0, *tag, region, nullptr).Await(),
                StatusIs(absl::StatusCode::kInternal, HasSubstr("did not arrive")));
  }
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const int rank = tessera::RankFromEnvironment();
  absl::StatusOr<std::shared_ptr<tessera::Client>> client =
      tessera::CreateClient({.cpu_devices = tessera::CpuDevicesOf(rank),
                             .cpu_threads_per_device = 1,
                             .vulkan = tessera::VulkanMode::kOff,
                             .transfer_guard = tessera::guard::Policy(),
                             .distributed = tessera::Distributed::kMpi});
  if (!client.ok()) {
    std::fprintf(stderr, "CreateClient: %s\n", std::string(client.status().message()).c_str());
    return 1;
  }
  tessera::g_client = new std::shared_ptr<tessera::Client>(*std::move(client));
  const int result = RUN_ALL_TESTS();
  delete tessera::g_client;  // before MPI finalizes at exit
  return result;
}
