#ifndef TESSERA_BINDINGS_PJRT_PROTO_WRITER_H_
#define TESSERA_BINDINGS_PJRT_PROTO_WRITER_H_

// ProtoWriter: writes protobuf wire format, field by field, for the few XLA messages the plugin
// hands a framework (a DeviceAssignmentProto, an HloModuleProtoWithConfig). Header-only.
//
//   ProtoWriter shape;
//   shape.Varint(2, 11).Packed(3, {8, 32});          // ShapeProto{element_type, dimensions}
//   ProtoWriter instruction;
//   instruction.String(1, "Arg_0").Message(3, shape);
//
// Why by hand: compile_options.h.

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/types/span.h"

namespace tessera::pjrt {

class ProtoWriter {
 public:
  ProtoWriter& Varint(int field, uint64_t value) {
    Tag(field, 0);
    AppendVarint(bytes_, value);
    return *this;
  }
  ProtoWriter& String(int field, std::string_view value) {
    Tag(field, 2);
    AppendVarint(bytes_, value.size());
    bytes_.append(value);
    return *this;
  }
  ProtoWriter& Message(int field, const ProtoWriter& message) {
    return String(field, message.bytes());
  }
  // A repeated integer field, packed.
  ProtoWriter& Packed(int field, absl::Span<const int64_t> values) {
    std::string packed;
    for (int64_t v : values) AppendVarint(packed, static_cast<uint64_t>(v));
    return String(field, packed);
  }
  const std::string& bytes() const { return bytes_; }

 private:
  void Tag(int field, int wire_type) {
    AppendVarint(bytes_, (static_cast<uint64_t>(field) << 3) | static_cast<uint64_t>(wire_type));
  }
  static void AppendVarint(std::string& out, uint64_t value) {
    while (value >= 0x80) {
      out.push_back(static_cast<char>((value & 0x7f) | 0x80));
      value >>= 7;
    }
    out.push_back(static_cast<char>(value));
  }

  std::string bytes_;
};

}  // namespace tessera::pjrt

#endif  // TESSERA_BINDINGS_PJRT_PROTO_WRITER_H_
