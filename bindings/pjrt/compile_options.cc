// Reads xla.CompileOptionsProto's replica, partition and device-assignment fields from the
// protobuf wire format (compile_options.h says why by hand).

#include "bindings/pjrt/compile_options.h"

#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "bindings/pjrt/proto_writer.h"

namespace tessera::pjrt {
namespace {

constexpr int64_t kMaxCount = 65536;

enum WireType { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

// One message's fields, in order. Every read is bounds-checked; a malformed field is an error.
class WireReader {
 public:
  explicit WireReader(std::string_view data) : data_(data) {}

  bool AtEnd() const { return pos_ >= data_.size(); }

  // The next field's number and wire type.
  absl::Status NextTag(int64_t& field, int& wire_type) {
    absl::StatusOr<uint64_t> tag = Varint();
    if (!tag.ok()) return tag.status();
    field = static_cast<int64_t>(*tag >> 3);
    wire_type = static_cast<int>(*tag & 7);
    if (field == 0) return Malformed("field number 0");
    return absl::OkStatus();
  }

  absl::StatusOr<uint64_t> Varint() {
    uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= data_.size()) return Malformed("a truncated varint");
      uint8_t byte = static_cast<uint8_t>(data_[pos_++]);
      value |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) return value;
    }
    return Malformed("a varint longer than 10 bytes");
  }

  absl::StatusOr<std::string_view> LengthDelimited() {
    absl::StatusOr<uint64_t> size = Varint();
    if (!size.ok()) return size.status();
    if (*size > data_.size() - pos_) return Malformed("a field longer than the message");
    std::string_view bytes = data_.substr(pos_, *size);
    pos_ += *size;
    return bytes;
  }

  absl::Status Skip(int wire_type) {
    switch (wire_type) {
      case kVarint:
        return Varint().status();
      case kFixed64:
        return Advance(8);
      case kLengthDelimited:
        return LengthDelimited().status();
      case kFixed32:
        return Advance(4);
      default:
        return Malformed(absl::StrCat("wire type ", wire_type));
    }
  }

 private:
  absl::Status Advance(size_t bytes) {
    if (bytes > data_.size() - pos_) return Malformed("a truncated fixed-size field");
    pos_ += bytes;
    return absl::OkStatus();
  }
  static absl::Status Malformed(absl::string_view what) {
    return absl::InvalidArgumentError(
        absl::StrCat("PJRT_Client_Compile: compile_options is not a serialized "
                     "xla.CompileOptionsProto: ",
                     what));
  }

  std::string_view data_;
  size_t pos_ = 0;
};

absl::Status ExpectWireType(int wire_type, int expected, absl::string_view field) {
  if (wire_type == expected) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("PJRT_Client_Compile: compile_options: ", field, " has wire type ", wire_type));
}

