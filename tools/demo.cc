// tessera demo: a guided tour of a client for newcomers.

#include <chrono>
#include <cstring>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tools/cli.h"
#include "tools/demo_sections.h"

namespace tessera::tools {

void PrintHeading(int number, std::string_view title, std::string_view explanation) {
  const std::string text = absl::StrCat(number, ". ", Str(title));
  std::cout << "\n"
            << text << "\n"
            << std::string(text.size(), '-') << "\n"
            << Str(explanation) << "\n\n";
}

namespace {

using Clock = std::chrono::steady_clock;

// Uploads `data` as an array of `sharding`, waits for it.
absl::StatusOr<ArrayRef> Upload(Client& client, const std::vector<uint8_t>& data, DType dtype,
                                const Shape& shape, ShardingRef sharding) {
  absl::StatusOr<ArrayRef> array =
      client.MakeArrayFromHostBuffer(data.data(), dtype, shape, std::nullopt, std::move(sharding),
                                     HostBufferSemantics::kImmutableOnlyDuringCall, nullptr);
  if (!array.ok()) return array.status();
  if (absl::Status s = (*array)->GetReadyFuture().Await(); !s.ok()) return s;
  return array;
}

// Reads `array` back and compares it with `expected`, bit for bit (in a multi-process client,
// process 0 compares the whole array, gathered; ReadBack).
absl::Status Verify(Client& client, const ArrayRef& array, const std::vector<uint8_t>& expected) {
  std::vector<uint8_t> back(expected.size());
  bool read = false;
  if (absl::Status s = ReadBack(client, array, back.data(), &read); !s.ok()) return s;
  if (read && !expected.empty() &&
      std::memcmp(back.data(), expected.data(), expected.size()) != 0) {
    return absl::DataLossError(absl::StrCat(array->DebugString(), " came back different"));
  }
  return absl::OkStatus();
}

struct Timed {
  std::string name;
  int64_t bytes = 0;  // bytes copied (cross-location + local)
  double median = 0;
  double min = 0;
};

class Demo {
 public:
  Demo(ClientSetup setup, bool quick) : setup_(std::move(setup)), quick_(quick) {
    client_ = setup_.client.get();
    runtime_ = Introspect(*client_);
    for (Device* d : setup_.devices) {
      (d->Kind() == "cpu" ? cpu_ : vulkan_).push_back(d);
    }
    if (cpu_.empty()) cpu_ = setup_.devices;
  }

  int Run() {
    std::cout << "Tessera demo\n============\n"
              << "A client with " << setup_.devices.size() << " devices (" << setup_.description
              << "; platforms: " << absl::StrJoin(client_->platform_names(), ", ") << ").\n";
    Devices();
    if (int code = RoundTrips(); code != kExitOk) return code;
    if (int code = ShardedArray(); code != kExitOk) return code;
    if (int code = Reshards(); code != kExitOk) return code;
    int section = 5;
    if (int code = RunComputationSection(*client_, cpu_, vulkan_, quick_, section++);
        code != kExitOk) {
      return code;
    }
    if (!vulkan_.empty() && cpu_.front()->Kind() == "cpu") {
      if (int code = Mixed(section++); code != kExitOk) return code;
    }
    if (int code = Guard(section++); code != kExitOk) return code;
    Summary(section);
    return kExitOk;
  }

 private:
  void Devices() {
    PrintHeading(1, "Devices and memories",
                 "Each device holds array shards in its memories; 'default' is where arrays land.");
    Table table({"device", "kind", "memories", "description"});
    table.set_left(1);
    table.set_left(2);
    table.set_left(3);
    for (Device* d : setup_.devices) {
      std::vector<std::string> memories;
      absl::StatusOr<Memory*> def = d->DefaultMemory();
      for (Memory* m : d->Memories()) {
        memories.push_back(
            absl::StrCat(m->Kind().DebugString(), def.ok() && *def == m ? " (default)" : ""));
      }
      table.AddRow(
          {d->ToString(), std::string(d->Kind()), absl::StrJoin(memories, ", "), d->DebugString()});
    }
    table.Print(std::cout);
  }

