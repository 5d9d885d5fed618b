#ifndef TESSERA_TOOLS_CLI_H_
#define TESSERA_TOOLS_CLI_H_

// Internals of the `tessera` command-line tool: option parsers, client setup, output helpers and
// the subcommands. Not part of the library's API. Nothing here keeps shared state; the tool calls
// it from its main thread.

#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "ifrt/introspection.h"
#include "tessera.h"
#include "tools/option_text.h"

namespace tessera::tools {

// Exit codes: 0 success, 1 a runtime failure (a refused transfer, a failed copy, a mismatch),
// 2 bad input (a malformed or inconsistent option).
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitBadInput = 2;

// Prints "tessera: error: <message>" on stderr and returns `code`. The message is printed as one
// line whatever it holds (OneLine).
int Fail(int code, const std::string& message);
int Fail(int code, absl::string_view message);
int Fail(int code, const char* message);

// --dtype: "f32", "bf16", "s8", ...
absl::StatusOr<DType> ParseDType(std::string_view text);

// --repeat of `option` ("--repeat"): OK when 1 <= repeat <= kMaxRepeat, else INVALID_ARGUMENT
// naming the option, its range and the value given.
inline constexpr int kMaxRepeat = 1000000;
absl::Status CheckRepeat(std::string_view option, int repeat);

// The sharding of `text` over the first num_devices() of `devices`, checked against `shape`.
absl::StatusOr<ShardingRef> BindSharding(std::string_view option, const ShardingText& text,
                                         absl::Span<Device* const> devices, const Shape& shape);

// ---- Client ----

struct ClientSetup {
  std::shared_ptr<Client> client;
  // The devices in --devices order (the client's order without --devices). In a multi-process
  // client, --devices counts each process's devices: process 0's in that order, then process 1's...
  std::vector<Device*> devices;
  std::string description;  // "cpu:4", "default client"
};
struct ClientResult {
  std::optional<ClientSetup> setup;  // set on success
  int exit_code = kExitOk;
};
// --distributed: "none" (this process only) or "mpi" (every process of an mpirun job).
absl::StatusOr<Distributed> ParseDistributed(std::string_view text);

// Creates the client for --devices (nullopt: CreateClient() defaults), --guard (nullopt: the
// default policy) and --distributed. On failure, prints the error and returns its exit code
// without a setup. In a multi-process client, processes other than 0 print nothing on stdout from
// then on (std::cout is silenced); their errors still go to stderr.
ClientResult SetUpClient(const std::optional<std::string>& devices,
                         const std::optional<std::string>& guard_policy,
                         std::string_view distributed = "none");

// Reads `array` back into `out` (array.shape() bytes of its dtype). In a multi-process client an
// array with shards on other processes is first gathered, collectively, onto the first device of
// process 0, which alone reads it: `*read` tells whether `out` was filled (always true in a
// single-process client). Every process must call it with the same array.
absl::Status ReadBack(Client& client, const ArrayRef& array, uint8_t* out, bool* read);

// The client's plans and traces (ifrt/introspection.h), or nullptr when it has none.
ClientIntrospection* Introspect(Client& client);

// ---- Output helpers ----

// "0 B", "512 B", "4.0 KiB", "64.0 MiB", "1.50 GiB".
std::string FormatBytes(int64_t bytes);
// "850 us", "12.3 ms", "1.25 s".
std::string FormatDuration(double seconds);
// GiB per second, "-" when nothing moved or no time passed.
std::string FormatRate(int64_t bytes, double seconds);
// "f32[8192,8192]"
std::string ArrayName(DType dtype, const Shape& shape);
// "[cpu:0, cpu:1]" or "cpu:0..cpu:3" for a run of consecutive ids of one kind.
std::string DeviceRange(absl::Span<Device* const> devices);
// A JSON string literal.
std::string JsonString(std::string_view text);

// A table printed with aligned columns: the first column left-aligned, the others right-aligned
// unless set_left(column).
class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  void AddRow(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void set_left(int column) { left_.push_back(column); }
  void Print(std::ostream& out, int indent = 2) const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
  std::vector<int> left_;
};

// A progress bar on stdout when stdout is a terminal; silent otherwise.
class Progress {
 public:
  Progress(std::string label, int total);
  ~Progress();
  void Step();

 private:
  void Draw() const;
  std::string label_;
  int total_;
  int done_ = 0;
  bool enabled_;
};

// Deterministic contents for an array of `bytes` bytes (the same for equal sizes and seeds).
std::vector<uint8_t> MakePattern(int64_t bytes, uint64_t seed = 1);

// Median and minimum of `seconds` (not empty).
double Median(std::vector<double> seconds);
double Minimum(const std::vector<double>& seconds);

// Copies `bytes` from `src` to `dst` with `threads` threads, each a contiguous slice; returns the
// wall time in seconds. The floor a reshard of the same bytes is measured against.
double ParallelMemcpy(uint8_t* dst, const uint8_t* src, int64_t bytes, int threads);

// sharding::RenderPlan of a plan from ClientIntrospection::PlanReshard, whose locations are memory
// ids of `client`, naming each memory by its device and kind: "device 2 (host)" (a memory id the
// client does not know: "memory 7").
std::string RenderClientPlan(const Client& client, const sharding::ReshardPlan& plan);

// ---- Checking results ----

// How `got` compares with `want`, element by element: both dense arrays of `dtype` with as many
// elements. Floats (f32, f64): NaN matches only NaN, an infinity only the same infinity, and finite
// values match when |got - want| / max(1, |want|) <= `tolerance`. Every other dtype: bit for bit.
struct ElementComparison {
  // The largest relative error over the elements compared; infinity when a NaN or an infinity
  // meets another value.
  double max_relative_error = 0;
  int64_t mismatches = 0;
  // The first mismatching element: its row-major index (-1 when every element matches) and both
  // values as printed ("nan", "0.5", "-3", or the bytes in hex for other dtypes).
  int64_t first_mismatch = -1;
  std::string got_value;
  std::string want_value;
};
ElementComparison CompareElements(DType dtype, absl::Span<const uint8_t> got,
                                  absl::Span<const uint8_t> want, double tolerance);

// ---- Subcommands ----

struct InfoOptions {
  std::optional<std::string> devices;
  std::string distributed = "none";
  bool json = false;
};
int RunInfo(const InfoOptions& options);

struct ReshardOptions {
  std::optional<std::string> devices;
  std::string shape;
  std::string dtype = "f32";
  std::string from;
  std::string to;
  bool explain = false;
  bool run = false;
  int repeat = 5;
  std::optional<std::string> guard;
  bool implicit = false;
  std::string trace_out;             // `tessera trace` only
  std::string distributed = "none";  // `tessera reshard` only (not `tessera trace`)
};
int RunReshard(const ReshardOptions& options);
int RunTrace(const ReshardOptions& options);

struct RunOptions {
  std::string program;  // path of the .mlir file
  std::optional<std::string> devices;
  std::vector<std::string> in;   // one sharding per argument, or none (the program's attributes)
  std::vector<std::string> out;  // one sharding per result, or none
  bool explain = false;
  int repeat = 5;
  std::optional<std::string> guard;
  // A single-axis mesh in the program's attributes larger than the devices given runs over them.
  bool fit_mesh = false;
  std::string distributed = "none";
};
int RunProgram(const RunOptions& options);

struct DemoOptions {
  std::optional<std::string> devices;
  std::string distributed = "none";
  bool quick = false;  // smaller arrays (tests)
};
int RunDemo(const DemoOptions& options);

}  // namespace tessera::tools

#endif  // TESSERA_TOOLS_CLI_H_
