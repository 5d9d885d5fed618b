#ifndef TESSERA_BACKENDS_VULKAN_PEER_MEMORY_IMPORT_H_
#define TESSERA_BACKENDS_VULKAN_PEER_MEMORY_IMPORT_H_

// Copies between two VkDevices of one GPU without staging (VK_KHR_external_memory_fd, opaque fd
// handles). A device whose allocators have a BlockExporter allocates every block exportable;
// another VkDevice of the same GPU (equal deviceUUID and driverUUID: two logical devices of one
// physical device, or the same driver listed twice) imports the block's memory and binds a VkBuffer
// of its own to it, so a cross-device copy is one vkCmdCopyBuffer on the importing (destination)
// device's queue: no host staging, no second GPU pass.
//
// PeerMemoryImports holds one importing device's imports: one VkDeviceMemory and one VkBuffer per
// source block, made on first use and kept until the source block is destroyed (the block's
// on_destroy hook drops it) or Close. A block that failed to import is remembered as such, and the
// caller falls back to staging.
//
// Memory model: the caller reads a source buffer only after the buffer's writes completed (its
// ready future, observed by the host on the source device's completion thread), and nothing writes
// it while it is read (arrays are immutable). The two VkDevices are one GPU with one memory, so the
// completed writes are visible to the importing queue.
//
//   auto imports = std::make_shared<PeerMemoryImports>(device, exporter, &live);
//   absl::StatusOr<VkBuffer> b = imports->Import(*src_block);
//   // vkCmdCopyBuffer(cb, *b, dst, ...) with the source's offsets
//
// Ownership: the importing device holds it through a shared_ptr and calls Close before destroying
// its VkDevice; the source blocks' hooks hold weak references, so either device may go first.
// Imported objects are the importing device's and are destroyed by Forget/Close.
// Thread-safety: every method is thread-safe (one mutex). Lock order: a source allocator's mutex,
// then this mutex, then a block's on_destroy_mu.

#include <vulkan/vulkan.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "absl/status/statusor.h"
#include "backends/vulkan/device_memory_allocator.h"

namespace tessera::vulkan {

class PeerMemoryImports : public std::enable_shared_from_this<PeerMemoryImports> {
 public:
  // `self`: the importing device's identity (its own exporter: device, UUIDs); null when it cannot
  // import (no VK_KHR_external_memory_fd).
  // `live`: incremented per import made, decremented per import destroyed (borrowed; outlives
  // this).
  PeerMemoryImports(VkDevice device, const BlockExporter* self, std::atomic<int64_t>* live);
  PeerMemoryImports(const PeerMemoryImports&) = delete;
  PeerMemoryImports& operator=(const PeerMemoryImports&) = delete;
  ~PeerMemoryImports();

  // A VkBuffer of this device over all of `block` (offsets as in the block's own buffer).
  // FAILED_PRECONDITION when the block is not exportable, belongs to another GPU or driver, this
  // device cannot import, or an earlier import of the block failed; the Vulkan error of a failed
  // import (remembered). `block` must stay alive during the call.
  absl::StatusOr<VkBuffer> Import(MemoryBlock& block);

  // Destroys every import; later Imports fail. Call before the VkDevice goes.
  void Close();

 private:
  struct Imported {
    VkDeviceMemory memory = VK_NULL_HANDLE;
    VkBuffer buffer = VK_NULL_HANDLE;  // null: the import failed
  };
  void Forget(uint64_t block_id);
  void Destroy(Imported& i);

  VkDevice device_;
  const BlockExporter* self_;
  std::atomic<int64_t>* live_;
  std::mutex mu_;
  bool closed_ = false;                   // guarded by mu_
  std::map<uint64_t, Imported> imports_;  // by block id; guarded by mu_
};

}  // namespace tessera::vulkan

#endif  // TESSERA_BACKENDS_VULKAN_PEER_MEMORY_IMPORT_H_
