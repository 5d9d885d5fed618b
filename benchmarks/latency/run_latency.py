#!/usr/bin/env python3
"""Runs Tessera's latency benchmark and the same cases in JAX, in one run, side by side.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python3 benchmarks/latency/run_latency.py \\
        [--tessera build/benchmarks/latency/latency_benchmark] [--max-bytes 67108864] \\
        [--min-seconds 0.2] [--csv latency.csv] [--no-jax]

Cases (see latency_benchmark.cc): the targets (reshard_8x8, reshard_8x8_log, h2d_8xf32, d2h_8xf32,
execute_tiny_4dev) and the sweep (reshard: f32[n,n] rows -> columns over 8 CPU devices; h2d / d2h:
u8[bytes] to / from one CPU device). JAX runs on 8 forced host devices
(XLA_FLAGS=--xla_force_host_platform_device_count=8, set here before jax is imported) with
device_put(...).block_until_ready() for reshards and uploads, np.copyto(buffer, fresh array) for
downloads (the bytes land in the caller's buffer, as with CopyToHostBuffer; np.asarray alone
returns a view of a CPU array and copies nothing), and jax.jit for the program.
Each case runs once to warm up, then until --min-seconds have passed (5 to 20000 times).

Prints one table (medians in microseconds, Tessera / JAX) and the crossover points, and writes
the CSV: op,bytes,tessera_median_us,tessera_best_us,jax_median_us,jax_best_us (empty where a side
did not run). benchmarks/latency/plot_latency.py turns it into a log-log plot.

JAX is only a point of comparison (`pip install jax`); nothing in Tessera's build or tests needs it.
"""
import argparse
import csv
import io
import os
import statistics
import subprocess
import sys
import time


def time_case(fn, min_seconds):
    """Median and best of fn() in microseconds, after one warm-up call."""
    fn()
    times = []
    begin = time.perf_counter()
    while len(times) < 5 or (len(times) < 20000 and time.perf_counter() - begin < min_seconds):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1e6)
    return statistics.median(times), min(times)


def time_jax(max_bytes, min_seconds):
    os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax
    import numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

    devs = jax.devices()[:8]
    mesh = Mesh(np.array(devs), ("x",))
    rows, cols = NamedSharding(mesh, P("x", None)), NamedSharding(mesh, P(None, "x"))
    results = {}

    def reshard(op, side):
        x = jax.device_put(np.arange(side * side, dtype=np.float32).reshape(side, side), rows)
        x.block_until_ready()
        results[(op, side * side * 4)] = time_case(
            lambda: jax.device_put(x, cols).block_until_ready(), min_seconds)

    def host_transfers(h2d, d2h, host):
        results[(h2d, host.nbytes)] = time_case(
            lambda: jax.device_put(host, devs[0]).block_until_ready(), min_seconds)
        # Into a caller's buffer, as CopyToHostBuffer does (np.asarray alone would return a view
        # of the CPU buffer, copying nothing); a fresh array per timed read, since JAX caches an
        # array's host copy after its first read.
        back = np.empty_like(host)
        reads = []
        begin = time.perf_counter()
        while len(reads) < 6 or (len(reads) < 20000 and time.perf_counter() - begin < min_seconds):
            a = jax.device_put(host, devs[0]).block_until_ready()
            t = time.perf_counter()
            np.copyto(back, a)
            reads.append((time.perf_counter() - t) * 1e6)
        reads = reads[1:]
        results[(d2h, host.nbytes)] = (statistics.median(reads), min(reads))

    # Targets.
    reshard("reshard_8x8", 8)
    host_transfers("h2d_8xf32", "d2h_8xf32", np.arange(8, dtype=np.float32))
    with jax.transfer_guard("log"):
        reshard("reshard_8x8_log", 8)
    mesh4 = Mesh(np.array(devs[:4]), ("x",))
    rows4 = NamedSharding(mesh4, P("x", None))
    f = jax.jit(lambda x: x * 2 + 1, in_shardings=rows4, out_shardings=rows4)
    x4 = jax.device_put(np.ones((8, 8), np.float32), rows4).block_until_ready()
    results[("execute_tiny_4dev", 256)] = time_case(lambda: f(x4).block_until_ready(), min_seconds)
    # Sweep.
    side = 8
    while side * side * 4 <= max_bytes:
        reshard("reshard", side)
        side *= 2
    n = 1
    while n <= max_bytes:
        host_transfers("h2d", "d2h", np.full(n, 7, np.uint8))
        n *= 4
    return jax.__version__, results


