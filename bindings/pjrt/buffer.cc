// PJRT_Buffer: a single-device Tessera array. Host-to-device, device-to-host and
// device-to-device copies go through the Tessera client, so its transfer guard sees each of them
// before a byte moves.

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <numeric>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/strings/str_cat.h"
#include "base/checked_math.h"
#include "base/string_view.h"
#include "bindings/pjrt/entry_points.h"
#include "bindings/pjrt/internal.h"

namespace tessera::pjrt {
namespace {

absl::Status CheckBuffer(const PJRT_Buffer* buffer, std::string_view where) {
  if (buffer != nullptr) return absl::OkStatus();  // the message only when it is needed
  return CheckNotNull(buffer, absl::StrCat(base::AsAbsl(where), ".buffer"));
}

int64_t ElementBytes(tessera::DType dtype) { return dtype.byte_size().value_or(1); }

std::vector<int64_t> DenseByteStrides(absl::Span<const int64_t> dims, int64_t element_bytes) {
  std::vector<int64_t> strides(dims.size());
  int64_t stride = element_bytes;
  for (size_t i = dims.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= std::max<int64_t>(dims[i], 1);
  }
  return strides;
}

// The bytes a host buffer of `dims` with `strides` spans: the last byte's offset plus one.
absl::StatusOr<int64_t> SpannedBytes(absl::Span<const int64_t> dims,
                                     const std::optional<std::vector<int64_t>>& strides,
                                     int64_t element_bytes) {
  std::optional<int64_t> count = base::CheckedProduct(dims);
  if (!count.has_value()) return absl::InvalidArgumentError("the buffer's size overflows int64");
  if (*count == 0) return int64_t{0};
  if (!strides.has_value()) {
    std::optional<int64_t> bytes = base::CheckedMul(*count, element_bytes);
    if (!bytes.has_value()) return absl::InvalidArgumentError("the buffer's size overflows int64");
    return *bytes;
  }
  int64_t last = 0;
  for (size_t d = 0; d < dims.size(); ++d) {
    std::optional<int64_t> step = base::CheckedMul(dims[d] - 1, (*strides)[d]);
    std::optional<int64_t> sum = step.has_value() ? base::CheckedAdd(last, *step) : std::nullopt;
    if (!sum.has_value()) return absl::InvalidArgumentError("the host layout overflows int64");
    last = *sum;
  }
  std::optional<int64_t> bytes = base::CheckedAdd(last, element_bytes);
  if (!bytes.has_value()) return absl::InvalidArgumentError("the host layout overflows int64");
  return *bytes;
}

// A row-major copy of the array of `dims` at `data` whose elements lie `strides` bytes apart,
// some negative: a numpy view such as x[::-1], which JAX hands over as it is and Tessera's host
// buffers cannot describe (their strides are not negative). INVALID_ARGUMENT when the dims or the
// layout overflow; RESOURCE_EXHAUSTED when the copy cannot be allocated.
absl::StatusOr<std::shared_ptr<char[]>> CompactCopy(const void* data,
                                                    absl::Span<const int64_t> dims,
                                                    absl::Span<const int64_t> strides,
                                                    int64_t element_bytes) {
  for (int64_t d : dims) {
    if (d < 0) return absl::InvalidArgumentError(absl::StrCat("a negative dimension ", d));
  }
  std::optional<int64_t> count = base::CheckedProduct(dims);
  std::optional<int64_t> bytes =
      count.has_value() ? base::CheckedMul(*count, element_bytes) : std::nullopt;
  if (!bytes.has_value()) return absl::InvalidArgumentError("the buffer's size overflows int64");
  // Every element's offset, a sum of (index * stride) terms of either sign, fits int64 when the
  // terms' magnitudes add up without overflow.
  int64_t reach = 0;
  for (size_t d = 0; d < dims.size() && *count > 0; ++d) {
    std::optional<int64_t> term = base::CheckedMul(dims[d] - 1, strides[d]);
    std::optional<int64_t> sum = term.has_value() && *term != std::numeric_limits<int64_t>::min()
                                     ? base::CheckedAdd(reach, *term < 0 ? -*term : *term)
                                     : std::nullopt;
    if (!sum.has_value()) return absl::InvalidArgumentError("the host layout overflows int64");
    reach = *sum;
  }
  std::shared_ptr<char[]> copy(new (std::nothrow) char[std::max<int64_t>(*bytes, 1)]);
  if (copy == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("no memory for a row-major copy of ", *bytes, " bytes"));
  }
  const char* source = static_cast<const char*>(data);
  std::vector<int64_t> index(dims.size(), 0);
  int64_t offset = 0;  // of element `index`, within the layout (checked above)
  for (int64_t i = 0; i < *count; ++i) {
    std::memcpy(copy.get() + i * element_bytes, source + offset, element_bytes);
    for (size_t d = dims.size(); d-- > 0;) {  // the next index, row-major
      if (++index[d] < dims[d]) {
        offset += strides[d];
        break;
      }
      offset -= (dims[d] - 1) * strides[d];
      index[d] = 0;
    }
  }
  return copy;
}

PJRT_Device* DestinationDevice(PJRT_Device* device, PJRT_Memory* memory) {
  if (memory != nullptr) return memory->devices.empty() ? nullptr : memory->devices[0];
  return device;
}

absl::StatusOr<tessera::HostBufferSemantics> ToSemantics(PJRT_HostBufferSemantics semantics) {
  switch (semantics) {
    case PJRT_HostBufferSemantics_kImmutableOnlyDuringCall:
      return tessera::HostBufferSemantics::kImmutableOnlyDuringCall;
    case PJRT_HostBufferSemantics_kImmutableUntilTransferCompletes:
      return tessera::HostBufferSemantics::kImmutableUntilTransferCompletes;
    // Tessera never writes an array's memory, so a mutable zero-copy buffer is an immutable one.
    case PJRT_HostBufferSemantics_kImmutableZeroCopy:
    case PJRT_HostBufferSemantics_kMutableZeroCopy:
      return tessera::HostBufferSemantics::kImmutableZeroCopy;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("PJRT_Client_BufferFromHostBuffer: unknown host_buffer_semantics ",
                   static_cast<int>(semantics)));
}

absl::StatusOr<PJRT_Buffer*> CopyToDevice(PJRT_Buffer* buffer, PJRT_Device* destination,
                                          std::string_view where) {
  if (buffer->array->IsDeleted()) {
    return absl::FailedPreconditionError(
        absl::StrCat(base::AsAbsl(where), ": the buffer has been deleted or donated"));
  }
  tessera::Client& client = *buffer->state->client;
  tessera::Device* device = destination->device;
  absl::StatusOr<tessera::DeviceListRef> devices =
      client.MakeDeviceList(absl::Span<tessera::Device* const>(&device, 1));
  if (!devices.ok()) return devices.status();
  std::vector<tessera::ArrayRef> arrays = {buffer->array};
  absl::StatusOr<std::vector<tessera::ArrayRef>> copies = client.CopyArrays(
      absl::MakeSpan(arrays), *devices, std::nullopt, tessera::ArrayCopySemantics::kAlwaysCopy);
  if (!copies.ok()) return copies.status();
  return MakeBuffer(buffer->state, std::move((*copies)[0]));
}

}  // namespace

