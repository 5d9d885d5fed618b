// tessera info: platforms, devices, memories, attributes, drivers and code generators of a client.

#include <iostream>
#include <map>
#include <variant>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tools/cli.h"

namespace tessera::tools {
namespace {

std::string AttributeJson(const AttributeMap::Value& value) {
  return std::visit(
      [](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::string>) {
          return JsonString(v);
        } else if constexpr (std::is_same_v<T, bool>) {
          return v ? "true" : "false";
        } else if constexpr (std::is_same_v<T, int64_t>) {
          return absl::StrCat(v);
        } else if constexpr (std::is_same_v<T, double>) {
          return absl::StrCat(v);
        } else {
          return absl::StrCat("[", absl::StrJoin(v, ","), "]");
        }
      },
      value);
}

std::string MemoryKindName(const Memory& memory) { return memory.Kind().DebugString(); }

bool IsDefaultMemory(const Device& device, const Memory& memory) {
  absl::StatusOr<Memory*> def = device.DefaultMemory();
  return def.ok() && *def == &memory;
}

// "llvmpipe: Mesa 22.3.6 (Vulkan 1.3.230)" for Vulkan; "built in" for CPU devices.
std::string DriverLine(const Device& device) {
  const AttributeMap& a = device.Attributes();
  if (device.Kind() == "cpu") return "built in (threads on this host)";
  std::vector<std::string> parts;
  if (auto name = a.GetString("driver_name")) parts.push_back(*name);
  if (auto info = a.GetString("driver_info")) parts.push_back(*info);
  std::string line = absl::StrJoin(parts, " ");
  if (auto v = a.GetString("driver_version")) absl::StrAppend(&line, ", driver ", *v);
  if (auto api = a.GetString("api_version")) absl::StrAppend(&line, ", Vulkan ", *api);
  return line.empty() ? "unknown" : line;
}

// The code generator Compile uses for the device's kernels (compiler/: one per platform), or why
// there is none.
std::string CodeGeneratorLine(Client& client, const Device& device) {
  if (client.GetDefaultCompiler() == nullptr) return "none (built without compiler/)";
  if (device.Kind() == "cpu") return "MLIR -> LLVM (JIT), run on the device's threads";
  if (device.Kind() == "vulkan") return "MLIR -> SPIR-V, one compute pipeline per dispatch";
  return "none";
}

int PrintJson(const ClientSetup& setup) {
  Client& client = *setup.client;
  std::string out = "{\n  \"platforms\": [";
  std::vector<std::string> platforms;
  for (const std::string& p : client.platform_names()) platforms.push_back(JsonString(p));
  absl::StrAppend(&out, absl::StrJoin(platforms, ", "), "],\n  \"devices\": [");
  bool first = true;
  for (Device* d : setup.devices) {
    absl::StrAppend(&out, first ? "\n" : ",\n", "    {\"id\": ", d->Id().value,
                    ", \"name\": ", JsonString(d->ToString()),
                    ", \"kind\": ", JsonString(d->Kind()),
                    ", \"description\": ", JsonString(d->DebugString()),
                    ", \"driver\": ", JsonString(DriverLine(*d)),
                    ", \"code_generator\": ", JsonString(CodeGeneratorLine(client, *d)),
                    ",\n      \"memories\": [");
    std::vector<std::string> memories;
    for (Memory* m : d->Memories()) {
      memories.push_back(absl::StrCat("{\"id\": ", m->Id().value,
                                      ", \"kind\": ", JsonString(MemoryKindName(*m)),
                                      ", \"default\": ", IsDefaultMemory(*d, *m) ? "true" : "false",
                                      ", \"bytes_in_use\": ", m->BytesInUse(), "}"));
    }
    absl::StrAppend(&out, absl::StrJoin(memories, ", "), "],\n      \"attributes\": {");
    std::vector<std::string> attributes;
    for (const auto& [name, value] : d->Attributes().map()) {
      attributes.push_back(absl::StrCat(JsonString(name), ": ", AttributeJson(value)));
    }
    absl::StrAppend(&out, absl::StrJoin(attributes, ", "), "}}");
    first = false;
  }
  const guard::Policy policy = client.transfer_guard().policy();
  absl::StrAppend(&out, "\n  ],\n  \"transfer_guard\": ", JsonString(policy.ToString()), "\n}\n");
  std::cout << out;
  return kExitOk;
}

int PrintText(const ClientSetup& setup) {
  Client& client = *setup.client;
  std::cout << "Platforms: " << absl::StrJoin(client.platform_names(), ", ") << "\n";
  std::cout << "Transfer guard policy: " << client.transfer_guard().policy().ToString() << "\n\n";

  std::cout << "Devices (" << setup.devices.size() << ")\n";
  Table devices({"id", "device", "kind", "description"});
  devices.set_left(1);
  devices.set_left(2);
  devices.set_left(3);
  for (Device* d : setup.devices) {
    devices.AddRow(
        {absl::StrCat(d->Id().value), d->ToString(), std::string(d->Kind()), d->DebugString()});
  }
  devices.Print(std::cout);

  std::cout << "\nMemories\n";
  Table memories({"id", "device", "kind", "default", "in use"});
  memories.set_left(1);
  memories.set_left(2);
  memories.set_left(3);
  for (Device* d : setup.devices) {
    for (Memory* m : d->Memories()) {
      memories.AddRow({absl::StrCat(m->Id().value), d->ToString(), MemoryKindName(*m),
                       IsDefaultMemory(*d, *m) ? "yes" : "no", FormatBytes(m->BytesInUse())});
    }
  }
  memories.Print(std::cout);

  std::cout << "\nDrivers\n";
  Table drivers({"device", "driver", "code generator"});
  drivers.set_left(1);
  drivers.set_left(2);
  for (Device* d : setup.devices) {
    drivers.AddRow({d->ToString(), DriverLine(*d), CodeGeneratorLine(client, *d)});
  }
  drivers.Print(std::cout);

  std::cout << "\nAttributes\n";
  for (Device* d : setup.devices) {
    std::cout << "  " << d->ToString() << "\n";
    for (const auto& [name, value] : d->Attributes().map()) {
      std::cout << "    " << name << " = " << AttributeMap::ValueToString(value) << "\n";
    }
  }
  return kExitOk;
}

}  // namespace

int RunInfo(const InfoOptions& options) {
  ClientResult result = SetUpClient(options.devices, std::nullopt, options.distributed);
  if (!result.setup.has_value()) return result.exit_code;
  return options.json ? PrintJson(*result.setup) : PrintText(*result.setup);
}

}  // namespace tessera::tools
