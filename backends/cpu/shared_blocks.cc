#include "backends/cpu/shared_blocks.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <vector>

#include "absl/base/thread_annotations.h"

namespace tessera::cpu {
namespace {

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// One RunSharedBlocks in progress, on its owner's stack.
struct SharedWork {
  SharedWork(int64_t blocks, double block_work, absl::FunctionRef<void(int64_t)> body)
      : body(body), blocks(blocks), block_work(block_work) {}
  const absl::FunctionRef<void(int64_t)> body;
  const int64_t blocks;
  const double block_work;
  std::atomic<int64_t> next{0};          // the first block nobody has taken
  std::atomic<int64_t> owner_blocks{0};  // blocks the owner has run
  std::atomic<int64_t> owner_ns{0};      // wall time from its start to its last block's end
  int helpers = 0;                       // helpers inside; guarded by the registry's mutex
};

// The work being shared, and its owners waiting for their helpers to leave.
struct Registry {
  std::mutex mu;
  std::condition_variable helpers_left;
  std::vector<SharedWork*> work ABSL_GUARDED_BY(mu);
};

Registry& TheRegistry() {
  static auto* registry = new Registry;  // never destroyed: device threads may outlive statics
  return *registry;
}

std::atomic<int64_t> shared_now{0};  // works registered: idle threads skip the lock when 0
std::atomic<int64_t> helped_blocks{0};

// This thread's latest rate, wall nanoseconds per unit of block_work; 0 while unknown.
thread_local double ns_per_work = 0;

// The owner's wall time per block so far; 0 before its first block ends.
double OwnerBlockNs(const SharedWork& work) {
  const int64_t blocks = work.owner_blocks.load(std::memory_order_acquire);
  if (blocks == 0) return 0;
  return static_cast<double>(work.owner_ns.load(std::memory_order_relaxed)) / blocks;
}

// The owner is in the middle of a block when a helper looks: it reaches the last of the `left`
// blocks nobody has taken after about (left - kOwnerInBlock) of its block times, or one fewer if a
// helper takes one. (Beside a busy loop on 2 cores, the Megatron MLP took 1-2 ms less with 0.5
// than with 1, which counts the owner's block as not begun and leaves it the last untaken one.)
constexpr double kOwnerInBlock = 0.5;

// How long the owner would still take alone (the helpers' choice: the longest first) where a
// helper at this thread's last rate, taking one more block, finishes it before the owner would
// reach its last; 0 where it does not, or while the owner has not finished a block (no rate yet).
// A thread with no rate yet is taken to be as fast as the owner.
double GainOfHelping(const SharedWork& work) {
  const int64_t left = work.blocks - work.next.load(std::memory_order_relaxed);
  if (left < 1) return 0;
  const double owner = OwnerBlockNs(work);
  if (owner <= 0) return 0;
  const double mine = ns_per_work > 0 ? ns_per_work * work.block_work : owner;
  const double owner_left = static_cast<double>(left) * owner;
  return mine < owner_left - kOwnerInBlock * owner ? owner_left : 0;
}

}  // namespace

void RunSharedBlocks(int64_t blocks, double block_work, absl::FunctionRef<void(int64_t)> body) {
  if (blocks < 2) {
    for (int64_t b = 0; b < blocks; ++b) body(b);
    return;
  }
  SharedWork work(blocks, block_work, body);
  Registry& registry = TheRegistry();
  {
    std::lock_guard<std::mutex> lock(registry.mu);
    registry.work.push_back(&work);
  }
  shared_now.fetch_add(1, std::memory_order_relaxed);
  const int64_t start = NowNs();
  for (int64_t b; (b = work.next.fetch_add(1, std::memory_order_relaxed)) < blocks;) {
    body(b);
    work.owner_ns.store(NowNs() - start, std::memory_order_relaxed);
    work.owner_blocks.fetch_add(1, std::memory_order_release);
  }
  if (const double owner = OwnerBlockNs(work); owner > 0) ns_per_work = owner / block_work;
  std::unique_lock<std::mutex> lock(registry.mu);
  registry.work.erase(std::find(registry.work.begin(), registry.work.end(), &work));
  shared_now.fetch_sub(1, std::memory_order_relaxed);
  registry.helpers_left.wait(lock, [&] { return work.helpers == 0; });
}

bool HelpSharedBlocks(absl::FunctionRef<bool()> stop) {
  Registry& registry = TheRegistry();
  while (shared_now.load(std::memory_order_relaxed) > 0 && !stop()) {
    SharedWork* chosen = nullptr;
    {
      std::lock_guard<std::mutex> lock(registry.mu);
      double best = 0;
      for (SharedWork* work : registry.work) {
        if (const double gain = GainOfHelping(*work); gain > best) {
          best = gain;
          chosen = work;
        }
      }
      if (chosen == nullptr) return !registry.work.empty();
      ++chosen->helpers;
    }
    while (!stop() && GainOfHelping(*chosen) > 0) {
      const int64_t b = chosen->next.fetch_add(1, std::memory_order_relaxed);
      if (b >= chosen->blocks) break;
      const int64_t start = NowNs();
      chosen->body(b);
      ns_per_work = static_cast<double>(NowNs() - start) / chosen->block_work;
      helped_blocks.fetch_add(1, std::memory_order_relaxed);
    }
    std::lock_guard<std::mutex> lock(registry.mu);
    if (--chosen->helpers == 0) registry.helpers_left.notify_all();
  }
  return shared_now.load(std::memory_order_relaxed) > 0;
}

bool BlocksAreShared() { return shared_now.load(std::memory_order_relaxed) > 0; }

int64_t HelpedBlocks() { return helped_blocks.load(std::memory_order_relaxed); }

}  // namespace tessera::cpu
