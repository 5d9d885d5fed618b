// Transfer bandwidth of the Vulkan platform, each figure beside a host memcpy of the same bytes
// measured in the same run.
//
//   vulkan_transfer_benchmark [--bytes=N] [--reps=R] [--logical=K]
//   TESSERA_BENCH_BYTES=1073741824 vulkan_transfer_benchmark  # 1 GiB
//
// Default: 64 MiB, 3 repetitions (best of). Rows: host->device and device->host from pageable
// (std::vector) and pinned_host (platform-allocated, mapped) memory; device->device on one
// VkDevice; device->device across two VkDevices (two physical devices when there are, else two
// logical devices of one). The platform picks its devices from the normal Vulkan loader environment
// (VK_DRIVER_FILES etc.). Last rows: the three cross-device paths (host memcpy between staging
// rings, shared staging through VK_EXT_external_memory_host, and a direct copy from the source's
// memory imported into the destination through VK_KHR_external_memory_fd, for VkDevices of one GPU)
// and a strided box of short rows (vkCmdCopyBuffer regions vs compute shader).

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backends/vulkan/vulkan_platform.h"

namespace {

using Clock = std::chrono::steady_clock;

double BestSeconds(int reps, const std::function<void()>& fn) {
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    auto t0 = Clock::now();
    fn();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return best;
}

tessera::StridedCopy Dense(int64_t bytes) {
  tessera::StridedCopy c;
  c.element_bytes = 1;
  c.extent = {bytes};
  c.src_byte_strides = {1};
  c.dst_byte_strides = {1};
  return c;
}

void Check(const absl::Status& s, const char* what) {
  if (!s.ok()) {
    std::fprintf(stderr, "%s: %s\n", what, s.ToString().c_str());
    std::exit(1);
  }
}

struct Settings {
  int64_t bytes = int64_t{64} << 20;
  int reps = 3;
  int logical = 0;  // 0: auto
};

Settings ParseSettings(int argc, char** argv) {
  Settings s;
  if (const char* env = std::getenv("TESSERA_BENCH_BYTES")) s.bytes = std::atoll(env);
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--bytes=", 0) == 0) s.bytes = std::atoll(a.c_str() + 8);
    if (a.rfind("--reps=", 0) == 0) s.reps = std::atoi(a.c_str() + 7);
    if (a.rfind("--logical=", 0) == 0) s.logical = std::atoi(a.c_str() + 10);
  }
  return s;
}

// The platform measured: two devices where the loader offers them, else two logical devices of one
// (unless --logical says how many). Sets `options` to what was used.
std::unique_ptr<tessera::VulkanPlatform> OpenPlatform(const Settings& settings,
                                                      tessera::VulkanPlatformOptions& options) {
  options.enable_validation = false;
  if (settings.logical > 0) options.logical_devices_per_gpu = settings.logical;
  auto created = tessera::CreateVulkanPlatform(options);
  if (created.ok() && (*created)->device_count() < 2 && settings.logical == 0) {
    created->reset();
    options.logical_devices_per_gpu = 2;
    created = tessera::CreateVulkanPlatform(options);
  }
  Check(created.status(), "CreateVulkanPlatform");
  return *std::move(created);
}

void PrintRow(const char* name, double seconds, double bytes, double memcpy_gbps) {
  const double gbps = bytes / seconds / 1e9;
  std::printf("%-52s %10.2f %10.2f %12.2f %8.2f\n", name, seconds * 1e3, gbps, memcpy_gbps,
              gbps / memcpy_gbps);
}

