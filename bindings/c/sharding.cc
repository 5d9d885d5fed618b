// TSR_Sharding: a sharding from text over device ids (ifrt/sharding_from_text.h).

#include <optional>
#include <vector>

#include "bindings/c/internal.h"
#include "ifrt/sharding_from_text.h"

namespace tessera::c_api {

TSR_Error* ShardingCreate(TSR_Sharding_Create_Args* args) {
  TSR_CHECK_ARGS(args, TSR_Sharding_Create_Args, sharding);
  if (args->client == nullptr) return MakeError(CheckNotNull(nullptr, "client"));
  if (args->text == nullptr) return MakeError(CheckNotNull(nullptr, "text"));
  if (args->device_ids == nullptr && args->num_device_ids > 0) {
    return MakeError(CheckNotNull(nullptr, "device_ids (with num_device_ids > 0)"));
  }
  absl::StatusOr<ShardingRef> sharding =
      ShardingFromText(*args->client->client, TextOf(args->text, args->text_size),
                       absl::MakeConstSpan(args->device_ids, args->num_device_ids),
                       TextOf(args->memory_kind, args->memory_kind_size));
  if (!sharding.ok()) return MakeError(sharding.status());
  args->sharding = new TSR_Sharding{*std::move(sharding)};
  return nullptr;
}

TSR_Error* ShardingDestroy(TSR_Sharding_Destroy_Args* args) {
  TSR_CHECK_ARGS(args, TSR_Sharding_Destroy_Args, sharding);
  delete args->sharding;
  return nullptr;
}

}  // namespace tessera::c_api
