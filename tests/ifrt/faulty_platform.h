// tests/ifrt/faulty_platform.h: FaultyPlatform, a test-only Platform (ifrt/spi/platform.h) that
// wraps a real one (CPU, Vulkan) and injects the faults a device runtime meets:
//
//   - the Nth allocation fails (RESOURCE_EXHAUSTED) or throws std::bad_alloc;
//   - the Nth copy call of chosen kinds (host->buffer, buffer->host, buffer->buffer) fails on the
//     stream, after `after`, optionally once its first k copies have run (a batch that fails
//     midway), or throws std::bad_alloc while being enqueued;
//   - the Nth kernel launch or host callback (the steps of a program: its kernels, its
//     collectives) fails on the stream, after `after`, with DATA_LOSS;
//   - a device is lost: after a number of operations on it, every operation it executes
//     (allocation, copy, host callback, kernel launch, wrap) fails at once with UNAVAILABLE
//     "device lost".
//
//   auto faulty = std::make_unique<tessera::testing::FaultyPlatform>(*CreateCpuPlatform());
//   FaultyPlatform* platform = faulty.get();   // the client owns it from here on
//   platform->FailCopy(2, tessera::testing::kAnyCopy);
//
// Counting starts when a fault is armed ("the Nth from now", 1-based); arming 0 disarms. A lost
// device is judged by the device that executes an operation (its `device` argument). Everything
// else is forwarded to the wrapped platform, which keeps its own buffers: BytesInUse is the
// wrapped platform's.
//
// Owned by the client it is given to. Thread-safe, as the SPI requires.

#ifndef TESSERA_TESTS_IFRT_FAULTY_PLATFORM_H_
#define TESSERA_TESTS_IFRT_FAULTY_PLATFORM_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <new>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "ifrt/spi/platform.h"

namespace tessera::testing {

// Which copy calls a fault counts (a bit mask).
enum CopyKinds : unsigned {
  kHostToBuffer = 1,
  kBufferToHost = 2,
  kBufferToBuffer = 4,
  kAnyCopy = 7,
};

class FaultyPlatform final : public Platform {
 public:
  explicit FaultyPlatform(std::unique_ptr<Platform> base)
      : base_(std::move(base)), lost_after_(base_->device_count()) {
    for (auto& ops : lost_after_) ops.store(-1);
  }

  // The `n`th Allocate from now fails with RESOURCE_EXHAUSTED, or throws std::bad_alloc.
  void FailAllocation(int n, bool throw_bad_alloc = false) {
    throw_on_allocation_.store(throw_bad_alloc);
    allocation_countdown_.store(n);
  }
  // The `n`th copy call from now whose kind is in `kinds` runs its first `succeed` copies, then
  // fails with DATA_LOSS "injected copy failure" (on the stream, after `after`).
  void FailCopy(int n, unsigned kinds, size_t succeed = 0) {
    copy_kinds_.store(kinds);
    copy_succeed_.store(succeed);
    throw_on_copy_.store(false);
    copy_countdown_.store(n);
  }
  // The `n`th copy call from now whose kind is in `kinds` throws std::bad_alloc while enqueueing
  // (nothing of it is enqueued).
  void ThrowOnCopy(int n, unsigned kinds) {
    copy_kinds_.store(kinds);
    throw_on_copy_.store(true);
    copy_countdown_.store(n);
  }
  // The `n`th kernel launch from now fails with DATA_LOSS "injected kernel failure" (on the
  // stream, after `after`; the kernel does not run).
  void FailLaunch(int n) { launch_countdown_.store(n); }
  // The `n`th host callback from now fails with DATA_LOSS "injected host callback failure" (on the
  // stream, after `after`; the callback does not run).
  void FailHostCallback(int n) { callback_countdown_.store(n); }
  // After `ops` more operations executed by `device`, every operation it executes fails with
  // UNAVAILABLE. -1: the device works again.
  void LoseDeviceAfter(int device, int ops) { lost_after_[device].store(ops); }
  void Disarm() {
    allocation_countdown_.store(0);
    copy_countdown_.store(0);
    launch_countdown_.store(0);
    callback_countdown_.store(0);
    for (auto& ops : lost_after_) ops.store(-1);
  }

  // Calls seen so far (for sizing a sweep over "the Nth").
  int64_t allocation_calls() const { return allocation_calls_.load(); }
  int64_t copy_calls() const { return copy_calls_.load(); }
  int64_t launch_calls() const { return launch_calls_.load(); }
  int64_t callback_calls() const { return callback_calls_.load(); }
  int64_t injected_faults() const { return injected_.load(); }
  Platform& base() { return *base_; }

  std::string_view name() const override { return base_->name(); }
  int device_count() const override { return base_->device_count(); }
  const PlatformDeviceInfo& device_info(int device) const override {
    return base_->device_info(device);
  }
  int64_t BytesInUse(int device, int memory) const override {
    return base_->BytesInUse(device, memory);
  }

  absl::StatusOr<PlatformBufferRef> Allocate(int device, int memory, int64_t bytes) override {
    allocation_calls_.fetch_add(1);
    if (absl::Status lost = CountOnDevice(device); !lost.ok()) return lost;
    if (Hit(allocation_countdown_)) {
      injected_.fetch_add(1);
      if (throw_on_allocation_.load()) throw std::bad_alloc();
      return absl::ResourceExhaustedError(
          absl::StrCat("injected: out of memory allocating ", bytes, " bytes on device ", device));
    }
    return base_->Allocate(device, memory, bytes);
  }
  absl::StatusOr<PlatformBufferRef> WrapHostMemory(int device, int memory, void* data,
                                                   int64_t bytes,
                                                   std::function<void()> on_release) override {
    if (absl::Status lost = CountOnDevice(device); !lost.ok()) return lost;
    return base_->WrapHostMemory(device, memory, data, bytes, std::move(on_release));
  }