absl::StatusOr<PJRT_Buffer*> MakeBuffer(std::shared_ptr<ClientState> state,
                                        tessera::ArrayRef array) {
  const tessera::Sharding& sharding = array->sharding();
  if (sharding.devices()->size() != 1) {
    return absl::InternalError(absl::StrCat(
        "a PJRT buffer must be on one device; this array is on ", sharding.devices()->size()));
  }
  PJRT_Device* device = state->Find(sharding.devices()->devices()[0]);
  if (device == nullptr) return absl::InternalError("a PJRT buffer on a device of another client");
  auto buffer = std::make_unique<PJRT_Buffer>();
  buffer->type = ToBufferType(array->dtype());
  buffer->dims.assign(array->shape().dims().begin(), array->shape().dims().end());
  buffer->minor_to_major.resize(buffer->dims.size());
  std::iota(buffer->minor_to_major.rbegin(), buffer->minor_to_major.rend(), int64_t{0});
  buffer->device = device;
  buffer->state = std::move(state);
  buffer->array = std::move(array);
  return buffer.release();
}

absl::StatusOr<std::optional<std::vector<int64_t>>> ByteStridesOf(
    const PJRT_Buffer_MemoryLayout* layout, absl::Span<const int64_t> dims, int64_t element_bytes) {
  if (layout == nullptr) return std::optional<std::vector<int64_t>>();
  std::vector<int64_t> strides;
  if (layout->type == PJRT_Buffer_MemoryLayout_Type_Strides) {
    const PJRT_Buffer_MemoryLayout_Strides& s = layout->strides;
    if (s.num_byte_strides != dims.size() ||
        (s.num_byte_strides > 0 && s.byte_strides == nullptr)) {
      return absl::InvalidArgumentError(absl::StrCat("a strides layout of ", s.num_byte_strides,
                                                     " strides for a buffer of rank ",
                                                     dims.size()));
    }
    strides.assign(s.byte_strides, s.byte_strides + s.num_byte_strides);
  } else if (layout->type == PJRT_Buffer_MemoryLayout_Type_Tiled) {
    const PJRT_Buffer_MemoryLayout_Tiled& t = layout->tiled;
    if (t.num_tiles > 0)
      return absl::UnimplementedError("tiled layouts (Tessera's buffers are dense, untiled)");
    if (t.minor_to_major_size != dims.size() ||
        (t.minor_to_major_size > 0 && t.minor_to_major == nullptr)) {
      return absl::InvalidArgumentError(
          absl::StrCat("a layout's minor_to_major has ", t.minor_to_major_size,
                       " entries for a buffer of rank ", dims.size()));
    }
    strides.assign(dims.size(), -1);
    int64_t stride = element_bytes;
    for (size_t i = 0; i < t.minor_to_major_size; ++i) {
      int64_t d = t.minor_to_major[i];
      if (d < 0 || d >= static_cast<int64_t>(dims.size()) || strides[d] != -1) {
        return absl::InvalidArgumentError(
            "a layout's minor_to_major is not a permutation of the buffer's dimensions");
      }
      strides[d] = stride;
      std::optional<int64_t> next = base::CheckedMul(stride, std::max<int64_t>(dims[d], 1));
      if (!next.has_value()) return absl::InvalidArgumentError("the layout overflows int64");
      stride = *next;
    }
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown memory layout type ", static_cast<int>(layout->type)));
  }
  for (int64_t s : strides) {
    if (s < 0) return absl::UnimplementedError("negative byte strides");
  }
  if (strides == DenseByteStrides(dims, element_bytes))
    return std::optional<std::vector<int64_t>>();
  return std::optional<std::vector<int64_t>>(std::move(strides));
}

