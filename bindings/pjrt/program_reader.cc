// The registered reader of StableHLO portable artifacts, and the versions it announces.

#include "bindings/pjrt/program_reader.h"

#include <atomic>
#include <mutex>
#include <string>

#include "absl/strings/str_cat.h"
#include "bindings/pjrt/tessera_pjrt.h"

namespace tessera::pjrt {
namespace {

// MLIR's bytecode files start with these four bytes.
constexpr std::string_view kBytecodeMagic("ML\xef\x52", 4);

std::atomic<TesseraPjrt_ProgramReader> g_reader{nullptr};

struct Versions {
  std::mutex mu;
  std::optional<std::string> current;
  std::optional<std::string> minimum;
};

Versions& GetVersions() {
  static auto* versions = new Versions;  // never destroyed: read at any time until exit
  return *versions;
}

struct Reply {
  bool replied = false;
  bool ok = false;
  std::string text;
};

}  // namespace

absl::StatusOr<std::string> ReadProgram(std::string_view code) {
  if (code.substr(0, kBytecodeMagic.size()) != kBytecodeMagic) return std::string(code);
  TesseraPjrt_ProgramReader reader = g_reader.load();
  if (reader == nullptr) {
    return absl::FailedPreconditionError(
        "PJRT_Client_Compile: the program is MLIR bytecode (a StableHLO portable artifact) and "
        "no reader is registered: load the plugin through the Python package's jax_plugins "
        "entry point (pip install the tessera package; JAX_PLATFORMS=tessera), which registers "
        "jaxlib's, or register one with TesseraPjrt_SetProgramReader");
  }
  Reply reply;
  reader(code.data(), code.size(), &reply);
  if (!reply.replied) {
    return absl::InternalError(
        "PJRT_Client_Compile: the registered program reader returned without replying");
  }
  if (!reply.ok) {
    return absl::InvalidArgumentError(absl::StrCat(
        "PJRT_Client_Compile: reading the StableHLO portable artifact failed: ", reply.text));
  }
  return std::move(reply.text);
}

std::optional<std::string> StableHloCurrentVersion() {
  std::lock_guard<std::mutex> lock(GetVersions().mu);
  return GetVersions().current;
}

std::optional<std::string> StableHloMinimumVersion() {
  std::lock_guard<std::mutex> lock(GetVersions().mu);
  return GetVersions().minimum;
}

}  // namespace tessera::pjrt

extern "C" {

__attribute__((visibility("default"))) void TesseraPjrt_SetProgramReader(
    TesseraPjrt_ProgramReader reader) {
  tessera::pjrt::g_reader.store(reader);
}

__attribute__((visibility("default"))) void TesseraPjrt_ReplyProgram(void* reply, int ok,
                                                                     const char* text,
                                                                     size_t size) {
  if (reply == nullptr) return;
  auto* r = static_cast<tessera::pjrt::Reply*>(reply);
  if (r->replied) return;  // only the first reply counts
  r->replied = true;
  r->ok = ok != 0;
  r->text = text == nullptr ? std::string() : std::string(text, size);
}

__attribute__((visibility("default"))) void TesseraPjrt_SetStableHloVersions(const char* current,
                                                                             const char* minimum) {
  auto& versions = tessera::pjrt::GetVersions();
  std::lock_guard<std::mutex> lock(versions.mu);
  auto set = [](std::optional<std::string>& field, const char* value) {
    if (value == nullptr || *value == '\0') {
      field.reset();
    } else {
      field = std::string(value);
    }
  };
  set(versions.current, current);
  set(versions.minimum, minimum);
}

}  // extern "C"
