#!/usr/bin/env python3
"""Runs the `tessera` binary and checks its output. Usage: tool_test.py TESSERA CASE [GOLDEN_DIR].

Each CASE is one ctest test (see CMakeLists.txt). Exit 0: pass; 1: fail; 77: skipped."""

import json
import os
import re
import subprocess
import sys
import tempfile

TESSERA = sys.argv[1]
CASE = sys.argv[2]
GOLDEN = sys.argv[3] if len(sys.argv) > 3 else os.path.join(os.path.dirname(__file__), "golden")

ROWS = "mesh{x=4} P(x,None)"
COLS = "mesh{x=4} P(None,x)"


def run(*args, timeout=300):
    env = dict(os.environ)
    env.pop("TESSERA_TRANSFER_GUARD", None)
    p = subprocess.run([TESSERA, *args], capture_output=True, text=True, timeout=timeout, env=env)
    return p.returncode, p.stdout, p.stderr


def check(cond, message, out="", err=""):
    if not cond:
        print("FAIL:", message)
        print("--- stdout ---\n" + out + "\n--- stderr ---\n" + err)
        sys.exit(1)


def expect_ok(*args):
    rc, out, err = run(*args)
    check(rc == 0, f"tessera {' '.join(args)} exited {rc}", out, err)
    return out, err


def case_help():
    out, _ = expect_ok("--help")
    for sub in ("info", "reshard", "trace", "run", "demo"):
        check(sub in out, f"--help lists {sub}", out)
        sub_out, _ = expect_ok(sub, "--help")
        check("--devices" in sub_out, f"{sub} --help shows --devices", sub_out)
    out, _ = expect_ok("reshard", "--help")
    for opt in ("--shape", "--dtype", "--from", "--to", "--explain", "--run", "--repeat",
                "--guard", "--implicit"):
        check(opt in out, f"reshard --help shows {opt}", out)


def case_info():
    out, _ = expect_ok("info", "--devices", "cpu:2")
    for text in ("Platforms: cpu", "Devices (2)", "cpu:0", "cpu:1", "Memories", "host",
                 "Drivers", "code generator", "MLIR -> LLVM", "Attributes", "threads ="):
        check(text in out, f"info shows {text!r}", out)


def case_info_json():
    out, _ = expect_ok("info", "--json", "--devices", "cpu:3")
    info = json.loads(out)
    check(info["platforms"] == ["cpu"], "platforms", out)
    check(len(info["devices"]) == 3, "3 devices", out)
    for i, d in enumerate(info["devices"]):
        check(d["id"] == i and d["kind"] == "cpu" and d["name"] == f"cpu:{i}", "device fields", out)
        check(d["memories"] and d["memories"][0]["kind"] == "host", "memory kind", out)
        check(d["memories"][0]["default"] is True, "default memory", out)
        check(isinstance(d["memories"][0]["bytes_in_use"], int), "bytes_in_use", out)
        check(isinstance(d["attributes"], dict) and "threads" in d["attributes"], "attributes", out)
    check(info["transfer_guard"] == "allow", "transfer_guard", out)
    # The default client (Vulkan devices too when present) must produce valid JSON as well.
    out, _ = expect_ok("info", "--json")
    json.loads(out)


def case_reshard_explain_golden():
    out, _ = expect_ok("reshard", "--shape", "8x8", "--dtype", "f32", "--devices", "cpu:4",
                       "--from", ROWS, "--to", COLS, "--explain")
    with open(os.path.join(GOLDEN, "reshard_explain_8x8.txt")) as f:
        golden = f.read()
    check(out == golden, "explain output equals golden/reshard_explain_8x8.txt", out)
    # Without --run, explaining is the default.
    out2, _ = expect_ok("reshard", "--shape", "8x8", "--devices", "cpu:4", "--from", ROWS,
                        "--to", COLS)
    check(out2 == golden, "reshard without --run explains", out2)


