#!/usr/bin/env python3
"""Runs `tessera` and the bindings under mpirun -np 2 and checks what each process printed.

Usage: under_mpirun_test.py MPIEXEC CASE ARG. CASE:
  reshard TESSERA  `tessera reshard --distributed mpi --run` across 2 processes: process 0 alone
                   prints, the result is gathered and verified bit for bit.
  run TESSERA      `tessera run examples/mlp2_megatron.mlir --distributed mpi`: the Megatron MLP
                   over 2 CPU devices of each process (its all-reduce crosses processes); process
                   0 alone prints; each process checks its shards against a 1-device run.
  trace TESSERA    `tessera trace --distributed mpi`: each process writes its own trace file, with
                   the parts it sent to and received from the other process on rows of their own.
  demo TESSERA     `tessera demo --distributed mpi --quick`: every section, printed once.
  c_api BINARY     a C API test program (single-process clients, no --distributed) still passes
                   in every process of an mpirun job.
  c_api_distributed BINARY
                   tests/bindings/c/distributed_test.c: a TSR_DISTRIBUTED_MPI client over both
                   processes passes its checks in each.
  python DIR       the Python package (PYTHONPATH=DIR) likewise: a client per process.
  python_distributed DIR
                   a Client(distributed="mpi") over both processes: devices, addressable shards,
                   a reshard chain, the host-copy refusal, a guard refusal on process 1 alone.
The environment (allow-run-as-root, timeouts, transport settings) comes from ctest.
Exit 0: pass; 1: fail."""

import os
import re
import subprocess
import sys
import time

MPIEXEC, CASE, ARG = sys.argv[1], sys.argv[2], sys.argv[3]
ROWS = "mesh{x=4} P(x,None)"
COLS = "mesh{x=4} P(None,x)"


def mpirun(*args, env=None):
    cmd = [MPIEXEC, "-np", "2", "--oversubscribe", *args]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=280,
                       env=dict(os.environ, **(env or {})))
    return p.returncode, p.stdout, p.stderr


def check(cond, message, out="", err=""):
    if not cond:
        print("FAIL:", message)
        print("--- stdout ---\n" + out + "\n--- stderr ---\n" + err)
        sys.exit(1)


def expect_ok(*args, env=None):
    rc, out, err = mpirun(*args, env=env)
    check(rc == 0, f"mpirun {' '.join(args)} exited {rc}", out, err)
    return out, err


def case_reshard():
    out, err = expect_ok(ARG, "reshard", "--distributed", "mpi", "--devices", "cpu:2",
                         "--shape", "96x64", "--from", ROWS, "--to", COLS, "--explain", "--run",
                         "--repeat", "2")
    check(out.count("Reshard f32[96,64]") == 1, "one header: process 0 alone prints", out, err)
    check(out.count("ReshardPlan") == 1, "one plan", out, err)
    check(re.search(r"^  from: mesh\{x=4\} P\(x,None\) on cpu:0\.\.cpu:3$", out, re.M),
          "the sharding spans both processes' devices (2 each)", out, err)
    check(out.count("verified bit-exact") == 1, "the gathered result verified once", out, err)
    check(re.search(r"^  memcpy floor \(2 threads\)", out, re.M),
          "the floor uses process 0's devices", out, err)
    # Bad input ends every process with exit code 2 and the message.
    rc, out, err = mpirun(ARG, "reshard", "--distributed", "mpc", "--shape", "8x8", "--from", ROWS,
                          "--to", COLS)
    check(rc != 0 and 'invalid --distributed "mpc": expected none or mpi' in err,
          "a bad --distributed is refused", out, err)
    # A start-up failure on one process alone (a malformed variable in process 1's environment)
    # ends every process within seconds, each naming it (before, process 0 waited in MPI forever).
    for variable, value, message in (
            ("TESSERA_TRANSFER_GUARD", "d2d=never", "TESSERA_TRANSFER_GUARD: invalid transfer"),
            ("TESSERA_MPI_TIMEOUT_S", "abc", 'TESSERA_MPI_TIMEOUT_S: invalid value "abc"')):
        wrapper = (f'if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then export {variable}="{value}"; fi; '
                   'exec "$@"')
        start = time.monotonic()
        rc, out, err = mpirun("sh", "-c", wrapper, "sh", ARG, "info", "--distributed", "mpi",
                              "--devices", "cpu:1")
        seconds = time.monotonic() - start
        check(rc != 0 and seconds < 60, f"{variable} on process 1 fails the job at once "
              f"(exit {rc} after {seconds:.0f} s)", out, err)
        check(f"cannot create the client: INVALID_ARGUMENT: {message}" in err,
              "process 1 names its own error", out, err)
        check("cannot create the client: INVALID_ARGUMENT: CreateClient: process 1 refused the "
              f"call: {message}" in err, "process 0 names process 1's error", out, err)


