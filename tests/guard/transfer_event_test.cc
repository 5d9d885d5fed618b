#include "guard/transfer_event.h"

#include "gtest/gtest.h"

namespace tessera::guard {
namespace {

TEST(TransferEventTest, DescriptionOfDeviceToDevice) {
  TransferEvent event{.direction = Direction::kDeviceToDevice,
                      .is_explicit = true,
                      .operation = "ReshardArrays",
                      .dtype = "f32",
                      .shape = {8192, 8192},
                      .bytes = 268435456,
                      .src_devices = {0, 1},
                      .dst_devices = {2, 3},
                      .src_memory_kind = "host",
                      .dst_memory_kind = "device"};
  EXPECT_EQ(event.Description(),
            "ReshardArrays of f32[8192,8192] (268435456 bytes, explicit) from "
            "devices [0,1] "
            "(memory kind host) to devices [2,3] (memory kind device)");
}

TEST(TransferEventTest, DescriptionOfHostSides) {
  TransferEvent h2d{.direction = Direction::kHostToDevice,
                    .is_explicit = false,
                    .operation = "MakeArrayFromHostBuffer",
                    .dtype = "bf16",
                    .shape = {3},
                    .bytes = 6,
                    .dst_devices = {5}};
  EXPECT_EQ(h2d.Description(),
            "MakeArrayFromHostBuffer of bf16[3] (6 bytes, implicit) from host "
            "to devices [5]");
  TransferEvent d2h{.direction = Direction::kDeviceToHost,
                    .operation = "CopyToHostBuffer",
                    .dtype = "s32",
                    .shape = {},
                    .bytes = 4,
                    .src_devices = {1},
                    .src_memory_kind = "device"};
  EXPECT_EQ(d2h.Description(),
            "CopyToHostBuffer of s32[] (4 bytes, explicit) from devices [1] "
            "(memory kind device) to host");
}

TEST(TransferEventTest, DescriptionOfEmptyEvent) {
  EXPECT_EQ(TransferEvent{}.Description(), "transfer (0 bytes, explicit) from host to host");
  EXPECT_EQ((TransferEvent{.dtype = "f32"}).Description(),
            "transfer of f32[] (0 bytes, explicit) from host to host");  // a scalar
}

TEST(TransferEventTest, DescriptionCountsItsCalls) {
  const int64_t before = internal::DescriptionCallCountForTesting();
  (void)TransferEvent{}.Description();
  EXPECT_EQ(internal::DescriptionCallCountForTesting(), before + 1);
}

TEST(TransferEventTest, Equality) {
  TransferEvent a{.operation = "x", .bytes = 1};
  TransferEvent b = a;
  EXPECT_EQ(a, b);
  b.dst_devices = {1};
  EXPECT_NE(a, b);
}

}  // namespace
}  // namespace tessera::guard
