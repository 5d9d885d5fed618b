// tessera: the command-line tool of the Tessera runtime.
//
//   tessera info [--json] [--devices cpu:8]
//   tessera reshard --shape 8192x8192 --from 'mesh{x=8} P(x,None)' --to 'mesh{x=8} P(None,x)'
//                   [--explain] [--run --repeat N] [--guard d2d=disallow] [--implicit]
//   tessera trace --out trace.json <reshard options>
//   tessera demo [--quick]
//   mpirun -np 2 tessera reshard --distributed mpi ...   (info, reshard, trace, run, demo;
//   process 0 prints; trace: each process writes its own file)
//
// Exit codes: 0 success, 1 a runtime failure (a refused transfer, a failed verification),
// 2 bad input.

#include <iostream>
#include <new>
#include <optional>
#include <string>

#include "CLI/CLI.hpp"
#include "tools/cli.h"

namespace tessera::tools {
namespace {

constexpr char kDevicesHelp[] =
    "Devices to use, in order: cpu:N, vulkan:N, or both (vulkan:2,cpu:2). Default: the default "
    "client (4 CPU devices, plus Vulkan devices when present)";

void AddDevices(CLI::App* app, std::optional<std::string>& devices) {
  app->add_option("--devices", devices, kDevicesHelp)->type_name("SPEC");
}

constexpr char kDistributedHelp[] =
    "none (default): this process only; mpi: run under mpirun, one client over every process "
    "(--devices counts each process's devices; process 0 prints). See docs/multi-process.md";

void AddDistributed(CLI::App* app, std::string& distributed) {
  app->add_option("--distributed", distributed, kDistributedHelp)->type_name("none|mpi");
}

void AddReshardOptions(CLI::App* app, ReshardOptions& o) {
  AddDevices(app, o.devices);
  app->add_option("--shape", o.shape, "Array shape, e.g. 8192x8192")->required();
  app->add_option("--dtype", o.dtype, "Element type: f32, bf16, s8, ... (default f32)");
  app->add_option("--from", o.from,
                  "Source sharding: 'mesh{x=8} P(x,None)' or a ShardingParam '8x1 to [0] on 8'")
      ->required();
  app->add_option("--to", o.to, "Destination sharding, same notations as --from")->required();
  app->add_option(
      "--guard", o.guard,
      "Transfer guard policy of the client, e.g. d2d=disallow (see docs/transfer-guard.md)");
  app->add_flag("--implicit", o.implicit,
                "Mark the reshard as an implicit transfer (what log/disallow act on)");
}

}  // namespace

int Main(int argc, char** argv) {
  CLI::App app{
      "tessera: inspect the devices of a Tessera client, plan, run and trace reshards, and run a "
      "guided demo.",
      "tessera"};
  app.require_subcommand(1);
  app.fallthrough(false);

  InfoOptions info;
  CLI::App* info_cmd =
      app.add_subcommand("info", "List platforms, devices, memories, attributes and drivers");
  AddDevices(info_cmd, info.devices);
  info_cmd->add_flag("--json", info.json, "Print JSON instead of tables");
  AddDistributed(info_cmd, info.distributed);

  ReshardOptions reshard;
  CLI::App* reshard_cmd = app.add_subcommand(
      "reshard", "Explain (the plan) and/or run, verify and time a reshard of one array");
  AddReshardOptions(reshard_cmd, reshard);
  reshard_cmd->add_flag("--explain", reshard.explain,
                        "Print the plan: copies per device pair, bytes, aliasing, lower bound "
                        "(the default without --run)");
  reshard_cmd->add_flag("--run", reshard.run,
                        "Run the reshard, verify the data bit-exactly, print a timing table");
  reshard_cmd->add_option("--repeat", reshard.repeat,
                          "Reshards timed with --run, 1 to 1000000 (default 5)");
  AddDistributed(reshard_cmd, reshard.distributed);

  ReshardOptions trace;
  trace.repeat = 1;
  CLI::App* trace_cmd = app.add_subcommand("trace",
                                           "Run a reshard (with the upload and the readback) and "
                                           "write a Chrome/Perfetto trace of every copy");
  AddReshardOptions(trace_cmd, trace);
  trace_cmd->add_option("--out", trace.trace_out, "Trace file to write (JSON)")->required();
  trace_cmd->add_option("--repeat", trace.repeat, "Reshards to record, 1 to 1000000 (default 1)");
  AddDistributed(trace_cmd, trace.distributed);

  RunOptions run;
  CLI::App* run_cmd = app.add_subcommand(
      "run",
      "Compile an MLIR program for the devices, run it on random inputs, check it against "
      "a 1-device run, print a timing table");
  run_cmd->add_option("program", run.program, "The program (.mlir)")->required();
  AddDevices(run_cmd, run.devices);
  run_cmd->add_option("--in", run.in,
                      "Sharding of each argument, in order (default: the program's "
                      "tessera.sharding attributes)");
  run_cmd->add_option("--out", run.out, "Sharding of each result, in order");
  run_cmd->add_flag("--explain", run.explain,
                    "Print the partitioned program and its communication");
  run_cmd->add_option("--repeat", run.repeat, "Runs timed, 1 to 1000000 (default 5)");
  run_cmd->add_flag("--fit-mesh", run.fit_mesh,
                    "Run a single-axis mesh of the program's attributes over the devices given "
                    "(e.g. the examples' mesh{x=4} under --devices vulkan:2)");
  run_cmd->add_option("--guard", run.guard, "Transfer guard policy, e.g. d2d=disallow");
  AddDistributed(run_cmd, run.distributed);

  DemoOptions demo;
  CLI::App* demo_cmd = app.add_subcommand("demo",
                                          "A guided tour: devices, round trips, sharded arrays, "
                                          "reshards, the transfer guard");
  AddDevices(demo_cmd, demo.devices);
  demo_cmd->add_flag("--quick", demo.quick, "Smaller arrays (for tests)");
  AddDistributed(demo_cmd, demo.distributed);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "tessera: error: " << e.what() << " (see tessera --help)\n";
    return kExitBadInput;
  }
  if (info_cmd->parsed()) return RunInfo(info);
  if (reshard_cmd->parsed()) return RunReshard(reshard);
  if (trace_cmd->parsed()) return RunTrace(trace);
  if (run_cmd->parsed()) return RunProgram(run);
  if (demo_cmd->parsed()) return RunDemo(demo);
  return kExitBadInput;
}

}  // namespace tessera::tools

int main(int argc, char** argv) {
  try {
    return tessera::tools::Main(argc, argv);
  } catch (const std::bad_alloc&) {
    std::cerr << "tessera: error: out of host memory\n";
    return tessera::tools::kExitFailure;
  }
}
