// PJRT_Event: a Tessera future. OnReady runs the caller's callback on the thread that sets the
// future (a device's thread), never blocking a caller's thread; Await blocks only its caller.

#include <utility>

#include "bindings/pjrt/entry_points.h"
#include "bindings/pjrt/internal.h"

namespace tessera::pjrt {
namespace {

// Never destroyed: events handed out at exit stay valid.
PJRT_Event* ReadyOkEvent() {
  static PJRT_Event* const event = new PJRT_Event{tessera::MakeReadyFuture()};
  return event;
}

}  // namespace

PJRT_Event* NewEvent(tessera::Future<> future) {
  if (future.IsReady() && future.Await().ok()) return ReadyOkEvent();
  return new PJRT_Event{std::move(future)};
}

PJRT_Error* EventDestroy(PJRT_Event_Destroy_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_Event_Destroy_Args);
  if (args->event != ReadyOkEvent()) delete args->event;
  return nullptr;
}

PJRT_Error* EventIsReady(PJRT_Event_IsReady_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_Event_IsReady_Args);
  TESSERA_PJRT_RETURN_IF_ERROR(CheckNotNull(args->event, "PJRT_Event_IsReady_Args.event"));
  args->is_ready = args->event->future.IsReady();
  return nullptr;
}

PJRT_Error* EventError(PJRT_Event_Error_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_Event_Error_Args);
  TESSERA_PJRT_RETURN_IF_ERROR(CheckNotNull(args->event, "PJRT_Event_Error_Args.event"));
  if (!args->event->future.IsReady()) {
    return MakeError(absl::FailedPreconditionError(
        "PJRT_Event_Error on an event that is not ready (call PJRT_Event_IsReady first)"));
  }
  return MakeError(args->event->future.Await());
}

PJRT_Error* EventAwait(PJRT_Event_Await_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_Event_Await_Args);
  TESSERA_PJRT_RETURN_IF_ERROR(CheckNotNull(args->event, "PJRT_Event_Await_Args.event"));
  return MakeError(args->event->future.Await());
}

PJRT_Error* EventOnReady(PJRT_Event_OnReady_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_Event_OnReady_Args);
  TESSERA_PJRT_RETURN_IF_ERROR(CheckNotNull(args->event, "PJRT_Event_OnReady_Args.event"));
  if (args->callback == nullptr)
    return MakeError(absl::InvalidArgumentError("PJRT_Event_OnReady_Args.callback is NULL"));
  args->event->future.OnReady(
      [callback = args->callback, user_arg = args->user_arg](const absl::Status& status) {
        callback(MakeError(status), user_arg);
      });
  return nullptr;
}

}  // namespace tessera::pjrt
