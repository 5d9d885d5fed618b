// The option parsers, client setup and output helpers of the `tessera` tool (tools/cli.h).

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <thread>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "sharding/message_text.h"
#include "tools/cli.h"

namespace tessera::tools {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Where `part` (a view into `whole`) starts in `whole`.
size_t OffsetIn(std::string_view whole, std::string_view part) {
  return static_cast<size_t>(part.data() - whole.data());
}

// Longest message Fail prints; the rest is cut (a last defence against huge lines).
constexpr size_t kMaxMessageBytes = 4096;

// A non-negative decimal, at most 18 digits.
bool ParseCount(std::string_view s, int64_t* out) {
  if (s.empty() || s.size() > 18) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

}  // namespace

std::string OptionError(std::string_view option, std::string_view text, size_t position,
                        std::string_view what) {
  return absl::StrCat("invalid ", Str(option), " ", sharding::QuoteExcerpt(text, position), ": ",
                      Str(what), " at position ", position);
}

std::string OneLine(std::string_view message) {
  std::string line = sharding::EscapeText(message, /*quote_safe=*/false);
  if (line.size() > kMaxMessageBytes) {
    const size_t cut = line.size() - kMaxMessageBytes;
    line.resize(kMaxMessageBytes);
    absl::StrAppend(&line, "... (", cut, " more bytes)");
  }
  return line;
}

int Fail(int code, const std::string& message) {
  std::cerr << "tessera: error: " << OneLine(message) << "\n";
  return code;
}
int Fail(int code, absl::string_view message) { return Fail(code, std::string(message)); }
int Fail(int code, const char* message) { return Fail(code, std::string(message)); }

absl::StatusOr<std::vector<DeviceRequest>> ParseDevices(std::string_view text) {
  std::vector<DeviceRequest> out;
  size_t pos = 0;
  auto error = [&](size_t at, std::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat(OptionError("--devices", text, at, what),
                                                   " (expected e.g. cpu:8 or vulkan:2,cpu:2)"));
  };
  if (Trim(text).empty()) return error(0, "empty device list");
  while (pos <= text.size()) {
    size_t end = text.find(',', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view entry = text.substr(pos, end - pos);
    size_t colon = entry.find(':');
    if (colon == std::string_view::npos) return error(pos, "missing ':' after the platform");
    std::string_view platform = Trim(entry.substr(0, colon));
    std::string_view count_text = Trim(entry.substr(colon + 1));
    if (platform != "cpu" && platform != "vulkan") {
      return error(OffsetIn(text, platform), "unknown platform (expected cpu or vulkan)");
    }
    int64_t count = 0;
    if (!ParseCount(count_text, &count) || count < 1 || count > 4096) {
      return error(OffsetIn(text, count_text), "the device count is not an integer in 1..4096");
    }
    for (const DeviceRequest& r : out) {
      if (r.platform == platform) {
        return error(OffsetIn(text, platform),
                     absl::StrCat("platform ", r.platform, " given twice"));
      }
    }
    out.push_back({std::string(platform), static_cast<int>(count)});
    pos = end + 1;
  }
  return out;
}

absl::StatusOr<std::vector<int64_t>> ParseShape(std::string_view text) {
  std::string_view t = Trim(text);
  if (t.empty() || t == "scalar" || t == "[]") {
    return std::vector<int64_t>();
  }
  std::vector<int64_t> dims;
  size_t pos = 0;
  while (pos <= t.size()) {
    size_t end = t.find_first_of("x,", pos);
    if (end == std::string_view::npos) end = t.size();
    int64_t dim = 0;
    std::string_view d = t.substr(pos, end - pos);
    if (!ParseCount(d, &dim)) {
      return absl::InvalidArgumentError(absl::StrCat(
          OptionError("--shape", text, OffsetIn(text, d),
                      absl::StrCat("dimension ", dims.size(),
                                   " is not a non-negative integer of at most 18 digits")),
          " (expected e.g. 8192x8192)"));
    }
    dims.push_back(dim);
    pos = end + 1;
  }
  if (dims.size() > 16) {
    return absl::InvalidArgumentError(absl::StrCat("invalid --shape ", sharding::QuoteExcerpt(text),
                                                   ": rank ", dims.size(), " is above 16"));
  }
  return dims;
}

absl::StatusOr<DType> ParseDType(std::string_view text) {
  absl::StatusOr<DType> dtype = DType::Parse(Trim(text));
  if (!dtype.ok() || dtype->kind() == DType::kInvalid) {
    return absl::InvalidArgumentError(absl::StrCat(
        "invalid --dtype ", sharding::QuoteExcerpt(text),
        " (expected pred, s8, s16, s32, s64, u8, u16, u32, u64, f16, bf16, f32 or f64)"));
  }
  return *dtype;
}

int ShardingText::num_devices() const {
  return mesh.has_value() ? mesh->num_devices() : param->NumDevices();
}

std::string ShardingText::ToString() const {
  return mesh.has_value() ? absl::StrCat(mesh->ToString(), " ", spec.ToString())
                          : param->ToString();
}

absl::StatusOr<ShardingText> ParseSharding(std::string_view option, std::string_view text) {
  std::string_view t = Trim(text);
  // A failure to parse `part` (a view into `text`): at the parser's position, counted in `text`,
  // when the parser reports one; else the parser's message after the option's text.
  auto wrap = [&](std::string_view context, std::string_view part, const absl::Status& s) {
    if (std::optional<sharding::ParseLocation> at = sharding::GetParseLocation(s)) {
      return absl::InvalidArgumentError(
          OptionError(option, text, OffsetIn(text, part) + at->offset,
                      absl::StrCat(Str(context), "expected ", at->expected)));
    }
    return absl::InvalidArgumentError(absl::StrCat("invalid ", Str(option), " ",
                                                   sharding::QuoteExcerpt(text), ": ", Str(context),
                                                   Str(s.message())));
  };
  constexpr std::string_view kExample = " (expected e.g. mesh{x=8} P(x,None))";
  ShardingText out;
  if (t.substr(0, 4) == "mesh") {
    size_t close = t.find('}');
    if (close == std::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat(
          OptionError(option, text, text.size(), "the mesh has no closing '}'"), Str(kExample)));
    }
    std::string_view mesh_text = t.substr(0, close + 1);
    absl::StatusOr<sharding::Mesh> mesh = sharding::Mesh::Parse(mesh_text);
    if (!mesh.ok()) return wrap("in the mesh: ", mesh_text, mesh.status());
    std::string_view rest = Trim(t.substr(close + 1));
    if (rest.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          OptionError(option, text, text.size(), "a PartitionSpec must follow the mesh"),
          Str(kExample)));
    }
    absl::StatusOr<sharding::PartitionSpec> spec = sharding::PartitionSpec::Parse(rest);
    if (!spec.ok()) return wrap("in the PartitionSpec: ", rest, spec.status());
    out.mesh = *std::move(mesh);
    out.spec = *std::move(spec);
    return out;
  }
  absl::StatusOr<sharding::ShardingParam> param = sharding::ShardingParam::Parse(t);
  if (!param.ok()) {
    return wrap("neither 'mesh{...} P(...)' nor a ShardingParam: ", t, param.status());
  }
  out.param = *std::move(param);
  return out;
}

