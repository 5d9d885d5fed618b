// TSR_Array: from host buffers, reshard, copy to host, describe, ready event, delete, destroy.

#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "bindings/c/internal.h"
#include "ifrt/strided_copy.h"

namespace tessera::c_api {
namespace {

absl::StatusOr<HostBufferSemantics> ToHostBufferSemantics(TSR_HostBufferSemantics s) {
  switch (s) {
    case TSR_HOST_BUFFER_IMMUTABLE_ONLY_DURING_CALL:
      return HostBufferSemantics::kImmutableOnlyDuringCall;
    case TSR_HOST_BUFFER_IMMUTABLE_UNTIL_TRANSFER_COMPLETES:
      return HostBufferSemantics::kImmutableUntilTransferCompletes;
    case TSR_HOST_BUFFER_IMMUTABLE_ZERO_COPY:
      return HostBufferSemantics::kImmutableZeroCopy;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown host_buffer_semantics ", static_cast<int>(s)));
}

absl::StatusOr<ArrayCopySemantics> ToCopySemantics(TSR_CopySemantics s) {
  switch (s) {
    case TSR_COPY_SEMANTICS_REUSE_INPUT:
      return ArrayCopySemantics::kReuseInput;
    case TSR_COPY_SEMANTICS_ALWAYS_COPY:
      return ArrayCopySemantics::kAlwaysCopy;
    case TSR_COPY_SEMANTICS_DONATE_INPUT:
      return ArrayCopySemantics::kDonateInput;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown copy semantics ", static_cast<int>(s)));
}

std::optional<absl::Span<const int64_t>> Strides(const int64_t* strides, size_t rank) {
  if (strides == nullptr) return std::nullopt;
  return absl::MakeConstSpan(strides, rank);
}

absl::Status FromHostBuffer(TSR_Array_FromHostBuffer_Args& a) {
  if (a.client == nullptr) return CheckNotNull(nullptr, "client");
  if (a.sharding == nullptr) return CheckNotNull(nullptr, "sharding");
  if (a.dims == nullptr && a.num_dims > 0) return CheckNotNull(nullptr, "dims");
  absl::StatusOr<HostBufferSemantics> semantics = ToHostBufferSemantics(a.host_buffer_semantics);
  if (!semantics.ok()) return semantics.status();
  TransferOptions options;
  if (TSR_ARGS_HAVE(&a, TSR_Array_FromHostBuffer_Args, is_explicit)) {
    options.is_explicit = a.is_explicit;
  }
  Promise<> done;
  Future<> done_future = done.future();
  Client& client = *a.client->client;
  absl::StatusOr<ArrayRef> array = client.MakeArrayFromHostBuffer(
      a.data, ToDType(a.dtype), Shape(absl::MakeConstSpan(a.dims, a.num_dims)),
      Strides(a.byte_strides, a.num_dims), a.sharding->sharding, *semantics,
      [done]() mutable { done.Set(absl::OkStatus()); }, options);
  if (!array.ok()) return array.status();
  a.array = MakeArrayHandle(a.client->client, *std::move(array));
  a.done_with_host_buffer = new TSR_Event{std::move(done_future)};
  return absl::OkStatus();
}

absl::Status Reshard(TSR_Array_Reshard_Args& a) {
  if (a.client == nullptr) return CheckNotNull(nullptr, "client");
  if (a.num_arrays > 0 &&
      (a.arrays == nullptr || a.shardings == nullptr || a.out_arrays == nullptr)) {
    return absl::InvalidArgumentError("arrays, shardings and out_arrays must not be NULL");
  }
  absl::StatusOr<ArrayCopySemantics> semantics = ToCopySemantics(a.semantics);
  if (!semantics.ok()) return semantics.status();
  std::vector<ArrayRef> arrays;
  std::vector<ArraySpec> specs;
  for (size_t i = 0; i < a.num_arrays; ++i) {
    if (a.arrays[i] == nullptr || a.shardings[i] == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("arrays[", i, "] or shardings[", i, "] is NULL"));
    }
    const ArrayRef& array = a.arrays[i]->array;
    arrays.push_back(array);
    specs.push_back(ArraySpec{array->dtype(), array->shape(), a.shardings[i]->sharding});
  }
  TransferOptions options;
  if (TSR_ARGS_HAVE(&a, TSR_Array_Reshard_Args, is_explicit)) options.is_explicit = a.is_explicit;
  absl::StatusOr<std::vector<ArrayRef>> out =
      a.client->client->ReshardArrays(absl::MakeSpan(arrays), specs, *semantics, options);
  if (!out.ok()) return out.status();
  for (size_t i = 0; i < out->size(); ++i) {
    a.out_arrays[i] = MakeArrayHandle(a.client->client, (*out)[i]);
  }
  return absl::OkStatus();
}

// The copy of `array` writes the bytes from `dst` up to one past its last element: the whole
// array row-major, or as far as `byte_strides` reach (HostSpanBytes: overflow-checked,
// INVALID_ARGUMENT for a negative stride). INVALID_ARGUMENT when that is more than `dst_size`.
absl::Status CheckDestinationSize(const Array& array, const int64_t* byte_strides,
                                  size_t dst_size) {
  const int64_t element_bytes = array.dtype().byte_size().value_or(0);
  if (byte_strides == nullptr) {
    const int64_t bytes = array.shape().num_elements() * element_bytes;
    if (dst_size >= static_cast<uint64_t>(bytes)) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat("dst_size ", dst_size, " is smaller than the ",
                                                   bytes, " bytes of ", array.DebugString()));
  }
  const absl::Span<const int64_t> strides =
      absl::MakeConstSpan(byte_strides, array.shape().dims().size());
  TESSERA_ASSIGN_OR_RETURN(const int64_t span,
                           HostSpanBytes(array.shape().dims(), strides, element_bytes));
  if (dst_size >= static_cast<uint64_t>(span)) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("dst_size ", dst_size, " is smaller than the ", span, " bytes byte_strides [",
                   absl::StrJoin(strides, ","), "] span for ", array.DebugString()));
}

absl::Status ToHostBuffer(TSR_Array_ToHostBuffer_Args& a) {
  if (a.array == nullptr) return CheckNotNull(nullptr, "array");
  const Array& array = *a.array->array;
  TESSERA_RETURN_IF_ERROR(CheckDestinationSize(array, a.byte_strides, a.dst_size));
  TransferOptions options;
  if (TSR_ARGS_HAVE(&a, TSR_Array_ToHostBuffer_Args, is_explicit))
    options.is_explicit = a.is_explicit;
  Future<> done =
      a.array->array->CopyToHostBuffer(a.dst, Strides(a.byte_strides, array.shape().dims().size()),
                                       ArrayCopySemantics::kAlwaysCopy, options);
  a.event = new TSR_Event{std::move(done)};
  return absl::OkStatus();
}

}  // namespace