def case_reshard_notations():
    # A ShardingParam and an alias-only plan; a ragged replicated one.
    out, _ = expect_ok("reshard", "--shape", "8x6", "--dtype", "s16", "--devices", "cpu:2",
                       "--from", "2x1 to [0] on 2", "--to", "mesh{x=2} P(x,None)")
    check(out.count("1 alias copy, 48 bytes") == 2, "aliases", out)
    check("aliased_bytes=96" in out, "aliased bytes", out)
    out, _ = expect_ok("reshard", "--shape", "5x3", "--dtype", "s16", "--devices", "cpu:2",
                       "--from", "mesh{x=2} P(x,None)", "--to", "mesh{x=2} P()", "--explain",
                       "--run", "--repeat", "1")
    check("verified bit-exact" in out and "lower_bound_bytes=30" in out, "ragged run", out)


def case_reshard_run():
    out, err = expect_ok("reshard", "--shape", "256x512", "--dtype", "bf16", "--devices", "cpu:4",
                         "--from", ROWS, "--to", COLS, "--run", "--repeat", "2")
    check("\r" not in out, "no progress bar when piped", out)
    check("ReshardPlan" not in out, "--run alone does not explain", out)
    check(re.search(r"Ran 2 reshards after a warm-up, verified bit-exact; 256\.0 KiB copied per reshard "
                    r"\(192\.0 KiB cross-location, 64\.0 KiB local, 0 B aliased\)", out),
          "run summary line", out)
    check(re.search(r"^\s+median\s+min\s+GiB/s$", out, re.M), "timing header", out)
    check(re.search(r"^  reshard\s+\S+ (us|ms|s)\s+\S+ (us|ms|s)\s+[0-9.]+$", out, re.M),
          "reshard row", out)
    check(re.search(r"^  memcpy floor \(4 threads\)\s+\S+ (us|ms|s)\s+\S+ (us|ms|s)\s+[0-9.]+$",
                    out, re.M), "memcpy floor row", out)
    # --explain and --run together; zero-sized array.
    out, _ = expect_ok("reshard", "--shape", "0x8", "--devices", "cpu:2", "--from",
                       "mesh{x=2} P(x,None)", "--to", "mesh{x=2} P(None,x)", "--explain", "--run",
                       "--repeat", "1")
    check("ReshardPlan" in out and "verified bit-exact" in out, "explain + run", out)


