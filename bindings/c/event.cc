// TSR_Event: a Future<> of the C++ API: await, poll, callback, destroy.

#include <utility>

#include "bindings/c/internal.h"

namespace tessera::c_api {

TSR_Error* EventAwait(TSR_Event_Await_Args* args) {
  TSR_CHECK_ARGS(args, TSR_Event_Await_Args, event);
  if (args->event == nullptr) return MakeError(CheckNotNull(nullptr, "event"));
  return MakeError(args->event->future.Await());
}

TSR_Error* EventIsReady(TSR_Event_IsReady_Args* args) {
  TSR_CHECK_ARGS(args, TSR_Event_IsReady_Args, is_ready);
  if (args->event == nullptr) return MakeError(CheckNotNull(nullptr, "event"));
  args->is_ready = args->event->future.IsReady();
  return nullptr;
}

TSR_Error* EventOnReady(TSR_Event_OnReady_Args* args) {
  TSR_CHECK_ARGS(args, TSR_Event_OnReady_Args, user_arg);
  if (args->event == nullptr) return MakeError(CheckNotNull(nullptr, "event"));
  if (args->callback == nullptr) return MakeError(CheckNotNull(nullptr, "callback"));
  args->event->future.OnReady(
      [callback = args->callback, user_arg = args->user_arg](const absl::Status& status) {
        callback(MakeError(status), user_arg);
      });
  return nullptr;
}

TSR_Error* EventDestroy(TSR_Event_Destroy_Args* args) {
  TSR_CHECK_ARGS(args, TSR_Event_Destroy_Args, event);
  delete args->event;
  return nullptr;
}

}  // namespace tessera::c_api
