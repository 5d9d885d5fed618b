#include "backends/mpi/mpi_transport.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <numeric>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "backends/common/parallel_memcpy.h"
#include "backends/common/shared_host_memory.h"
#include "backends/mpi/region_type.h"
#include "backends/mpi/transport_factory.h"
#include "base/status_macros.h"
#include "ifrt/strided_copy.h"
#include "oneapi/tbb/task_arena.h"

namespace tessera::mpi {
namespace {

// The bytes of a refusal's broadcast: its status code, then its message (cut to fit).
constexpr int kMessageBytes = 1024;
constexpr uint64_t kNoRefusal = std::numeric_limits<uint64_t>::max();

std::mutex& RegistryMutex() {
  static std::mutex* mu = new std::mutex();
  return *mu;
}
std::set<MpiTransport*>& Registry() {
  static std::set<MpiTransport*>* live = new std::set<MpiTransport*>();
  return *live;
}

// At exit, when this library initialized MPI: the transports' threads stop, then MPI finalizes
// (mpirun treats a process that exits without MPI_Finalize as failed).
void FinalizeAtExit() {
  MpiTransport::StopAll();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

// Maps of other processes' blocks kept per transport.
constexpr int64_t kMaxMappedBytes = int64_t{8} << 30;
constexpr int kMaxMappings = 256;

// The process-wide counters (transport_factory.h).
std::atomic<int64_t> g_bytes_received_mapped{0};
std::atomic<int64_t> g_bytes_received_by_message{0};
std::atomic<int64_t> g_peer_map_fallbacks{0};

// TESSERA_SHM: "0" off, "fallback" on but never mapped by receivers, else on.
std::string ShmSetting() {
  const char* env = std::getenv("TESSERA_SHM");
  return env == nullptr ? "" : env;
}

// The bytes of `r` relative to its first element: [*lo, *hi).
void RegionSpan(const HostRegion& r, int64_t* lo, int64_t* hi) {
  *lo = 0;
  *hi = r.element_bytes;
  for (size_t d = 0; d < r.extent.size(); ++d) {
    const int64_t step = (r.extent[d] - 1) * r.byte_strides[d];
    (step < 0 ? *lo : *hi) += step;
  }
}

// A copy between two regions of the same extent and element size, at their offsets.
StridedCopy Between(const HostRegion& src, const HostRegion& dst) {
  StridedCopy c;
  c.element_bytes = src.element_bytes;
  c.extent = src.extent;
  c.src_offset = src.offset;
  c.src_byte_strides = src.byte_strides;
  c.dst_offset = dst.offset;
  c.dst_byte_strides = dst.byte_strides;
  return c;
}

// The parallel memcpy, in an arena of the transports' own: while the communication thread waits
// for the copy's parts it can only pick up parts of the copy, never other work of the default
// arena (which might wait for this very thread).
void CopyInArena(const void* src, void* dst, const StridedCopy& c) {
  static tbb::task_arena* arena = new tbb::task_arena();
  arena->execute([&] { backends::StridedMemcpy(src, dst, c); });
}

absl::Status NotArrived(int peer, int tag, const std::string& why) {
  return absl::InternalError(
      absl::StrCat("the part sent by process ", peer, " (tag ", tag, ") did not arrive: ", why));
}

}  // namespace

// The first message of a framed send (mpi_transport.h).
struct MpiTransport::Frame {
  static constexpr uint32_t kMagic = 0x54534846;  // "TSHF"
  static constexpr int kMaxRank = 16;
  enum Kind : uint32_t { kData = 1, kShared = 2 };
  uint32_t magic = kMagic;
  uint32_t kind = kData;
  int64_t bytes = 0;  // the region's
  // kShared: the block (PeerBlock) and the region in it.
  int64_t pid = 0;
  int64_t fd = -1;
  uint64_t generation = 0;
  uint64_t inode = 0;
  int64_t block_size = 0;
  int64_t offset = 0;  // of the region's first element in the block
  int64_t element_bytes = 1;
  int64_t rank = 0;
  int64_t extent[kMaxRank] = {};
  int64_t byte_strides[kMaxRank] = {};
};

// Which processes share this one's host.
struct MpiTransport::Topology {
  std::vector<bool> same_host;
  bool map_peers = true;
};

// Acknowledgements of a kShared frame.
enum : int64_t { kAckCopied = 0, kAckSendData = 1 };

struct MpiTransport::Operation {
  enum class Kind { kSend, kReceive, kAgree };
  // Sends and receives: what the posted request is.
  enum class Stage { kStart, kEmpty, kData, kFrame, kAck, kDiscard };
  Kind kind = Kind::kSend;
  std::string what;  // for errors and timeouts
  MPI_Request request = MPI_REQUEST_NULL;
  Clock::time_point posted;
  int stage = 0;