PJRT_Error* ClientBufferFromHostBuffer(PJRT_Client_BufferFromHostBuffer_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_Client_BufferFromHostBuffer_Args);
  constexpr char kWhere[] = "PJRT_Client_BufferFromHostBuffer";
  if (args->client == nullptr || args->client->state == nullptr)
    return MakeError(absl::InvalidArgumentError(absl::StrCat(kWhere, ": client is NULL")));
  const std::shared_ptr<ClientState>& state = args->client->state;
  tessera::DType dtype = ToDType(args->type);
  if (dtype.kind() == tessera::DType::kInvalid) {
    return MakeError(absl::UnimplementedError(
        absl::StrCat(kWhere, ": Tessera has no element type ", BufferTypeName(args->type),
                     " (it has pred, s8-s64, u8-u64, f16, bf16, f32 and f64)")));
  }
  if (args->num_dims > 0 && args->dims == nullptr)
    return MakeError(absl::InvalidArgumentError(absl::StrCat(kWhere, ": dims is NULL")));
  // Checked before the dims are copied: a hostile count must not become an allocation.
  constexpr size_t kMaxRank = 1024;
  if (args->num_dims > kMaxRank) {
    return MakeError(absl::InvalidArgumentError(
        absl::StrCat(kWhere, ": ", args->num_dims, " dimensions (at most ", kMaxRank, ")")));
  }
  std::vector<int64_t> dims(args->dims, args->dims + args->num_dims);
  PJRT_Device* device = DestinationDevice(args->device, args->memory);
  if (device == nullptr) {
    return MakeError(
        absl::InvalidArgumentError(absl::StrCat(kWhere, ": neither device nor memory is set")));
  }
  std::optional<std::vector<int64_t>> byte_strides;
  if (args->num_byte_strides > 0) {
    if (args->byte_strides == nullptr || args->num_byte_strides != args->num_dims) {
      return MakeError(absl::InvalidArgumentError(absl::StrCat(kWhere, ": ", args->num_byte_strides,
                                                               " byte strides for ", args->num_dims,
                                                               " dimensions")));
    }
    byte_strides.emplace(args->byte_strides, args->byte_strides + args->num_byte_strides);
  }
  if (args->device_layout != nullptr) {
    absl::StatusOr<std::optional<std::vector<int64_t>>> device_strides =
        ByteStridesOf(args->device_layout, dims, ElementBytes(dtype));
    TESSERA_PJRT_RETURN_IF_ERROR(device_strides.status());
    if (device_strides->has_value()) {
      return MakeError(absl::UnimplementedError(absl::StrCat(
          kWhere, ": a device layout other than row-major (Tessera's buffers are row-major)")));
    }
  }
  absl::StatusOr<tessera::HostBufferSemantics> semantics = ToSemantics(args->host_buffer_semantics);
  TESSERA_PJRT_RETURN_IF_ERROR(semantics.status());
  const void* data = args->data;
  std::shared_ptr<char[]> compact;  // a negatively strided buffer's copy, kept until uploaded
  if (byte_strides.has_value() && args->data != nullptr &&
      absl::c_any_of(*byte_strides, [](int64_t stride) { return stride < 0; })) {
    absl::StatusOr<std::shared_ptr<char[]>> copy =
        CompactCopy(args->data, dims, *byte_strides, ElementBytes(dtype));
    if (!copy.ok()) {
      return MakeError(
          absl::Status(copy.status().code(), absl::StrCat(kWhere, ": ", copy.status().message())));
    }
    compact = *std::move(copy);
    data = compact.get();
    byte_strides.reset();
  }
  tessera::ShardingRef sharding = device->sharding;
  tessera::Promise<> done;
  std::optional<absl::Span<const int64_t>> strides_span;
  if (byte_strides.has_value()) strides_span = absl::MakeConstSpan(*byte_strides);
  absl::StatusOr<tessera::ArrayRef> array = state->client->MakeArrayFromHostBuffer(
      data, dtype, tessera::Shape(dims), strides_span, std::move(sharding), *semantics,
      [done, compact]() { done.Set(absl::OkStatus()); });
  TESSERA_PJRT_RETURN_IF_ERROR(array.status());
  absl::StatusOr<PJRT_Buffer*> buffer = MakeBuffer(state, std::move(*array));
  TESSERA_PJRT_RETURN_IF_ERROR(buffer.status());
  args->buffer = *buffer;
  args->done_with_host_buffer = NewEvent(done.future());
  return nullptr;
}

