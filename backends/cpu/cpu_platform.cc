#include "backends/cpu/cpu_platform.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <system_error>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "backends/common/parallel_for.h"
#include "backends/common/parallel_memcpy.h"
#include "backends/cpu/cpu_kernels.h"
#include "backends/cpu/cpu_stream.h"
#include "backends/cpu/host_allocator.h"
#include "base/status_macros.h"
#include "oneapi/tbb/blocked_range.h"
#include "oneapi/tbb/global_control.h"

namespace tessera {
namespace {

// Lets the arenas of all CPU devices together use more worker threads than the machine has cores
// (TBB's default limit), so that every device gets the threads it was given.
void RaiseTbbThreadLimit() {
  // Never destroyed (TBB may still run at exit). Constructed in static storage rather than with
  // `new`: the optimiser drops the store of an unused static pointer, and LeakSanitizer then
  // reports the object as leaked by every process that creates a CPU platform.
  alignas(tbb::global_control) static unsigned char storage[sizeof(tbb::global_control)];
  static tbb::global_control* control =
      new (storage) tbb::global_control(tbb::global_control::max_allowed_parallelism,
                                        std::max<size_t>(256, std::thread::hardware_concurrency()));
  (void)control;
}

// A 64-byte aligned block of the platform's HostAllocator (its cache of freed blocks by size is
// the pool that makes small shard buffers cheap); accounts its bytes to the memory's counter and
// returns the block to the allocator when the last reference goes (the array was deleted). It
// shares the counter and the allocator, so it may outlive the platform (a transport still holding
// it when the client goes).
class CpuBuffer final : public PlatformBuffer {
 public:
  CpuBuffer(void* data, int64_t size, int64_t rounded, std::shared_ptr<std::atomic<int64_t>> in_use,
            std::shared_ptr<cpu::HostAllocator> allocator)
      : data_(data),
        size_(size),
        rounded_(rounded),
        in_use_(std::move(in_use)),
        allocator_(std::move(allocator)) {
    in_use_->fetch_add(size_, std::memory_order_relaxed);
  }
  ~CpuBuffer() override {
    in_use_->fetch_sub(size_, std::memory_order_relaxed);
    allocator_->Free(data_, rounded_);
  }
  int64_t size_bytes() const override { return size_; }
  void* host_address() const override { return data_; }

 private:
  void* data_;
  int64_t size_;
  int64_t rounded_;
  std::shared_ptr<std::atomic<int64_t>> in_use_;
  std::shared_ptr<cpu::HostAllocator> allocator_;
};

// Caller-owned host memory used in place; `release` runs when the last reference goes.
class WrappedCpuBuffer final : public PlatformBuffer {
 public:
  WrappedCpuBuffer(void* data, int64_t size, std::function<void()> release)
      : data_(data), size_(size), release_(std::move(release)) {}
  ~WrappedCpuBuffer() override {
    if (release_) release_();
  }
  int64_t size_bytes() const override { return size_; }
  void* host_address() const override { return data_; }

 private:
  void* data_;
  int64_t size_;
  std::function<void()> release_;
};

class CpuPlatform final : public Platform {
 public:
  CpuPlatform(const CpuPlatformOptions& options, int64_t inline_max_bytes)
      : inline_max_bytes_(inline_max_bytes) {
    RaiseTbbThreadLimit();
    const int hw = std::max(1u, std::thread::hardware_concurrency());
    const int threads = options.threads_per_device > 0 ? options.threads_per_device
                                                       : std::max(1, hw / options.num_devices);
    for (int i = 0; i < options.num_devices; ++i) {
      auto device = std::make_unique<Device>();
      device->stream = std::make_unique<cpu::CpuStream>(threads);
      device->info.kind = "cpu";
      device->info.name = absl::StrCat("CPU device ", i, " (", threads, " threads)");
      device->info.attributes.Set("threads", int64_t{threads});
      device->info.attributes.Set("index", int64_t{i});
      device->info.memories.push_back(
          PlatformMemoryInfo{.kind = "host", .host_addressable = true, .capacity_bytes = 0});
      devices_.push_back(std::move(device));
    }
  }

  ~CpuPlatform() override {
    // Streams drain in their destructors.
    devices_.clear();
  }

  std::string_view name() const override { return "cpu"; }
  int device_count() const override { return static_cast<int>(devices_.size()); }
  const PlatformDeviceInfo& device_info(int device) const override {
    return devices_[device]->info;
  }