  // Send and receive.
  int peer = 0;
  int tag = 0;
  HostRegion region;
  std::shared_ptr<void> keep_alive;
  absl::Status after_status;  // a send's source
  MPI_Datatype type = MPI_DATATYPE_NULL;
  bool framed = false;
  Stage where = Stage::kStart;
  Frame frame;
  int64_t ack = kAckCopied;
  std::vector<char> discard;  // a data message of another size than the region
  absl::Status status;
  Promise<> done;

  // Agree.
  std::string op_name;
  absl::Status local;
  int64_t messages = 0;
  uint64_t in[3] = {0, 0, 0};
  uint64_t out[3] = {0, 0, 0};
  char message[kMessageBytes] = {};
  Promise<int64_t> agreed;
};

// Which ranks of `comm` run on this host (collective). Framing is on only when every process
// allows it (TESSERA_SHM is not "0" anywhere), so that both sides of a message agree on it.
MpiTransport::Topology MpiTransport::HostTopology(MPI_Comm comm, int rank, int size) {
  Topology t;
  t.same_host.assign(size, false);
  const std::string setting = ShmSetting();
  t.map_peers = setting != "fallback";
  int mine = setting == "0" ? 0 : 1, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, comm);
  MPI_Comm node;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  int node_size = 1;
  MPI_Comm_size(node, &node_size);
  MPI_Group world_group, node_group;
  MPI_Comm_group(comm, &world_group);
  MPI_Comm_group(node, &node_group);
  std::vector<int> node_ranks(node_size), world_ranks(node_size);
  std::iota(node_ranks.begin(), node_ranks.end(), 0);
  MPI_Group_translate_ranks(node_group, node_size, node_ranks.data(), world_group,
                            world_ranks.data());
  MPI_Group_free(&world_group);
  MPI_Group_free(&node_group);
  MPI_Comm_free(&node);
  if (all == 0 || node_size < 2) return t;
  for (int r : world_ranks) {
    if (r != rank && r >= 0 && r < size) t.same_host[r] = true;
  }
  backends::EnableSharedHostMemory();
  return t;
}

absl::StatusOr<std::unique_ptr<MpiTransport>> MpiTransport::Create(
    const MpiTransportOptions& options) {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return absl::FailedPreconditionError("MPI has already been finalized");
  int initialized = 0;
  MPI_Initialized(&initialized);
  int provided = 0;
  if (!initialized) {
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) {
      return absl::UnavailableError("MPI_Init_thread failed");
    }
    std::atexit(FinalizeAtExit);
  } else {
    MPI_Query_thread(&provided);
  }
  if (provided < MPI_THREAD_SERIALIZED) {
    return absl::FailedPreconditionError(absl::StrCat(
        "MPI was initialized with thread level ", provided,
        "; a Tessera client needs at least MPI_THREAD_SERIALIZED (it calls MPI from its own "
        "communication thread)"));
  }
  MPI_Comm comm;
  if (MPI_Comm_dup(MPI_COMM_WORLD, &comm) != MPI_SUCCESS) {
    return absl::UnavailableError("MPI_Comm_dup(MPI_COMM_WORLD) failed");
  }
  MPI_Comm ack_comm;
  if (MPI_Comm_dup(comm, &ack_comm) != MPI_SUCCESS) {
    return absl::UnavailableError("MPI_Comm_dup failed");
  }
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  Topology topology = HostTopology(comm, rank, size);
  std::unique_ptr<MpiTransport> t(
      new MpiTransport(comm, ack_comm, rank, size, std::move(topology), options.timeout_s));
  std::lock_guard<std::mutex> lock(RegistryMutex());
  Registry().insert(t.get());
  return t;
}

