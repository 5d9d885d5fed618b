// `tessera run PROGRAM.mlir`: compiles a program (linalg MLIR, or StableHLO as JAX lowers it:
// ifrt/program.h's ProgramFromText tells them apart) for the chosen devices, runs it on random
// inputs, checks every output against the same program run unsharded on one device, and prints the
// partitioned program (--explain) and a timing table.
//
// --distributed mpi (under mpirun): every process compiles and runs the program over the devices
// of every process (Execute is collective), and runs the 1-device reference on its own first
// device; each process checks the shards of the outputs it holds, and process 0 alone prints.
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "ifrt/compiler.h"
#include "ifrt/executable.h"
#include "ifrt/program.h"
#include "ifrt/strided_copy.h"
#include "tools/cli.h"

namespace tessera::tools {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read '", path, "'"));
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The mesh named by the program's first tessera.sharding attribute, if any.
std::optional<sharding::Mesh> MeshInProgram(const std::string& text) {
  size_t at = text.find("tessera.sharding");
  if (at == std::string::npos) return std::nullopt;
  size_t open = text.find("mesh{", at);
  size_t close = open == std::string::npos ? open : text.find('}', open);
  if (close == std::string::npos) return std::nullopt;
  absl::StatusOr<sharding::Mesh> mesh = sharding::Mesh::Parse(text.substr(open, close - open + 1));
  if (!mesh.ok()) return std::nullopt;
  return *mesh;
}

// The number of devices of a StableHLO program's first Shardy mesh (`sdy.mesh<["dp"=2, "tp"=4]>`:
// 8), if it has one with axes.
std::optional<int64_t> DevicesOfSdyMesh(const std::string& text) {
  const size_t at = text.find("sdy.mesh<[");
  if (at == std::string::npos) return std::nullopt;
  const size_t end = text.find(']', at);
  if (end == std::string::npos) return std::nullopt;
  int64_t devices = 1;
  bool any = false;
  for (size_t eq = text.find('=', at); eq != std::string::npos && eq < end;
       eq = text.find('=', eq + 1)) {
    int64_t size = 0;
    size_t digit = eq + 1;
    for (; digit < end && std::isdigit(static_cast<unsigned char>(text[digit])) && size < (1 << 20);
         ++digit) {
      size = size * 10 + (text[digit] - '0');
    }
    if (digit == eq + 1 || size < 1) return std::nullopt;
    devices *= size;
    any = true;
    if (devices > (int64_t{1} << 20)) return std::nullopt;
  }
  if (!any) return std::nullopt;
  return devices;
}

// --fit-mesh: a program whose attributes all name one single-axis mesh larger than the devices
// given (the examples' mesh{x=4} under --devices vulkan:2) runs on those devices: its mesh is
// rewritten to their number, with a note. Any other program is left as it is (ChooseDevices then
// explains).
std::string FitMeshToDevices(const std::string& text, int64_t devices) {
  std::optional<sharding::Mesh> mesh = MeshInProgram(text);
  if (!mesh.has_value() || mesh->axes().size() != 1 || mesh->num_devices() <= devices ||
      devices < 1) {
    return text;
  }
  const std::string from = mesh->ToString();
  absl::StatusOr<sharding::Mesh> fitted = sharding::Mesh::Create({{mesh->axes()[0].name, devices}});
  if (!fitted.ok()) return text;
  const std::string to = fitted->ToString();
  std::string out = text;
  for (size_t at = out.find(from); at != std::string::npos; at = out.find(from, at + to.size())) {
    out.replace(at, from.size(), to);
  }
  // Every attribute must now name the fitted mesh (one that named another mesh: left as it is).
  auto count = [](const std::string& haystack, const std::string& needle) {
    int n = 0;
    for (size_t at = haystack.find(needle); at != std::string::npos;
         at = haystack.find(needle, at + 1)) {
      ++n;
    }
    return n;
  };
  if (count(out, "mesh{") != count(out, to)) return text;
  std::cout << "note: the program's " << from << " runs as " << to << " on the " << devices
            << " devices given\n";
  return out;
}

// Random contents for an array of `spec`: uniform in [-1, 1] for floats, in [-8, 8] for integers.
std::vector<uint8_t> RandomData(const ArraySpec& spec, uint64_t seed) {
  const int64_t n = spec.shape.num_elements();
  std::vector<uint8_t> bytes(n * *spec.dtype.byte_size());
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> real(-1.0, 1.0);
  std::uniform_int_distribution<int64_t> integer(-8, 8);
  for (int64_t i = 0; i < n; ++i) {
    switch (spec.dtype.kind()) {
      case DType::kF32:
        reinterpret_cast<float*>(bytes.data())[i] = static_cast<float>(real(rng));
        break;
      case DType::kF64:
        reinterpret_cast<double*>(bytes.data())[i] = real(rng);
        break;
      case DType::kS32:
        reinterpret_cast<int32_t*>(bytes.data())[i] = static_cast<int32_t>(integer(rng));
        break;
      case DType::kS64:
        reinterpret_cast<int64_t*>(bytes.data())[i] = integer(rng);
        break;
      default:
        bytes[i % bytes.size()] = static_cast<uint8_t>(rng());
    }
  }
  return bytes;
}

// The largest relative error a sharded output may have against the 1-device run's.
constexpr double kTolerance = 1e-4;

struct Run {
  std::vector<ArrayRef> outputs;
  std::vector<double> seconds;
};

// Puts `inputs` into arrays of the executable's parameter specs, runs it `repeat` times (>= 1,
// CheckRepeat) and keeps the last outputs, ready.
absl::StatusOr<Run> Execute(Client& client, LoadedExecutable& exe,
                            const std::vector<std::vector<uint8_t>>& inputs, int repeat) {
  std::vector<ArrayRef> args;
  const std::vector<ArraySpec> specs = exe.GetParameterSpecs();
  for (size_t i = 0; i < specs.size(); ++i) {
    TESSERA_ASSIGN_OR_RETURN(
        ArrayRef a, client.MakeArrayFromHostBuffer(
                        inputs[i].data(), specs[i].dtype, specs[i].shape, std::nullopt,
                        specs[i].sharding, HostBufferSemantics::kImmutableOnlyDuringCall, nullptr));
    args.push_back(std::move(a));
  }
  TESSERA_RETURN_IF_ERROR(client.GetReadyFuture(args).Await());
  Run run;
  std::vector<ArrayRef> outputs;
  for (int r = 0; r < repeat; ++r) {
    const auto start = Clock::now();
    TESSERA_ASSIGN_OR_RETURN(ExecuteResult result, exe.Execute(absl::MakeSpan(args)));
    TESSERA_RETURN_IF_ERROR(result.status.Await());
    run.seconds.push_back(SecondsSince(start));
    run.outputs = std::move(result.outputs);
  }
  return run;
}

// The whole of a fully addressable array, row-major.
absl::StatusOr<std::vector<uint8_t>> ReadWhole(const ArrayRef& array) {
  std::vector<uint8_t> bytes(array->shape().num_elements() * *array->dtype().byte_size());
  TESSERA_RETURN_IF_ERROR(
      array->CopyToHostBuffer(bytes.data(), std::nullopt, ArrayCopySemantics::kAlwaysCopy).Await());
  return bytes;
}

// The box `domain` of the dense row-major `full` of `shape`, row-major.
std::vector<uint8_t> Slice(const std::vector<uint8_t>& full, const Shape& shape,
                           int64_t element_bytes, const IndexDomain& domain) {
  std::vector<uint8_t> out(domain.shape().num_elements() * element_bytes);
  const std::vector<int64_t> zeros(shape.dims().size(), 0);
  StridedCopy::BetweenDenseArrays(element_bytes, shape.dims(), domain.origin(),
                                  domain.shape().dims(), zeros, domain.shape().dims())
      .ForEachRun([&](int64_t src, int64_t dst, int64_t n) {
        std::memcpy(out.data() + dst, full.data() + src, n);
      });
  return out;
}

// How the outputs compare with the 1-device run's: the largest relative error, and the first
// mismatching element ("" when every element matches) as "output 0 element [2,1] is 0.5, the
// 1-device run's nan".
struct OutputCheck {
  double worst = 0;
  std::string first_mismatch;
};

// "[2,1]": the row-major `index` into `domain`, in the whole array's coordinates.
std::string ElementName(const IndexDomain& domain, int64_t index) {
  const absl::Span<const int64_t> dims = domain.shape().dims();
  std::vector<int64_t> at(dims.size());
  for (int d = static_cast<int>(dims.size()) - 1; d >= 0; --d) {
    at[d] = domain.origin()[d] + (dims[d] == 0 ? 0 : index % dims[d]);
    index = dims[d] == 0 ? 0 : index / dims[d];
  }
  return absl::StrCat("[", absl::StrJoin(at, ","), "]");
}

// Checks the shards of output `output` this process holds against their boxes of `want` (the
// whole result, row-major), into `check`.
absl::Status CheckAddressableShards(const ArrayRef& array, const std::vector<uint8_t>& want,
                                    size_t output, OutputCheck& check) {
  TESSERA_ASSIGN_OR_RETURN(std::vector<IndexDomain> domains,
                           array->sharding().IndexDomains(array->shape()));
  TESSERA_ASSIGN_OR_RETURN(std::vector<ArrayRef> shards, array->DisassembleIntoSingleDeviceArrays(
                                                             ArrayCopySemantics::kReuseInput));
  const absl::Span<Device* const> devices = array->sharding().devices()->devices();
  const int64_t element_bytes = *array->dtype().byte_size();
  size_t k = 0;
  for (size_t slot = 0; slot < devices.size() && k < shards.size(); ++slot) {
    if (!devices[slot]->IsAddressable()) continue;
    TESSERA_ASSIGN_OR_RETURN(std::vector<uint8_t> got, ReadWhole(shards[k++]));
    const ElementComparison c = CompareElements(
        array->dtype(), got, Slice(want, array->shape(), element_bytes, domains[slot]), kTolerance);
    check.worst = std::max(check.worst, c.max_relative_error);
    if (c.first_mismatch >= 0 && check.first_mismatch.empty()) {
      check.first_mismatch =
          absl::StrCat("output ", output, " element ", ElementName(domains[slot], c.first_mismatch),
                       " is ", c.got_value, ", the 1-device run's ", c.want_value);
    }
  }
  return absl::OkStatus();
}

// The same program on one device, every argument and result replicated there.
absl::StatusOr<LoadedExecutableRef> CompileReference(Client& client, const std::string& text,
                                                     const LoadedExecutable& exe, Device* device) {
  TESSERA_ASSIGN_OR_RETURN(DeviceListRef one, client.MakeDeviceList({device}));
  CompileOptions options{.devices = one};
  for (size_t i = 0; i < exe.GetParameterSpecs().size(); ++i) {
    options.input_shardings.push_back(SingleDeviceSharding::Create(device, MemoryKind()));
  }
  for (size_t i = 0; i < exe.GetOutputSpecs().size(); ++i) {
    options.output_shardings.push_back(SingleDeviceSharding::Create(device, MemoryKind()));
  }
  return client.GetDefaultCompiler()->Compile(ProgramFromText(text), options);
}

// --in / --out: each a sharding over `devices`.
absl::StatusOr<std::vector<ShardingRef>> BindAll(const char* option,
                                                 const std::vector<std::string>& texts,
                                                 const DeviceListRef& devices) {
  std::vector<ShardingRef> out;
  for (const std::string& text : texts) {
    TESSERA_ASSIGN_OR_RETURN(ShardingText parsed, ParseSharding(option, text));
    if (parsed.num_devices() != devices->size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          option, " '", text, "' spans ", parsed.num_devices(), " devices, not ", devices->size()));
    }
    if (parsed.mesh.has_value()) {
      TESSERA_ASSIGN_OR_RETURN(
          ShardingRef s, NamedSharding::Create(*parsed.mesh, parsed.spec, devices, MemoryKind()));
      out.push_back(std::move(s));
    } else {
      TESSERA_ASSIGN_OR_RETURN(ShardingRef s,
                               ShardingParamSharding::Create(*parsed.param, devices, MemoryKind()));
      out.push_back(std::move(s));
    }
  }
  return out;
}