absl::StatusOr<ShardingRef> BindSharding(std::string_view option, const ShardingText& text,
                                         absl::Span<Device* const> devices, const Shape& shape) {
  const int n = text.num_devices();
  if (n > static_cast<int>(devices.size())) {
    return absl::InvalidArgumentError(
        absl::StrCat(Str(option), " ", sharding::QuoteExcerpt(text.ToString()), " needs ", n,
                     " devices but only ", devices.size(), " are available (see --devices)"));
  }
  Client* client = devices.front()->client();
  absl::StatusOr<DeviceListRef> list = client->MakeDeviceList(devices.subspan(0, n));
  if (!list.ok()) return list.status();
  absl::StatusOr<ShardingRef> sharding =
      text.mesh.has_value() ? NamedSharding::Create(*text.mesh, text.spec, *list, MemoryKind())
                            : ShardingParamSharding::Create(*text.param, *list, MemoryKind());
  if (!sharding.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(Str(option), " ",
                                                   sharding::QuoteExcerpt(text.ToString()), ": ",
                                                   Str(sharding.status().message())));
  }
  absl::StatusOr<sharding::ShardLayout> layout = (*sharding)->Layout(shape);
  if (!layout.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        Str(option), " ", sharding::QuoteExcerpt(text.ToString()), " does not fit shape ",
        shape.DebugString(), ": ", Str(layout.status().message())));
  }
  return sharding;
}