namespace {
int TagUpperBound(MPI_Comm comm) {
  int* ub = nullptr;
  int flag = 0;
  MPI_Comm_get_attr(comm, MPI_TAG_UB, &ub, &flag);
  return flag && ub != nullptr ? *ub : 32767;
}
}  // namespace

MpiTransport::MpiTransport(MPI_Comm comm, MPI_Comm ack_comm, int rank, int size, Topology topology,
                           double timeout_s)
    : comm_(comm),
      ack_comm_(ack_comm),
      rank_(rank),
      size_(size),
      same_host_(std::move(topology.same_host)),
      map_peers_(topology.map_peers),
      tag_ub_(TagUpperBound(comm)),
      timeout_s_(timeout_s),
      mappings_(kMaxMappedBytes, kMaxMappings) {}

MpiTransport::~MpiTransport() {
  {
    std::lock_guard<std::mutex> lock(RegistryMutex());
    Registry().erase(this);
  }
  const Clock::time_point start = Clock::now();
  while (pending_sends_.load() > 0 &&
         (timeout_s_ <= 0 ||
          std::chrono::duration<double>(Clock::now() - start).count() < timeout_s_)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  Stop();
  MPI_Comm comm = comm_, ack_comm = ack_comm_;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) {
    MPI_Comm_free(&comm);
    MPI_Comm_free(&ack_comm);
  }
}

void MpiTransport::StopAll() {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  for (MpiTransport* t : Registry()) t->Stop();
}

void MpiTransport::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

absl::StatusOr<std::vector<std::string>> MpiTransport::AllGather(const std::string& local) {
  std::vector<int> sizes(size_);
  const int mine = static_cast<int>(local.size());
  if (MPI_Allgather(&mine, 1, MPI_INT, sizes.data(), 1, MPI_INT, comm_) != MPI_SUCCESS) {
    return absl::UnavailableError("MPI_Allgather failed");
  }
  std::vector<int> displs(size_);
  int64_t total = 0;
  for (int i = 0; i < size_; ++i) {
    displs[i] = static_cast<int>(total);
    total += sizes[i];
  }
  std::string all(total, '\0');
  if (MPI_Allgatherv(local.data(), mine, MPI_CHAR, all.data(), sizes.data(), displs.data(),
                     MPI_CHAR, comm_) != MPI_SUCCESS) {
    return absl::UnavailableError("MPI_Allgatherv failed");
  }
  std::vector<std::string> out(size_);
  for (int i = 0; i < size_; ++i) out[i] = all.substr(displs[i], sizes[i]);
  return out;
}

absl::StatusOr<int64_t> MpiTransport::Agree(std::string_view op, uint64_t fingerprint,
                                            int64_t messages, const absl::Status& local) {
  auto o = std::make_shared<Operation>();
  o->kind = Operation::Kind::kAgree;
  o->what = absl::StrCat("the agreement of ", std::string(op));
  o->op_name = std::string(op);
  o->local = local;
  o->messages = messages;
  o->in[0] = local.ok() ? kNoRefusal : static_cast<uint64_t>(rank_);
  o->in[1] = fingerprint;
  o->in[2] = ~fingerprint;
  if (!local.ok()) {
    o->message[0] = static_cast<char>(local.code());
    const size_t n = std::min<size_t>(local.message().size(), kMessageBytes - 2);
    std::memcpy(o->message + 1, local.message().data(), n);
  }
  Future<int64_t> result = o->agreed.future();
  Submit(std::move(o));
  return result.Await();
}