  int RoundTrips() {
    PrintHeading(
        2, "Round trips",
        "Arrays of several dtypes and shapes go host -> memory -> host on every device and\n"
        "memory, and must come back bit-exact (zero-sized arrays and scalars included).");
    struct Case {
      DType dtype;
      Shape shape;
    };
    const std::vector<Case> cases = {
        {DType(DType::kF32), Shape({256, 256})}, {DType(DType::kBF16), Shape({3, 5, 7})},
        {DType(DType::kS8), Shape({1000})},      {DType(DType::kF64), Shape({128, 129})},
        {DType(DType::kU64), Shape({64, 0})},    {DType(DType::kPred), Shape()},
    };
    std::vector<std::string> header = {"array", "bytes"};
    std::vector<std::pair<Device*, Memory*>> places;
    for (Device* d : setup_.devices) {
      if (!d->IsAddressable()) continue;  // another process's: it makes its own round trips
      for (Memory* m : d->Memories()) {
        places.push_back({d, m});
        header.push_back(d->Memories().size() == 1
                             ? d->ToString()
                             : absl::StrCat(d->ToString(), " ", m->Kind().DebugString()));
      }
    }
    Table table(header);
    int failures = 0;
    const Clock::time_point start = Clock::now();
    for (const Case& c : cases) {
      const int64_t bytes = c.shape.num_elements() * *c.dtype.byte_size();
      std::vector<uint8_t> data = MakePattern(bytes, 7);
      if (c.dtype.kind() == DType::kPred) {
        for (uint8_t& b : data) b &= 1;
      }
      std::vector<std::string> row = {ArrayName(c.dtype, c.shape), FormatBytes(bytes)};
      for (auto [device, memory] : places) {
        absl::StatusOr<ArrayRef> array = Upload(
            *client_, data, c.dtype, c.shape, SingleDeviceSharding::Create(device, memory->Kind()));
        absl::Status s = array.ok() ? Verify(*client_, *array, data) : array.status();
        row.push_back(s.ok() ? "ok" : "FAILED");
        if (!s.ok()) {
          ++failures;
          std::cerr << "  " << ArrayName(c.dtype, c.shape) << " on " << device->ToString() << ": "
                    << s << "\n";
        }
      }
      table.AddRow(row);
    }
    table.Print(std::cout);
    std::cout << "\n  " << cases.size() * places.size() << " round trips in "
              << FormatDuration(std::chrono::duration<double>(Clock::now() - start).count())
              << (failures == 0 ? ", all bit-exact.\n" : "\n");
    return failures == 0 ? kExitOk : Fail(kExitFailure, "a round trip failed");
  }

  absl::StatusOr<ShardingRef> Named(std::string_view mesh, std::string_view spec,
                                    absl::Span<Device* const> devices) {
    absl::StatusOr<sharding::ShardingText> text =
        sharding::ParseShardingText(absl::StrCat(Str(mesh), " ", Str(spec)));
    if (!text.ok()) return text.status();
    absl::StatusOr<DeviceListRef> list = client_->MakeDeviceList(devices);
    if (!list.ok()) return list.status();
    return BindShardingText(*text, *std::move(list), MemoryKind());
  }

  std::string Mesh1D() const { return absl::StrCat("mesh{x=", cpu_.size(), "}"); }

