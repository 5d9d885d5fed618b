// The transport contract (transport_suite.h), case by case.

#include "tests/conformance/transport_suite.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ifrt/future.h"

namespace tessera::testing {
namespace {

using ::testing::HasSubstr;

// The value element `i` of the message from `from` to `to` holds.
int32_t Pattern(int from, int to, int64_t i) {
  return static_cast<int32_t>(from * 1000000 + to * 1000 + i);
}

// The call's tag base, agreed by every process on equal arguments; -1 (and a failure) otherwise.
int64_t AgreeOnTags(Transport& t, std::string_view op, int64_t messages) {
  absl::StatusOr<int64_t> base = t.Agree(op, /*fingerprint=*/7, messages, absl::OkStatus());
  EXPECT_TRUE(base.ok()) << op << ": " << base.status();
  return base.ok() ? *base : -1;
}

void Identity(Transport& t) {
  const int n = t.process_count(), me = t.process_index();
  ASSERT_GE(n, 2) << "the contract needs at least two participants";
  ASSERT_GE(me, 0);
  ASSERT_LT(me, n);
  absl::StatusOr<std::vector<std::string>> all = t.AllGather(absl::StrCat("participant ", me));
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), static_cast<size_t>(n));
  for (int p = 0; p < n; ++p) EXPECT_EQ((*all)[p], absl::StrCat("participant ", p));
}

void Agreement(Transport& t) {
  const int n = t.process_count(), me = t.process_index();
  // Equal calls: a tag base, and the next call's tags do not overlap this one's.
  absl::StatusOr<int64_t> first = t.Agree("conformance.equal", 42, 3, absl::OkStatus());
  ASSERT_TRUE(first.ok()) << first.status();
  absl::StatusOr<int64_t> second = t.Agree("conformance.equal", 43, 5, absl::OkStatus());
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_GE(*first, 0);
  EXPECT_GE(*second, 0);
  EXPECT_TRUE(*second >= *first + 3 || *second + 5 <= *first)
      << "tag ranges [" << *first << ", +3) and [" << *second << ", +5) overlap";

  // Different fingerprints: INVALID_ARGUMENT on every process.
  absl::StatusOr<int64_t> different =
      t.Agree("conformance.different", 100 + me, 1, absl::OkStatus());
  EXPECT_EQ(different.status().code(), absl::StatusCode::kInvalidArgument) << different.status();

  // The last process refuses: its code and message on every process.
  const absl::Status local =
      me == n - 1 ? absl::FailedPreconditionError(absl::StrCat("refused by participant ", n - 1))
                  : absl::OkStatus();
  absl::StatusOr<int64_t> refused = t.Agree("conformance.refused", 9, 1, local);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition) << refused.status();
  EXPECT_THAT(std::string(refused.status().message()),
              HasSubstr(absl::StrCat("refused by participant ", n - 1)));

  // Agreement still works after refusals.
  EXPECT_GE(AgreeOnTags(t, "conformance.after_refusal", 1), 0);
}

void DenseMessagesBetweenEveryPair(Transport& t) {
  const int n = t.process_count(), me = t.process_index();
  constexpr int64_t kElements = 257;
  const int64_t base = AgreeOnTags(t, "conformance.dense", int64_t{n} * n);
  ASSERT_GE(base, 0);
  auto sent = std::make_shared<std::vector<std::vector<int32_t>>>(n);
  auto received = std::make_shared<std::vector<std::vector<int32_t>>>(n);
  std::vector<Future<>> done;
  // Receives posted before the sends, and in the reverse order of the peers' sends: messages
  // match by (peer, tag), never by the order they were posted in.
  for (int p = n - 1; p >= 0; --p) {
    if (p == me) continue;
    (*received)[p].assign(kElements, -1);
    done.push_back(t.Receive(p, base + p * n + me,
                             HostRegion::Dense((*received)[p].data(), {kElements}, 4), received));
  }
  for (int p = 0; p < n; ++p) {
    if (p == me) continue;
    for (int64_t i = 0; i < kElements; ++i) (*sent)[p].push_back(Pattern(me, p, i));
    done.push_back(t.Send(p, base + me * n + p,
                          HostRegion::Dense((*sent)[p].data(), {kElements}, 4), MakeReadyFuture(),
                          sent));
  }
  for (const Future<>& f : done) EXPECT_TRUE(f.Await().ok()) << f.Await();
  for (int p = 0; p < n; ++p) {
    if (p == me) continue;
    for (int64_t i = 0; i < kElements; ++i) {
      ASSERT_EQ((*received)[p][i], Pattern(p, me, i)) << "from participant " << p << " at " << i;
    }
  }
}

