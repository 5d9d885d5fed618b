#!/usr/bin/env python3
"""Times the same reshards and programs in JAX (8 CPU devices) and in Tessera, in one run.

    python3 benchmarks/jax_compare.py [--size 4096] [--devices 8] [--repeat 7] \
        [--tessera build/benchmarks/ifrt/reshard_benchmark] \
        [--tessera-programs build/benchmarks/ifrt/program_benchmark] [--batch 256] [--width 2048]

Reshards: JAX's device_put against Tessera's ReshardArrays. Programs: jax.jit with in_shardings /
out_shardings against Tessera's compiler and LoadedExecutable::Execute, for
  mlp          relu(x @ w + b), x and y rows-sharded, w and b replicated
  megatron     relu(x @ w1 + b1) @ w2, w1 column-, b1 and w2 row-sharded, x and y replicated
  elementwise  x * 2 + 1 over f32[size, size] rows-sharded (Tessera's row adds a memcpy floor)
  latency      x * 2 + 1 over f32[8, 8]: the fixed cost of one call
An empty --tessera or --tessera-programs skips that part.

JAX is only a point of comparison (`pip install jax`); nothing in Tessera's build or tests needs it.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import time


def time_jax(size, devices, repeat):
    os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={devices}"
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax
    import numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

    devs = jax.devices()[:devices]
    mx = 1
    while mx * mx * 2 <= devices:
        mx *= 2
    mesh1 = Mesh(np.array(devs), ("x",))
    mesh1_rev = Mesh(np.array(devs[::-1]), ("x",))
    mesh2 = Mesh(np.array(devs).reshape(mx, devices // mx), ("x", "y"))
    host = np.arange(size * size, dtype=np.float32).reshape(size, size)

    def median_time(fn):
        fn()
        times = []
        for _ in range(repeat):
            t = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t)
        return statistics.median(times)

    def reshard(src_sharding, dst_sharding):
        x = jax.device_put(host, src_sharding).block_until_ready()
        return median_time(lambda: jax.device_put(x, dst_sharding).block_until_ready())

    rows = NamedSharding(mesh1, P("x", None))
    results = {
        "rows -> columns": reshard(rows, NamedSharding(mesh1, P(None, "x"))),
        "rows -> replicated": reshard(rows, NamedSharding(mesh1, P())),
        "2D transpose P(x,y)->P(y,x)": reshard(NamedSharding(mesh2, P("x", "y")),
                                               NamedSharding(mesh2, P("y", "x"))),
        "rows, reversed device order": reshard(rows, NamedSharding(mesh1_rev, P("x", None))),
        "host -> row shards": median_time(lambda: jax.device_put(host, rows).block_until_ready()),
    }
    # A fresh array each time: JAX caches an array's host copy after the first read.
    reads = []
    for _ in range(repeat + 1):
        fresh = jax.device_put(host, rows).block_until_ready()
        t = time.perf_counter()
        np.asarray(fresh)
        reads.append(time.perf_counter() - t)
    results["row shards -> host"] = statistics.median(reads[1:])
    small = jax.device_put(np.zeros((8, 8), np.float32), rows).block_until_ready()
    cols = NamedSharding(mesh1, P(None, "x"))
    results["8x8 rows -> columns (latency)"] = median_time(
        lambda: jax.device_put(small, cols).block_until_ready())
    return jax.__version__, results


def time_jax_programs(batch, width, size, devices, repeat):
    os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={devices}"
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax
    import numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

    mesh = Mesh(np.array(jax.devices()[:devices]), ("x",))
    sh = lambda *spec: NamedSharding(mesh, P(*spec))
    rng = np.random.default_rng(0)
    rand = lambda *shape: rng.uniform(-1, 1, shape).astype(np.float32)

    def run(fn, in_specs, out_spec, host_args):
        f = jax.jit(fn, in_shardings=tuple(in_specs), out_shardings=out_spec)
        args = [jax.device_put(a, s).block_until_ready() for a, s in zip(host_args, in_specs)]
        t = time.perf_counter()
        f.lower(*args).compile()
        compile_s = time.perf_counter() - t
        f(*args).block_until_ready()
        times = []
        for _ in range(repeat):
            t = time.perf_counter()
            f(*args).block_until_ready()
            times.append(time.perf_counter() - t)
        return statistics.median(times), compile_s

    b, n = batch, width
    rows, repl = sh("x", None), sh()
    results = {
        "mlp": run(lambda x, w, bias: jax.nn.relu(x @ w + bias), [rows, repl, repl], rows,
                   [rand(b, n), rand(n, n), rand(n)]),
        "megatron": run(lambda x, w1, b1, w2: jax.nn.relu(x @ w1 + b1) @ w2,
                        [repl, sh(None, "x"), sh("x"), sh("x", None)], repl,
                        [rand(b, n), rand(n, n), rand(n), rand(n, n)]),
        "elementwise": run(lambda x: x * 2 + 1, [rows], rows, [rand(size, size)]),
        "latency": run(lambda x: x * 2 + 1, [rows], rows, [rand(8 * ((devices + 7) // 8), 8)]),
    }
    return jax.__version__, results


def time_tessera_programs(binary, batch, width, size, devices, repeat):
    out = subprocess.run([binary, "--batch", str(batch), "--width", str(width), "--size", str(size),
                          "--devices", str(devices), "--repeat", str(repeat)],
                         check=True, capture_output=True, text=True).stdout
    results = {}
    for line in out.splitlines():
        m = re.match(r"^(\S+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+|-)\s+([\d.]+|-)$", line)
        if m:
            floor = None if m.group(5) == "-" else float(m.group(5)) / 1e3
            results[m.group(1)] = (float(m.group(2)) / 1e3, float(m.group(4)) / 1e3, floor)
    return results


def print_programs(args):
    tessera = time_tessera_programs(args.tessera_programs, args.batch, args.width, args.size,
                                    args.devices, args.repeat)
    version, jax_results = time_jax_programs(args.batch, args.width, args.size, args.devices,
                                             args.repeat)
    print(f"programs: batch {args.batch}, width {args.width} f32, elementwise f32[{args.size},"
          f"{args.size}]; {args.devices} CPU devices, median of {args.repeat}; JAX {version} jit; "
          f"{os.cpu_count()} cores")
    print(f"{'program':14} {'JAX ms':>9} {'Tessera ms':>11} {'Tessera/JAX':>12} "
          f"{'memcpy floor ms':>16} {'Tessera/floor':>14} {'compile ms JAX/Tessera':>23}")
    for case, (jax_s, jax_compile_s) in jax_results.items():
        t = tessera.get(case)
        if t is None:
            print(f"{case:14} {jax_s * 1e3:9.3f} {'-':>11}")
            continue
        floor = f"{t[2] * 1e3:16.3f} {t[0] / t[2]:13.2f}x" if t[2] else f"{'-':>16} {'-':>14}"
        print(f"{case:14} {jax_s * 1e3:9.3f} {t[0] * 1e3:11.3f} {t[0] / jax_s:11.2f}x {floor} "
              f"{jax_compile_s * 1e3:11.0f} / {t[1] * 1e3:.0f}")


def time_tessera(binary, size, devices, repeat):
    out = subprocess.run([binary, "--size", str(size), "--devices", str(devices), "--repeat",
                          str(repeat)], check=True, capture_output=True, text=True).stdout
    results = {}
    for line in out.splitlines():
        m = re.match(r"^(.+?)\s{2,}(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)$", line)
        if m:
            results[m.group(1).strip()] = (float(m.group(3)) / 1e3, float(m.group(6)) / 1e3)
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--devices", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--tessera", default="build/benchmarks/ifrt/reshard_benchmark")
    ap.add_argument("--tessera-programs", default="build/benchmarks/ifrt/program_benchmark")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--width", type=int, default=2048)
    args = ap.parse_args()
    if args.tessera_programs:
        print_programs(args)
    if not args.tessera:
        return 0
    print()
    tessera = time_tessera(args.tessera, args.size, args.devices, args.repeat)
    version, jax_results = time_jax(args.size, args.devices, args.repeat)
    mib = args.size * args.size * 4 / 2**20
    print(f"f32[{args.size},{args.size}] ({mib:.0f} MiB), {args.devices} CPU devices, "
          f"median of {args.repeat}; JAX {version}; {os.cpu_count()} cores")
    print(f"{'case':32} {'JAX ms':>10} {'Tessera ms':>11} {'speed-up':>9} {'memcpy floor ms':>16}")
    for case, jax_s in jax_results.items():
        t = tessera.get(case)
        if t is None:
            print(f"{case:32} {jax_s * 1e3:10.3f} {'-':>11}")
            continue
        print(f"{case:32} {jax_s * 1e3:10.3f} {t[0] * 1e3:11.3f} {jax_s / t[0]:8.1f}x "
              f"{t[1] * 1e3:16.3f}")


if __name__ == "__main__":
    sys.exit(main())