std::shared_ptr<MpiTransport::Operation> MpiTransport::NewMessage(
    bool send, int peer, int64_t tag, HostRegion region, std::shared_ptr<void> keep_alive) {
  auto o = std::make_shared<Operation>();
  o->kind = send ? Operation::Kind::kSend : Operation::Kind::kReceive;
  o->what = send ? absl::StrCat("a send of ", region.bytes(), " bytes to process ", peer)
                 : absl::StrCat("a receive of ", region.bytes(), " bytes from process ", peer);
  o->peer = peer;
  o->tag = static_cast<int>(tag % (static_cast<int64_t>(tag_ub_) + 1));
  o->region = std::move(region);
  o->keep_alive = std::move(keep_alive);
  o->framed = Framed(peer, o->region);
  return o;
}

Future<> MpiTransport::Send(int peer, int64_t tag, HostRegion region, Future<> after,
                            std::shared_ptr<void> keep_alive) {
  std::shared_ptr<Operation> o =
      NewMessage(/*send=*/true, peer, tag, std::move(region), std::move(keep_alive));
  Future<> done = o->done.future();
  pending_sends_.fetch_add(1);
  after.OnReady([this, o](const absl::Status& s) mutable {
    o->after_status = s;
    Submit(std::move(o));
    pending_sends_.fetch_sub(1);
  });
  return done;
}

Future<> MpiTransport::Receive(int peer, int64_t tag, HostRegion region,
                               std::shared_ptr<void> keep_alive) {
  std::shared_ptr<Operation> o =
      NewMessage(/*send=*/false, peer, tag, std::move(region), std::move(keep_alive));
  Future<> done = o->done.future();
  Submit(std::move(o));
  return done;
}

void MpiTransport::Submit(std::shared_ptr<Operation> op) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(op));
    if (!started_) {
      started_ = true;
      thread_ = std::thread([this] { Loop(); });
    }
  }
  cv_.notify_one();
}

bool MpiTransport::Framed(int peer, const HostRegion& region) const {
  return peer >= 0 && peer < size_ && same_host_[peer] && region.bytes() >= kFramedMinBytes;
}

void MpiTransport::Post(Operation& op) {
  op.posted = Clock::now();
  switch (op.kind) {
    case Operation::Kind::kSend:
      PostSend(op);
      return;
    case Operation::Kind::kReceive:
      PostReceive(op);
      return;
    case Operation::Kind::kAgree:
      if (op.stage == 0) {
        MPI_Iallreduce(op.in, op.out, 3, MPI_UINT64_T, MPI_MIN, comm_, &op.request);
      } else {
        MPI_Ibcast(op.message, kMessageBytes, MPI_CHAR, static_cast<int>(op.out[0]), comm_,
                   &op.request);
      }
      return;
  }
}

namespace {

// The frame of a send of `r`: kShared when it lies in one of this process's shared blocks and
// its rank fits, else kData.
template <typename Frame>
void DescribeRegion(const HostRegion& r, Frame& f) {
  f.bytes = r.bytes();
  int64_t lo = 0, hi = 0;
  RegionSpan(r, &lo, &hi);
  const char* first = static_cast<const char*>(r.base) + r.offset;
  if (r.extent.size() > Frame::kMaxRank) return;
  std::optional<backends::SharedHostBlock> block =
      backends::FindSharedHostBlock(first + lo, hi - lo);
  if (!block.has_value()) return;
  f.kind = Frame::kShared;
  f.pid = getpid();
  f.fd = block->fd;
  f.generation = block->generation;
  f.inode = block->inode;
  f.block_size = block->size;
  f.offset = first - block->base;
  f.element_bytes = r.element_bytes;
  f.rank = static_cast<int64_t>(r.extent.size());
  for (size_t d = 0; d < r.extent.size(); ++d) {
    f.extent[d] = r.extent[d];
    f.byte_strides[d] = r.byte_strides[d];
  }
}

}  // namespace