PJRT_Error* BufferDestroy(PJRT_Buffer_Destroy_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_Buffer_Destroy_Args);
  delete args->buffer;
  return nullptr;
}

PJRT_Error* BufferElementType(PJRT_Buffer_ElementType_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_Buffer_ElementType_Args);
  TESSERA_PJRT_RETURN_IF_ERROR(CheckBuffer(args->buffer, "PJRT_Buffer_ElementType_Args"));
  args->type = args->buffer->type;
  return nullptr;
}

PJRT_Error* BufferDimensions(PJRT_Buffer_Dimensions_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_Buffer_Dimensions_Args);
  TESSERA_PJRT_RETURN_IF_ERROR(CheckBuffer(args->buffer, "PJRT_Buffer_Dimensions_Args"));
  args->dims = args->buffer->dims.data();
  args->num_dims = args->buffer->dims.size();
  return nullptr;
}

PJRT_Error* BufferUnpaddedDimensions(PJRT_Buffer_UnpaddedDimensions_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_Buffer_UnpaddedDimensions_Args);
  TESSERA_PJRT_RETURN_IF_ERROR(CheckBuffer(args->buffer, "PJRT_Buffer_UnpaddedDimensions_Args"));
  args->unpadded_dims = args->buffer->dims.data();
  args->num_dims = args->buffer->dims.size();
  return nullptr;
}

