// tests/guard/test_events.h: small event factories shared by the guard tests.

#ifndef TESSERA_TESTS_GUARD_TEST_EVENTS_H_
#define TESSERA_TESTS_GUARD_TEST_EVENTS_H_

#include <cstdint>

#include "guard/level.h"
#include "guard/transfer_event.h"

namespace tessera::guard::testing {

// A 1 KiB f32 movement in `direction`, on devices 0 and 1 as the direction
// needs.
inline TransferEvent MakeEvent(Direction direction, bool is_explicit, int64_t bytes = 1024) {
  TransferEvent event{.direction = direction,
                      .is_explicit = is_explicit,
                      .dtype = "f32",
                      .shape = {bytes / 4},
                      .bytes = bytes};
  switch (direction) {
    case Direction::kHostToDevice:
      event.operation = "MakeArrayFromHostBuffer";
      event.dst_devices = {0};
      break;
    case Direction::kDeviceToDevice:
      event.operation = "ReshardArrays";
      event.src_devices = {0};
      event.dst_devices = {1};
      break;
    case Direction::kDeviceToHost:
      event.operation = "CopyToHostBuffer";
      event.src_devices = {0};
      break;
  }
  return event;
}

}  // namespace tessera::guard::testing

#endif  // TESSERA_TESTS_GUARD_TEST_EVENTS_H_