void MpiTransport::PostSend(Operation& op) {
  char* base = static_cast<char*>(op.region.base) + op.region.offset;
  if (!op.after_status.ok()) {
    // The source failed: an empty message (in place of the frame, if framed) tells the receiver.
    op.where = Operation::Stage::kEmpty;
    MPI_Isend(nullptr, 0, MPI_BYTE, op.peer, op.tag, comm_, &op.request);
  } else if (op.framed && op.where == Operation::Stage::kStart) {
    op.where = Operation::Stage::kFrame;
    DescribeRegion(op.region, op.frame);
    MPI_Isend(&op.frame, sizeof(Frame), MPI_BYTE, op.peer, op.tag, comm_, &op.request);
  } else {
    op.where = Operation::Stage::kData;
    op.type = RegionType(op.region);
    MPI_Isend(base, 1, op.type, op.peer, op.tag, comm_, &op.request);
  }
}

void MpiTransport::PostReceive(Operation& op) {
  if (op.framed && op.where == Operation::Stage::kStart) {
    op.where = Operation::Stage::kFrame;
    MPI_Irecv(&op.frame, sizeof(Frame), MPI_BYTE, op.peer, op.tag, comm_, &op.request);
    return;
  }
  op.where = Operation::Stage::kData;
  op.type = RegionType(op.region);
  MPI_Irecv(static_cast<char*>(op.region.base) + op.region.offset, 1, op.type, op.peer, op.tag,
            comm_, &op.request);
}

bool MpiTransport::Advance(Operation& op, const MPI_Status& status) {
  switch (op.kind) {
    case Operation::Kind::kSend:
      return AdvanceSend(op);
    case Operation::Kind::kReceive:
      return AdvanceReceive(op, status);
    case Operation::Kind::kAgree:
      if (op.stage == 0 && op.out[0] != kNoRefusal) {
        op.stage = 1;  // a refusal: its message comes from the refusing process
        if (static_cast<int>(op.out[0]) != rank_) std::memset(op.message, 0, kMessageBytes);
        Post(op);
        return false;
      }
      return true;
  }
  return true;
}

bool MpiTransport::AdvanceSend(Operation& op) {
  switch (op.where) {
    case Operation::Stage::kEmpty:
      op.status = op.after_status;
      return true;
    case Operation::Stage::kFrame:
      op.posted = Clock::now();
      if (op.frame.kind == Frame::kShared) {  // the receiver reads the block, then says so
        op.where = Operation::Stage::kAck;
        MPI_Irecv(&op.ack, 1, MPI_INT64_T, op.peer, op.tag, ack_comm_, &op.request);
        return false;
      }
      PostSend(op);  // the data follows its frame
      return false;
    case Operation::Stage::kAck:
      if (op.ack == kAckCopied) return true;
      op.posted = Clock::now();
      PostSend(op);  // the receiver could not map the block: the data, as a message
      return false;
    default:
      return true;
  }
}

bool MpiTransport::AdvanceReceive(Operation& op, const MPI_Status& status) {
  switch (op.where) {
    case Operation::Stage::kFrame: {
      int count = 0;
      MPI_Get_count(&status, MPI_BYTE, &count);
      return OnFrame(op, count);
    }
    case Operation::Stage::kAck:
      if (op.ack == kAckCopied) return true;
      op.posted = Clock::now();
      PostReceive(op);
      return false;
    case Operation::Stage::kData: {
      MPI_Count bytes = 0;
      MPI_Get_elements_x(&status, op.type, &bytes);
      if (bytes != op.region.bytes()) {
        op.status = NotArrived(op.peer, op.tag, "its source shard failed or could not be sent");
      } else {
        g_bytes_received_by_message.fetch_add(bytes, std::memory_order_relaxed);
      }
      return true;
    }
    default:
      return true;
  }
}

