// tessera reshard / tessera trace: plan, run, verify and time one reshard, optionally recording
// every copy as a Chrome trace.

#include <chrono>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tools/cli.h"

namespace tessera::tools {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Everything a reshard run needs, validated.
struct Session {
  ClientSetup setup;
  ClientIntrospection* runtime = nullptr;
  Shape shape;
  DType dtype{DType::kInvalid};
  ShardingText from_text, to_text;
  ShardingRef from, to;
  int64_t bytes = 0;
  std::vector<uint8_t> data;
  ArrayRef input;
};

// Parses and validates the options, creates the client and the shardings.
// Returns an exit code (kExitOk when `session` is ready).
int Prepare(const ReshardOptions& options, Session& session) {
  absl::StatusOr<std::vector<int64_t>> shape = ParseShape(options.shape);
  if (!shape.ok()) return Fail(kExitBadInput, shape.status().message());
  absl::StatusOr<DType> dtype = ParseDType(options.dtype);
  if (!dtype.ok()) return Fail(kExitBadInput, dtype.status().message());
  absl::StatusOr<ShardingText> from = ParseSharding("--from", options.from);
  if (!from.ok()) return Fail(kExitBadInput, from.status().message());
  absl::StatusOr<ShardingText> to = ParseSharding("--to", options.to);
  if (!to.ok()) return Fail(kExitBadInput, to.status().message());
  if (absl::Status s = CheckRepeat("--repeat", options.repeat); !s.ok()) {
    return Fail(kExitBadInput, s.message());
  }
  // The tool holds the array's bytes on the host a few times over: refuse what cannot be.
  int64_t elements = 1;
  for (int64_t d : *shape) {
    if (d != 0 && elements > (int64_t{1} << 48) / d) {
      return Fail(kExitBadInput,
                  absl::StrCat("--shape '", options.shape, "' is too large (above 2^48 elements)"));
    }
    elements *= d;
  }
  if (elements > (int64_t{1} << 40) / *dtype->byte_size()) {
    return Fail(kExitBadInput, absl::StrCat("--shape '", options.shape, "' of ",
                                            dtype->DebugString(), " is above 1 TiB"));
  }
  ClientResult client = SetUpClient(options.devices, options.guard, options.distributed);
  if (!client.setup.has_value()) return client.exit_code;
  session.setup = *std::move(client.setup);
  session.runtime = Introspect(*session.setup.client);
  if (session.runtime == nullptr) {
    return Fail(kExitFailure, "this client offers no introspection: plans and traces unavailable");
  }
  session.shape = Shape(*shape);
  session.dtype = *dtype;
  session.from_text = *from;
  session.to_text = *to;
  for (auto [name, text, out] : {std::tuple{"--from", &session.from_text, &session.from},
                                 std::tuple{"--to", &session.to_text, &session.to}}) {
    absl::StatusOr<ShardingRef> bound =
        BindSharding(name, *text, session.setup.devices, session.shape);
    if (!bound.ok()) return Fail(kExitBadInput, bound.status().message());
    *out = *bound;
  }
  session.bytes = session.shape.num_elements() * *session.dtype.byte_size();
  return kExitOk;
}

// Makes the input array from deterministic data.
int MakeInput(Session& session) {
  session.data = MakePattern(session.bytes);
  absl::StatusOr<ArrayRef> array = session.setup.client->MakeArrayFromHostBuffer(
      session.data.data(), session.dtype, session.shape, std::nullopt, session.from,
      HostBufferSemantics::kImmutableOnlyDuringCall, nullptr);
  if (!array.ok()) return Fail(kExitFailure, array.status().message());
  if (absl::Status s = (*array)->GetReadyFuture().Await(); !s.ok()) {
    return Fail(kExitFailure, s.message());
  }
  session.input = *array;
  return kExitOk;
}

void PrintHeader(const Session& session) {
  std::cout << "Reshard " << ArrayName(session.dtype, session.shape) << " ("
            << FormatBytes(session.bytes) << ")\n"
            << "  from: " << session.from_text.ToString() << " on "
            << DeviceRange(session.from->devices()->devices()) << "\n"
            << "  to:   " << session.to_text.ToString() << " on "
            << DeviceRange(session.to->devices()->devices()) << "\n";
}

// Names the devices the plan's lines mention by id.
std::string DeviceNames(const Session& session) {
  std::map<int32_t, std::string> names;
  for (const ShardingRef& s : {session.from, session.to}) {
    for (Device* d : s->devices()->devices()) names[d->Id().value] = d->ToString();
  }
  std::vector<std::string> parts;
  for (const auto& [id, name] : names) parts.push_back(absl::StrCat(id, "=", name));
  return absl::StrJoin(parts, ", ");
}

int Explain(Session& session) {
  absl::StatusOr<std::shared_ptr<const sharding::ReshardPlan>> plan = session.runtime->PlanReshard(
      *session.input, ArraySpec{session.dtype, session.shape, session.to});
  if (!plan.ok()) return Fail(kExitFailure, plan.status().message());
  std::cout << "\n" << RenderClientPlan(*session.setup.client, **plan);
  std::cout << "  (devices: " << DeviceNames(session) << ")\n";
  return kExitOk;
}

// Copies `total` bytes with `threads` threads from `src` to `dst` (buffers of `size` bytes), in
// passes of at most `size` bytes.
double MemcpyBytes(uint8_t* dst, const uint8_t* src, int64_t size, int64_t total, int threads) {
  double seconds = 0;
  while (total > 0 && size > 0) {
    const int64_t n = std::min(total, size);
    seconds += ParallelMemcpy(dst, src, n, threads);
    total -= n;
  }
  return seconds;
}

// The result of the last of `repeat` timed reshards of the session's input (after one untimed
// warm-up when `warmup`), and the time of each timed one in seconds.
struct Reshards {
  ArrayRef result;
  std::vector<double> times;
};

// Runs the reshards, each result freed once the next is ready. Returns an exit code (kExitOk when
// `out` is filled).
int TimeReshards(Session& session, const ArraySpec& spec, int repeat, bool warmup,
                 const TransferOptions& transfer, Reshards& out) {
  Client& client = *session.setup.client;
  // The warm-up takes the first-touch page faults of fresh buffers and fills the plan cache.
  const int warmups = warmup ? 1 : 0;
  Progress progress("reshard", repeat + warmups);
  for (int r = -warmups; r < repeat; ++r) {
    std::vector<ArrayRef> inputs = {session.input};
    const Clock::time_point start = Clock::now();
    absl::StatusOr<std::vector<ArrayRef>> result =
        client.ReshardArrays(absl::MakeSpan(inputs), absl::MakeConstSpan(&spec, 1),
                             ArrayCopySemantics::kReuseInput, transfer);
    if (!result.ok()) return Fail(kExitFailure, result.status().message());
    if (absl::Status s = (*result)[0]->GetReadyFuture().Await(); !s.ok()) {
      return Fail(kExitFailure, s.message());
    }
    if (r >= 0) out.times.push_back(SecondsSince(start));
    if (out.result != nullptr) static_cast<void>(out.result->Delete());  // the last round's
    out.result = (*result)[0];
    progress.Step();
  }
  return kExitOk;
}

// Reads `result` back and compares it with the session's input data, bit for bit (in a
// multi-process client, process 0 compares the whole array, gathered; ReadBack).
int VerifyResult(const Session& session, const ArrayRef& result) {
  std::vector<uint8_t> readback(session.bytes);
  bool read = false;
  if (absl::Status s = ReadBack(*session.setup.client, result, readback.data(), &read); !s.ok()) {
    return Fail(kExitFailure, s.message());
  }
  if (read && session.bytes > 0 &&
      std::memcmp(readback.data(), session.data.data(), session.bytes) != 0) {
    int64_t at = 0;
    while (readback[at] == session.data[at]) ++at;
    return Fail(kExitFailure, absl::StrCat("verification failed: the resharded array differs "
                                           "from the input at byte ",
                                           at));
  }
  return kExitOk;
}

// Times a parallel memcpy of the `moved` bytes, `repeat` times, with one thread per device the
// reshard uses: the floor the reshard is measured against. Empty when nothing moves.
std::vector<double> TimeMemcpyFloor(const Session& session, int64_t moved, int repeat,
                                    int threads) {
  std::vector<double> floor;
  if (moved == 0) return floor;
  std::vector<uint8_t> dst(session.bytes);
  for (int r = 0; r < repeat; ++r) {
    floor.push_back(MemcpyBytes(dst.data(), session.data.data(), session.bytes, moved, threads));
  }
  return floor;
}

// Prints what the reshards moved and the timing table beside the memcpy floor.
int PrintTiming(const Session& session, const ArraySpec& spec, int repeat,
                const std::vector<double>& times) {
  // Only process 0 prints: the others leave the cores to its memcpy floor.
  if (session.setup.client->process_index() != 0) return kExitOk;
  absl::StatusOr<std::shared_ptr<const sharding::ReshardPlan>> plan =
      session.runtime->PlanReshard(*session.input, spec);
  if (!plan.ok()) return Fail(kExitFailure, plan.status().message());
  const int64_t moved = (*plan)->cross_location_bytes + (*plan)->local_bytes;
  std::set<Device*> used;
  for (const ShardingRef& s : {session.from, session.to}) {
    for (Device* d : s->devices()->devices()) {
      if (d->IsAddressable()) used.insert(d);
    }
  }
  const int threads = static_cast<int>(used.size());
  const std::vector<double> floor = TimeMemcpyFloor(session, moved, repeat, threads);

  std::cout << "\nRan " << repeat << (repeat == 1 ? " reshard" : " reshards")
            << " after a warm-up, verified bit-exact; " << FormatBytes(moved)
            << " copied per reshard (" << FormatBytes((*plan)->cross_location_bytes)
            << " cross-location, " << FormatBytes((*plan)->local_bytes) << " local, "
            << FormatBytes((*plan)->aliased_bytes) << " aliased)\n";
  Table table({"", "median", "min", "GiB/s"});
  table.AddRow({"reshard", FormatDuration(Median(times)), FormatDuration(Minimum(times)),
                FormatRate(moved, Median(times))});
  if (!floor.empty()) {
    table.AddRow({absl::StrCat("memcpy floor (", threads, " threads)"),
                  FormatDuration(Median(floor)), FormatDuration(Minimum(floor)),
                  FormatRate(moved, Median(floor))});
  } else {
    table.AddRow({"memcpy floor", "-", "-", "-"});
  }
  table.Print(std::cout);
  if (floor.empty()) std::cout << "  (no bytes to copy: every destination shard is aliased)\n";
  return kExitOk;
}

// Runs the reshard `repeat` times, verifies the last result, and prints the timing table when
// `print_timing` (the timed runs then follow one untimed warm-up).
int RunAndVerify(Session& session, int repeat, bool implicit, bool print_timing) {
  const ArraySpec spec{session.dtype, session.shape, session.to};
  Reshards reshards;
  if (int code = TimeReshards(session, spec, repeat, /*warmup=*/print_timing,
                              TransferOptions{.is_explicit = !implicit}, reshards);
      code != kExitOk) {
    return code;
  }
  if (int code = VerifyResult(session, reshards.result); code != kExitOk) return code;
  if (!print_timing) return kExitOk;
  return PrintTiming(session, spec, repeat, reshards.times);
}

// Per (operation, direction): the copies, their bytes and the time the streams were busy with
// them (the copies' durations summed over the streams that ran them).
void PrintTraceSummary(const std::vector<TransferTraceEvent>& events) {
  struct Group {
    int64_t copies = 0, bytes = 0, busy_ns = 0;
  };
  std::map<std::pair<std::string, std::string>, Group> groups;
  for (const TransferTraceEvent& e : events) {
    const std::string kind = e.peer_process < 0         ? e.direction
                             : e.device == e.src_device ? "sent to another process"
                                                        : "received from another process";
    Group& g = groups[{e.operation, kind}];
    g.copies += e.copies;
    g.bytes += e.bytes;
    g.busy_ns += e.end_ns - e.start_ns;
  }
  Table table({"operation", "direction", "copies", "bytes", "busy"});
  table.set_left(1);
  for (const auto& [key, g] : groups) {
    table.AddRow({key.first, key.second, absl::StrCat(g.copies), FormatBytes(g.bytes),
                  FormatDuration(g.busy_ns * 1e-9)});
  }
  table.Print(std::cout);
}

// Where process `process` of `processes` writes its trace: `out` itself for a single process,
// else "trace.process1.json" for "trace.json" (the process's number before the extension).
std::string TracePath(const std::string& out, int process, int processes) {
  if (processes <= 1) return out;
  const size_t slash = out.find_last_of('/');
  const size_t dot = out.find_last_of('.');
  const size_t cut =
      dot == std::string::npos || (slash != std::string::npos && dot < slash) ? out.size() : dot;
  return absl::StrCat(out.substr(0, cut), ".process", process, out.substr(cut));
}

}  // namespace