PJRT_Error* BufferDynamicDimensionIndices(PJRT_Buffer_DynamicDimensionIndices_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_Buffer_DynamicDimensionIndices_Args);
  TESSERA_PJRT_RETURN_IF_ERROR(
      CheckBuffer(args->buffer, "PJRT_Buffer_DynamicDimensionIndices_Args"));
  args->dynamic_dim_indices = nullptr;  // Tessera's shapes are static
  args->num_dynamic_dims = 0;
  return nullptr;
}

PJRT_Error* BufferGetMemoryLayout(PJRT_Buffer_GetMemoryLayout_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_Buffer_GetMemoryLayout_Args);
  TESSERA_PJRT_RETURN_IF_ERROR(CheckBuffer(args->buffer, "PJRT_Buffer_GetMemoryLayout_Args"));
  PJRT_Buffer_MemoryLayout& layout = args->layout;
  layout.struct_size = PJRT_Buffer_MemoryLayout_STRUCT_SIZE;
  layout.extension_start = nullptr;
  layout.type = PJRT_Buffer_MemoryLayout_Type_Tiled;
  layout.tiled.struct_size = PJRT_Buffer_MemoryLayout_Tiled_STRUCT_SIZE;
  layout.tiled.extension_start = nullptr;
  layout.tiled.minor_to_major = args->buffer->minor_to_major.data();
  layout.tiled.minor_to_major_size = args->buffer->minor_to_major.size();
  layout.tiled.tile_dims = nullptr;
  layout.tiled.tile_dim_sizes = nullptr;
  layout.tiled.num_tiles = 0;
  return nullptr;
}

PJRT_Error* BufferOnDeviceSizeInBytes(PJRT_Buffer_OnDeviceSizeInBytes_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_Buffer_OnDeviceSizeInBytes_Args);
  TESSERA_PJRT_RETURN_IF_ERROR(CheckBuffer(args->buffer, "PJRT_Buffer_OnDeviceSizeInBytes_Args"));
  absl::StatusOr<int64_t> bytes =
      SpannedBytes(args->buffer->dims, std::nullopt, ElementBytes(args->buffer->array->dtype()));
  TESSERA_PJRT_RETURN_IF_ERROR(bytes.status());
  args->on_device_size_in_bytes = static_cast<size_t>(*bytes);
  return nullptr;
}

PJRT_Error* BufferDevice(PJRT_Buffer_Device_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_Buffer_Device_Args);
  TESSERA_PJRT_RETURN_IF_ERROR(CheckBuffer(args->buffer, "PJRT_Buffer_Device_Args"));
  args->device = args->buffer->device;
  return nullptr;
}

PJRT_Error* BufferMemory(PJRT_Buffer_Memory_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_Buffer_Memory_Args);
  TESSERA_PJRT_RETURN_IF_ERROR(CheckBuffer(args->buffer, "PJRT_Buffer_Memory_Args"));
  args->memory = args->buffer->device->memory;
  return nullptr;
}

PJRT_Error* BufferDelete(PJRT_Buffer_Delete_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_Buffer_Delete_Args);
  TESSERA_PJRT_RETURN_IF_ERROR(CheckBuffer(args->buffer, "PJRT_Buffer_Delete_Args"));
  static_cast<void>(args->buffer->array->Delete());
  return nullptr;
}

