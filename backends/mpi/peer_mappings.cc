#include "backends/mpi/peer_mappings.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iterator>
#include <string>

#include "absl/strings/str_cat.h"

namespace tessera::mpi {

PeerMappings::~PeerMappings() {
  for (auto& [key, m] : maps_) munmap(const_cast<char*>(m.base), static_cast<size_t>(m.size));
}

namespace {

std::string DescriptorPath(const PeerBlock& block) {
  return absl::StrCat("/proc/", block.pid, "/fd/", block.fd);
}

// True when the sender's descriptor of `block` is closed or names another file now (stat follows
// the link). Any failure counts: a live block is only mapped again at its next receive.
bool SenderFreed(const PeerBlock& block) {
  struct stat st;
  return stat(DescriptorPath(block).c_str(), &st) != 0 ||
         static_cast<uint64_t>(st.st_ino) != block.inode;
}

}  // namespace

absl::StatusOr<const char*> PeerMappings::Map(int rank, const PeerBlock& block) {
  const Key key(rank, block.generation);
  ++calls_since_sweep_;
  if (auto it = maps_.find(key); it != maps_.end() && it->second.size >= block.size) {
    it->second.last_use = ++uses_;
    if (calls_since_sweep_ >= kSweepInterval) DropFreed(key);
    return it->second.base;
  }
  if (calls_since_sweep_ >= std::min<uint64_t>(kSweepInterval, maps_.size())) DropFreed(key);
  const std::string path = DescriptorPath(block);
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot open ", path, " of process ", rank, ": ", std::strerror(errno)));
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_ino) != block.inode ||
      st.st_size < block.size) {
    close(fd);
    return absl::UnavailableError(absl::StrCat(path, " of process ", rank,
                                               " is not the shared block it named (inode ",
                                               block.inode, ", ", block.size, " bytes)"));
  }
  void* base =
      mmap(nullptr, static_cast<size_t>(block.size), PROT_READ, MAP_SHARED | MAP_POPULATE, fd, 0);
  close(fd);
  if (base == MAP_FAILED) {
    return absl::UnavailableError(
        absl::StrCat("cannot map ", block.size, " bytes of ", path, ": ", std::strerror(errno)));
  }
  if (auto it = maps_.find(key); it != maps_.end()) Unmap(it);  // a smaller old map of the block
  maps_[key] = Mapping{static_cast<const char*>(base), block.size, ++uses_, block};
  mapped_bytes_ += block.size;
  Evict(key);
  return static_cast<const char*>(base);
}

void PeerMappings::Unmap(std::map<Key, Mapping>::iterator it) {
  munmap(const_cast<char*>(it->second.base), static_cast<size_t>(it->second.size));
  mapped_bytes_ -= it->second.size;
  maps_.erase(it);
}

void PeerMappings::DropFreed(Key keep) {
  calls_since_sweep_ = 0;
  for (auto it = maps_.begin(); it != maps_.end();) {
    const auto next = std::next(it);
    if (it->first != keep && SenderFreed(it->second.block)) Unmap(it);
    it = next;
  }
}

void PeerMappings::Evict(Key keep) {
  while (mapped_bytes_ > max_bytes_ || static_cast<int>(maps_.size()) > max_mappings_) {
    auto oldest = maps_.end();
    for (auto it = maps_.begin(); it != maps_.end(); ++it) {
      if (it->first != keep &&
          (oldest == maps_.end() || it->second.last_use < oldest->second.last_use)) {
        oldest = it;
      }
    }
    if (oldest == maps_.end()) return;
    Unmap(oldest);
  }
}

}  // namespace tessera::mpi