int RunReshard(const ReshardOptions& options) {
  Session session;
  if (int code = Prepare(options, session); code != kExitOk) return code;
  const bool explain = options.explain || !options.run;
  PrintHeader(session);
  if (int code = MakeInput(session); code != kExitOk) return code;
  if (explain) {
    if (int code = Explain(session); code != kExitOk) return code;
  }
  if (options.run) {
    return RunAndVerify(session, options.repeat, options.implicit, /*print_timing=*/true);
  }
  return kExitOk;
}

int RunTrace(const ReshardOptions& options) {
  Session session;
  if (int code = Prepare(options, session); code != kExitOk) return code;
  const Client& client = *session.setup.client;
  const std::string path =
      TracePath(options.trace_out, client.process_index(), client.process_count());
  auto trace = std::make_shared<TransferTrace>();
  session.runtime->SetTransferTrace(trace);
  PrintHeader(session);
  int code = MakeInput(session);
  if (code == kExitOk) {
    code = RunAndVerify(session, options.repeat, options.implicit, /*print_timing=*/false);
  }
  session.runtime->SetTransferTrace(nullptr);

  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file << trace->ToChromeTraceJson();
  file.close();
  if (!file) return Fail(kExitFailure, absl::StrCat("cannot write the trace to '", path, "'"));
  const std::vector<TransferTraceEvent> events = trace->events();
  std::cout << "\nTrace: " << events.size() << " events written to " << path
            << " (open it in https://ui.perfetto.dev or chrome://tracing)\n";
  if (client.process_count() > 1) {
    std::cout << "Each process wrote its own: "
              << TracePath(options.trace_out, client.process_count() - 1, client.process_count())
              << " is the last; parts exchanged between processes are on rows of their own.\n";
  }
  PrintTraceSummary(events);
  return code;
}

}  // namespace tessera::tools