  absl::StatusOr<PlatformBufferRef> Allocate(int device, int memory, int64_t bytes) override {
    if (bytes < 0) return absl::InvalidArgumentError(absl::StrCat("negative size ", bytes));
    const int64_t rounded = cpu::HostAllocator::RoundedSize(bytes);
    void* data = allocator_->Allocate(rounded);
    if (data == nullptr) {
      return absl::ResourceExhaustedError(
          absl::StrCat("cannot allocate ", bytes, " bytes of host memory for cpu device ", device));
    }
    return std::make_shared<CpuBuffer>(data, bytes, rounded, devices_[device]->bytes_in_use,
                                       allocator_);
  }

  int64_t BytesInUse(int device, int memory) const override {
    return devices_[device]->bytes_in_use->load(std::memory_order_relaxed);
  }

  // Every device is a group of threads of this process: any buffer is every device's.
  bool HostBuffersServeEveryDevice() const override { return true; }

  absl::StatusOr<PlatformBufferRef> WrapHostMemory(int device, int memory, void* data,
                                                   int64_t bytes,
                                                   std::function<void()> on_release) override {
    return std::make_shared<WrappedCpuBuffer>(data, bytes, std::move(on_release));
  }

  Future<> CopyHostToBuffers(int device, std::vector<HostToBufferCopy> copies,
                             absl::Span<const Future<>> after) override {
    return EnqueueCopies(device, std::move(copies), after, [](const HostToBufferCopy& c) {
      backends::StridedMemcpy(c.src, c.dst->host_address(), c.geometry);
    });
  }

  Future<> CopyBuffersToHost(int device, std::vector<BufferToHostCopy> copies,
                             absl::Span<const Future<>> after) override {
    return EnqueueCopies(device, std::move(copies), after, [](const BufferToHostCopy& c) {
      backends::StridedMemcpy(c.src->host_address(), c.dst, c.geometry);
    });
  }

  Future<> CopyBuffersToBuffers(int device, std::vector<BufferToBufferCopy> copies,
                                absl::Span<const Future<>> after) override {
    return EnqueueCopies(device, std::move(copies), after, [](const BufferToBufferCopy& c) {
      backends::StridedMemcpy(c.src->host_address(), c.dst->host_address(), c.geometry);
    });
  }

  Future<> EnqueueHostCallback(int device, std::function<absl::Status()> fn,
                               absl::Span<const Future<>> after) override {
    return devices_[device]->stream->Enqueue(after, std::move(fn));
  }

  absl::StatusOr<PlatformKernelRef> LoadKernel(int device,
                                               const KernelArtifact& artifact) override {
    // One JIT per artifact, shared by every device of the platform.
    std::lock_guard<std::mutex> lock(kernels_mu_);
    const std::string key =
        absl::StrCat(artifact.format, "\n", artifact.entry, "\n", artifact.code);
    if (auto it = kernels_.find(key); it != kernels_.end()) {
      if (PlatformKernelRef live = it->second.lock()) return live;
    }
    absl::StatusOr<PlatformKernelRef> kernel = cpu::LoadCpuPlatformKernel(artifact);
    if (kernel.ok()) {
      // Drop the entries (and their code text) of kernels no executable uses any more.
      absl::erase_if(kernels_, [](const auto& entry) { return entry.second.expired(); });
      kernels_[key] = *kernel;
    }
    return kernel;
  }

  Future<> LaunchKernel(int device, KernelLaunch launch,
                        absl::Span<const Future<>> after) override {
    // On the device's stream, in its arena; the launch keeps its buffers and kernel alive. Inline
    // when its buffers are tiny: a kernel does more work per byte than a copy, so the bound is
    // kKernelInlineShare of the copies' (all of it when inlining is forced).
    int64_t bytes = 0;
    for (const PlatformBufferRef& b : launch.buffers) bytes += b->size_bytes();
    const bool small = inline_max_bytes_ == std::numeric_limits<int64_t>::max() ||
                       bytes <= inline_max_bytes_ / kKernelInlineShare;
    return devices_[device]->stream->Enqueue(
        after, [launch = std::move(launch)]() { return cpu::RunCpuPlatformKernel(launch); },
        /*may_run_inline=*/small);
  }

 private:
  // Loaded kernels by artifact, held weakly: a kernel lives as long as an executable uses it.
  std::mutex kernels_mu_;
  absl::flat_hash_map<std::string, std::weak_ptr<const PlatformKernel>> kernels_
      ABSL_GUARDED_BY(kernels_mu_);

