#include "backends/vulkan/device_memory_allocator.h"

#include <atomic>
#include <iterator>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "backends/vulkan/vulkan_status.h"

namespace tessera::vulkan {
namespace {

std::atomic<uint64_t> next_block_id{1};

}  // namespace

void MemoryBlock::RunDestroyHooks() {
  std::vector<std::function<void()>> hooks;
  {
    std::lock_guard<std::mutex> lock(on_destroy_mu);
    hooks.swap(on_destroy);
  }
  for (auto& hook : hooks) hook();
}

DeviceMemoryAllocator::DeviceMemoryAllocator(VkDevice device, uint32_t type_index, bool map,
                                             int64_t block_bytes, int64_t alignment,
                                             const BlockExporter* exporter, HeapBudgets* heaps,
                                             uint32_t heap_index)
    : device_(device),
      type_index_(type_index),
      map_(map),
      block_bytes_(block_bytes),
      alignment_(alignment),
      exporter_(exporter),
      heaps_(heaps),
      heap_index_(heap_index) {
  if (heaps_ != nullptr) {
    spare_limit_bytes_ = heaps_->limit(heap_index_) / 4;
    reclaimer_ = heaps_->AddReclaimer(heap_index_, [this] { DestroySpares(); });
  } else {
    spare_limit_bytes_ = int64_t{256} << 20;
  }
}

DeviceMemoryAllocator::~DeviceMemoryAllocator() {
  if (heaps_ != nullptr) heaps_->RemoveReclaimer(reclaimer_);
  DestroySpares();
  for (auto& b : blocks_) DestroyBlock(*b);
}

std::unique_ptr<MemoryBlock> DeviceMemoryAllocator::TakeSpare(int64_t size) {
  std::lock_guard<std::mutex> lock(spare_mu_);
  auto best = spares_.end();
  for (auto it = spares_.begin(); it != spares_.end(); ++it) {
    const int64_t have = (*it)->size;
    if (have < size || have > size + size / 8) continue;
    if (best == spares_.end() || have < (*best)->size) best = it;
  }
  if (best == spares_.end()) return nullptr;
  std::unique_ptr<MemoryBlock> b = std::move(*best);
  spares_.erase(best);
  return b;
}

void DeviceMemoryAllocator::KeepSpare(std::unique_ptr<MemoryBlock> b) {
  std::vector<std::unique_ptr<MemoryBlock>> evicted;
  {
    std::lock_guard<std::mutex> lock(spare_mu_);
    if (b->size <= spare_limit_bytes_) {
      spares_.push_back(std::move(b));
    } else {
      evicted.push_back(std::move(b));
    }
    int64_t bytes = 0;
    for (const auto& spare : spares_) bytes += spare->size;
    while (!spares_.empty() &&
           (static_cast<int>(spares_.size()) > kMaxSpareBlocks || bytes > spare_limit_bytes_)) {
      bytes -= spares_.front()->size;
      evicted.push_back(std::move(spares_.front()));
      spares_.erase(spares_.begin());
    }
  }
  for (auto& e : evicted) DestroyBlock(*e);
}

void DeviceMemoryAllocator::DestroySpares() {
  std::vector<std::unique_ptr<MemoryBlock>> spares;
  {
    std::lock_guard<std::mutex> lock(spare_mu_);
    spares.swap(spares_);
  }
  for (auto& b : spares) DestroyBlock(*b);
}

absl::StatusOr<DeviceMemoryAllocator::Allocation> DeviceMemoryAllocator::Allocate(int64_t bytes) {
  const int64_t size = RoundUp(bytes, alignment_);
  std::lock_guard<std::mutex> lock(mu_);
  if (size > block_bytes_ / 2) {
    std::unique_ptr<MemoryBlock> spare = TakeSpare(size);
    if (spare == nullptr) {
      auto block = CreateBlock(size, /*dedicated=*/true);
      if (!block.ok()) return block.status();
      spare = *std::move(block);
    }
    MemoryBlock* b = spare.get();
    blocks_.push_back(std::move(spare));
    in_use_ += size;
    return Allocation{b, 0, size};
  }
  for (auto& b : blocks_) {
    if (b->dedicated) continue;
    for (auto it = b->free_ranges.begin(); it != b->free_ranges.end(); ++it) {
      if (it->second < size) continue;
      const int64_t offset = it->first, rest = it->second - size;
      b->free_ranges.erase(it);
      if (rest > 0) b->free_ranges[offset + size] = rest;
      in_use_ += size;
      return Allocation{b.get(), offset, size};
    }
  }
  auto block = CreateBlock(block_bytes_, /*dedicated=*/false);
  if (!block.ok()) return block.status();
  MemoryBlock* b = block->get();
  blocks_.push_back(std::move(*block));
  b->free_ranges.clear();
  if (block_bytes_ > size) b->free_ranges[size] = block_bytes_ - size;
  in_use_ += size;
  return Allocation{b, 0, size};
}

void DeviceMemoryAllocator::Free(const Allocation& a) {
  std::lock_guard<std::mutex> lock(mu_);
  in_use_ -= a.size;
  MemoryBlock* b = a.block;
  if (!b->dedicated) {
    auto [it, inserted] = b->free_ranges.emplace(a.offset, a.size);
    auto next = std::next(it);
    if (next != b->free_ranges.end() && it->first + it->second == next->first) {
      it->second += next->second;
      b->free_ranges.erase(next);
    }
    if (it != b->free_ranges.begin()) {
      auto prev = std::prev(it);
      if (prev->first + prev->second == it->first) {
        prev->second += it->second;
        b->free_ranges.erase(it);
      }
    }
    const bool empty = b->free_ranges.size() == 1 && b->free_ranges.begin()->second == b->size;
    if (!empty) return;
    // Keep one empty block around to avoid churn.
    int empty_blocks = 0;
    for (auto& other : blocks_) {
      if (!other->dedicated && other->free_ranges.size() == 1 &&
          other->free_ranges.begin()->second == other->size) {
        ++empty_blocks;
      }
    }
    if (empty_blocks <= 1) return;
  }
  for (auto it = blocks_.begin(); it != blocks_.end(); ++it) {
    if (it->get() == b) {
      std::unique_ptr<MemoryBlock> freed = std::move(*it);
      blocks_.erase(it);
      if (freed->dedicated) {
        KeepSpare(std::move(freed));
      } else {
        DestroyBlock(*freed);
      }
      break;
    }
  }
}

int64_t DeviceMemoryAllocator::in_use() const {
  std::lock_guard<std::mutex> lock(mu_);
  return in_use_;
}

absl::StatusOr<std::unique_ptr<MemoryBlock>> DeviceMemoryAllocator::CreateBlock(int64_t size,
                                                                                bool dedicated) {
  auto b = std::make_unique<MemoryBlock>();
  b->size = size;
  b->dedicated = dedicated;
  b->free_ranges[0] = size;
  b->id = next_block_id.fetch_add(1, std::memory_order_relaxed);
  b->memory_type = type_index_;
  VkExternalMemoryBufferCreateInfo external_buffer{
      VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO};
  external_buffer.handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT;
  VkExportMemoryAllocateInfo export_info{VK_STRUCTURE_TYPE_EXPORT_MEMORY_ALLOCATE_INFO};
  export_info.handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT;
  VkBufferCreateInfo bci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  if (exporter_) bci.pNext = &external_buffer;
  bci.size = static_cast<VkDeviceSize>(size);
  bci.usage = kBlockBufferUsage;
  bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  TESSERA_VK_RETURN_IF_ERROR(vkCreateBuffer(device_, &bci, nullptr, &b->buffer), "vkCreateBuffer");
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(device_, b->buffer, &req);
  if ((req.memoryTypeBits & (1u << type_index_)) == 0) {
    vkDestroyBuffer(device_, b->buffer, nullptr);
    return absl::InternalError("memory type not usable for storage buffers");
  }
  VkMemoryAllocateInfo mai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  if (exporter_) mai.pNext = &export_info;
  mai.allocationSize = req.size;
  mai.memoryTypeIndex = type_index_;
  b->allocation_size = static_cast<int64_t>(req.size);
  if (heaps_ != nullptr) {
    absl::Status fits = heaps_->ReserveOrReclaim(heap_index_, b->allocation_size);
    if (!fits.ok()) {
      vkDestroyBuffer(device_, b->buffer, nullptr);
      return fits;
    }
  }
  VkResult r = vkAllocateMemory(device_, &mai, nullptr, &b->memory);
  if (r != VK_SUCCESS) {
    vkDestroyBuffer(device_, b->buffer, nullptr);
    if (heaps_ != nullptr) heaps_->Release(heap_index_, b->allocation_size);
    return absl::ResourceExhaustedError(
        absl::StrCat("vkAllocateMemory of ", size, " bytes failed: ", VkResultName(r)));
  }
  r = vkBindBufferMemory(device_, b->buffer, b->memory, 0);
  if (r == VK_SUCCESS && map_) r = vkMapMemory(device_, b->memory, 0, VK_WHOLE_SIZE, 0, &b->mapped);
  if (r != VK_SUCCESS) {
    DestroyBlock(*b);
    return VkStatus(r, "vkBindBufferMemory/vkMapMemory");
  }
  b->exporter = exporter_;
  return b;
}

void DeviceMemoryAllocator::DestroyBlock(MemoryBlock& b) {
  b.RunDestroyHooks();
  if (b.buffer != VK_NULL_HANDLE) vkDestroyBuffer(device_, b.buffer, nullptr);
  if (b.memory != VK_NULL_HANDLE) {
    vkFreeMemory(device_, b.memory, nullptr);  // unmaps
    if (heaps_ != nullptr) heaps_->Release(heap_index_, b.allocation_size);
  }
  b.buffer = VK_NULL_HANDLE;
  b.memory = VK_NULL_HANDLE;
}

int PickMemoryType(const VkPhysicalDeviceMemoryProperties& mp, VkMemoryPropertyFlags required,
                   VkMemoryPropertyFlags preferred, VkMemoryPropertyFlags avoided) {
  int best = -1, best_score = -1;
  for (uint32_t i = 0; i < mp.memoryTypeCount; ++i) {
    const VkMemoryPropertyFlags f = mp.memoryTypes[i].propertyFlags;
    if ((f & required) != required) continue;
    int score = 0;
    if ((f & preferred) == preferred) score += 2;
    if ((f & avoided) == 0) score += 1;
    if (score > best_score) {
      best = static_cast<int>(i);
      best_score = score;
    }
  }
  return best;
}

}  // namespace tessera::vulkan