def case_trace():
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "trace.json")
        out, _ = expect_ok("trace", "--out", path, "--shape", "64x64", "--devices", "cpu:4",
                           "--from", ROWS, "--to", COLS, "--repeat", "2")
        with open(path) as f:
            trace = json.load(f)
    events = trace["traceEvents"]
    check(len(events) > 0, "trace has events", out)
    # One event per copy, each with its boxes: 4 uploads, 16 reshard copies per
    # repeat (rows -> columns over 4 devices), 4 downloads.
    check(len(events) == 4 + 2 * 16 + 4, f"{len(events)} events, one per copy", out)
    for e in events:
        check(e["args"]["copies"] == 1 and e["args"]["src_box"].startswith("[")
              and e["args"]["dst_box"].startswith("["), "a copy with its boxes", out)
    for e in events:
        check(e["ph"] == "X" and isinstance(e["ts"], (int, float)) and e["dur"] >= 0, "event", out)
        check({"operation", "bytes", "direction"} <= set(e["args"]), "event args", out)
    ops = {e["args"]["operation"] for e in events}
    check({"MakeArrayFromHostBuffer", "ReshardArrays", "CopyToHostBuffer"} <= ops, f"ops {ops}", out)
    dirs = {e["cat"] for e in events}
    check({"host_to_device", "device_to_device", "device_to_host"} <= dirs, f"dirs {dirs}", out)
    # Upload: 64*64*4 bytes in all; two reshards of 3/4 of it cross-device each.
    up = sum(e["args"]["bytes"] for e in events if e["args"]["operation"] == "MakeArrayFromHostBuffer")
    check(up == 64 * 64 * 4, f"uploaded bytes {up}", out)
    d2d = sum(e["args"]["bytes"] for e in events if e["cat"] == "device_to_device")
    check(d2d == 2 * 64 * 64 * 4 * 3 // 4, f"device-to-device bytes {d2d}", out)
    check(f"events written to {path}" in out, "summary names the file", out)
    for text in ("operation", "direction", "copies", "busy", "ReshardArrays"):
        check(text in out, f"summary shows {text}", out)


def case_demo():
    out, err = expect_ok("demo", "--devices", "cpu:4")
    headings = ["1. Devices and memories", "2. Round trips", "3. A sharded array", "4. Reshards",
                "5. A sharded computation", "6. The transfer guard", "7. Timing summary"]
    pos = 0
    for h in headings:
        i = out.find("\n" + h + "\n" + "-" * len(h) + "\n", pos)
        check(i >= 0, f"demo heading {h!r} in order", out, err)
        pos = i
    for text in ("all bit-exact", "rows -> columns", "rows -> replicated", "devices reversed",
                 "implicit reshard: refused", "Disallowed device-to-device transfer",
                 "explicit reshard: allowed", "memcpy floor", "u64[64,0]",
                 # The computation: compiled once, one line per kernel, the all-reduce and its
                 # bytes, the guard refusing it, the time beside one device's.
                 "compiled once in", "kernel_0: linalg.fill, linalg.matmul", "all_reduce: %",
                 "d2d=disallow_explicit the same Execute is refused",
                 "Disallowed device-to-device transfer: Execute of 'main'", "one device",
                 "y matches the one-device run"):
        check(text in out, f"demo shows {text!r}", out, err)
    # The all-reduce of y's partial sums (f32[256,1024], 1 MiB per device, over 4 devices) runs in
    # two phases, each device reading 3 peers' quarters in each: 4 x 2 x 3/4 MiB per run.
    check(re.search(r"sharded\s+4\s+\S+ \S+\s+6\.0 MiB", out) is not None,
          "the sharded run moves 6.0 MiB between devices", out, err)
    check("FAILED" not in out, "no failed round trip", out, err)
    # One device: no device-to-device movement exists, so the guard is shown on an upload.
    out, err = expect_ok("demo", "--devices", "cpu:1", "--quick")
    for text in ("implicit upload: refused", "Disallowed host-to-device transfer",
                 "explicit upload: allowed", "f32[1024,1024] (4.0 MiB)",
                 "one device: nothing to partition"):
        check(text in out, f"one-device demo shows {text!r}", out, err)


def case_demo_vulkan():
    rc, out, _ = run("info", "--json")
    if rc != 0 or not any(d["kind"] == "vulkan" for d in json.loads(out)["devices"]):
        print("SKIP: no Vulkan device")
        sys.exit(77)
    out, err = expect_ok("demo", "--quick")
    check("CPU devices to Vulkan devices" in out and "cpu -> vulkan" in out, "mixed section", out, err)
    check(re.search(r"One executable over \[cpu:0, .*vulkan:\d+\] \(CPU and Vulkan kernels", out)
          is not None, "the MLP as one executable over CPU and Vulkan devices", out, err)
    out, err = expect_ok("reshard", "--shape", "64x32", "--devices", "vulkan:1,cpu:3", "--from",
                         ROWS, "--to", "mesh{x=1} P()", "--explain", "--run", "--repeat", "1")
    check("verified bit-exact" in out, "cpu+vulkan -> vulkan reshard", out, err)


BAD_INPUT = [
    (["--shape", "8x?"], 'invalid --shape "8x?": dimension 1 is not a non-negative integer of at '
                         'most 18 digits at position 2'),
    (["--shape", "-8x8"], 'invalid --shape "-8x8"'),
    (["--dtype", "f33"], 'invalid --dtype "f33"'),
    (["--from", "mesh{x=4 P(x,None)"], 'invalid --from "mesh{x=4 P(x,None)"'),
    (["--from", "mesh{x=4} P(x,None"], "expected ')' at position 18"),
    (["--from", "mesh{x=4}"], "a PartitionSpec must follow the mesh"),
    (["--to", "2x1 to [0] on"], 'invalid --to "2x1 to [0] on"'),
    (["--to", "mesh{x=4} P(y,None)"], "unknown axis"),
    (["--to", "mesh{x=4} P(x,None,None)"], "does not fit shape [8,8]"),
    (["--to", "mesh{x=8} P(x,None)"], "needs 8 devices but only 4 are available"),
    (["--devices", "gpu:4"], 'invalid --devices "gpu:4": unknown platform (expected cpu or vulkan) '
                             "at position 0"),
    (["--devices", "cpu:x"], "the device count is not an integer in 1..4096 at position 4"),
    (["--devices", "cpu:4,cpu:2"], "platform cpu given twice at position 6"),
    (["--devices", "cpu"], "missing ':'"),
    (["--guard", "d2d=never"], "--guard: invalid transfer guard policy \"d2d=never\""),
    (["--repeat", "0", "--run"], "--repeat must be in 1..1000000, got 0"),
    (["--repeat", "-1", "--run"], "--repeat must be in 1..1000000, got -1"),
    (["--repeat", "1000001", "--run"], "--repeat must be in 1..1000000, got 1000001"),
    (["--shape", "999999999x999999999"], "is too large"),
]


def case_bad_input():
    base = {"--shape": "8x8", "--devices": "cpu:4", "--from": ROWS, "--to": COLS}
    for override, message in BAD_INPUT:
        args = dict(base)
        flags = []
        i = 0
        while i < len(override):
            if i + 1 < len(override) and not override[i + 1].startswith("--"):
                args[override[i]] = override[i + 1]
                i += 2
            else:
                flags.append(override[i])
                i += 1
        argv = ["reshard"] + [x for kv in args.items() for x in kv] + flags
        rc, out, err = run(*argv)
        check(rc == 2, f"{override} exits 2 (got {rc})", out, err)
        lines = err.strip().splitlines()
        check(len(lines) == 1 and lines[0].startswith("tessera: error: "),
              f"{override}: one error line", out, err)
        check(message in err, f"{override}: message contains {message!r}", out, err)
    for argv, message in ([["reshard", "--shape", "8x8", "--from", ROWS], "--to is required"],
                          [["info", "--bogus"], "--bogus"], [[], "subcommand"]):
        rc, out, err = run(*argv)
        check(rc == 2 and message in err, f"{argv} exits 2 with {message!r}", out, err)
    rc, out, err = run("trace", "--shape", "8x8", "--devices", "cpu:4", "--from", ROWS, "--to", COLS)
    check(rc == 2 and "--out is required" in err, "trace without --out", out, err)
    with tempfile.TemporaryDirectory() as tmp:
        for repeat in ("0", "-1"):
            rc, out, err = run("trace", "--shape", "8x8", "--devices", "cpu:4", "--from", ROWS,
                               "--to", COLS, "--out", os.path.join(tmp, "t.json"),
                               "--repeat", repeat)
            check(rc == 2 and f"--repeat must be in 1..1000000, got {repeat}" in err,
                  f"trace --repeat {repeat} is refused", out, err)


def run_bytes(*args):
    """Runs tessera with raw byte arguments; returns (exit code, stderr bytes)."""
    env = dict(os.environ)
    env.pop("TESSERA_TRANSFER_GUARD", None)
    p = subprocess.run([TESSERA.encode(), *args], capture_output=True, timeout=300, env=env)
    return p.returncode, p.stderr


def case_hostile_input():
    """Error lines quote the input once, escaped, shortened, with positions in the option's text."""
    base = {b"--shape": b"8x8", b"--devices": b"cpu:4", b"--from": ROWS.encode(),
            b"--to": COLS.encode()}
    cases = [
        # Line breaks, a terminal escape sequence and an invalid UTF-8 byte.
        ({b"--from": b"mesh{x=4} P(x,\n\x1b[31m\xff"},
         [b'invalid --from "mesh{x=4} P(x,\\n\\x1B[31m\\xFF": in the PartitionSpec: expected None, '
          b"an axis name or a tuple of names at position 15"]),
        # 100 KB: about 60 characters around the error, its position in the whole text.
        ({b"--from": b"mesh{x=4} P(x," + b"a" * 100000 + b"!"},
         [b'invalid --from "...' + b"a" * 59 + b'!": in the PartitionSpec: expected \')\' at '
          b"position 100014"]),
        # Positions count from the option's text, leading blanks included.
        ({b"--from": b"   mesh{x=4} P(x,None"}, [b"expected ')' at position 21"]),
        ({b"--from": b"mesh{x=4} 2x1"}, [b"at position 10"]),
        ({b"--shape": b" 8x?"}, [b"at position 3"]),
        ({b"--devices": b"cpu:4, gpu:2"}, [b"unknown platform (expected cpu or vulkan) at position 7"]),
        ({b"--devices": b"cpu: 0"}, [b"at position 5"]),
        # Invisible Unicode controls (RIGHT-TO-LEFT OVERRIDE) are escaped; UTF-8 otherwise stays.
        ({b"--shape": b"8\xc3\x978\xe2\x80\xae"}, [b'"8\xc3\x978\\xE2\\x80\\xAE"']),
        ({b"--guard": b"d2d=nev\ner\x1b"}, [b'"nev\\ner\\x1B" at position 4']),
        ({b"--dtype": b"f32\r\n" + b"x" * 5000}, [b'invalid --dtype "f32\\r\\nxxx']),
    ]
    for override, messages in cases:
        args = dict(base)
        args.update(override)
        rc, err = run_bytes(b"reshard", *[x for kv in args.items() for x in kv])
        text = err.decode("utf-8", errors="replace")
        name = repr(override)[:80]
        check(rc == 2, f"{name} exits 2 (got {rc})", "", text)
        check(err.count(b"\n") == 1 and err.startswith(b"tessera: error: "),
              f"{name}: exactly one error line", "", text)
        check(len(err) < 400, f"{name}: the line is short ({len(err)} bytes)", "", text)
        check(not any(c < 0x20 and c != 0x0A or c == 0x7F for c in err),
              f"{name}: no control characters", "", text)
        err.decode("utf-8")  # valid UTF-8, or the test fails with UnicodeDecodeError
        for m in messages:
            check(m in err, f"{name}: message contains {m!r}", "", text)
    # The option's text appears once in the line (not once more inside the parser's message).
    rc, err = run_bytes(b"reshard", b"--shape", b"8x8", b"--from", b"mesh{x=4} P(x,None",
                        b"--to", COLS.encode())
    check(err.count(b"P(x,None") == 1, "the option's text is quoted once", "", err.decode())


def case_guard():
    common = ["reshard", "--shape", "16x16", "--devices", "cpu:4", "--from", ROWS, "--to", COLS,
              "--run", "--repeat", "1", "--guard", "d2d=disallow"]
    rc, out, err = run(*common, "--implicit")
    check(rc == 1, f"implicit reshard refused: exit 1 (got {rc})", out, err)
    check(err.strip() == "tessera: error: Disallowed device-to-device transfer: ReshardArrays of "
          "f32[16,16] (768 bytes, implicit) from devices [0,1,2,3] (memory kind host) to devices [0,1,2,3] "
          "(memory kind host)", "the guard's message", out, err)
    out, _ = expect_ok(*common)  # explicit: allowed
    check("verified bit-exact" in out, "explicit reshard allowed", out)
    # disallow_explicit refuses the explicit upload; the trace still gets written.
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "t.json")
        rc, out, err = run("trace", "--out", path, "--shape", "16x16", "--devices", "cpu:4",
                           "--from", ROWS, "--to", COLS, "--guard", "h2d=disallow_explicit")
        check(rc == 1 and "Disallowed host-to-device transfer" in err, "h2d refusal", out, err)
        with open(path) as f:
            json.load(f)


EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples")


# z = x + y over f32[4,8], no sharding attributes (--in / --out give them).
ADD_PROGRAM = """func.func @main(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %z = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>,
                                        affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x, %y : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  return %z : tensor<4x8xf32>
}
"""


def case_run_program():
    # The Megatron example: one all-reduce, checked against a 1-device run.
    megatron = os.path.join(EXAMPLES, "mlp2_megatron.mlir")
    out, _ = expect_ok("run", megatron, "--devices", "cpu:4", "--explain", "--repeat", "2")
    for text in ("shard.all_reduce", "all_reduce of value", "groups of 4", "execute + await (sharded)",
                 "outputs match the 1-device run"):
        check(text in out, f"run --explain shows {text!r}", out)
    out, _ = expect_ok("run", os.path.join(EXAMPLES, "mlp.mlir"), "--devices", "cpu:4",
                       "--repeat", "1")
    check("outputs match the 1-device run" in out, "mlp.mlir runs and matches", out)
    # Shardings given on the command line instead of the attributes.
    out, _ = expect_ok("run", megatron, "--devices", "cpu:4", "--repeat", "1",
                       "--in", "mesh{x=4} P()", "--in", "mesh{x=4} P()", "--in", "mesh{x=4} P()",
                       "--in", "mesh{x=4} P()", "--in", "mesh{x=4} P()", "--out", "mesh{x=4} P()")
    check("outputs match the 1-device run" in out, "replicated run matches", out)
    # IFRT's ShardingParam notation on the command line: the same run as the NamedSharding.
    with tempfile.NamedTemporaryFile("w", suffix=".mlir", delete=False) as f:
        f.write(ADD_PROGRAM)
    try:
        for sharding in ("2x1 to [0] on 2", "mesh{x=2} P(x,None)"):
            out, _ = expect_ok("run", f.name, "--devices", "cpu:2", "--repeat", "1", "--explain",
                               "--in", sharding, "--in", sharding, "--out", sharding)
            check("outputs match the 1-device run" in out and "tensor<2x8xf32>" in out,
                  f"--in '{sharding}' runs rows-sharded and matches", out)
        out, _ = expect_ok("run", f.name, "--devices", "cpu:4", "--repeat", "1",
                           "--in", "4x1 to [1,0] on 2x2", "--in", "4x1 to [1,0] on 2x2",
                           "--out", "4x1 to [1,0] on 2x2")
        check("outputs match the 1-device run" in out, "a two-axis ShardingParam runs", out)
        out, _ = expect_ok("run", f.name, "--devices", "cpu:4", "--repeat", "1",
                           "--in", "mesh{x=4} P(x,None)", "--in", "4x1 to [0] on 4",
                           "--out", "1x1 to [0] on 4")
        check("outputs match the 1-device run" in out, "both notations in one run", out)
        # One that is no PartitionSpec over the NamedSharding's mesh beside it: exit 2, saying so.
        rc, out, err = run("run", f.name, "--devices", "cpu:4", "--in", "mesh{x=4} P(x,None)",
                           "--in", "2x1 to [0] on 4", "--out", "1x1 to [0] on 4")
        check(rc == 2 and "UNIMPLEMENTED" in err and "is no PartitionSpec over mesh{x=4}" in err,
              "an inexpressible ShardingParam is refused", out, err)
    finally:
        os.unlink(f.name)
    # The program's communication is explicit: disallow_explicit refuses it.
    rc, out, err = run("run", megatron, "--devices", "cpu:4", "--guard", "d2d=disallow_explicit")
    check(rc == 1 and "Disallowed device-to-device transfer: Execute of 'main'" in err,
          "d2d=disallow_explicit refuses the all-reduce", out, err)
    # Bad input: a missing file, a parse error with its position, too few devices.
    rc, out, err = run("run", "/nonexistent.mlir")
    check(rc == 2 and "cannot read" in err, "a missing program is bad input", out, err)
    with tempfile.NamedTemporaryFile("w", suffix=".mlir", delete=False) as f:
        f.write("func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n  return %y\n}\n")
    try:
        rc, out, err = run("run", f.name, "--devices", "cpu:2")
        check(rc == 2 and "2:" in err and "\n" not in err.strip(), "a parse error names its line",
              out, err)
    finally:
        os.unlink(f.name)
    rc, out, err = run("run", megatron, "--devices", "cpu:2")
    check(rc == 2 and "span 4 devices" in err, "too few devices is bad input", out, err)
    for repeat in ("0", "-1"):
        rc, out, err = run("run", megatron, "--devices", "cpu:4", "--repeat", repeat)
        check(rc == 2 and err.strip() ==
              f"tessera: error: --repeat must be in 1..1000000, got {repeat}",
              f"run --repeat {repeat} is refused", out, err)
    # ... unless --fit-mesh runs the one-axis mesh over the devices given.
    out, _ = expect_ok("run", megatron, "--devices", "cpu:2", "--fit-mesh", "--repeat", "1")
    check("runs as mesh{x=2}" in out and "outputs match the 1-device run" in out,
          "--fit-mesh runs mesh{x=4} on 2 devices", out)
    # A JAX shard_map (StableHLO) runs on its own mesh: no 1-device run to check it against, said.
    shard_map = os.path.join(os.path.dirname(__file__), "..", "compiler", "stablehlo",
                             "mlp_shard_map.mlir")
    out, _ = expect_ok("run", shard_map, "--devices", "cpu:8", "--repeat", "1")
    check("execute + await (sharded)" in out and "outputs not checked: no 1-device run" in out
          and "runs on its own mesh, mesh{dp=2,tp=4}" in out,
          "a shard_map runs and says it has no 1-device reference", out)


