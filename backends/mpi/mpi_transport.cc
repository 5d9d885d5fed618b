#include "backends/mpi/mpi_transport.h"

#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "backends/mpi/transport_factory.h"

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

double TimeoutSeconds() {
  const char* env = std::getenv("TESSERA_MPI_TIMEOUT_S");
  if (env == nullptr || *env == '\0') return 600;
  return std::atof(env);
}

// The MPI datatype of `r` relative to its first element: the innermost contiguous run (dims of
// extent 1 and dims whose stride is the run so far) as bytes, then one hvector per outer dim.
absl::StatusOr<MPI_Datatype> RegionType(const HostRegion& r) {
  int64_t run = r.element_bytes;
  int d = static_cast<int>(r.extent.size()) - 1;
  while (d >= 0 && (r.extent[d] == 1 || r.byte_strides[d] == run)) {
    run *= r.extent[d];
    --d;
  }
  constexpr int64_t kMax = std::numeric_limits<int>::max();
  if (run > kMax) {
    return absl::UnimplementedError(
        absl::StrCat("a contiguous run of ", run, " bytes is more than one MPI message carries"));
  }
  MPI_Datatype type;
  MPI_Type_contiguous(static_cast<int>(run), MPI_BYTE, &type);
  for (; d >= 0; --d) {
    if (r.extent[d] > kMax) {
      MPI_Type_free(&type);
      return absl::UnimplementedError(
          absl::StrCat("an extent of ", r.extent[d], " is more than one MPI datatype describes"));
    }
    MPI_Datatype outer;
    MPI_Type_create_hvector(static_cast<int>(r.extent[d]), 1, r.byte_strides[d], type, &outer);
    MPI_Type_free(&type);
    type = outer;
  }
  MPI_Type_commit(&type);
  return type;
}

}  // namespace

struct MpiTransport::Operation {
  enum class Kind { kSend, kReceive, kAgree };
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

absl::StatusOr<std::unique_ptr<MpiTransport>> MpiTransport::Create() {
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
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  std::unique_ptr<MpiTransport> t(new MpiTransport(comm, rank, size));
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

MpiTransport::MpiTransport(MPI_Comm comm, int rank, int size)
    : comm_(comm),
      rank_(rank),
      size_(size),
      tag_ub_(TagUpperBound(comm)),
      timeout_s_(TimeoutSeconds()) {}

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
  MPI_Comm comm = comm_;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Comm_free(&comm);
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

Future<> MpiTransport::Send(int peer, int64_t tag, HostRegion region, Future<> after,
                            std::shared_ptr<void> keep_alive) {
  auto o = std::make_shared<Operation>();
  o->kind = Operation::Kind::kSend;
  o->what = absl::StrCat("a send of ", region.bytes(), " bytes to process ", peer);
  o->peer = peer;
  o->tag = static_cast<int>(tag % (static_cast<int64_t>(tag_ub_) + 1));
  o->region = std::move(region);
  o->keep_alive = std::move(keep_alive);
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
  auto o = std::make_shared<Operation>();
  o->kind = Operation::Kind::kReceive;
  o->what = absl::StrCat("a receive of ", region.bytes(), " bytes from process ", peer);
  o->peer = peer;
  o->tag = static_cast<int>(tag % (static_cast<int64_t>(tag_ub_) + 1));
  o->region = std::move(region);
  o->keep_alive = std::move(keep_alive);
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

bool MpiTransport::Post(Operation& op) {
  op.posted = Clock::now();
  char* base = static_cast<char*>(op.region.base) + op.region.offset;
  switch (op.kind) {
    case Operation::Kind::kSend:
    case Operation::Kind::kReceive: {
      if (op.kind == Operation::Kind::kSend && !op.after_status.ok()) {
        // The source failed: an empty message tells the receiver so.
        MPI_Isend(nullptr, 0, MPI_BYTE, op.peer, op.tag, comm_, &op.request);
        return true;
      }
      absl::StatusOr<MPI_Datatype> type = RegionType(op.region);
      if (!type.ok()) {
        // Cannot describe the region: the peer's matching operation fails too (empty message).
        op.status = type.status();
        if (op.kind == Operation::Kind::kSend) {
          MPI_Isend(nullptr, 0, MPI_BYTE, op.peer, op.tag, comm_, &op.request);
        } else {
          MPI_Irecv(nullptr, 0, MPI_BYTE, op.peer, op.tag, comm_, &op.request);
        }
        return true;
      }
      op.type = *type;
      if (op.kind == Operation::Kind::kSend) {
        MPI_Isend(base, 1, op.type, op.peer, op.tag, comm_, &op.request);
      } else {
        MPI_Irecv(base, 1, op.type, op.peer, op.tag, comm_, &op.request);
      }
      return true;
    }
    case Operation::Kind::kAgree:
      if (op.stage == 0) {
        MPI_Iallreduce(op.in, op.out, 3, MPI_UINT64_T, MPI_MIN, comm_, &op.request);
      } else {
        MPI_Ibcast(op.message, kMessageBytes, MPI_CHAR, static_cast<int>(op.out[0]), comm_,
                   &op.request);
      }
      return true;
  }
  return false;
}

bool MpiTransport::Advance(Operation& op, const MPI_Status& status) {
  switch (op.kind) {
    case Operation::Kind::kSend:
      if (op.status.ok() && !op.after_status.ok()) op.status = op.after_status;
      return true;
    case Operation::Kind::kReceive: {
      if (!op.status.ok()) return true;
      int count = 0;
      MPI_Get_count(&status, op.type, &count);
      if (count != 1) {
        op.status = absl::InternalError(
            absl::StrCat("the part sent by process ", op.peer, " (tag ", op.tag,
                         ") did not arrive: its source shard failed or could not be sent"));
      }
      return true;
    }
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

absl::StatusOr<std::unique_ptr<Transport>> CreateMpiTransport() {
  absl::StatusOr<std::unique_ptr<mpi::MpiTransport>> t = mpi::MpiTransport::Create();
  if (!t.ok()) return t.status();
  return std::unique_ptr<Transport>(*std::move(t));
}

}  // namespace tessera