  Future<> CopyHostToBuffers(int device, std::vector<HostToBufferCopy> copies,
                             absl::Span<const Future<>> after) override {
    return Copy(device, kHostToBuffer, std::move(copies), after,
                [this](int d, std::vector<HostToBufferCopy> c, absl::Span<const Future<>> a) {
                  return base_->CopyHostToBuffers(d, std::move(c), a);
                });
  }
  Future<> CopyBuffersToHost(int device, std::vector<BufferToHostCopy> copies,
                             absl::Span<const Future<>> after) override {
    return Copy(device, kBufferToHost, std::move(copies), after,
                [this](int d, std::vector<BufferToHostCopy> c, absl::Span<const Future<>> a) {
                  return base_->CopyBuffersToHost(d, std::move(c), a);
                });
  }
  Future<> CopyBuffersToBuffers(int device, std::vector<BufferToBufferCopy> copies,
                                absl::Span<const Future<>> after) override {
    return Copy(device, kBufferToBuffer, std::move(copies), after,
                [this](int d, std::vector<BufferToBufferCopy> c, absl::Span<const Future<>> a) {
                  return base_->CopyBuffersToBuffers(d, std::move(c), a);
                });
  }
  Future<> EnqueueHostCallback(int device, std::function<absl::Status()> fn,
                               absl::Span<const Future<>> after) override {
    callback_calls_.fetch_add(1);
    if (absl::Status lost = CountOnDevice(device); !lost.ok()) return MakeReadyFuture(lost);
    if (Hit(callback_countdown_)) {
      injected_.fetch_add(1);
      return base_->EnqueueHostCallback(
          device, [] { return absl::DataLossError("injected host callback failure"); }, after);
    }
    return base_->EnqueueHostCallback(device, std::move(fn), after);
  }
  absl::StatusOr<PlatformKernelRef> LoadKernel(int device,
                                               const KernelArtifact& artifact) override {
    if (absl::Status lost = CountOnDevice(device); !lost.ok()) return lost;
    return base_->LoadKernel(device, artifact);
  }
  Future<> LaunchKernel(int device, KernelLaunch launch,
                        absl::Span<const Future<>> after) override {
    launch_calls_.fetch_add(1);
    if (absl::Status lost = CountOnDevice(device); !lost.ok()) return MakeReadyFuture(lost);
    if (Hit(launch_countdown_)) {
      injected_.fetch_add(1);
      return base_->EnqueueHostCallback(
          device, [] { return absl::DataLossError("injected kernel failure"); }, after);
    }
    return base_->LaunchKernel(device, std::move(launch), after);
  }

 private:
  // Decrements a positive countdown; true when this call takes it to zero.
  static bool Hit(std::atomic<int>& countdown) {
    int c = countdown.load();
    while (c > 0) {
      if (countdown.compare_exchange_weak(c, c - 1)) return c == 1;
    }
    return false;
  }

  // Counts an operation of `device`: UNAVAILABLE once the device is lost.
  absl::Status CountOnDevice(int device) {
    std::atomic<int>& left = lost_after_[device];
    int c = left.load();
    while (c > 0) {
      if (left.compare_exchange_weak(c, c - 1)) return absl::OkStatus();
    }
    if (c == 0) {
      injected_.fetch_add(1);
      return absl::UnavailableError(absl::StrCat(
          "injected: device lost (", std::string(base_->name()), " device ", device, ")"));
    }
    return absl::OkStatus();
  }

  template <typename CopyT, typename Run>
  Future<> Copy(int device, CopyKinds kind, std::vector<CopyT> copies,
                absl::Span<const Future<>> after, Run run) {
    copy_calls_.fetch_add(1);
    if (absl::Status lost = CountOnDevice(device); !lost.ok()) return MakeReadyFuture(lost);
    if ((copy_kinds_.load() & kind) == 0 || !Hit(copy_countdown_)) {
      return run(device, std::move(copies), after);
    }
    injected_.fetch_add(1);
    if (throw_on_copy_.load()) throw std::bad_alloc();
    // The first copies run; then the operation fails, in stream order.
    const size_t succeed = std::min(copy_succeed_.load(), copies.size());
    std::vector<Future<>> deps(after.begin(), after.end());
    if (succeed > 0) {
      copies.resize(succeed);
      deps = {run(device, std::move(copies), after)};
    }
    return base_->EnqueueHostCallback(
        device, [] { return absl::DataLossError("injected copy failure"); }, deps);
  }

  std::unique_ptr<Platform> base_;
  std::atomic<int> allocation_countdown_{0};
  std::atomic<bool> throw_on_allocation_{false};
  std::atomic<int> copy_countdown_{0};
  std::atomic<unsigned> copy_kinds_{0};
  std::atomic<size_t> copy_succeed_{0};
  std::atomic<bool> throw_on_copy_{false};
  std::atomic<int> launch_countdown_{0};
  std::atomic<int> callback_countdown_{0};
  std::vector<std::atomic<int>> lost_after_;
  std::atomic<int64_t> allocation_calls_{0};
  std::atomic<int64_t> copy_calls_{0};
  std::atomic<int64_t> launch_calls_{0};
  std::atomic<int64_t> callback_calls_{0};
  std::atomic<int64_t> injected_{0};
};

}  // namespace tessera::testing

#endif  // TESSERA_TESTS_IFRT_FAULTY_PLATFORM_H_