// The executable's devices: as many of the chosen devices as the shardings' mesh has.
absl::StatusOr<DeviceListRef> ChooseDevices(const RunOptions& options, const std::string& text,
                                            const ClientSetup& setup) {
  int64_t count = static_cast<int64_t>(setup.devices.size());
  if (!options.in.empty()) {
    TESSERA_ASSIGN_OR_RETURN(ShardingText first, ParseSharding("--in", options.in[0]));
    count = first.num_devices();
  } else if (std::optional<sharding::Mesh> mesh = MeshInProgram(text); mesh.has_value()) {
    count = mesh->num_devices();
  } else if (std::optional<int64_t> sdy = DevicesOfSdyMesh(text); sdy.has_value()) {
    count = *sdy;
  }
  if (count > static_cast<int64_t>(setup.devices.size())) {
    return absl::InvalidArgumentError(
        absl::StrCat("the program's shardings span ", count, " devices; --devices gives ",
                     setup.devices.size(), " (--fit-mesh runs a one-axis mesh over them)"));
  }
  return setup.client->MakeDeviceList(absl::MakeSpan(setup.devices).first(count));
}

// `reference`: the 1-device run, or null when the program has none (`no_reference` says why).
void PrintTable(const LoadedExecutable& exe, int processes, double compile_seconds,
                const Run& sharded, const Run* reference, const std::string& no_reference,
                const TransferStats& stats, const OutputCheck& check) {
  std::cout << "\nprogram '" << exe.name() << "' on " << DeviceRange(exe.devices()->devices())
            << (processes > 1 ? absl::StrCat(" over ", processes, " processes") : "")
            << " (fingerprint " << exe.Fingerprint() << ")\n";
  Table table({"", "time (median)", "min", "runs"});
  table.AddRow({"compile", FormatDuration(compile_seconds), "", "1"});
  table.AddRow({"execute + await (sharded)", FormatDuration(Median(sharded.seconds)),
                FormatDuration(Minimum(sharded.seconds)), absl::StrCat(sharded.seconds.size())});
  if (reference != nullptr) {
    table.AddRow({"execute + await (1 device)", FormatDuration(Median(reference->seconds)),
                  FormatDuration(Minimum(reference->seconds)),
                  absl::StrCat(reference->seconds.size())});
  }
  table.Print(std::cout);
  std::cout << "  device-to-device bytes moved"
            << (processes > 1 ? " (into process 0's devices)" : "") << ": "
            << FormatBytes(stats.device_to_device.bytes) << "\n";
  if (reference == nullptr) {
    std::cout << "  outputs not checked: no 1-device run (" << no_reference << ")\n";
    return;
  }
  std::cout << (check.first_mismatch.empty() ? "  outputs match the 1-device run"
                                             : "  outputs differ from the 1-device run")
            << ": max relative error " << absl::StrFormat("%.2e", check.worst)
            << (processes > 1 ? " (process 0's shards; every process checks its own)" : "") << "\n";
}

}  // namespace