// Host<->device and device->device rows on `p`, after the memcpy floor; returns the floor in GB/s.
double RunTransferRows(tessera::VulkanPlatform& p, const Settings& settings) {
  const int64_t bytes = settings.bytes;
  const int d0 = 0, d1 = p.device_count() > 1 ? 1 : 0;
  const bool same_physical = p.device_info(d0).attributes.GetInt("physical_device_index") ==
                             p.device_info(d1).attributes.GetInt("physical_device_index");
  std::printf("device 0: %s (%s)\n", p.device_info(d0).name.c_str(),
              p.device_info(d0).attributes.DebugString().c_str());
  std::printf("device 1: %s%s\n", p.device_info(d1).name.c_str(),
              same_physical ? " (logical device of the same GPU)" : "");
  std::printf("bytes per transfer: %lld, best of %d\n\n", static_cast<long long>(bytes),
              settings.reps);

  std::vector<char> pageable(bytes, 1), pageable_out(bytes, 0), memcpy_dst(bytes, 0);
  auto dev_a = p.Allocate(d0, 0, bytes);
  auto dev_b = p.Allocate(d0, 0, bytes);
  auto dev_c = p.Allocate(d1, 0, bytes);
  auto pinned = p.Allocate(d0, 1, bytes);
  Check(dev_a.status(), "Allocate");
  Check(dev_b.status(), "Allocate");
  Check(dev_c.status(), "Allocate");
  Check(pinned.status(), "Allocate pinned");
  char* pinned_ptr = static_cast<char*>((*pinned)->host_address());
  std::memset(pinned_ptr, 2, bytes);

  const double memcpy_s =
      BestSeconds(settings.reps, [&] { std::memcpy(memcpy_dst.data(), pageable.data(), bytes); });
  const double memcpy_gbps = static_cast<double>(bytes) / memcpy_s / 1e9;
  struct Row {
    const char* name;
    std::function<absl::Status()> fn;
  };
  const tessera::StridedCopy dense = Dense(bytes);
  std::vector<Row> rows = {
      {"host->device (pageable)",
       [&] {
         return p.CopyHostToBuffers(d0, {{pageable.data(), *dev_a, dense}}, {}).Await();
       }},
      {"device->host (pageable)",
       [&] {
         return p.CopyBuffersToHost(d0, {{*dev_a, pageable_out.data(), dense}}, {}).Await();
       }},
      {"host->device (pinned src)",
       [&] {
         return p.CopyHostToBuffers(d0, {{pinned_ptr, *dev_a, dense}}, {}).Await();
       }},
      {"device->host (pinned dst)",
       [&] {
         return p.CopyBuffersToHost(d0, {{*dev_a, pinned_ptr, dense}}, {}).Await();
       }},
      {"pinned_host buffer <- host (memcpy path)",
       [&] {
         return p.CopyHostToBuffers(d0, {{pageable.data(), *pinned, dense}}, {}).Await();
       }},
      {"pinned_host buffer -> device (GPU copy)",
       [&] {
         return p.CopyBuffersToBuffers(d0, {{*pinned, *dev_a, dense}}, {}).Await();
       }},
      {"device->device (same VkDevice)",
       [&] {
         return p.CopyBuffersToBuffers(d0, {{*dev_a, *dev_b, dense}}, {}).Await();
       }},
      {same_physical ? "device->device (2 logical VkDevices, default path)"
                     : "device->device (2 physical devices, default path)",
       [&] {
         return p.CopyBuffersToBuffers(d1, {{*dev_a, *dev_c, dense}}, {}).Await();
       }},
  };
  std::printf("%-52s %10s %10s %12s %8s\n", "transfer", "ms", "GB/s", "memcpy GB/s", "ratio");
  PrintRow("host memcpy (floor)", memcpy_s, static_cast<double>(bytes), memcpy_gbps);
  for (Row& r : rows) {
    Check(r.fn(), r.name);  // warm-up
    absl::Status status;
    const double s = BestSeconds(settings.reps, [&] { status.Update(r.fn()); });
    Check(status, r.name);
    PrintRow(r.name, s, static_cast<double>(bytes), memcpy_gbps);
  }
  return memcpy_gbps;
}