def case_run_program_vulkan():
    # ctest points VK_DRIVER_FILES at two copies of lavapipe's manifest: two Vulkan devices.
    rc, out, _ = run("info", "--json")
    if rc != 0 or sum(d["kind"] == "vulkan" for d in json.loads(out)["devices"]) < 2:
        print("SKIP: fewer than 2 Vulkan devices")
        sys.exit(77)
    out, _ = expect_ok("info", "--devices", "vulkan:2,cpu:1")
    check("MLIR -> SPIR-V" in out and "MLIR -> LLVM" in out, "info names the code generators", out)
    megatron = os.path.join(EXAMPLES, "mlp2_megatron.mlir")
    out, _ = expect_ok("run", megatron, "--devices", "vulkan:2,cpu:2", "--repeat", "1")
    check("vulkan:" in out and "cpu:" in out and "outputs match the 1-device run" in out,
          "Megatron over 2 Vulkan + 2 CPU devices matches", out)
    out, _ = expect_ok("run", os.path.join(EXAMPLES, "mlp.mlir"), "--devices", "vulkan:2",
                       "--fit-mesh", "--repeat", "1")
    check("runs as mesh{x=2}" in out and "outputs match the 1-device run" in out,
          "mlp.mlir on 2 Vulkan devices matches", out)


CASES = {name[len("case_"):]: fn for name, fn in globals().items() if name.startswith("case_")}

if __name__ == "__main__":
    if CASE not in CASES:
        print(f"unknown case {CASE}; cases: {', '.join(sorted(CASES))}")
        sys.exit(1)
    CASES[CASE]()
    print("PASS")