namespace {

// The options for --devices (parsed into `requests`; nullopt: CreateClient() defaults) and --guard
// (nullopt: the default policy). Returns the exit code after printing the error on failure.
int MakeClientOptions(const std::optional<std::string>& devices,
                      const std::optional<std::string>& guard_policy, ClientOptions& options,
                      std::vector<DeviceRequest>& requests) {
  if (devices.has_value()) {
    absl::StatusOr<std::vector<DeviceRequest>> parsed = ParseDevices(*devices);
    if (!parsed.ok()) return Fail(kExitBadInput, parsed.status().message());
    requests = *std::move(parsed);
    options.cpu_devices = 0;
    options.vulkan = VulkanMode::kOff;
    for (const DeviceRequest& r : requests) {
      if (r.platform == "cpu") options.cpu_devices = r.count;
      if (r.platform == "vulkan") options.vulkan = VulkanMode::kRequired;
    }
  }
  if (guard_policy.has_value()) {
    absl::StatusOr<guard::Policy> policy = guard::Policy::Parse(*guard_policy);
    if (!policy.ok()) {
      return Fail(kExitBadInput, absl::StrCat("--guard: ", Str(policy.status().message())));
    }
    options.transfer_guard = *policy;
  }
  return kExitOk;
}

// Fills setup.devices and setup.description: the client's devices in the order of `requests`
// (all of them when empty). Returns the exit code after printing the error when the client has
// fewer devices of a platform than requested.
int SelectDevices(const std::vector<DeviceRequest>& requests, ClientSetup& setup) {
  if (requests.empty()) {
    for (Device* d : setup.client->devices()) setup.devices.push_back(d);
    setup.description = "default client";
    return kExitOk;
  }
  std::vector<std::string> parts;
  for (const DeviceRequest& r : requests) {
    int found = 0;
    for (Device* d : setup.client->devices()) {
      if (d->Kind() == r.platform && found < r.count) {
        setup.devices.push_back(d);
        ++found;
      }
    }
    if (found < r.count) {
      return Fail(kExitFailure, absl::StrCat("--devices asks for ", r.count, " ", r.platform,
                                             " devices but this machine has ", found));
    }
    parts.push_back(absl::StrCat(r.platform, ":", r.count));
  }
  setup.description = absl::StrJoin(parts, ",");
  return kExitOk;
}

}  // namespace

ClientResult SetUpClient(const std::optional<std::string>& devices,
                         const std::optional<std::string>& guard_policy) {
  ClientOptions options;
  std::vector<DeviceRequest> requests;
  if (int code = MakeClientOptions(devices, guard_policy, options, requests); code != kExitOk) {
    return {std::nullopt, code};
  }
  absl::StatusOr<std::shared_ptr<Client>> client = CreateClient(options);
  if (!client.ok()) {
    return {std::nullopt, Fail(kExitFailure, absl::StrCat("cannot create the client: ",
                                                          client.status().ToString()))};
  }
  ClientSetup setup;
  setup.client = *std::move(client);
  if (int code = SelectDevices(requests, setup); code != kExitOk) return {std::nullopt, code};
  return {std::move(setup), kExitOk};
}

ClientIntrospection* Introspect(Client& client) { return client.introspection(); }

std::string FormatBytes(int64_t bytes) {
  if (bytes < 1024) return absl::StrCat(bytes, " B");
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = -1;
  while (v >= 1024 && u < 3) {
    v /= 1024;
    ++u;
  }
  return absl::StrFormat(v < 10 && u >= 2 ? "%.2f %s" : "%.1f %s", v, units[u]);
}

std::string FormatDuration(double seconds) {
  if (seconds < 1e-3) return absl::StrFormat("%.0f us", seconds * 1e6);
  if (seconds < 1) return absl::StrFormat("%.2f ms", seconds * 1e3);
  return absl::StrFormat("%.2f s", seconds);
}

std::string FormatRate(int64_t bytes, double seconds) {
  if (bytes <= 0 || seconds <= 0) return "-";
  return absl::StrFormat("%.2f", static_cast<double>(bytes) / seconds / (1024.0 * 1024 * 1024));
}

std::string ArrayName(DType dtype, const Shape& shape) {
  return absl::StrCat(dtype.DebugString(), "[", absl::StrJoin(shape.dims(), ","), "]");
}

std::string DeviceRange(absl::Span<Device* const> devices) {
  if (devices.empty()) return "[]";
  bool run = devices.size() > 2;
  for (size_t i = 1; i < devices.size() && run; ++i) {
    run = devices[i]->Kind() == devices[0]->Kind() &&
          devices[i]->Id().value == devices[i - 1]->Id().value + 1;
  }
  if (run) return absl::StrCat(devices.front()->ToString(), "..", devices.back()->ToString());
  std::vector<std::string> names;
  for (Device* d : devices) names.push_back(d->ToString());
  return absl::StrCat("[", absl::StrJoin(names, ", "), "]");
}

