// The option parsers, client setup and output helpers of the `tessera` tool (tools/cli.h).

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <limits>
#include <thread>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/message_text.h"
#include "base/status_macros.h"
#include "tools/cli.h"

namespace tessera::tools {
int Fail(int code, const std::string& message) {
  std::cerr << "tessera: error: " << OneLine(message) << "\n";
  return code;
}
int Fail(int code, absl::string_view message) { return Fail(code, std::string(message)); }
int Fail(int code, const char* message) { return Fail(code, std::string(message)); }

absl::StatusOr<DType> ParseDType(std::string_view text) {
  absl::StatusOr<DType> dtype = DType::Parse(TrimBlanks(text));
  if (!dtype.ok() || dtype->kind() == DType::kInvalid) {
    return absl::InvalidArgumentError(absl::StrCat(
        "invalid --dtype ", base::QuoteExcerpt(text),
        " (expected pred, s8, s16, s32, s64, u8, u16, u32, u64, f16, bf16, f32 or f64)"));
  }
  return *dtype;
}

absl::Status CheckRepeat(std::string_view option, int repeat) {
  if (repeat >= 1 && repeat <= kMaxRepeat) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(Str(option), " must be in 1..", kMaxRepeat, ", got ", repeat));
}

absl::StatusOr<ShardingRef> BindSharding(std::string_view option, const ShardingText& text,
                                         absl::Span<Device* const> devices, const Shape& shape) {
  const int64_t n = text.num_devices();
  if (n > static_cast<int64_t>(devices.size())) {
    return absl::InvalidArgumentError(
        absl::StrCat(Str(option), " ", base::QuoteExcerpt(text.ToString()), " needs ", n,
                     " devices but only ", devices.size(), " are available (see --devices)"));
  }
  Client* client = devices.front()->client();
  absl::StatusOr<DeviceListRef> list = client->MakeDeviceList(devices.subspan(0, n));
  if (!list.ok()) return list.status();
  absl::StatusOr<ShardingRef> sharding = BindShardingText(text, *std::move(list), MemoryKind());
  if (!sharding.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(Str(option), " ",
                                                   base::QuoteExcerpt(text.ToString()), ": ",
                                                   Str(sharding.status().message())));
  }
  absl::StatusOr<sharding::ShardLayout> layout = (*sharding)->Layout(shape);
  if (!layout.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(Str(option), " ", base::QuoteExcerpt(text.ToString()), " does not fit shape ",
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
// (all of them when empty), each process's in turn in a multi-process client. Returns the exit
// code after printing the error when a process has fewer devices of a platform than requested.
int SelectDevices(const std::vector<DeviceRequest>& requests, ClientSetup& setup) {
  const Client& client = *setup.client;
  if (requests.empty()) {
    for (Device* d : client.devices()) setup.devices.push_back(d);
    setup.description = "default client";
    return kExitOk;
  }
  const int processes = client.process_count();
  for (int p = 0; p < processes; ++p) {
    for (const DeviceRequest& r : requests) {
      int found = 0;
      for (Device* d : client.devices()) {
        if (d->ProcessIndex() == p && d->Kind() == r.platform && found < r.count) {
          setup.devices.push_back(d);
          ++found;
        }
      }
      if (found < r.count) {
        return Fail(kExitFailure,
                    absl::StrCat("--devices asks for ", r.count, " ", r.platform,
                                 " devices but this machine has ", found,
                                 processes > 1 ? absl::StrCat(" (process ", p, ")") : ""));
      }
    }
  }
  std::vector<std::string> parts;
  for (const DeviceRequest& r : requests) parts.push_back(absl::StrCat(r.platform, ":", r.count));
  setup.description = absl::StrJoin(parts, ",");
  if (processes > 1) absl::StrAppend(&setup.description, " on each of ", processes, " processes");
  return kExitOk;
}

}  // namespace

absl::StatusOr<Distributed> ParseDistributed(std::string_view text) {
  if (text == "none") return Distributed::kNone;
  if (text == "mpi") return Distributed::kMpi;
  return absl::InvalidArgumentError(
      absl::StrCat("invalid --distributed ", base::QuoteExcerpt(text), ": expected none or mpi"));
}

ClientResult SetUpClient(const std::optional<std::string>& devices,
                         const std::optional<std::string>& guard_policy,
                         std::string_view distributed) {
  ClientOptions options;
  std::vector<DeviceRequest> requests;
  if (int code = MakeClientOptions(devices, guard_policy, options, requests); code != kExitOk) {
    return {std::nullopt, code};
  }
  absl::StatusOr<Distributed> mode = ParseDistributed(distributed);
  if (!mode.ok()) return {std::nullopt, Fail(kExitBadInput, mode.status().message())};
  options.distributed = *mode;
  absl::StatusOr<std::shared_ptr<Client>> client = CreateClient(options);
  if (!client.ok()) {
    return {std::nullopt, Fail(kExitFailure, absl::StrCat("cannot create the client: ",
                                                          client.status().ToString()))};
  }
  // Every process runs the same commands; process 0 alone prints.
  if ((*client)->process_index() != 0) std::cout.rdbuf(nullptr);
  ClientSetup setup;
  setup.client = *std::move(client);
  if (int code = SelectDevices(requests, setup); code != kExitOk) return {std::nullopt, code};
  return {std::move(setup), kExitOk};
}

absl::Status ReadBack(Client& client, const ArrayRef& array, uint8_t* out, bool* read) {
  *read = false;
  ArrayRef source = array;
  const absl::Span<Device* const> devices = array->sharding().devices()->devices();
  if (!std::all_of(devices.begin(), devices.end(),
                   [](const Device* d) { return d->IsAddressable(); })) {
    // Gathered onto process 0's first device, which every process names the same way.
    const ArraySpec spec{array->dtype(), array->shape(),
                         SingleDeviceSharding::Create(client.devices().front(), MemoryKind())};
    std::vector<ArrayRef> inputs = {array};
    TESSERA_ASSIGN_OR_RETURN(
        std::vector<ArrayRef> gathered,
        client.ReshardArrays(absl::MakeSpan(inputs), absl::MakeConstSpan(&spec, 1),
                             ArrayCopySemantics::kAlwaysCopy,
                             TransferOptions{.is_explicit = true}));
    source = gathered[0];
    if (client.process_index() != 0) return source->GetReadyFuture().Await();
  }
  TESSERA_RETURN_IF_ERROR(
      source->CopyToHostBuffer(out, std::nullopt, ArrayCopySemantics::kAlwaysCopy).Await());
  *read = true;
  return absl::OkStatus();
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

namespace {

// Compares one pair of floats (CompareElements' rules); returns the relative error (0 for a match
// of NaN with NaN or of equal infinities, infinity for any other pair with a NaN or an infinity).
double FloatError(double got, double want) {
  if (std::isnan(got) || std::isnan(want)) {
    return std::isnan(got) && std::isnan(want) ? 0 : std::numeric_limits<double>::infinity();
  }
  if (got == want) return 0;  // equal infinities too
  if (std::isinf(got) || std::isinf(want)) return std::numeric_limits<double>::infinity();
  return std::abs(got - want) / std::max(1.0, std::abs(want));
}

template <typename T>
T Load(absl::Span<const uint8_t> bytes, int64_t i) {
  T value;
  std::memcpy(&value, bytes.data() + i * sizeof(T), sizeof(T));
  return value;
}

template <typename T>
void CompareFloats(absl::Span<const uint8_t> got, absl::Span<const uint8_t> want, int64_t n,
                   double tolerance, ElementComparison& out) {
  for (int64_t i = 0; i < n; ++i) {
    const double a = Load<T>(got, i), b = Load<T>(want, i);
    const double error = FloatError(a, b);
    out.max_relative_error = std::max(out.max_relative_error, error);
    if (error <= tolerance) continue;
    if (out.mismatches++ == 0) {
      const int digits = sizeof(T) == 4 ? 9 : 17;
      out.first_mismatch = i;
      out.got_value = absl::StrFormat("%.*g", digits, a);
      out.want_value = absl::StrFormat("%.*g", digits, b);
    }
  }
}

// Element `i` of `bytes`: integers as numbers, other dtypes as their bytes in hex.
std::string FormatElement(DType dtype, absl::Span<const uint8_t> bytes, int64_t i,
                          int64_t element_bytes) {
  switch (dtype.kind()) {
    case DType::kS8:
      return absl::StrCat(Load<int8_t>(bytes, i));
    case DType::kS16:
      return absl::StrCat(Load<int16_t>(bytes, i));
    case DType::kS32:
      return absl::StrCat(Load<int32_t>(bytes, i));
    case DType::kS64:
      return absl::StrCat(Load<int64_t>(bytes, i));
    case DType::kPred:
    case DType::kU8:
      return absl::StrCat(Load<uint8_t>(bytes, i));
    case DType::kU16:
      return absl::StrCat(Load<uint16_t>(bytes, i));
    case DType::kU32:
      return absl::StrCat(Load<uint32_t>(bytes, i));
    case DType::kU64:
      return absl::StrCat(Load<uint64_t>(bytes, i));
    default:
      break;
  }
  std::string hex = "0x";
  for (int64_t b = element_bytes - 1; b >= 0; --b) {  // little-endian
    absl::StrAppendFormat(&hex, "%02x", bytes[i * element_bytes + b]);
  }
  return hex;
}

// Bit for bit, `element_bytes` at a time.
void CompareBits(DType dtype, absl::Span<const uint8_t> got, absl::Span<const uint8_t> want,
                 int64_t n, int64_t element_bytes, ElementComparison& out) {
  for (int64_t i = 0; i < n; ++i) {
    if (std::memcmp(got.data() + i * element_bytes, want.data() + i * element_bytes,
                    element_bytes) == 0) {
      continue;
    }
    out.max_relative_error = std::numeric_limits<double>::infinity();
    if (out.mismatches++ == 0) {
      out.first_mismatch = i;
      out.got_value = FormatElement(dtype, got, i, element_bytes);
      out.want_value = FormatElement(dtype, want, i, element_bytes);
    }
  }
}

}  // namespace

ElementComparison CompareElements(DType dtype, absl::Span<const uint8_t> got,
                                  absl::Span<const uint8_t> want, double tolerance) {
  ElementComparison out;
  const int64_t element_bytes = dtype.byte_size().value_or(1);
  const int64_t n = static_cast<int64_t>(std::min(got.size(), want.size())) / element_bytes;
  if (dtype.kind() == DType::kF32) {
    CompareFloats<float>(got, want, n, tolerance, out);
  } else if (dtype.kind() == DType::kF64) {
    CompareFloats<double>(got, want, n, tolerance, out);
  } else {
    CompareBits(dtype, got, want, n, element_bytes, out);
  }
  return out;
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