bool MpiTransport::OnFrame(Operation& op, int received_bytes) {
  const Frame& f = op.frame;
  if (received_bytes == 0) {
    op.status = NotArrived(op.peer, op.tag, "its source shard failed or could not be sent");
    return true;
  }
  if (received_bytes != sizeof(Frame) || f.magic != Frame::kMagic ||
      (f.kind != Frame::kData && f.kind != Frame::kShared)) {
    op.status = NotArrived(op.peer, op.tag, "its frame is malformed");
    return true;
  }
  op.posted = Clock::now();
  if (f.bytes != op.region.bytes()) {
    op.status = NotArrived(
        op.peer, op.tag,
        absl::StrCat("it has ", f.bytes, " bytes where this process expected ", op.region.bytes()));
    if (f.kind == Frame::kShared) {  // not read: the sender may go on
      op.ack = kAckCopied;
      op.where = Operation::Stage::kAck;
      MPI_Isend(&op.ack, 1, MPI_INT64_T, op.peer, op.tag, ack_comm_, &op.request);
      return false;
    }
    op.where = Operation::Stage::kDiscard;  // taken in and dropped
    op.discard.resize(static_cast<size_t>(std::max<int64_t>(f.bytes, 0)));
    op.type = RegionType(HostRegion{op.discard.data(), 0, 1, {f.bytes}, {1}});
    MPI_Irecv(op.discard.data(), 1, op.type, op.peer, op.tag, comm_, &op.request);
    return false;
  }
  if (f.kind == Frame::kData) {
    PostReceive(op);
    return false;
  }
  const absl::Status copied = CopyFromPeer(op);
  if (copied.ok()) {
    g_bytes_received_mapped.fetch_add(f.bytes, std::memory_order_relaxed);
  } else {
    g_peer_map_fallbacks.fetch_add(1, std::memory_order_relaxed);
  }
  op.ack = copied.ok() ? kAckCopied : kAckSendData;
  op.where = Operation::Stage::kAck;
  MPI_Isend(&op.ack, 1, MPI_INT64_T, op.peer, op.tag, ack_comm_, &op.request);
  return false;
}

absl::Status MpiTransport::CopyFromPeer(Operation& op) {
  const Frame& f = op.frame;
  if (!map_peers_) return absl::UnavailableError("TESSERA_SHM=fallback");
  HostRegion src{nullptr, f.offset, f.element_bytes, {}, {}};
  if (f.rank < 0 || f.rank > Frame::kMaxRank || f.element_bytes < 1) {
    return absl::InternalError("a malformed shared-block frame");
  }
  src.extent.assign(f.extent, f.extent + f.rank);
  src.byte_strides.assign(f.byte_strides, f.byte_strides + f.rank);
  int64_t lo = 0, hi = 0;
  RegionSpan(src, &lo, &hi);
  if (f.offset + lo < 0 || f.offset + hi > f.block_size) {
    return absl::InternalError("a shared-block frame names bytes outside its block");
  }
  TESSERA_ASSIGN_OR_RETURN(
      const char* block,
      mappings_.Map(op.peer, PeerBlock{f.pid, f.fd, f.generation, f.inode, f.block_size}));
  const HostRegion& dst = op.region;
  if (src.extent == dst.extent && src.element_bytes == dst.element_bytes) {
    CopyInArena(block, dst.base, Between(src, dst));
    return absl::OkStatus();
  }
  // Boxes of other shapes (the same bytes in order, as MPI matches them): through dense bytes.
  std::vector<char> dense(static_cast<size_t>(f.bytes));
  const HostRegion packed{nullptr, 0, src.element_bytes, src.extent,
                          StridedCopy::RowMajorByteStrides(src.extent, src.element_bytes)};
  CopyInArena(block, dense.data(), Between(src, packed));
  const HostRegion unpacked{nullptr, 0, dst.element_bytes, dst.extent,
                            StridedCopy::RowMajorByteStrides(dst.extent, dst.element_bytes)};
  CopyInArena(dense.data(), dst.base, Between(unpacked, dst));
  return absl::OkStatus();
}

void MpiTransport::Finish(Operation& op) {
  if (op.type != MPI_DATATYPE_NULL) MPI_Type_free(&op.type);
  op.keep_alive.reset();
  if (op.kind != Operation::Kind::kAgree) {
    op.done.Set(op.status);
    return;
  }
  if (!op.local.ok()) {
    op.agreed.Set(op.local);
  } else if (op.out[0] != kNoRefusal) {
    op.message[kMessageBytes - 1] = '\0';
    const auto code = static_cast<absl::StatusCode>(op.message[0]);
    op.agreed.Set(absl::Status(code, absl::StrCat(op.op_name, ": process ", op.out[0],
                                                  " refused the call: ", op.message + 1)));
  } else if (op.out[1] != ~op.out[2]) {
    op.agreed.Set(absl::InvalidArgumentError(absl::StrCat(
        op.op_name,
        ": the processes called it with different arguments (their plan fingerprints differ); "
        "a collective call needs the same arrays, shardings and semantics on every process, in "
        "the same order")));
  } else {
    const int64_t base = next_tag_;
    next_tag_ += op.messages;
    op.agreed.Set(base);
  }
}