int RunProgram(const RunOptions& options) {
  if (absl::Status s = CheckRepeat("--repeat", options.repeat); !s.ok()) {
    return Fail(kExitBadInput, s.message());
  }
  absl::StatusOr<std::string> text = ReadFile(options.program);
  if (!text.ok()) return Fail(kExitBadInput, text.status().message());
  ClientResult client = SetUpClient(options.devices, options.guard, options.distributed);
  if (!client.setup.has_value()) return client.exit_code;
  Client& c = *client.setup->client;
  if (options.fit_mesh && options.in.empty() && options.out.empty()) {
    *text = FitMeshToDevices(*text, static_cast<int64_t>(client.setup->devices.size()));
  }
  absl::StatusOr<DeviceListRef> devices = ChooseDevices(options, *text, *client.setup);
  if (!devices.ok()) return Fail(kExitBadInput, devices.status().message());
  CompileOptions compile{.devices = *devices};
  absl::StatusOr<std::vector<ShardingRef>> in = BindAll("--in", options.in, *devices);
  absl::StatusOr<std::vector<ShardingRef>> out = BindAll("--out", options.out, *devices);
  if (!in.ok()) return Fail(kExitBadInput, in.status().message());
  if (!out.ok()) return Fail(kExitBadInput, out.status().message());
  compile.input_shardings = *std::move(in);
  compile.output_shardings = *std::move(out);

  const auto start = Clock::now();
  absl::StatusOr<LoadedExecutableRef> exe =
      c.GetDefaultCompiler()->Compile(ProgramFromText(*text), compile);
  const double compile_seconds = SecondsSince(start);
  if (!exe.ok()) return Fail(kExitBadInput, exe.status().ToString());
  if (options.explain) std::cout << (*exe)->Explain() << "\n";

  std::vector<std::vector<uint8_t>> inputs;
  const std::vector<ArraySpec> specs = (*exe)->GetParameterSpecs();
  for (size_t i = 0; i < specs.size(); ++i) inputs.push_back(RandomData(specs[i], 1 + i));
  const TransferStats before = c.transfer_stats();
  absl::StatusOr<Run> sharded = Execute(c, **exe, inputs, options.repeat);
  if (!sharded.ok()) return Fail(kExitFailure, sharded.status().ToString());
  TransferStats moved = c.transfer_stats();
  moved.device_to_device.bytes -= before.device_to_device.bytes;

  // The reference on this process's own first device (a local executable in a multi-process
  // client).
  // A program that compiles for its own mesh only (a shard_map's) has none: FAILED_PRECONDITION.
  absl::StatusOr<LoadedExecutableRef> reference =
      CompileReference(c, *text, **exe, c.addressable_devices()[0]);
  if (!reference.ok() && reference.status().code() == absl::StatusCode::kFailedPrecondition) {
    PrintTable(**exe, c.process_count(), compile_seconds, *sharded, nullptr,
               std::string(reference.status().message()), moved, OutputCheck{});
    return kExitOk;
  }
  if (!reference.ok()) return Fail(kExitFailure, reference.status().ToString());
  absl::StatusOr<Run> expected = Execute(c, **reference, inputs, options.repeat);
  if (!expected.ok()) return Fail(kExitFailure, expected.status().ToString());
  OutputCheck check;
  for (size_t i = 0; i < sharded->outputs.size(); ++i) {
    absl::StatusOr<std::vector<uint8_t>> want = ReadWhole(expected->outputs[i]);
    if (!want.ok()) return Fail(kExitFailure, want.status().ToString());
    absl::Status checked = CheckAddressableShards(sharded->outputs[i], *want, i, check);
    if (!checked.ok()) return Fail(kExitFailure, checked.ToString());
  }
  PrintTable(**exe, c.process_count(), compile_seconds, *sharded, &*expected, "", moved, check);
  if (!check.first_mismatch.empty()) {
    return Fail(
        kExitFailure,
        absl::StrFormat(
            "the sharded run differs from the 1-device run: %s (max relative "
            "error %.2e, tolerance 1e-4%s)",
            check.first_mismatch, check.worst,
            c.process_count() > 1 ? absl::StrCat(", process ", c.process_index()) : std::string()));
  }
  return kExitOk;
}

}  // namespace tessera::tools
