#include "backends/vulkan/heap_budget.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace tessera::vulkan {

HeapBudgets::HeapBudgets(VkPhysicalDevice physical, std::string device_name, int64_t limit_bytes,
                         bool driver_budget)
    : physical_(physical), device_name_(std::move(device_name)), driver_budget_(driver_budget) {
  VkPhysicalDeviceMemoryProperties mp;
  vkGetPhysicalDeviceMemoryProperties(physical, &mp);
  for (uint32_t h = 0; h < mp.memoryHeapCount; ++h) {
    const int64_t size = static_cast<int64_t>(mp.memoryHeaps[h].size);
    limits_.push_back(limit_bytes > 0 ? std::min(size, limit_bytes) : size);
  }
  committed_.assign(limits_.size(), 0);
}

int64_t HeapBudgets::DriverAvailable(uint32_t heap_index) const {
  if (!driver_budget_) return -1;
  VkPhysicalDeviceMemoryBudgetPropertiesEXT budget{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT};
  VkPhysicalDeviceMemoryProperties2 mp{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2};
  mp.pNext = &budget;
  vkGetPhysicalDeviceMemoryProperties2(physical_, &mp);
  const VkDeviceSize b = budget.heapBudget[heap_index], u = budget.heapUsage[heap_index];
  if (b == 0) return -1;  // the driver filled nothing in
  return u >= b ? 0 : static_cast<int64_t>(b - u);
}

absl::Status HeapBudgets::Reserve(uint32_t heap_index, int64_t bytes) {
  if (heap_index >= limits_.size()) {
    return absl::InternalError(absl::StrCat("no memory heap ", heap_index, " on ", device_name_));
  }
  std::lock_guard<std::mutex> lock(mu_);
  const int64_t committed = committed_[heap_index], limit = limits_[heap_index];
  if (bytes > limit - committed) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "cannot allocate ", bytes, " bytes on ", device_name_, ": memory heap ", heap_index,
        " has ", committed, " of its ", limit, " bytes in use by this platform"));
  }
  const int64_t available = DriverAvailable(heap_index);
  if (available >= 0 && bytes > available) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot allocate ", bytes, " bytes on ", device_name_, ": the driver's budget",
                     " (VK_EXT_memory_budget) for memory heap ", heap_index, " leaves ", available,
                     " bytes to this process"));
  }
  committed_[heap_index] = committed + bytes;
  return absl::OkStatus();
}

void HeapBudgets::Release(uint32_t heap_index, int64_t bytes) {
  if (heap_index >= limits_.size()) return;
  std::lock_guard<std::mutex> lock(mu_);
  committed_[heap_index] -= bytes;
}

int HeapBudgets::AddReclaimer(uint32_t heap_index, std::function<void()> reclaimer) {
  std::lock_guard<std::mutex> lock(reclaim_mu_);
  const int id = next_reclaimer_++;
  reclaimers_[id] = Reclaimer{heap_index, std::move(reclaimer)};
  return id;
}

void HeapBudgets::RemoveReclaimer(int id) {
  std::lock_guard<std::mutex> lock(reclaim_mu_);
  reclaimers_.erase(id);
}

absl::Status HeapBudgets::ReserveOrReclaim(uint32_t heap_index, int64_t bytes) {
  absl::Status reserved = Reserve(heap_index, bytes);
  if (reserved.ok() || !absl::IsResourceExhausted(reserved)) return reserved;
  {
    std::lock_guard<std::mutex> lock(reclaim_mu_);
    for (auto& [id, reclaimer] : reclaimers_) {
      if (reclaimer.heap_index == heap_index) reclaimer.reclaim();
    }
  }
  return Reserve(heap_index, bytes);
}

int64_t HeapBudgets::limit(uint32_t heap_index) const {
  return heap_index < limits_.size() ? limits_[heap_index] : 0;
}

int64_t HeapBudgets::committed(uint32_t heap_index) const {
  std::lock_guard<std::mutex> lock(mu_);
  return heap_index < committed_.size() ? committed_[heap_index] : 0;
}

}  // namespace tessera::vulkan
