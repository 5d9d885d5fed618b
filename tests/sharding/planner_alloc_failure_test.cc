// PlanReshard under allocation failure: this binary replaces the global operator new so that the
// n-th allocation made while the injection is armed throws std::bad_alloc. For every n up to the
// number of allocations a plan needs, PlanReshard must return RESOURCE_EXHAUSTED (never throw,
// never crash), and succeed once n is past them.
#include <cstdlib>
#include <new>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sharding/planner.h"
#include "sharding/shard_layout.h"
#include "tests/testing/status_matchers.h"

// operator new and delete are replaced together (malloc/free), which GCC cannot see when it
// inlines a delete next to a new.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

namespace {

// Allocations left before the failing one; negative: not armed.
thread_local long g_allocations_left = -1;

}  // namespace

void* operator new(std::size_t size) {
  if (g_allocations_left == 0) {
    g_allocations_left = -1;  // fail once: the error path may allocate
    throw std::bad_alloc();
  }
  if (g_allocations_left > 0) --g_allocations_left;
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t size) { return operator new(size); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  try {
    return operator new(size);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
  return operator new(size, std::nothrow);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

namespace tessera::sharding {
namespace {

using ::tessera::testing::StatusIs;
using ::testing::HasSubstr;

TEST(PlannerAllocFailureTest, EveryFailedAllocationIsResourceExhausted) {
  // Overlapping boxes (rank 3) -> a 2x2 tiling at other locations, with fan-out.
  const std::vector<int64_t> shape = {6, 6, 6};
  ShardLayout src = *ShardLayout::FromBoxes(
      shape, {Box::FromShape({6, 6, 6}), Box({1, 2, 3}, {3, 3, 2}), Box({2, 1, 0}, {4, 2, 6})});
  ShardLayout dst = *ShardLayout::FromBoxes(
      shape, {Box({0, 0, 0}, {3, 6, 6}), Box({3, 0, 0}, {3, 6, 6}), Box({0, 0, 0}, {3, 6, 6})});
  const std::vector<int64_t> src_loc = {0, 1, 2}, dst_loc = {3, 4, 5};
  const absl::StatusOr<ReshardPlan> expected =
      PlanReshard(src, src_loc, dst, dst_loc, 4, {.fan_out = true});
  ASSERT_TRUE(expected.ok()) << expected.status();
  int failures = 0;
  for (long n = 0;; ++n) {
    g_allocations_left = n;
    absl::StatusOr<ReshardPlan> plan =
        PlanReshard(src, src_loc, dst, dst_loc, 4, {.fan_out = true});
    const bool injected = g_allocations_left == -1;
    g_allocations_left = -1;
    if (!injected) break;  // n is past every allocation the plan makes
    if (plan.ok()) {
      // A failure the standard library absorbs (stable_sort's buffer falls back to in place).
      EXPECT_TRUE(*plan == *expected) << "allocation " << n;
      continue;
    }
    ASSERT_THAT(plan, StatusIs(absl::StatusCode::kResourceExhausted,
                               HasSubstr("Out of memory planning the reshard")))
        << "allocation " << n;
    ++failures;
  }
  EXPECT_GT(failures, 20);
}

}  // namespace
}  // namespace tessera::sharding