// The three cross-device paths side by side, each on a platform of its own.
void RunCrossDevicePaths(const tessera::VulkanPlatformOptions& options, const Settings& settings,
                         double memcpy_gbps) {
  const int64_t bytes = settings.bytes;
  enum Path { kHostMemcpy, kSharedStaging, kPeerImport };
  for (Path path : {kHostMemcpy, kSharedStaging, kPeerImport}) {
    tessera::VulkanPlatformOptions o = options;
    o.cross_device_shared_staging = path == kSharedStaging;
    o.cross_device_peer_import = path == kPeerImport;
    auto q = tessera::CreateVulkanPlatform(o);
    Check(q.status(), "CreateVulkanPlatform");
    const int e1 = (*q)->device_count() > 1 ? 1 : 0;
    auto a = (*q)->Allocate(0, 0, bytes);
    auto c = (*q)->Allocate(e1, 0, bytes);
    Check(a.status(), "Allocate");
    Check(c.status(), "Allocate");
    auto run = [&] { return (*q)->CopyBuffersToBuffers(e1, {{*a, *c, Dense(bytes)}}, {}).Await(); };
    Check(run(), "cross-device warm-up");
    absl::Status status;
    const double s = BestSeconds(settings.reps, [&] { status.Update(run()); });
    Check(status, "cross-device");
    const tessera::VulkanPlatformStats st = (*q)->stats();
    const char* name = "device->device cross: host memcpy between rings";
    if (path == kSharedStaging) {
      name = st.shared_staging_copies > 0 ? "device->device cross: shared staging (ext host mem)"
                                          : "device->device cross: shared staging UNAVAILABLE";
    } else if (path == kPeerImport) {
      name = st.peer_import_copies > 0 ? "device->device cross: peer import (ext memory fd)"
                                       : "device->device cross: peer import UNAVAILABLE";
    }
    PrintRow(name, s, static_cast<double>(bytes), memcpy_gbps);
  }
}

// A box of short rows (64-byte rows of 4-byte elements, every other row) within one VkDevice: the
// compute shader against vkCmdCopyBuffer regions.
void RunStridedBox(const tessera::VulkanPlatformOptions& options, const Settings& settings,
                   double memcpy_gbps) {
  const int64_t bytes = settings.bytes;
  for (bool compute : {false, true}) {
    tessera::VulkanPlatformOptions o = options;
    o.compute_copy_min_runs = compute ? 0 : (int64_t{1} << 62);
    auto q = tessera::CreateVulkanPlatform(o);
    Check(q.status(), "CreateVulkanPlatform");
    const int64_t row = 64, rows = bytes / (2 * row);
    auto a = (*q)->Allocate(0, 0, bytes);
    auto c = (*q)->Allocate(0, 0, bytes / 2);
    Check(a.status(), "Allocate");
    Check(c.status(), "Allocate");
    tessera::StridedCopy g;
    g.element_bytes = 4;
    g.extent = {rows, row / 4};
    g.src_byte_strides = {2 * row, 4};
    g.dst_byte_strides = {row, 4};
    auto run = [&] { return (*q)->CopyBuffersToBuffers(0, {{*a, *c, g}}, {}).Await(); };
    Check(run(), "strided warm-up");
    absl::Status status;
    const double s = BestSeconds(settings.reps, [&] { status.Update(run()); });
    Check(status, "strided");
    const bool used = (*q)->stats().compute_copies > 0;
    PrintRow(compute ? (used ? "strided box 64 B rows: compute shader"
                             : "strided box 64 B rows: compute UNAVAILABLE")
                     : "strided box 64 B rows: vkCmdCopyBuffer regions",
             s, static_cast<double>(bytes / 2), memcpy_gbps);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const Settings settings = ParseSettings(argc, argv);
  tessera::VulkanPlatformOptions options;
  std::unique_ptr<tessera::VulkanPlatform> platform = OpenPlatform(settings, options);
  const double memcpy_gbps = RunTransferRows(*platform, settings);
  RunCrossDevicePaths(options, settings, memcpy_gbps);
  RunStridedBox(options, settings, memcpy_gbps);
  return 0;
}
