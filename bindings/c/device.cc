// TSR_Device: a client's device, its id, kind, description and attributes.

#include <memory>
#include <string>
#include <type_traits>
#include <variant>

#include "bindings/c/internal.h"

namespace tessera::c_api {

std::unique_ptr<TSR_Device> MakeDeviceHandle(Device* device) {
  auto handle = std::make_unique<TSR_Device>();
  handle->device = device;
  handle->kind = std::string(device->Kind());
  handle->debug_string = device->DebugString();
  const auto& map = device->Attributes().map();
  // Reserve first: TSR_NamedValue points into these vectors' elements.
  handle->strings.reserve(2 * map.size());
  handle->lists.reserve(map.size());
  for (const auto& [name, value] : map) {
    TSR_NamedValue v{};
    const std::string& n = handle->strings.emplace_back(name);
    v.name = n.c_str();
    v.name_size = n.size();
    std::visit(
        [&](const auto& x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, std::string>) {
            const std::string& s = handle->strings.emplace_back(x);
            v.type = TSR_VALUE_STRING;
            v.string_value = s.c_str();
            v.string_size = s.size();
          } else if constexpr (std::is_same_v<T, bool>) {
            v.type = TSR_VALUE_BOOL;
            v.int64_value = x ? 1 : 0;
          } else if constexpr (std::is_same_v<T, int64_t>) {
            v.type = TSR_VALUE_INT64;
            v.int64_value = x;
          } else if constexpr (std::is_same_v<T, double>) {
            v.type = TSR_VALUE_DOUBLE;
            v.double_value = x;
          } else {
            const std::vector<int64_t>& l = handle->lists.emplace_back(x);
            v.type = TSR_VALUE_INT64_LIST;
            v.int64_list = l.data();
            v.int64_list_size = l.size();
          }
        },
        value);
    handle->attributes.push_back(v);
  }
  return handle;
}

TSR_Error* DeviceDescribe(TSR_Device_Describe_Args* args) {
  TSR_CHECK_ARGS(args, TSR_Device_Describe_Args, num_attributes);
  const TSR_Device* d = args->device;
  if (d == nullptr) return MakeError(CheckNotNull(nullptr, "device"));
  args->id = d->device->Id().value;
  args->kind = d->kind.c_str();
  args->kind_size = d->kind.size();
  args->debug_string = d->debug_string.c_str();
  args->debug_string_size = d->debug_string.size();
  args->attributes = d->attributes.data();
  args->num_attributes = d->attributes.size();
  if (TSR_ARGS_HAVE(args, TSR_Device_Describe_Args, addressable)) {
    args->process_index = d->device->ProcessIndex();
    args->addressable = d->device->IsAddressable();
  }
  return nullptr;
}

}  // namespace tessera::c_api
