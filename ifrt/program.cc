#include "ifrt/program.h"

#include <memory>
#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"

namespace tessera {

namespace {

std::string Describe(std::string_view kind, const std::string& text) {
  std::string first_line = text.substr(0, text.find('\n'));
  if (first_line.size() > 80) first_line = first_line.substr(0, 80);
  return absl::StrCat(std::string(kind), "(", text.size(), " bytes: \"", first_line, "\")");
}

}  // namespace

std::string MlirProgram::DebugString() const { return Describe("MlirProgram", text_); }

std::string StableHloProgram::DebugString() const { return Describe("StableHloProgram", text_); }

std::unique_ptr<Program> ProgramFromText(std::string text) {
  for (std::string_view dialect : {"stablehlo.", "chlo.", "sdy."}) {
    if (text.find(dialect) != std::string::npos) {
      return std::make_unique<StableHloProgram>(std::move(text));
    }
  }
  return std::make_unique<MlirProgram>(std::move(text));
}

}  // namespace tessera