// The 3x4 box at (`row`, `column`) of a row-major int32 array with `columns` columns at `base`.
HostRegion Box3x4(int32_t* base, int64_t columns, int64_t row, int64_t column) {
  HostRegion r;
  r.base = base;
  r.element_bytes = 4;
  r.extent = {3, 4};
  r.byte_strides = {columns * 4, 4};
  r.offset = (row * columns + column) * 4;
  return r;
}

void StridedRegionsMoveTheBoxOnly(Transport& t) {
  const int n = t.process_count(), me = t.process_index();
  const int to = (me + 1) % n, from = (me + n - 1) % n;
  const int64_t base = AgreeOnTags(t, "conformance.strided", n);
  ASSERT_GE(base, 0);
  // Sent: the 3x4 box at (1, 2) of a 5x6 array. Received: into the 3x4 box at (1, 1) of a 4x8
  // array whose other elements must stay -1.
  auto source = std::make_shared<std::vector<int32_t>>(5 * 6);
  for (int64_t i = 0; i < 5 * 6; ++i) (*source)[i] = Pattern(me, to, i);
  const HostRegion send_region = Box3x4(source->data(), /*columns=*/6, /*row=*/1, /*column=*/2);
  auto destination = std::make_shared<std::vector<int32_t>>(4 * 8, -1);
  const HostRegion receive_region =
      Box3x4(destination->data(), /*columns=*/8, /*row=*/1, /*column=*/1);
  Future<> received = t.Receive(from, base + from, receive_region, destination);
  Future<> sent = t.Send(to, base + me, send_region, MakeReadyFuture(), source);
  ASSERT_TRUE(sent.Await().ok()) << sent.Await();
  ASSERT_TRUE(received.Await().ok()) << received.Await();
  for (int64_t r = 0; r < 4; ++r) {
    for (int64_t c = 0; c < 8; ++c) {
      const bool in_box = r >= 1 && r < 4 && c >= 1 && c < 5;
      const int32_t want = in_box ? Pattern(from, me, (r - 1 + 1) * 6 + (c - 1 + 2)) : -1;
      ASSERT_EQ((*destination)[r * 8 + c], want) << "at (" << r << ", " << c << ")";
    }
  }
}

void FailedSourcesAndWrongSizesFailTheReceive(Transport& t) {
  const int n = t.process_count(), me = t.process_index();
  const int to = (me + 1) % n, from = (me + n - 1) % n;
  const int64_t base = AgreeOnTags(t, "conformance.failures", 2 * n);
  ASSERT_GE(base, 0);
  // The empty message of a failed source: the sender's `after` carries an error.
  auto failed_source = std::make_shared<std::vector<int32_t>>(16, 5);
  auto failed_sink = std::make_shared<std::vector<int32_t>>(16, -1);
  Future<> empty_received =
      t.Receive(from, base + from, HostRegion::Dense(failed_sink->data(), {16}, 4), failed_sink);
  Future<> empty_sent =
      t.Send(to, base + me, HostRegion::Dense(failed_source->data(), {16}, 4),
             MakeReadyFuture(absl::DataLossError("the source shard failed")), failed_source);
  static_cast<void>(empty_sent.Await());  // resolves; its status is the sender's business
  EXPECT_EQ(empty_received.Await().code(), absl::StatusCode::kInternal) << empty_received.Await();
  for (int32_t v : *failed_sink) ASSERT_EQ(v, -1) << "a failed message wrote its region";

  // A message of another size than the receive expects: 8 elements sent, 16 awaited.
  auto small = std::make_shared<std::vector<int32_t>>(8, 3);
  auto large = std::make_shared<std::vector<int32_t>>(16, -1);
  Future<> mismatch_received =
      t.Receive(from, base + n + from, HostRegion::Dense(large->data(), {16}, 4), large);
  Future<> mismatch_sent =
      t.Send(to, base + n + me, HostRegion::Dense(small->data(), {8}, 4), MakeReadyFuture(), small);
  static_cast<void>(mismatch_sent.Await());
  EXPECT_EQ(mismatch_received.Await().code(), absl::StatusCode::kInternal)
      << mismatch_received.Await();
}

}  // namespace

void RunTransportContract(Transport& transport) {
  SCOPED_TRACE(
      absl::StrCat("participant ", transport.process_index(), " of ", transport.process_count()));
  // Each case ends with every participant past its last message. A case that fails an ASSERT
  // returns early on that participant, whose peers may then wait in a later collective: the
  // test's timeout (TESSERA_MPI_TIMEOUT_S under mpirun, ctest's otherwise) ends it.
  Identity(transport);
  Agreement(transport);
  DenseMessagesBetweenEveryPair(transport);
  StridedRegionsMoveTheBoxOnly(transport);
  FailedSourcesAndWrongSizesFailTheReceive(transport);
}

}  // namespace tessera::testing