  struct Device {
    PlatformDeviceInfo info;
    std::unique_ptr<cpu::CpuStream> stream;
    std::shared_ptr<std::atomic<int64_t>> bytes_in_use =
        std::make_shared<std::atomic<int64_t>>(0);  // shared with its buffers
  };

  // Enqueues `copy(c)` for every copy as one operation of `device`'s stream: inline when the
  // copies move at most inline_max_bytes_ together, and then one after the other (splitting a few
  // KiB over threads costs more than it saves); else in parallel across the device's threads.
  template <typename Copy, typename F>
  Future<> EnqueueCopies(int device, std::vector<Copy> copies, absl::Span<const Future<>> after,
                         F copy) {
    int64_t bytes = 0;
    for (const Copy& c : copies) bytes += c.geometry.bytes();
    const bool small = bytes <= inline_max_bytes_;
    return devices_[device]->stream->Enqueue(
        after,
        [copies = std::move(copies), copy, parallel = !small || bytes > kSerialMaxBytes]() {
          if (parallel) {
            RunAll(copies.size(), [&](size_t i) { copy(copies[i]); });
          } else {
            for (const Copy& c : copies) copy(c);
          }
          return absl::OkStatus();
        },
        /*may_run_inline=*/small);
  }

  // Kernel launches run inline up to inline_max_bytes_ / kKernelInlineShare bytes of buffers.
  static constexpr int64_t kKernelInlineShare = 16;
  // Copies of at most this many bytes in all run one after the other, never split over threads.
  static constexpr int64_t kSerialMaxBytes = 64 << 10;

  // Runs fn(0..n-1), in parallel across the calling arena's threads when n > 1.
  template <typename F>
  static void RunAll(size_t n, F&& fn) {
    if (n == 1) {
      fn(0);
      return;
    }
    backends::ParallelFor(tbb::blocked_range<size_t>(0, n, 1),
                          [&](const tbb::blocked_range<size_t>& r) {
                            for (size_t i = r.begin(); i < r.end(); ++i) fn(i);
                          });
  }

  // Freed buffers are cached for reuse, up to 4 GiB per platform.
  std::shared_ptr<cpu::HostAllocator> allocator_ =
      std::make_shared<cpu::HostAllocator>(int64_t{4} << 30);
  std::vector<std::unique_ptr<Device>> devices_;
  const int64_t inline_max_bytes_;  // negative: never inline
};

}  // namespace

absl::StatusOr<int64_t> ResolveInlineMaxBytes(const CpuPlatformOptions& options) {
  if (options.inline_max_bytes.has_value()) return *options.inline_max_bytes;
  const char* env = std::getenv("TESSERA_CPU_INLINE_MAX_BYTES");
  if (env == nullptr || *env == '\0') return kDefaultInlineMaxBytes;
  const std::string value(env);
  if (value == "never") return int64_t{-1};
  if (value == "always") return std::numeric_limits<int64_t>::max();
  int64_t bytes = 0;
  if (!absl::SimpleAtoi(value, &bytes)) {
    return absl::InvalidArgumentError(
        absl::StrCat("TESSERA_CPU_INLINE_MAX_BYTES must be \"never\", \"always\" or a byte count, "
                     "got \"",
                     value, "\""));
  }
  return bytes;
}

absl::StatusOr<std::unique_ptr<Platform>> CreateCpuPlatform(const CpuPlatformOptions& options) {
  if (options.num_devices < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("cpu_devices must be at least 1, got ", options.num_devices));
  }
  if (options.threads_per_device < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cpu_threads_per_device must be >= 0 (0 = auto), got ", options.threads_per_device));
  }
  TESSERA_ASSIGN_OR_RETURN(const int64_t inline_max_bytes, ResolveInlineMaxBytes(options));
  // Each device starts a thread: the system may refuse one (std::system_error), never an abort.
  try {
    return std::unique_ptr<Platform>(new CpuPlatform(options, inline_max_bytes));
  } catch (const std::system_error& e) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "cannot start the threads of ", options.num_devices, " CPU devices: ", e.what()));
  } catch (const std::bad_alloc& e) {
    return absl::ResourceExhaustedError(
        absl::StrCat("out of host memory creating ", options.num_devices, " CPU devices"));
  }
}

}  // namespace tessera
