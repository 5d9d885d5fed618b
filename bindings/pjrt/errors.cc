// PJRT_Error: a Tessera status carried across the C API, and the helpers every entry point uses.

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/string_view.h"
#include "bindings/pjrt/entry_points.h"
#include "bindings/pjrt/internal.h"

namespace tessera::pjrt {

PJRT_Error* MakeError(absl::Status status) {
  if (status.ok()) return nullptr;
  auto* error = new PJRT_Error{std::move(status), ""};
  error->message = std::string(error->status.message());
  return error;
}

absl::Status CheckNotNull(const void* pointer, std::string_view what) {
  if (pointer == nullptr)
    return absl::InvalidArgumentError(absl::StrCat(base::AsAbsl(what), " is NULL"));
  return absl::OkStatus();
}

PJRT_Error* Unimplemented(std::string_view function, std::string_view why) {
  return MakeError(
      absl::UnimplementedError(absl::StrCat("Tessera's PJRT plugin does not implement ",
                                            base::AsAbsl(function), ": ", base::AsAbsl(why))));
}

void ErrorDestroy(PJRT_Error_Destroy_Args* args) {
  if (args != nullptr) delete args->error;
}

void ErrorMessage(PJRT_Error_Message_Args* args) {
  if (args == nullptr) return;
  if (args->error == nullptr) {
    args->message = "";
    args->message_size = 0;
    return;
  }
  args->message = args->error->message.data();
  args->message_size = args->error->message.size();
}

PJRT_Error* ErrorGetCode(PJRT_Error_GetCode_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_Error_GetCode_Args);
  TESSERA_PJRT_RETURN_IF_ERROR(CheckNotNull(args->error, "PJRT_Error_GetCode_Args.error"));
  args->code = static_cast<PJRT_Error_Code>(args->error->status.code());
  return nullptr;
}

}  // namespace tessera::pjrt
