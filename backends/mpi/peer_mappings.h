#ifndef TESSERA_BACKENDS_MPI_PEER_MAPPINGS_H_
#define TESSERA_BACKENDS_MPI_PEER_MAPPINGS_H_

// PeerMappings: read-only maps of other processes' shared host blocks
// (backends/common/shared_host_memory.h), so that a receive can copy a box straight out of the
// sender's shard. A block is opened through /proc/<pid>/fd/<fd>, checked against the inode the
// sender named (a descriptor number the sender closed and reused names another file), mapped
// with MAP_POPULATE, and kept mapped for later receives from the same block, keyed by (process,
// generation): generations are never reused within a process, so a cached map never shows
// another block's bytes. At most `max_bytes` and `max_mappings` stay mapped; beyond them the
// least recently used maps go.
//
// A block its sender freed stays in memory while this process maps it, so maps of freed blocks
// are dropped: every map's /proc/<pid>/fd/<fd> is checked, and a map whose descriptor is closed,
// or names another file now, is unmapped. The check runs once kSweepInterval calls have passed
// since the last one, or at a miss (a block not mapped yet: the sender has allocated, and may have
// freed) once as many calls have passed as there are maps, so that it costs at most about one
// stat a call. A sender's freed memory is thus held here for at most kSweepInterval more receives
// from its shared blocks.
//
// Ownership: owned by its MpiTransport; unmaps everything when destroyed. Not thread-safe: the
// transport's communication thread alone uses it.

#include <cstdint>
#include <map>
#include <utility>

#include "absl/status/statusor.h"

namespace tessera::mpi {

// What a sender says of one of its shared blocks.
struct PeerBlock {
  int64_t pid = 0;
  int64_t fd = -1;
  uint64_t generation = 0;
  uint64_t inode = 0;
  int64_t size = 0;
};

class PeerMappings {
 public:
  PeerMappings(int64_t max_bytes, int max_mappings)
      : max_bytes_(max_bytes), max_mappings_(max_mappings) {}
  ~PeerMappings();
  PeerMappings(const PeerMappings&) = delete;
  PeerMappings& operator=(const PeerMappings&) = delete;

  // The first byte of `block` of process `rank`, mapped read-only. UNAVAILABLE when the block
  // cannot be opened (another host, no permission to read the process's descriptors: the caller
  // asks for the data instead) or is not the file the sender named (another inode, too small).
  absl::StatusOr<const char*> Map(int rank, const PeerBlock& block);

  int64_t mapped_bytes() const { return mapped_bytes_; }
  int mapping_count() const { return static_cast<int>(maps_.size()); }

  // The most calls between two checks for freed blocks.
  static constexpr uint64_t kSweepInterval = 256;

 private:
  struct Mapping {
    const char* base;
    int64_t size;
    uint64_t last_use;
    PeerBlock block;  // what the sender said of it
  };
  using Key = std::pair<int, uint64_t>;  // (rank, generation)

  // Unmaps least recently used maps, never `keep`, until the bounds hold.
  void Evict(Key keep);
  // Unmaps the maps, never `keep`, whose block its sender has freed (see above).
  void DropFreed(Key keep);
  void Unmap(std::map<Key, Mapping>::iterator it);

  const int64_t max_bytes_;
  const int max_mappings_;
  std::map<Key, Mapping> maps_;
  int64_t mapped_bytes_ = 0;
  uint64_t uses_ = 0;
  uint64_t calls_since_sweep_ = 0;
};

}  // namespace tessera::mpi

#endif  // TESSERA_BACKENDS_MPI_PEER_MAPPINGS_H_