TSR_Array* MakeArrayHandle(std::shared_ptr<Client> client, ArrayRef array) {
  auto* handle = new TSR_Array{std::move(client), std::move(array), ""};
  handle->sharding_text = handle->array->sharding().DebugString();
  return handle;
}

TSR_Error* ArrayFromHostBuffer(TSR_Array_FromHostBuffer_Args* args) {
  TSR_CHECK_ARGS(args, TSR_Array_FromHostBuffer_Args, done_with_host_buffer);
  return MakeError(FromHostBuffer(*args));
}

TSR_Error* ArrayReshard(TSR_Array_Reshard_Args* args) {
  TSR_CHECK_ARGS(args, TSR_Array_Reshard_Args, out_arrays);
  return MakeError(Reshard(*args));
}

TSR_Error* ArrayToHostBuffer(TSR_Array_ToHostBuffer_Args* args) {
  TSR_CHECK_ARGS(args, TSR_Array_ToHostBuffer_Args, event);
  return MakeError(ToHostBuffer(*args));
}

TSR_Error* ArrayDescribe(TSR_Array_Describe_Args* args) {
  TSR_CHECK_ARGS(args, TSR_Array_Describe_Args, is_deleted);
  if (args->array == nullptr) return MakeError(CheckNotNull(nullptr, "array"));
  const Array& array = *args->array->array;
  args->dtype = FromDType(array.dtype());
  args->dims = array.shape().dims().data();
  args->num_dims = array.shape().dims().size();
  args->sharding = args->array->sharding_text.c_str();
  args->sharding_size = args->array->sharding_text.size();
  args->num_devices = array.sharding().devices()->size();
  args->is_deleted = array.IsDeleted();
  return nullptr;
}

TSR_Error* ArrayReadyEvent(TSR_Array_ReadyEvent_Args* args) {
  TSR_CHECK_ARGS(args, TSR_Array_ReadyEvent_Args, event);
  if (args->array == nullptr) return MakeError(CheckNotNull(nullptr, "array"));
  args->event = new TSR_Event{args->array->array->GetReadyFuture()};
  return nullptr;
}

TSR_Error* ArrayDelete(TSR_Array_Delete_Args* args) {
  TSR_CHECK_ARGS(args, TSR_Array_Delete_Args, array);
  if (args->array == nullptr) return MakeError(CheckNotNull(nullptr, "array"));
  // Pending writes still complete (they hold the buffers); TSR_Array_Delete does not wait.
  static_cast<void>(args->array->array->Delete());
  return nullptr;
}

TSR_Error* ArrayDestroy(TSR_Array_Destroy_Args* args) {
  TSR_CHECK_ARGS(args, TSR_Array_Destroy_Args, array);
  delete args->array;
  return nullptr;
}

}  // namespace tessera::c_api