// Calls `visit(reader, field, wire_type)` for each field of the message `bytes`; a field it does
// not read (it returns false) is skipped.
template <typename Visit>
absl::Status ForEachField(std::string_view bytes, Visit visit) {
  WireReader reader(bytes);
  while (!reader.AtEnd()) {
    int64_t field = 0;
    int wire_type = 0;
    if (absl::Status s = reader.NextTag(field, wire_type); !s.ok()) return s;
    absl::StatusOr<bool> read = visit(reader, field, wire_type);
    if (!read.ok()) return read.status();
    if (!*read) {
      if (absl::Status s = reader.Skip(wire_type); !s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

// A message-typed field's bytes.
absl::StatusOr<std::string_view> ReadMessage(WireReader& reader, int wire_type,
                                             absl::string_view name) {
  if (absl::Status s = ExpectWireType(wire_type, kLengthDelimited, name); !s.ok()) return s;
  return reader.LengthDelimited();
}

absl::Status TooMany(absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("PJRT_Client_Compile: a device assignment of more than ", kMaxCount, " ", what));
}

// ComputationDevice: the repeated replica_device_ids, packed or one per field.
absl::StatusOr<std::vector<int64_t>> ReadComputationDevice(std::string_view bytes) {
  std::vector<int64_t> ids;
  auto read_id = [&ids](WireReader& values) -> absl::Status {
    absl::StatusOr<uint64_t> id = values.Varint();
    if (!id.ok()) return id.status();
    ids.push_back(static_cast<int64_t>(*id));
    return ids.size() > static_cast<size_t>(kMaxCount) ? TooMany("replicas") : absl::OkStatus();
  };
  absl::Status status = ForEachField(
      bytes, [&](WireReader& reader, int64_t field, int wire_type) -> absl::StatusOr<bool> {
        if (field != 1) return false;
        if (wire_type == kVarint) {
          if (absl::Status s = read_id(reader); !s.ok()) return s;
          return true;
        }
        absl::StatusOr<std::string_view> packed =
            ReadMessage(reader, wire_type, "replica_device_ids");
        if (!packed.ok()) return packed.status();
        WireReader values(*packed);
        while (!values.AtEnd()) {
          if (absl::Status s = read_id(values); !s.ok()) return s;
        }
        return true;
      });
  if (!status.ok()) return status;
  return ids;
}

absl::Status ReadDeviceAssignment(std::string_view bytes, CompileOptions& options) {
  return ForEachField(
      bytes, [&](WireReader& reader, int64_t field, int wire_type) -> absl::StatusOr<bool> {
        if (field != 3) return false;
        absl::StatusOr<std::string_view> device =
            ReadMessage(reader, wire_type, "computation_devices");
        if (!device.ok()) return device.status();
        absl::StatusOr<std::vector<int64_t>> ids = ReadComputationDevice(*device);
        if (!ids.ok()) return ids.status();
        options.device_ids.push_back(std::move(*ids));
        if (options.device_ids.size() > static_cast<size_t>(kMaxCount)) {
          return TooMany("partitions");
        }
        return true;
      });
}

absl::StatusOr<int64_t> ReadCount(WireReader& reader, int wire_type, absl::string_view name) {
  if (absl::Status s = ExpectWireType(wire_type, kVarint, name); !s.ok()) return s;
  absl::StatusOr<uint64_t> value = reader.Varint();
  if (!value.ok()) return value.status();
  auto count = static_cast<int64_t>(*value);
  if (count < 1 || count > kMaxCount) {
    return absl::InvalidArgumentError(absl::StrCat("PJRT_Client_Compile: compile_options: ", name,
                                                   " is ", count, " (from 1 to ", kMaxCount, ")"));
  }
  return count;
}

absl::Status ReadBuildOptions(std::string_view bytes, CompileOptions& options) {
  return ForEachField(
      bytes, [&](WireReader& reader, int64_t field, int wire_type) -> absl::StatusOr<bool> {
        if (field == 4 || field == 5) {
          absl::StatusOr<int64_t> count =
              ReadCount(reader, wire_type, field == 4 ? "num_replicas" : "num_partitions");
          if (!count.ok()) return count.status();
          (field == 4 ? options.num_replicas : options.num_partitions) = *count;
          return true;
        }
        if (field != 9) return false;
        absl::StatusOr<std::string_view> assignment =
            ReadMessage(reader, wire_type, "device_assignment");
        if (!assignment.ok()) return assignment.status();
        options.device_ids.clear();
        if (absl::Status s = ReadDeviceAssignment(*assignment, options); !s.ok()) return s;
        return true;
      });
}

}  // namespace

std::string SerializeDeviceAssignment(const std::vector<int64_t>& device_ids) {
  ProtoWriter assignment;
  assignment.Varint(1, 1).Varint(2, device_ids.size());  // replica_count, computation_count
  for (int64_t id : device_ids) {
    ProtoWriter device;
    device.Packed(1, {id});         // replica_device_ids
    assignment.Message(3, device);  // computation_devices
  }
  return assignment.bytes();
}

// An env_option_overrides entry (map<string, OptionOverrideProto>): its key. A key outside
// XLA's debug options (xla_...) is INVALID_ARGUMENT, as XLA words it: a misspelt option is named,
// not ignored.
absl::Status CheckOptionOverride(std::string_view entry) {
  std::string_view key;
  absl::Status status = ForEachField(
      entry, [&](WireReader& reader, int64_t field, int wire_type) -> absl::StatusOr<bool> {
        if (field != 1) return false;
        absl::StatusOr<std::string_view> text = ReadMessage(reader, wire_type, "an option's key");
        if (!text.ok()) return text.status();
        key = *text;
        return true;
      });
  if (!status.ok()) return status;
  const absl::string_view name(key.data(), key.size());
  if (absl::StartsWith(name, "xla_")) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("PJRT_Client_Compile: No such compile option: '", absl::CHexEscape(name),
                   "' (Tessera takes XLA's xla_* debug options, and ignores them)"));
}

absl::StatusOr<CompileOptions> ParseCompileOptions(std::string_view bytes) {
  CompileOptions options;
  absl::Status status = ForEachField(
      bytes, [&](WireReader& reader, int64_t field, int wire_type) -> absl::StatusOr<bool> {
        if (field == 7) {
          absl::StatusOr<std::string_view> entry =
              ReadMessage(reader, wire_type, "env_option_overrides");
          if (!entry.ok()) return entry.status();
          if (absl::Status s = CheckOptionOverride(*entry); !s.ok()) return s;
          return true;
        }
        if (field != 3) return false;
        absl::StatusOr<std::string_view> build =
            ReadMessage(reader, wire_type, "executable_build_options");
        if (!build.ok()) return build.status();
        if (absl::Status s = ReadBuildOptions(*build, options); !s.ok()) return s;
        return true;
      });
  if (!status.ok()) return status;
  if (options.device_ids.empty()) return options;
  bool fits = static_cast<int64_t>(options.device_ids.size()) == options.num_partitions;
  for (const std::vector<int64_t>& replicas : options.device_ids) {
    fits = fits && static_cast<int64_t>(replicas.size()) == options.num_replicas;
  }
  if (!fits) {
    return absl::InvalidArgumentError(absl::StrCat(
        "PJRT_Client_Compile: compile_options: the device assignment has ",
        options.device_ids.size(), " partitions (of ",
        options.device_ids.empty() ? 0 : options.device_ids[0].size(), " replicas) for ",
        options.num_partitions, " partitions of ", options.num_replicas, " replicas"));
  }
  return options;
}

}  // namespace tessera::pjrt