def run_tessera(binary, max_bytes, min_seconds):
    out = subprocess.run([binary, "--targets", "--sweep", "--max-bytes", str(max_bytes),
                          "--min-seconds", str(min_seconds)],
                         check=True, capture_output=True, text=True).stdout
    results = {}
    for row in csv.DictReader(io.StringIO(out)):
        results[(row["op"], int(row["bytes"]))] = (float(row["median_us"]), float(row["best_us"]))
    return results


def crossovers(rows):
    """Per sweep op: the size where the fixed cost gives way (the median passes twice the smallest
    size's) and the sizes where the faster side changes."""
    lines = []
    for op in ("reshard", "h2d", "d2h"):
        series = [r for r in rows if r[0] == op]
        for side, col in (("Tessera", 2), ("JAX", 4)):
            pts = [(r[1], r[col]) for r in series if r[col] != ""]
            if not pts:
                continue
            floor = pts[0][1]
            knee = next((b for b, t in pts if t > 2 * floor), None)
            lines.append(f"{op:8s} {side:8s} fixed cost {floor:9.2f} us; "
                         f"doubles by {fmt_bytes(knee) if knee else '-'}")
        both = [(r[1], r[2] < r[4]) for r in series if r[2] != "" and r[4] != ""]
        flips = [both[i][0] for i in range(1, len(both)) if both[i][1] != both[i - 1][1]]
        lead = "Tessera" if both and both[0][1] else "JAX"
        lines.append(f"{op:8s} faster at {fmt_bytes(both[0][0]) if both else '-'}: {lead}; "
                     f"the lead changes at: {', '.join(fmt_bytes(b) for b in flips) or 'never'}")
    return lines


def fmt_bytes(n):
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:g} {unit}"
    return f"{n} B"


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser()
    parser.add_argument("--tessera", default=os.path.join(
        here, "..", "..", "build", "benchmarks", "latency", "latency_benchmark"))
    parser.add_argument("--max-bytes", type=int, default=64 << 20)
    parser.add_argument("--min-seconds", type=float, default=0.2)
    parser.add_argument("--csv", default="latency.csv")
    parser.add_argument("--no-jax", action="store_true")
    args = parser.parse_args()

    tessera = run_tessera(args.tessera, args.max_bytes, args.min_seconds)
    jax_version, jax_results = ("-", {})
    if not args.no_jax:
        try:
            jax_version, jax_results = time_jax(args.max_bytes, args.min_seconds)
        except ImportError as e:
            print(f"JAX not available ({e}); Tessera only", file=sys.stderr)
    keys = list(tessera) + [k for k in jax_results if k not in tessera]
    rows = []
    for op, nbytes in keys:
        t = tessera.get((op, nbytes), ("", ""))
        j = jax_results.get((op, nbytes), ("", ""))
        rows.append((op, nbytes, t[0], t[1], j[0], j[1]))
    with open(args.csv, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["op", "bytes", "tessera_median_us", "tessera_best_us", "jax_median_us",
                    "jax_best_us"])
        for r in rows:
            w.writerow([r[0], r[1]] + [f"{v:.3f}" if v != "" else "" for v in r[2:]])
    print(f"Median microseconds, one run (JAX {jax_version}); CSV: {args.csv}")
    print(f"{'op':18s} {'bytes':>10s} {'Tessera':>10s} {'JAX':>10s} {'JAX/Tessera':>11s}")
    for op, nbytes, tm, _, jm, _ in rows:
        ratio = f"{jm / tm:10.2f}x" if tm != "" and jm != "" else ""
        tm_s = f"{tm:10.2f}" if tm != "" else f"{'-':>10s}"
        jm_s = f"{jm:10.2f}" if jm != "" else f"{'-':>10s}"
        print(f"{op:18s} {fmt_bytes(nbytes):>10s} {tm_s} {jm_s} {ratio:>11s}")
    print()
    for line in crossovers(rows):
        print(line)


if __name__ == "__main__":
    main()