def case_trace():
    import json
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        out_path = os.path.join(tmp, "trace.json")
        out, err = expect_ok(ARG, "trace", "--distributed", "mpi", "--devices", "cpu:2",
                             "--shape", "96x64", "--from", ROWS, "--to", COLS, "--out", out_path)
        check(out.count("Reshard f32[96,64]") == 1, "one header: process 0 alone prints", out, err)
        check(not os.path.exists(out_path), "no process writes the shared name", out, err)
        for p in (0, 1):
            path = os.path.join(tmp, f"trace.process{p}.json")
            check(os.path.exists(path), f"process {p} wrote {path}", out, err)
            with open(path) as f:
                events = json.load(f)["traceEvents"]
            mine = {2 * p, 2 * p + 1}
            parts = [e for e in events if "peer_process" in e["args"]]
            for e in parts:
                a = e["args"]
                check(a["peer_process"] == 1 - p and a["ok"] and e["tid"] == (1 << 20) + 1 - p
                      and f"process {1 - p})" in e["name"], f"a part on its own row: {e}", out, err)
            # Rows -> columns: each of this process's devices gets a 24x16 f32 block (1536 bytes)
            # from each of the other process's 2 devices, and sends it 2: 4 parts each way.
            blocks = [e["args"] for e in parts if e["args"]["bytes"] == 1536]
            received = [a for a in blocks if a["dst_device"] in mine]
            sent = [a for a in blocks if a["src_device"] in mine]
            check(len(received) == 4 and len(sent) == 4 and
                  all(a["operation"] == "ReshardArrays" for a in blocks),
                  f"process {p} traced its 4 parts each way ({len(received)}, {len(sent)})",
                  out, err)
        check("received from another process" in out and "sent to another process" in out,
              "the summary counts the parts", out, err)


EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples")


def case_run():
    out, err = expect_ok(ARG, "run", os.path.join(EXAMPLES, "mlp2_megatron.mlir"),
                         "--distributed", "mpi", "--devices", "cpu:2", "--explain", "--repeat", "2")
    check(out.count("program 'main' on cpu:0..cpu:3 over 2 processes") == 1,
          "one table: process 0 alone prints, the program spans both processes", out, err)
    check(out.count("shard.all_reduce") == 1 and out.count("all_reduce of value") == 1,
          "the explanation shows the all-reduce once", out, err)
    check(re.search(r"outputs match the 1-device run: max relative error \S+ \(process 0's", out),
          "the result checked", out, err)
    # Every process must run the program: a bad input still ends every process.
    rc, out, err = mpirun(ARG, "run", os.path.join(EXAMPLES, "missing.mlir"), "--distributed",
                          "mpi")
    check(rc == 2 and "cannot read" in err, "a missing program is refused", out, err)


def case_demo():
    out, err = expect_ok(ARG, "demo", "--distributed", "mpi", "--devices", "cpu:2", "--quick")
    check(out.count("Tessera demo") == 1, "one tour: process 0 alone prints", out, err)
    check("cpu:2 on each of 2 processes" in out, "the description names the processes", out, err)
    for text in ("1. Devices and memories", "2. Round trips", "3. A sharded array", "4. Reshards",
                 "5. A sharded computation", "6. The transfer guard", "7. Timing summary",
                 "all bit-exact", "implicit reshard: refused", "explicit reshard: allowed",
                 "y matches the one-device run", "the same Execute is refused"):
        check(out.count(text) == 1, f"demo shows {text!r} once", out, err)
    for text in ("rows -> columns, f32[1024,1024]", "rows -> replicated, f32[1024,1024]",
                 "rows -> rows, devices reversed, f32[1024,1024]", "cpu:3   cpu   host (default)"):
        check(text in out, f"demo shows {text!r}", out, err)
    check("FAILED" not in out + err, "no failed round trip", out, err)


