// TSR_Error and the helpers shared by every entry point: struct_size checks, text arguments,
// status-code conversions.

#include <cstring>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/string_view.h"
#include "bindings/c/internal.h"

namespace tessera::c_api {

TSR_Error* MakeError(absl::Status status) {
  if (status.ok()) return nullptr;
  auto* error = new TSR_Error{std::move(status), ""};
  error->message = std::string(error->status.message());
  return error;
}

absl::Status CheckStructSize(const void* args, size_t struct_size, std::string_view name,
                             size_t min_size) {
  if (args == nullptr)
    return absl::InvalidArgumentError(absl::StrCat(base::AsAbsl(name), " is NULL"));
  if (struct_size < min_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        base::AsAbsl(name), ": struct_size ", struct_size, " is smaller than its version 1.0 size ",
        min_size, " (set it to ", base::AsAbsl(name), "_STRUCT_SIZE)"));
  }
  if (struct_size > kMaxStructSize) {
    return absl::InvalidArgumentError(absl::StrCat(
        base::AsAbsl(name), ": struct_size ", struct_size, " is not a struct size (more than ",
        kMaxStructSize, " bytes: uninitialised?); set it to ", base::AsAbsl(name), "_STRUCT_SIZE"));
  }
  return absl::OkStatus();
}

absl::Status CheckNotNull(const void* handle, std::string_view what) {
  if (handle == nullptr)
    return absl::InvalidArgumentError(absl::StrCat(base::AsAbsl(what), " is NULL"));
  return absl::OkStatus();
}

std::string_view TextOf(const char* text, size_t size) {
  if (text == nullptr) return {};
  return size == 0 ? std::string_view(text) : std::string_view(text, size);
}

TSR_ErrorCode ToErrorCode(absl::StatusCode code) { return static_cast<TSR_ErrorCode>(code); }

TSR_Error* ErrorDestroy(TSR_Error_Destroy_Args* args) {
  TSR_CHECK_ARGS(args, TSR_Error_Destroy_Args, error);
  delete args->error;
  return nullptr;
}

TSR_Error* ErrorMessage(TSR_Error_Message_Args* args) {
  TSR_CHECK_ARGS(args, TSR_Error_Message_Args, message_size);
  if (args->error == nullptr) return MakeError(CheckNotNull(nullptr, "error"));
  args->message = args->error->message.c_str();
  args->message_size = args->error->message.size();
  return nullptr;
}

TSR_Error* ErrorGetCode(TSR_Error_GetCode_Args* args) {
  TSR_CHECK_ARGS(args, TSR_Error_GetCode_Args, code);
  if (args->error == nullptr) return MakeError(CheckNotNull(nullptr, "error"));
  args->code = ToErrorCode(args->error->status.code());
  return nullptr;
}

}  // namespace tessera::c_api