void MpiTransport::CheckTimeouts(const std::vector<std::shared_ptr<Operation>>& active) {
  if (timeout_s_ <= 0) return;
  const Clock::time_point now = Clock::now();
  for (const auto& op : active) {
    if (std::chrono::duration<double>(now - op->posted).count() > timeout_s_) {
      std::fprintf(stderr,
                   "tessera: process %d: %s waited more than %.0f s (TESSERA_MPI_TIMEOUT_S); "
                   "aborting the job\n",
                   rank_, op->what.c_str(), timeout_s_);
      std::fflush(stderr);
      MPI_Abort(MPI_COMM_WORLD, 3);
    }
  }
}

void MpiTransport::Loop() {
  std::vector<std::shared_ptr<Operation>> active;
  std::vector<MPI_Request> requests;
  std::vector<int> indices;
  std::vector<MPI_Status> statuses;
  Clock::time_point last_check = Clock::now();
  while (true) {
    std::deque<std::shared_ptr<Operation>> incoming;
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (active.empty() && queue_.empty()) {
        if (stop_) break;
        cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) break;
      }
      incoming.swap(queue_);
    }
    for (std::shared_ptr<Operation>& op : incoming) {
      if (op->kind == Operation::Kind::kAgree) {
        // Collectives one at a time, in the order asked for: the same order on every process.
        collectives_.push_back(op);
        if (collectives_.size() > 1) continue;
      }
      Post(*op);
      active.push_back(std::move(op));
    }
    requests.resize(active.size());
    indices.resize(active.size());
    statuses.resize(active.size());
    for (size_t i = 0; i < active.size(); ++i) requests[i] = active[i]->request;
    int completed = 0;
    MPI_Testsome(static_cast<int>(active.size()), requests.data(), &completed, indices.data(),
                 statuses.data());
    if (completed == MPI_UNDEFINED || completed == 0) {
      if (Clock::now() - last_check > std::chrono::seconds(1)) {
        CheckTimeouts(active);
        last_check = Clock::now();
      }
      sched_yield();
      continue;
    }
    std::vector<std::shared_ptr<Operation>> finished;
    for (int k = 0; k < completed; ++k) {
      std::shared_ptr<Operation>& op = active[indices[k]];
      op->request = MPI_REQUEST_NULL;
      if (Advance(*op, statuses[k])) finished.push_back(std::exchange(op, nullptr));
    }
    active.erase(std::remove(active.begin(), active.end(), nullptr), active.end());
    for (const std::shared_ptr<Operation>& op : finished) {
      if (op->kind == Operation::Kind::kAgree) {
        collectives_.pop_front();
        if (!collectives_.empty()) {
          Post(*collectives_.front());
          active.push_back(collectives_.front());
        }
      }
      Finish(*op);
    }
  }
}

}  // namespace tessera::mpi

namespace tessera {

absl::StatusOr<std::unique_ptr<Transport>> CreateMpiTransport(const MpiTransportOptions& options) {
  absl::StatusOr<std::unique_ptr<mpi::MpiTransport>> t = mpi::MpiTransport::Create(options);
  if (!t.ok()) return t.status();
  return std::unique_ptr<Transport>(*std::move(t));
}

MpiTransportCounters GetMpiTransportCounters() {
  return MpiTransportCounters{
      .bytes_received_mapped = mpi::g_bytes_received_mapped.load(std::memory_order_relaxed),
      .bytes_received_by_message = mpi::g_bytes_received_by_message.load(std::memory_order_relaxed),
      .peer_map_fallbacks = mpi::g_peer_map_fallbacks.load(std::memory_order_relaxed)};
}

}  // namespace tessera