def case_c_api():
    out, err = expect_ok(ARG)
    check("FAIL" not in out + err, "no failure in any process", out, err)


PYTHON_CLIENT = r"""
import numpy as np, tessera
client = tessera.Client(cpu_devices=2, vulkan="off")
x = np.arange(32 * 16, dtype=np.float32).reshape(32, 16)
cols = client.put(x, "mesh{x=2} P(x,None)").reshard("mesh{x=2} P(None,x)")
assert len(client.devices) == 2 and np.array_equal(np.asarray(cols), x)
print("python client OK")
"""


def case_c_api_distributed():
    out, err = expect_ok(ARG)
    for p in (0, 1):
        check(out.count(f"distributed OK (process {p})") == 1,
              f"process {p} passed the multi-process C API checks", out, err)


PYTHON_DISTRIBUTED = r"""
import numpy as np, tessera
client = tessera.Client(cpu_devices=2, vulkan="off", distributed="mpi")
p = client.process_index
assert client.process_count == 2 and len(client.devices) == 4
assert [d.process_index for d in client.devices] == [0, 0, 1, 1]
assert [d.id for d in client.addressable_devices] == [2 * p, 2 * p + 1]
assert all(d.is_addressable == (d.process_index == p) for d in client.devices)
x = np.arange(96 * 64, dtype=np.float32).reshape(96, 64) * 0.25
rows = client.put(x, "mesh{x=4} P(x,None)")
cols = rows.reshard("mesh{x=4} P(None,x)")          # collective: both processes call it
shards = cols.addressable_shards                     # this process's columns, bit-exact
assert [s.device.id for s in shards] == [2 * p, 2 * p + 1]
for s in shards:
    assert np.array_equal(np.asarray(s.data), x[s.index])
try:
    np.asarray(cols)                                 # half of it is on the other process
    raise SystemExit("FAIL: a host copy of a non-addressable array succeeded")
except Exception as e:
    assert "this process cannot read devices" in str(e), str(e)
for q in (0, 1):  # collective: replicate onto each process's pair of devices in turn
    pair = [client.devices[2 * q], client.devices[2 * q + 1]]
    replica = cols.reshard(tessera.NamedSharding(tessera.Mesh(x=2, devices=pair), tessera.P()))
    if q == p:
        assert np.array_equal(np.asarray(replica), x)
if p == 1:
    with tessera.transfer_guard_device_to_device("disallow_explicit"):  # reshard is explicit
        try:
            rows.reshard("mesh{x=4} P(None,x)")
            raise SystemExit("FAIL: the guard let the reshard through")
        except tessera.TransferGuardError as e:
            assert "Disallowed device-to-device transfer" in str(e), str(e)
else:
    try:
        rows.reshard("mesh{x=4} P(None,x)")
        raise SystemExit("FAIL: process 1's refusal did not fail process 0's call")
    except tessera.TransferGuardError as e:
        assert "process 1 refused the call" in str(e), str(e)
print(f"python distributed OK (process {p})")
"""


def case_python_distributed():
    out, err = expect_ok(sys.executable, "-c", PYTHON_DISTRIBUTED,
                         env={"PYTHONPATH": ARG, "TESSERA_TRANSFER_GUARD": ""})
    for p in (0, 1):
        check(out.count(f"python distributed OK (process {p})") == 1,
              f"process {p} passed the multi-process Python checks", out, err)


def case_python():
    out, err = expect_ok(sys.executable, "-c", PYTHON_CLIENT,
                         env={"PYTHONPATH": ARG, "TESSERA_TRANSFER_GUARD": ""})
    check(out.count("python client OK") == 2, "a client in each process", out, err)


{"reshard": case_reshard, "trace": case_trace, "run": case_run, "demo": case_demo, "c_api": case_c_api,
 "c_api_distributed": case_c_api_distributed, "python": case_python,
 "python_distributed": case_python_distributed}[CASE]()
print("PASS")