  int ShardedArray() {
    const Shape shape({1024, 1024});
    const std::string mesh = Mesh1D();
    PrintHeading(
        3, "A sharded array",
        absl::StrCat("f32[1024,1024] split by rows over ", DeviceRange(cpu_), " with ", mesh,
                     " P(x,None):\neach device holds one block of rows (its shard)."));
    absl::StatusOr<ShardingRef> rows = Named(mesh, "P(x,None)", cpu_);
    if (!rows.ok()) return Fail(kExitFailure, rows.status().ToString());
    absl::StatusOr<std::vector<IndexDomain>> boxes = (*rows)->IndexDomains(shape);
    if (!boxes.ok()) return Fail(kExitFailure, boxes.status().ToString());
    std::vector<uint8_t> data = MakePattern(shape.num_elements() * 4, 3);
    absl::StatusOr<ArrayRef> array = Upload(*client_, data, DType(DType::kF32), shape, *rows);
    if (!array.ok()) return Fail(kExitFailure, array.status().ToString());
    Table table({"device", "rows", "columns", "shard", "bytes"});
    for (size_t i = 0; i < boxes->size(); ++i) {
      const IndexDomain& box = (*boxes)[i];
      auto range = [&](int dim) {
        return absl::StrCat(box.origin()[dim], "..", box.origin()[dim] + box.shape().dims()[dim]);
      };
      table.AddRow({cpu_[i]->ToString(), range(0), range(1),
                    absl::StrCat("[", absl::StrJoin(box.shape().dims(), ","), "]"),
                    FormatBytes(box.shape().num_elements() * 4)});
    }
    table.Print(std::cout);
    std::cout << "\n  " << (*array)->DebugString() << "\n";
    return kExitOk;
  }

  // Reshards `input` to `spec` `repeat` times, verifies, records the timing.
  int TimeReshard(const std::string& name, const ArrayRef& input, const ShardingRef& to,
                  const std::vector<uint8_t>& data, int repeat, Table& table) {
    const ArraySpec spec{input->dtype(), input->shape(), to};
    absl::StatusOr<std::shared_ptr<const sharding::ReshardPlan>> plan =
        runtime_->PlanReshard(*input, spec);
    if (!plan.ok()) return Fail(kExitFailure, plan.status().ToString());
    std::vector<double> times;
    ArrayRef result;
    // One untimed warm-up run; each run frees the previous result first, so that the runtime can
    // reuse its buffers (as a program resharding in a loop would).
    for (int r = -1; r < repeat; ++r) {
      result = nullptr;
      std::vector<ArrayRef> inputs = {input};
      const Clock::time_point start = Clock::now();
      absl::StatusOr<std::vector<ArrayRef>> out = client_->ReshardArrays(
          absl::MakeSpan(inputs), absl::MakeConstSpan(&spec, 1), ArrayCopySemantics::kReuseInput);
      if (!out.ok()) return Fail(kExitFailure, out.status().ToString());
      if (absl::Status s = (*out)[0]->GetReadyFuture().Await(); !s.ok()) {
        return Fail(kExitFailure, s.ToString());
      }
      if (r >= 0) {
        times.push_back(std::chrono::duration<double>(Clock::now() - start).count());
      }
      result = (*out)[0];
    }
    if (absl::Status s = Verify(*client_, result, data); !s.ok()) {
      return Fail(kExitFailure, s.ToString());
    }
    const sharding::ReshardPlan& p = **plan;
    const int64_t moved = p.cross_location_bytes + p.local_bytes;
    table.AddRow({name, absl::StrCat(p.copies.size()), FormatBytes(p.cross_location_bytes),
                  FormatBytes(p.local_bytes), FormatBytes(p.aliased_bytes),
                  FormatBytes(p.lower_bound_bytes), FormatDuration(Median(times)),
                  FormatRate(moved, Median(times))});
    timed_.push_back({absl::StrCat(name, ", ", ArrayName(input->dtype(), input->shape())), moved,
                      Median(times), Minimum(times)});
    return kExitOk;
  }

  static Table ReshardTable() {
    return Table({"reshard", "copies", "cross-location", "local", "aliased", "lower bound", "time",
                  "GiB/s"});
  }

