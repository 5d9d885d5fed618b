#include "sharding/mesh.h"

#include <cctype>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/checked_math.h"
#include "base/message_text.h"
#include "sharding/parse_util.h"

namespace tessera::sharding {
namespace {
constexpr int64_t kMaxDevices = int64_t{1} << 24;
}  // namespace

bool IsValidAxisName(std::string_view name) {
  if (name.empty() || name == "None") return false;
  auto is_start = [](char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; };
  if (!is_start(name[0])) return false;
  for (char c : name) {
    if (!is_start(c) && !std::isdigit(static_cast<unsigned char>(c))) {
      return false;
    }
  }
  return true;
}

absl::StatusOr<Mesh> Mesh::Create(std::vector<Axis> axes) {
  if (axes.empty()) {
    return absl::InvalidArgumentError("Mesh needs at least one axis");
  }
  absl::flat_hash_set<std::string> names;
  int64_t devices = 1;
  for (const Axis& axis : axes) {
    if (!IsValidAxisName(axis.name)) {
      return absl::InvalidArgumentError(
          absl::StrCat("Invalid mesh axis name ", base::QuoteExcerpt(axis.name)));
    }
    if (!names.insert(axis.name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("Repeated mesh axis name ", base::QuoteExcerpt(axis.name)));
    }
    if (axis.size < 1) {
      return absl::InvalidArgumentError(absl::StrCat("Mesh axis ", base::QuoteExcerpt(axis.name),
                                                     " has non-positive size ", axis.size));
    }
    const std::optional<int64_t> product = base::CheckedMul(devices, axis.size);
    if (!product.has_value() || *product > kMaxDevices) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Mesh has more than ", kMaxDevices, " devices (axis \"", axis.name, "\" of size ",
          axis.size, " makes ",
          product.has_value() ? absl::StrCat(*product) : "more than int64 holds", ")"));
    }
    devices = *product;
  }
  return Mesh(std::move(axes));
}

absl::StatusOr<Mesh> Mesh::Parse(std::string_view text) {
  internal::TextCursor cursor("Mesh", text);
  if (!cursor.Consume("mesh")) return cursor.Error("'mesh'");
  if (!cursor.Consume("{")) return cursor.Error("'{'");
  std::vector<Axis> axes;
  if (!cursor.Consume("}")) {
    do {
      std::string_view name;
      int64_t size;
      if (!cursor.ConsumeIdentifier(&name)) return cursor.Error("an axis name");
      if (!cursor.Consume("=")) return cursor.Error("'='");
      if (!cursor.ConsumeInteger(&size)) return cursor.Error("an axis size");
      axes.push_back({std::string(name), size});
    } while (cursor.Consume(","));
    if (!cursor.Consume("}")) return cursor.Error("'}'");
  }
  if (!cursor.AtEnd()) return cursor.Error("end of input");
  return Create(std::move(axes));
}

std::string Mesh::ToString() const {
  std::string out = "mesh{";
  for (size_t i = 0; i < axes_.size(); ++i) {
    absl::StrAppend(&out, i == 0 ? "" : ",", axes_[i].name, "=", axes_[i].size);
  }
  out += "}";
  return out;
}

int Mesh::num_devices() const {
  int64_t n = 1;
  for (const Axis& axis : axes_) n *= axis.size;
  return static_cast<int>(n);
}

std::optional<int> Mesh::FindAxis(std::string_view name) const {
  for (size_t i = 0; i < axes_.size(); ++i) {
    if (axes_[i].name == name) return static_cast<int>(i);
  }
  return std::nullopt;
}

}  // namespace tessera::sharding