PJRT_Error* BufferIsDeleted(PJRT_Buffer_IsDeleted_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_Buffer_IsDeleted_Args);
  TESSERA_PJRT_RETURN_IF_ERROR(CheckBuffer(args->buffer, "PJRT_Buffer_IsDeleted_Args"));
  args->is_deleted = args->buffer->array->IsDeleted();
  return nullptr;
}

PJRT_Error* BufferCopyToDevice(PJRT_Buffer_CopyToDevice_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_Buffer_CopyToDevice_Args);
  TESSERA_PJRT_RETURN_IF_ERROR(CheckBuffer(args->buffer, "PJRT_Buffer_CopyToDevice_Args"));
  TESSERA_PJRT_RETURN_IF_ERROR(
      CheckNotNull(args->dst_device, "PJRT_Buffer_CopyToDevice_Args.dst_device"));
  absl::StatusOr<PJRT_Buffer*> copy =
      CopyToDevice(args->buffer, args->dst_device, "PJRT_Buffer_CopyToDevice");
  TESSERA_PJRT_RETURN_IF_ERROR(copy.status());
  args->dst_buffer = *copy;
  return nullptr;
}

PJRT_Error* BufferCopyToMemory(PJRT_Buffer_CopyToMemory_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_Buffer_CopyToMemory_Args);
  TESSERA_PJRT_RETURN_IF_ERROR(CheckBuffer(args->buffer, "PJRT_Buffer_CopyToMemory_Args"));
  TESSERA_PJRT_RETURN_IF_ERROR(
      CheckNotNull(args->dst_memory, "PJRT_Buffer_CopyToMemory_Args.dst_memory"));
  PJRT_Device* device = DestinationDevice(nullptr, args->dst_memory);
  TESSERA_PJRT_RETURN_IF_ERROR(CheckNotNull(device, "the destination memory's device"));
  absl::StatusOr<PJRT_Buffer*> copy =
      CopyToDevice(args->buffer, device, "PJRT_Buffer_CopyToMemory");
  TESSERA_PJRT_RETURN_IF_ERROR(copy.status());
  args->dst_buffer = *copy;
  return nullptr;
}

PJRT_Error* BufferToHostBuffer(PJRT_Buffer_ToHostBuffer_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_Buffer_ToHostBuffer_Args);
  constexpr char kWhere[] = "PJRT_Buffer_ToHostBuffer";
  if (args->src == nullptr)
    return MakeError(absl::InvalidArgumentError(absl::StrCat(kWhere, ": src is NULL")));
  PJRT_Buffer& buffer = *args->src;
  int64_t element_bytes = ElementBytes(buffer.array->dtype());
  absl::StatusOr<std::optional<std::vector<int64_t>>> strides =
      ByteStridesOf(args->host_layout, buffer.dims, element_bytes);
  if (!strides.ok()) {
    return MakeError(
        absl::Status(strides.status().code(),
                     absl::StrCat(kWhere, ": host_layout: ", strides.status().message())));
  }
  absl::StatusOr<int64_t> needed = SpannedBytes(buffer.dims, *strides, element_bytes);
  TESSERA_PJRT_RETURN_IF_ERROR(needed.status());
  if (args->dst == nullptr) {
    args->dst_size = static_cast<size_t>(*needed);
    args->event = nullptr;
    return nullptr;
  }
  if (args->dst_size < static_cast<size_t>(*needed)) {
    return MakeError(absl::InvalidArgumentError(absl::StrCat(
        kWhere, ": dst holds ", args->dst_size, " bytes; the buffer needs ", *needed)));
  }
  std::optional<absl::Span<const int64_t>> strides_span;
  if (strides->has_value()) strides_span = absl::MakeConstSpan(**strides);
  tessera::Future<> copied = buffer.array->CopyToHostBuffer(
      args->dst, strides_span, tessera::ArrayCopySemantics::kAlwaysCopy);
  args->event = NewEvent(std::move(copied));
  return nullptr;
}