  int Reshards() {
    const int64_t side = quick_ ? 1024 : 4096;  // 4 MiB or 64 MiB of f32
    const Shape shape({side, side});
    const std::string mesh = Mesh1D();
    PrintHeading(
        4, "Reshards",
        absl::StrCat("f32[", side, ",", side, "] (", FormatBytes(side * side * 4), ") on ",
                     DeviceRange(cpu_),
                     ", resharded three ways. The plan copies each byte\n"
                     "once; 'lower bound' is the least any plan must move between devices. "
                     "Times are\n"
                     "medians of 3 runs; every result is read back and checked."));
    absl::StatusOr<ShardingRef> rows = Named(mesh, "P(x,None)", cpu_);
    absl::StatusOr<ShardingRef> cols = Named(mesh, "P(None,x)", cpu_);
    absl::StatusOr<ShardingRef> repl = Named(mesh, "P()", cpu_);
    std::vector<Device*> reversed(cpu_.rbegin(), cpu_.rend());
    absl::StatusOr<ShardingRef> rows_rev = Named(mesh, "P(x,None)", reversed);
    for (const auto* s : {&rows, &cols, &repl, &rows_rev}) {
      if (!s->ok()) return Fail(kExitFailure, s->status().ToString());
    }
    big_data_ = MakePattern(shape.num_elements() * 4, 5);
    absl::StatusOr<ArrayRef> input = Upload(*client_, big_data_, DType(DType::kF32), shape, *rows);
    if (!input.ok()) return Fail(kExitFailure, input.status().ToString());
    big_ = *input;
    cols_ = *cols;
    Table table = ReshardTable();
    struct Step {
      std::string name, from, to;
      ShardingRef sharding;
    };
    const std::vector<Step> steps = {
        {"rows -> columns", "P(x,None)", "P(None,x)", *cols},
        {"rows -> replicated", "P(x,None)", "P()", *repl},
        {"rows -> rows, devices reversed", "P(x,None)", "P(x,None) on reversed devices", *rows_rev},
    };
    for (const Step& step : steps) {
      std::cout << "  " << step.name << ": " << mesh << " " << step.from << " -> " << step.to
                << "\n";
    }
    std::cout << "\n";
    for (const Step& step : steps) {
      if (int code = TimeReshard(step.name, big_, step.sharding, big_data_, 3, table);
          code != kExitOk) {
        return code;
      }
    }
    table.Print(std::cout);
    return kExitOk;
  }

  int Mixed(int number) {
    const int64_t side = 512;  // 1 MiB of f32: small enough for lavapipe
    const Shape shape({side, side});
    const std::string vmesh = absl::StrCat("mesh{x=", vulkan_.size(), "}");
    PrintHeading(number, "CPU devices to Vulkan devices",
                 absl::StrCat("f32[512,512] moves from ", DeviceRange(cpu_), " (", Mesh1D(),
                              " P(x,None)) to ", DeviceRange(vulkan_), " (", vmesh,
                              " P(None,x)):\none array, two platforms; the runtime stages the "
                              "copies through host memory."));
    absl::StatusOr<ShardingRef> from = Named(Mesh1D(), "P(x,None)", cpu_);
    absl::StatusOr<ShardingRef> to = Named(vmesh, "P(None,x)", vulkan_);
    if (!from.ok() || !to.ok()) return Fail(kExitFailure, "cannot build the shardings");
    std::vector<uint8_t> data = MakePattern(shape.num_elements() * 4, 9);
    absl::StatusOr<ArrayRef> input = Upload(*client_, data, DType(DType::kF32), shape, *from);
    if (!input.ok()) return Fail(kExitFailure, input.status().ToString());
    Table table = ReshardTable();
    if (int code = TimeReshard("cpu -> vulkan", *input, *to, data, 3, table); code != kExitOk) {
      return code;
    }
    table.Print(std::cout);
    return kExitOk;
  }

