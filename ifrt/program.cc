#include "ifrt/program.h"

#include "absl/strings/str_cat.h"

namespace tessera {

std::string MlirProgram::DebugString() const {
  std::string first_line = text_.substr(0, text_.find('\n'));
  if (first_line.size() > 80) first_line = first_line.substr(0, 80);
  return absl::StrCat("MlirProgram(", text_.size(), " bytes: \"", first_line, "\")");
}

}  // namespace tessera
