#ifndef TESSERA_BACKENDS_MPI_MPI_TRANSPORT_H_
#define TESSERA_BACKENDS_MPI_MPI_TRANSPORT_H_

// MpiTransport: the Transport (ifrt/spi/transport.h) over MPI. It works on its own duplicate of
// MPI_COMM_WORLD, so that its tags never meet the application's messages.
//
// One communication thread makes every MPI call after creation: it posts the non-blocking sends
// (once their `after` future is set) and receives, and the non-blocking collectives of Agree one
// at a time in the order they were asked for, and polls them with MPI_Testsome, yielding the CPU
// between polls. Strided regions travel as MPI derived datatypes (region_type.h: nested hvectors
// over the contiguous runs), straight from and into the caller's memory.
//
// Between two processes of one host (MPI_Comm_split_type SHARED at creation), a message of
// kFramedMinBytes or more is framed: a small frame goes first, then the data (kData), or, when
// the sender's region lies in a shared host block (backends/common/shared_host_memory.h, where
// the CPU platform puts its large buffers once this transport enabled it), the frame describes
// the region instead (kShared: pid, descriptor, generation, inode, offset, extent, strides). The
// receiver then maps the block (peer_mappings.h) and copies the box straight into its own region,
// in parallel, once per byte, and acknowledges on a second communicator; the sender's future is
// set by that acknowledgement, so the source stays valid while it is read. A receiver that
// cannot map the block (another host, no access to /proc/<pid>/fd) asks for the data instead, and
// the sender sends it as a message. TESSERA_SHM=0 on any process turns framing and shared blocks
// off for the whole job (decided at creation, collectively); TESSERA_SHM=fallback keeps both but
// makes this process's receives ask for the data (a test of that path). A failed source still
// sends an empty message in place of the frame.
//
// Failures: MPI_COMM_WORLD keeps MPI's default handler (MPI_ERRORS_ARE_FATAL), so a dead peer
// ends the job through mpirun. An operation left waiting for MpiTransportOptions::timeout_s
// seconds (TESSERA_MPI_TIMEOUT_S under CreateClient; 0 for never) calls MPI_Abort naming it, so a
// peer that never makes its part of a call (a program bug) ends the job too, never a silent hang.
//
// Ownership: created by CreateMpiTransport; the client owns it. Destruction waits for the
// operations in flight (up to the timeout), then frees its communicators. Thread-safe.

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "backends/mpi/peer_mappings.h"
#include "backends/mpi/transport_factory.h"
#include "ifrt/spi/transport.h"

namespace tessera::mpi {

class MpiTransport final : public Transport {
 public:
  // Initializes MPI if needed (see backends/mpi/transport_factory.h).
  static absl::StatusOr<std::unique_ptr<MpiTransport>> Create(const MpiTransportOptions& options);
  ~MpiTransport() override;

  int process_index() const override { return rank_; }
  int process_count() const override { return size_; }
  absl::StatusOr<std::vector<std::string>> AllGather(const std::string& local) override;
  absl::StatusOr<int64_t> Agree(std::string_view op, uint64_t fingerprint, int64_t messages,
                                const absl::Status& local) override;
  Future<> Send(int peer, int64_t tag, HostRegion region, Future<> after,
                std::shared_ptr<void> keep_alive) override;
  Future<> Receive(int peer, int64_t tag, HostRegion region,
                   std::shared_ptr<void> keep_alive) override;

  // Stops every live transport's thread (at exit, before MPI_Finalize).
  static void StopAll();

  // Messages between processes of one host of at least this many bytes are framed (see above).
  static constexpr int64_t kFramedMinBytes = int64_t{64} << 10;

 private:
  struct Operation;
  struct Frame;
  struct Topology;
  using Clock = std::chrono::steady_clock;

  MpiTransport(MPI_Comm comm, MPI_Comm ack_comm, int rank, int size, Topology topology,
               double timeout_s);
  static Topology HostTopology(MPI_Comm comm, int rank, int size);
  void Submit(std::shared_ptr<Operation> op);
  void Loop();
  // Posts `op`'s first MPI request.
  void Post(Operation& op);
  void PostSend(Operation& op);
  void PostReceive(Operation& op);
  // Called when `op`'s request completed: true when `op` is finished (else it posted its next
  // request).
  bool Advance(Operation& op, const MPI_Status& status);
  bool AdvanceSend(Operation& op);
  bool AdvanceReceive(Operation& op, const MPI_Status& status);
  // A received frame: posts what follows it; true when the receive is finished.
  bool OnFrame(Operation& op, int received_bytes);
  // Copies the region a kShared frame describes into `op.region`.
  absl::Status CopyFromPeer(Operation& op);
  bool Framed(int peer, const HostRegion& region) const;
  // A send (`send`) or receive of `region` with process `peer`, set up (its description, its tag
  // within the engine's tag bound, whether it is framed), not yet submitted.
  std::shared_ptr<Operation> NewMessage(bool send, int peer, int64_t tag, HostRegion region,
                                        std::shared_ptr<void> keep_alive);
  void Finish(Operation& op);
  void CheckTimeouts(const std::vector<std::shared_ptr<Operation>>& active);
  void Stop();

  const MPI_Comm comm_;
  const MPI_Comm ack_comm_;  // the acknowledgements of kShared frames
  const int rank_;
  const int size_;
  const std::vector<bool> same_host_;  // by rank: framed messages
  const bool map_peers_;               // false under TESSERA_SHM=fallback
  const int tag_ub_;
  const double timeout_s_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Operation>> queue_;  // guarded by mu_
  bool stop_ = false;                             // guarded by mu_
  bool started_ = false;                          // guarded by mu_
  std::thread thread_;
  // Sends whose `after` callback has not run yet: the destructor waits for them.
  std::atomic<int> pending_sends_{0};

  // Communication thread only.
  std::deque<std::shared_ptr<Operation>> collectives_;  // waiting; the first one is active
  int64_t next_tag_ = 0;
  PeerMappings mappings_;
};

}  // namespace tessera::mpi

#endif  // TESSERA_BACKENDS_MPI_MPI_TRANSPORT_H_