PJRT_Error* BufferIsOnCpu(PJRT_Buffer_IsOnCpu_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_Buffer_IsOnCpu_Args);
  TESSERA_PJRT_RETURN_IF_ERROR(CheckBuffer(args->buffer, "PJRT_Buffer_IsOnCpu_Args"));
  // True on CPU devices, whose memory is the host's: JAX then reads a buffer as a read-only
  // numpy view of it (PJRT_Buffer_IncreaseExternalReferenceCount and
  // PJRT_Buffer_OpaqueDeviceMemoryDataPointer), as on its own CPU backend. No byte moves, so
  // Tessera's guard is not asked; JAX's transfer_guard still sees the read. Vulkan buffers are
  // copied to the host (PJRT_Buffer_ToHostBuffer), which the guard checks.
  args->is_on_cpu = args->buffer->device->device->Kind() == "cpu";
  return nullptr;
}

PJRT_Error* BufferReadyEvent(PJRT_Buffer_ReadyEvent_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_Buffer_ReadyEvent_Args);
  TESSERA_PJRT_RETURN_IF_ERROR(CheckBuffer(args->buffer, "PJRT_Buffer_ReadyEvent_Args"));
  args->event = NewEvent(args->buffer->array->GetReadyFuture());
  return nullptr;
}

PJRT_Error* BufferUnsafePointer(PJRT_Buffer_UnsafePointer_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_Buffer_UnsafePointer_Args);
  TESSERA_PJRT_RETURN_IF_ERROR(CheckBuffer(args->buffer, "PJRT_Buffer_UnsafePointer_Args"));
  absl::StatusOr<std::shared_ptr<void>> reference = args->buffer->array->AcquireExternalReference();
  TESSERA_PJRT_RETURN_IF_ERROR(reference.status());
  args->buffer_pointer = reinterpret_cast<uintptr_t>(reference->get());
  return nullptr;
}

PJRT_Error* BufferIncreaseExternalReferenceCount(
    PJRT_Buffer_IncreaseExternalReferenceCount_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_Buffer_IncreaseExternalReferenceCount_Args);
  TESSERA_PJRT_RETURN_IF_ERROR(
      CheckBuffer(args->buffer, "PJRT_Buffer_IncreaseExternalReferenceCount_Args"));
  absl::StatusOr<std::shared_ptr<void>> reference = args->buffer->array->AcquireExternalReference();
  TESSERA_PJRT_RETURN_IF_ERROR(reference.status());
  std::lock_guard<std::mutex> lock(args->buffer->mu);
  args->buffer->external_references.push_back(std::move(*reference));
  return nullptr;
}

PJRT_Error* BufferDecreaseExternalReferenceCount(
    PJRT_Buffer_DecreaseExternalReferenceCount_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_Buffer_DecreaseExternalReferenceCount_Args);
  TESSERA_PJRT_RETURN_IF_ERROR(
      CheckBuffer(args->buffer, "PJRT_Buffer_DecreaseExternalReferenceCount_Args"));
  std::lock_guard<std::mutex> lock(args->buffer->mu);
  if (args->buffer->external_references.empty()) {
    return MakeError(absl::FailedPreconditionError(
        "PJRT_Buffer_DecreaseExternalReferenceCount: the buffer has no external reference"));
  }
  args->buffer->external_references.pop_back();
  return nullptr;
}

PJRT_Error* BufferOpaqueDeviceMemoryDataPointer(
    PJRT_Buffer_OpaqueDeviceMemoryDataPointer_Args* args) {
  TESSERA_PJRT_CHECK_ARGS(args, PJRT_Buffer_OpaqueDeviceMemoryDataPointer_Args);
  TESSERA_PJRT_RETURN_IF_ERROR(
      CheckBuffer(args->buffer, "PJRT_Buffer_OpaqueDeviceMemoryDataPointer_Args"));
  absl::StatusOr<std::shared_ptr<void>> reference = args->buffer->array->AcquireExternalReference();
  TESSERA_PJRT_RETURN_IF_ERROR(reference.status());
  args->device_memory_ptr = reference->get();
  return nullptr;
}

}  // namespace tessera::pjrt