  int Guard(int number) {
    // With one device there is no device-to-device movement to refuse: show the guard on an
    // upload instead.
    const bool d2d = cpu_.size() >= 2;
    const std::string what = d2d ? "reshard" : "upload";
    PrintHeading(
        number, "The transfer guard",
        absl::StrCat("With the policy ",
                     d2d ? "d2d=disallow, a device-to-device" : "h2d=disallow, a host-to-device",
                     " movement the user did not\nask for (TransferOptions{.is_explicit = false}) "
                     "is refused before any byte moves;\nthe same ",
                     what, " asked for explicitly is allowed. See docs/transfer-guard.md."));
    const guard::Policy saved = client_->transfer_guard().policy();
    client_->transfer_guard().SetPolicy(
        *guard::Policy::Parse(d2d ? "d2d=disallow" : "h2d=disallow"));
    auto attempt = [&](bool is_explicit) -> absl::Status {
      const TransferOptions options{.is_explicit = is_explicit};
      if (!d2d) {
        std::vector<uint8_t> data = MakePattern(4096);
        absl::StatusOr<ArrayRef> a = client_->MakeArrayFromHostBuffer(
            data.data(), DType(DType::kF32), Shape({1024}), std::nullopt,
            SingleDeviceSharding::Create(cpu_.front(), MemoryKind()),
            HostBufferSemantics::kImmutableOnlyDuringCall, nullptr, options);
        return a.ok() ? (*a)->GetReadyFuture().Await() : a.status();
      }
      const ArraySpec spec{big_->dtype(), big_->shape(), cols_};
      std::vector<ArrayRef> inputs = {big_};
      absl::StatusOr<std::vector<ArrayRef>> out =
          client_->ReshardArrays(absl::MakeSpan(inputs), absl::MakeConstSpan(&spec, 1),
                                 ArrayCopySemantics::kReuseInput, options);
      return out.ok() ? (*out)[0]->GetReadyFuture().Await() : out.status();
    };
    const absl::Status implicit = attempt(false);
    const absl::Status explicit_ = attempt(true);
    client_->transfer_guard().SetPolicy(saved);
    std::cout << "  implicit " << what << ": "
              << (implicit.ok() ? "allowed (unexpected!)" : "refused") << "\n";
    if (!implicit.ok()) {
      std::cout << "    " << implicit.message() << "\n";
    }
    std::cout << "  explicit " << what << ": " << (explicit_.ok() ? "allowed" : "failed") << "\n";
    if (implicit.ok() || !explicit_.ok()) {
      return Fail(kExitFailure, "the transfer guard did not behave as expected");
    }
    return kExitOk;
  }

  void Summary(int number) {
    PrintHeading(
        number, "Timing summary",
        "Every reshard measured above, beside a parallel memcpy of the reshard array with one\n"
        "thread per CPU device: the floor a reshard within host memory can approach.");
    Table table({"operation", "bytes copied", "median", "min", "GiB/s"});
    for (const Timed& t : timed_) {
      table.AddRow({t.name, FormatBytes(t.bytes), FormatDuration(t.median), FormatDuration(t.min),
                    FormatRate(t.bytes, t.median)});
    }
    const int64_t bytes = static_cast<int64_t>(big_data_.size());
    std::vector<uint8_t> dst(bytes);
    std::vector<double> floor;
    for (int r = 0; r < 3; ++r) {
      floor.push_back(
          ParallelMemcpy(dst.data(), big_data_.data(), bytes, static_cast<int>(cpu_.size())));
    }
    table.AddRow({absl::StrCat("memcpy floor (", cpu_.size(), " threads)"), FormatBytes(bytes),
                  FormatDuration(Median(floor)), FormatDuration(Minimum(floor)),
                  FormatRate(bytes, Median(floor))});
    table.Print(std::cout);
    std::cout << "\nDone. Next: `tessera reshard --help`, `tessera trace --help`, docs/tools.md.\n";
  }

  ClientSetup setup_;
  bool quick_;
  Client* client_ = nullptr;
  ClientIntrospection* runtime_ = nullptr;
  std::vector<Device*> cpu_, vulkan_;
  std::vector<uint8_t> big_data_;
  ArrayRef big_;
  ShardingRef cols_;
  std::vector<Timed> timed_;
};

}  // namespace

int RunDemo(const DemoOptions& options) {
  ClientResult result = SetUpClient(options.devices, std::nullopt, options.distributed);
  if (!result.setup.has_value()) return result.exit_code;
  if (Introspect(*result.setup->client) == nullptr) {
    return Fail(kExitFailure, "this client offers no introspection: plans and traces unavailable");
  }
  Demo demo(*std::move(result.setup), options.quick);
  return demo.Run();
}

}  // namespace tessera::tools