std::string JsonString(std::string_view text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (c < 0x20) {
          out += absl::StrFormat("\\u%04x", c);
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

void Table::Print(std::ostream& out, int indent) const {
  std::vector<size_t> width(header_.size(), 0);
  auto measure = [&](const std::vector<std::string>& row) {
    for (size_t i = 0; i < row.size() && i < width.size(); ++i) {
      width[i] = std::max(width[i], row[i].size());
    }
  };
  measure(header_);
  for (const auto& row : rows_) measure(row);
  auto print_row = [&](const std::vector<std::string>& row) {
    std::string line(indent, ' ');
    for (size_t i = 0; i < width.size(); ++i) {
      std::string cell = i < row.size() ? row[i] : "";
      const bool left = i == 0 || std::find(left_.begin(), left_.end(), i) != left_.end();
      std::string pad(width[i] - cell.size(), ' ');
      if (i > 0) line += "  ";
      line += left ? cell + pad : pad + cell;
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << "\n";
  };
  print_row(header_);
  size_t total = 0;
  for (size_t w : width) total += w;
  total += 2 * (width.empty() ? 0 : width.size() - 1);
  out << std::string(indent, ' ') << std::string(total, '-') << "\n";
  for (const auto& row : rows_) print_row(row);
}

Progress::Progress(std::string label, int total)
    : label_(std::move(label)), total_(total), enabled_(isatty(STDOUT_FILENO) == 1) {
  if (enabled_) Draw();
}

Progress::~Progress() {
  if (enabled_) {
    std::cout << "\r\033[K" << std::flush;
  }
}

void Progress::Step() {
  ++done_;
  if (enabled_) Draw();
}

void Progress::Draw() const {
  constexpr int kWidth = 30;
  const int filled = total_ > 0 ? done_ * kWidth / total_ : kWidth;
  std::cout << "\r  " << label_ << " [" << std::string(filled, '#')
            << std::string(kWidth - filled, ' ') << "] " << done_ << "/" << total_ << std::flush;
}

std::vector<uint8_t> MakePattern(int64_t bytes, uint64_t seed) {
  std::vector<uint8_t> out(static_cast<size_t>(bytes));
  uint64_t x = seed * 0x9E3779B97F4A7C15ull;
  size_t i = 0;
  for (; i + 8 <= out.size(); i += 8) {
    x += 0x9E3779B97F4A7C15ull;
    uint64_t z = x;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    std::memcpy(out.data() + i, &z, 8);
  }
  for (; i < out.size(); ++i) out[i] = static_cast<uint8_t>(i * 131 + seed);
  return out;
}

double Median(std::vector<double> seconds) {
  std::sort(seconds.begin(), seconds.end());
  const size_t n = seconds.size();
  return n % 2 == 1 ? seconds[n / 2] : (seconds[n / 2 - 1] + seconds[n / 2]) / 2;
}

double Minimum(const std::vector<double>& seconds) {
  return *std::min_element(seconds.begin(), seconds.end());
}

double ParallelMemcpy(uint8_t* dst, const uint8_t* src, int64_t bytes, int threads) {
  threads = std::max(1, threads);
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> workers;
  const int64_t slice = (bytes + threads - 1) / threads;
  for (int t = 0; t < threads; ++t) {
    const int64_t begin = std::min(bytes, t * slice);
    const int64_t end = std::min(bytes, begin + slice);
    if (begin == end) continue;
    workers.emplace_back([=] { std::memcpy(dst + begin, src + begin, end - begin); });
  }
  for (std::thread& w : workers) w.join();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string RenderClientPlan(const Client& client, const sharding::ReshardPlan& plan) {
  absl::flat_hash_map<int64_t, std::string> names;  // memory id -> "device 2 (host)"
  for (Device* d : client.devices()) {
    for (Memory* m : d->Memories()) {
      names.try_emplace(m->Id().value,
                        absl::StrCat("device ", d->Id().value, " (", m->Kind().DebugString(), ")"));
    }
  }
  return sharding::RenderPlan(plan, [&](int64_t location) {
    auto it = names.find(location);
    return it != names.end() ? it->second : absl::StrCat("memory ", location);
  });
}

}  // namespace tessera::tools
