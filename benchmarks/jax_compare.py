#!/usr/bin/env python3
"""Times the same reshards and programs in JAX (8 CPU devices) and in Tessera, in one run.

    python3 benchmarks/jax_compare.py [--size 4096] [--devices 8] [--repeat 7] [--rounds 3] \
        [--tessera build/benchmarks/ifrt/reshard_benchmark] \
        [--tessera-programs build/benchmarks/ifrt/program_benchmark] [--batch 256] [--width 2048] \
        [--busy 1]

Reshards: JAX's device_put against Tessera's ReshardArrays. Programs: jax.jit with in_shardings /
out_shardings against Tessera's compiler and LoadedExecutable::Execute, for
  mlp          relu(x @ w + b), x and y rows-sharded, w and b replicated
  megatron     relu(x @ w1 + b1) @ w2, w1 column-, b1 and w2 row-sharded, x and y replicated
  elementwise  x * 2 + 1 over f32[size, size] rows-sharded (Tessera's row adds a memcpy floor)
  latency      x * 2 + 1 over f32[8, 8]: the fixed cost of one call
Programs JAX lowers (--tessera-python, the build's Python package): the same mlp and megatron
lowered by jax.jit and compiled by Tessera from their StableHLO, against the hand-written linalg
programs of program_benchmark, both run by Tessera from Python in turns (--repeat calls each, per
round); with each one's compile time and JAX's. Then (unless --no-transformer) a transformer
block's forward + backward (--block-batch 8, --block-seq 128, --block-width 512, --heads 8, hidden
4x the width), data-parallel and Megatron: jax.jit against Tessera running the same lowering, with
both compile times.
An empty --tessera, --tessera-programs or --tessera-python skips that part.
--busy N runs N busy loops (processes spinning on a core each) beside the whole run, both runtimes
alike: how each degrades when another job holds cores (--busy 1 on a 2-core machine: one core
left for 8 devices).

The two runtimes take turns: each of --rounds rounds times every case in Tessera (a fresh benchmark
process, median of --repeat) and then in JAX (median of --repeat, compiled once). A table shows the
median over rounds of each runtime's time, and of the per-round ratio with its range: on a shared
machine a burst of load then lands on both sides of a ratio rather than on one runtime.

JAX is a point of comparison and, for the lowered programs, their front end (the build's venv has it
for the tests); nothing in Tessera's C++ library needs it.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import time


def jax_reshard_cases(size, devices, repeat):
    """The reshard cases as {name: fn() -> seconds}, each timing one median of `repeat`."""
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
        return lambda: median_time(lambda: jax.device_put(x, dst_sharding).block_until_ready())

    def read_to_host():
        # A fresh array each time: JAX caches an array's host copy after the first read.
        reads = []
        for _ in range(repeat + 1):
            fresh = jax.device_put(host, rows).block_until_ready()
            t = time.perf_counter()
            np.asarray(fresh)
            reads.append(time.perf_counter() - t)
        return statistics.median(reads[1:])

    rows = NamedSharding(mesh1, P("x", None))
    cols = NamedSharding(mesh1, P(None, "x"))
    small = jax.device_put(np.zeros((8, 8), np.float32), rows).block_until_ready()
    cases = {
        "rows -> columns": reshard(rows, cols),
        "rows -> replicated": reshard(rows, NamedSharding(mesh1, P())),
        "2D transpose P(x,y)->P(y,x)": reshard(NamedSharding(mesh2, P("x", "y")),
                                               NamedSharding(mesh2, P("y", "x"))),
        "rows, reversed device order": reshard(rows, NamedSharding(mesh1_rev, P("x", None))),
        "host -> row shards": lambda: median_time(
            lambda: jax.device_put(host, rows).block_until_ready()),
        "row shards -> host": read_to_host,
        "8x8 rows -> columns (latency)": lambda: median_time(
            lambda: jax.device_put(small, cols).block_until_ready()),
    }
    return jax.__version__, cases


def jax_program_cases(batch, width, size, devices, repeat):
    """The programs as {name: (fn() -> seconds, compile seconds)}; fn times one median of `repeat`."""
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

        def median_time():
            times = []
            for _ in range(repeat):
                t = time.perf_counter()
                f(*args).block_until_ready()
                times.append(time.perf_counter() - t)
            return statistics.median(times)

        return median_time, compile_s

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


def take_turns(rounds, run_tessera, jax_cases):
    """{case: (JAX seconds per round, Tessera's results per round or None where it lacks the case)},
    Tessera first in each round."""
    jax_times, tessera_results = {}, {}
    for _ in range(rounds):
        tessera = run_tessera()
        for case, time_jax in jax_cases.items():
            tessera_results.setdefault(case, []).append(tessera.get(case))
            jax_times.setdefault(case, []).append(time_jax())
    return {case: (times, None if None in tessera_results[case] else tessera_results[case])
            for case, times in jax_times.items()}


def table_rows(turns, case_width, jax_width):
    """(case, row start, JAX seconds per round, Tessera's results per round) for each case
    Tessera has; a case it lacks is printed as a row of its own with a dash."""
    for case, (jax_times, tessera) in turns.items():
        row = f"{case:{case_width}} {median_ms(jax_times):{jax_width}.3f}"
        if tessera is None:
            print(f"{row} {'-':>11}")
        else:
            yield case, row, jax_times, tessera


def median_ms(values):
    return statistics.median(values) * 1e3


def ratio_text(ratios, width):
    """The median ratio with the rounds' range, e.g. "0.82x (0.79-0.90)"."""
    if len(ratios) == 1:
        return f"{ratios[0]:.2f}x".rjust(width)
    return f"{statistics.median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f})".rjust(width)


def print_programs(args):
    version, cases = jax_program_cases(args.batch, args.width, args.size, args.devices,
                                       args.repeat)
    turns = take_turns(
        args.rounds, lambda: time_tessera_programs(args.tessera_programs, args.batch, args.width,
                                                   args.size, args.devices, args.repeat),
        {case: fn for case, (fn, _) in cases.items()})
    print(f"programs: batch {args.batch}, width {args.width} f32, elementwise f32[{args.size},"
          f"{args.size}]; {args.devices} CPU devices; median of {args.repeat} calls a round, "
          f"{args.rounds} rounds taking turns; JAX {version} jit; {os.cpu_count()} cores")
    print(f"{'program':14} {'JAX ms':>9} {'Tessera ms':>11} {'Tessera/JAX (range)':>22} "
          f"{'memcpy floor ms':>16} {'Tessera/floor':>14} {'compile ms JAX/Tessera':>23}")
    for case, row, jax_times, tessera in table_rows(turns, 14, 9):
        # Tessera's results: (seconds, compile seconds, memcpy floor seconds or None).
        floor = (f"{median_ms(t[2] for t in tessera):16.3f} "
                 f"{statistics.median(t[0] / t[2] for t in tessera):13.2f}x"
                 if all(t[2] for t in tessera) else f"{'-':>16} {'-':>14}")
        ratios = [t[0] / j for t, j in zip(tessera, jax_times)]
        print(f"{row} {median_ms(t[0] for t in tessera):11.3f} {ratio_text(ratios, 22)} {floor} "
              f"{cases[case][1] * 1e3:11.0f} / {median_ms(t[1] for t in tessera):.0f}")


def print_reshards(args):
    version, cases = jax_reshard_cases(args.size, args.devices, args.repeat)
    turns = take_turns(args.rounds,
                       lambda: time_tessera(args.tessera, args.size, args.devices, args.repeat),
                       cases)
    mib = args.size * args.size * 4 / 2**20
    print(f"f32[{args.size},{args.size}] ({mib:.0f} MiB), {args.devices} CPU devices; median of "
          f"{args.repeat} a round, {args.rounds} rounds taking turns; JAX {version}; "
          f"{os.cpu_count()} cores")
    print(f"{'case':32} {'JAX ms':>10} {'Tessera ms':>11} {'speed-up (range)':>20} "
          f"{'memcpy floor ms':>16}")
    for _, row, jax_times, tessera in table_rows(turns, 32, 10):
        # Tessera's results: (seconds, memcpy floor seconds).
        ratios = [j / t[0] for t, j in zip(tessera, jax_times)]
        print(f"{row} {median_ms(t[0] for t in tessera):11.3f} {ratio_text(ratios, 20)} "
              f"{median_ms(t[1] for t in tessera):16.3f}")


LINALG_MLP = """
func.func @main(%x: tensor<{B}x{N}xf32> {{tessera.sharding = "mesh{{x={D}}} P(x,None)"}},
                %w: tensor<{N}x{N}xf32> {{tessera.sharding = "mesh{{x={D}}} P()"}},
                %b: tensor<{N}xf32> {{tessera.sharding = "mesh{{x={D}}} P()"}})
    -> (tensor<{B}x{N}xf32> {{tessera.sharding = "mesh{{x={D}}} P(x,None)"}}) {{
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<{B}x{N}xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<{B}x{N}xf32>) -> tensor<{B}x{N}xf32>
  %h = linalg.matmul ins(%x, %w : tensor<{B}x{N}xf32>, tensor<{N}x{N}xf32>)
                     outs(%acc : tensor<{B}x{N}xf32>) -> tensor<{B}x{N}xf32>
  %bias = linalg.broadcast ins(%b : tensor<{N}xf32>) outs(%e : tensor<{B}x{N}xf32>) dimensions = [0]
  %sum = arith.addf %h, %bias : tensor<{B}x{N}xf32>
  %y = arith.maximumf %sum, %acc : tensor<{B}x{N}xf32>
  return %y : tensor<{B}x{N}xf32>
}}
"""

LINALG_MEGATRON = """
func.func @main(%x: tensor<{B}x{N}xf32> {{tessera.sharding = "mesh{{x={D}}} P()"}},
                %w1: tensor<{N}x{N}xf32> {{tessera.sharding = "mesh{{x={D}}} P(None,x)"}},
                %b1: tensor<{N}xf32> {{tessera.sharding = "mesh{{x={D}}} P(x)"}},
                %w2: tensor<{N}x{N}xf32> {{tessera.sharding = "mesh{{x={D}}} P(x,None)"}})
    -> (tensor<{B}x{N}xf32> {{tessera.sharding = "mesh{{x={D}}} P()"}}) {{
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<{B}x{N}xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<{B}x{N}xf32>) -> tensor<{B}x{N}xf32>
  %mm1 = linalg.matmul ins(%x, %w1 : tensor<{B}x{N}xf32>, tensor<{N}x{N}xf32>)
                       outs(%acc : tensor<{B}x{N}xf32>) -> tensor<{B}x{N}xf32>
  %bias = linalg.broadcast ins(%b1 : tensor<{N}xf32>) outs(%e : tensor<{B}x{N}xf32>) dimensions = [0]
  %pre = arith.addf %mm1, %bias : tensor<{B}x{N}xf32>
  %h = arith.maximumf %pre, %acc : tensor<{B}x{N}xf32>
  %y = linalg.matmul ins(%h, %w2 : tensor<{B}x{N}xf32>, tensor<{N}x{N}xf32>)
                     outs(%acc : tensor<{B}x{N}xf32>) -> tensor<{B}x{N}xf32>
  return %y : tensor<{B}x{N}xf32>
}}
"""


def print_lowered(args):
    """JAX-lowered programs against the hand-written linalg ones, both on Tessera."""
    os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={args.devices}"
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    sys.path.insert(0, args.tessera_python)
    import jax
    import numpy as np
    import tessera
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

    b, n, d = args.batch, args.width, args.devices
    mesh = Mesh(np.array(jax.devices()[:d]), ("x",))
    sh = lambda *spec: NamedSharding(mesh, P(*spec))  # noqa: E731
    rng = np.random.default_rng(0)
    rand = lambda *shape: rng.uniform(-1, 1, shape).astype(np.float32)  # noqa: E731
    client = tessera.Client(cpu_devices=d, vulkan="off")
    cases = {
        "mlp": (lambda x, w, bias: jax.nn.relu(x @ w + bias), [("x", None), (), ()], ("x", None),
                [rand(b, n), rand(n, n), rand(n)], LINALG_MLP),
        "megatron": (lambda x, w1, b1, w2: jax.nn.relu(x @ w1 + b1) @ w2,
                     [(), (None, "x"), ("x",), ("x", None)], (),
                     [rand(b, n), rand(n, n), rand(n), rand(n, n)], LINALG_MEGATRON),
        # The same Megatron MLP written per device: shard_map's body and its psum.
        "shard_map": (jax.shard_map(
            lambda x, w1, b1, w2: jax.lax.psum(jax.nn.relu(x @ w1 + b1) @ w2, "x"), mesh=mesh,
            in_specs=(P(), P(None, "x"), P("x"), P("x", None)), out_specs=P()),
                      [(), (None, "x"), ("x",), ("x", None)], (),
                      [rand(b, n), rand(n, n), rand(n), rand(n, n)], LINALG_MEGATRON),
    }

    def timed(f):
        t = time.perf_counter()
        out = f()
        return out, time.perf_counter() - t

    def median_call(exe, arrays):
        times = []
        for _ in range(args.repeat):
            t = time.perf_counter()
            for o in exe.execute(arrays):
                o.block_until_ready()
            times.append(time.perf_counter() - t)
        return statistics.median(times)

    print(f"programs JAX lowers, on Tessera: batch {b}, width {n} f32; {d} CPU devices; median of "
          f"{args.repeat} calls a round, {args.rounds} rounds taking turns; JAX {jax.__version__}; "
          f"{os.cpu_count()} cores")
    print(f"{'program':10} {'lowered ms':>11} {'linalg ms':>10} {'lowered/linalg (range)':>24} "
          f"{'compile ms JAX / lowered / linalg':>34}")
    for name, (fn, in_specs, out_spec, host, linalg) in cases.items():
        jitted = jax.jit(fn, in_shardings=tuple(sh(*s) for s in in_specs),
                         out_shardings=sh(*out_spec))
        lowered = jitted.lower(*host)
        _, jax_compile = timed(lambda: lowered.compile())
        exe_lowered, lowered_compile = timed(lambda: client.compile(lowered))
        exe_linalg, linalg_compile = timed(
            lambda: client.compile(linalg.format(B=b, N=n, D=d)))
        arrays = [client.put(a, f"mesh{{x={d}}} P({','.join(str(x) for x in s)})")
                  for a, s in zip(host, in_specs)]
        ours, theirs = [], []
        for _ in range(args.rounds):
            ours.append(median_call(exe_lowered, arrays))
            theirs.append(median_call(exe_linalg, arrays))
        ratios = [o / t for o, t in zip(ours, theirs)]
        print(f"{name:10} {median_ms(ours):11.3f} {median_ms(theirs):10.3f} "
              f"{ratio_text(ratios, 24)} {jax_compile * 1e3:13.0f} / {lowered_compile * 1e3:.0f} / "
              f"{linalg_compile * 1e3:.0f}")


def transformer_block(x, wq, wk, wv, wo, w1, w2, g, b, heads):
    import jax
    import jax.numpy as jnp

    def layernorm(t):
        m = t.mean(-1, keepdims=True)
        v = ((t - m) ** 2).mean(-1, keepdims=True)
        return (t - m) * jax.lax.rsqrt(v + 1e-5) * g + b

    def attention(t):
        bs, s, d = t.shape
        split = lambda u: u.reshape(bs, s, heads, d // heads)  # noqa: E731
        q, k, v = split(t @ wq), split(t @ wk), split(t @ wv)
        scores = jnp.einsum("bshd,bthd->bhst", q, k) / jnp.sqrt(d // heads).astype(t.dtype)
        o = jnp.einsum("bhst,bthd->bshd", jax.nn.softmax(scores, -1), v).reshape(bs, s, d)
        return o @ wo

    h = x + attention(layernorm(x))
    return h + jax.nn.gelu(layernorm(h) @ w1) @ w2


def print_transformer(args):
    """A transformer block's forward + backward (the gradients of a loss), jax.jit against the same
    lowered function on Tessera, data-parallel and Megatron, rounds taking turns."""
    os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={args.devices}"
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    sys.path.insert(0, args.tessera_python)
    import jax
    import jax.numpy as jnp
    import numpy as np
    import tessera
    from jax.sharding import AxisType, NamedSharding, PartitionSpec as P

    b, s, d, heads, devices = args.block_batch, args.block_seq, args.block_width, args.heads, \
        args.devices
    hidden = 4 * d
    rng = np.random.default_rng(0)
    rand = lambda scale, *shape: (scale * rng.standard_normal(shape)).astype(np.float32)  # noqa
    params = (*[rand(d ** -0.5, d, d) for _ in range(4)], rand(d ** -0.5, d, hidden),
              rand(hidden ** -0.5, hidden, d), 1.0 + rand(0.1, d), rand(0.1, d))
    x = rand(1.0, b, s, d)

    def fwd_bwd(params, x):
        loss = lambda p: jnp.mean(transformer_block(x, *p, heads=heads) ** 2)  # noqa: E731
        return jax.grad(loss)(params)

    # data-parallel: the batch over every device, weights replicated; Megatron: the heads and the
    # MLP's hidden units over every device (wq, wk, wv, w1 by columns, wo, w2 by rows), x
    # replicated.
    col, row, rep = P(None, "x"), P("x", None), P()
    cases = {
        "data-parallel": (P("x", None, None), (rep,) * 8),
        "megatron": (P(None, None, None), (col, col, col, row, col, row, rep, rep)),
    }
    client = tessera.Client(cpu_devices=devices, vulkan="off")
    mesh = jax.make_mesh((devices,), ("x",), axis_types=(AxisType.Auto,))

    def spec_text(spec, ndim):
        dims = list(spec) + [None] * (ndim - len(spec))
        return f"mesh{{x={devices}}} P({','.join(str(e) for e in dims)})"

    def median_call(call):
        times = []
        for _ in range(args.repeat):
            t = time.perf_counter()
            call()
            times.append(time.perf_counter() - t)
        return statistics.median(times)

    print(f"transformer block forward + backward: batch {b}, sequence {s}, width {d}, {heads} "
          f"heads, hidden {hidden}, f32; {devices} CPU devices; median of {args.repeat} calls a "
          f"round, {args.rounds} rounds taking turns; JAX {jax.__version__}; {os.cpu_count()} cores")
    print(f"{'sharding':14} {'Tessera ms':>11} {'JAX ms':>9} {'Tessera/JAX (range)':>22} "
          f"{'compile ms JAX / Tessera':>26}")
    for name, (x_spec, p_specs) in cases.items():
        named = lambda spec: NamedSharding(mesh, spec)  # noqa: E731
        jitted = jax.jit(fwd_bwd, in_shardings=(tuple(map(named, p_specs)), named(x_spec)),
                         out_shardings=tuple(map(named, p_specs)))
        lowered = jitted.lower(params, x)
        t = time.perf_counter()
        compiled = lowered.compile()
        jax_compile = time.perf_counter() - t
        t = time.perf_counter()
        exe = client.compile(lowered)
        ours_compile = time.perf_counter() - t
        jax_args = (tuple(jax.device_put(p, named(sp)) for p, sp in zip(params, p_specs)),
                    jax.device_put(x, named(x_spec)))
        arrays = [client.put(p, spec_text(sp, p.ndim)) for p, sp in zip(params, p_specs)]
        arrays.append(client.put(x, spec_text(x_spec, 3)))
        # The two agree before they are timed.
        want = compiled(*jax_args)
        got = exe.execute(arrays)
        for g_ours, g_jax in zip(got, want):
            np.testing.assert_allclose(np.asarray(g_ours.block_until_ready()), np.asarray(g_jax),
                                       rtol=2e-3, atol=1e-5)
        ours, theirs = [], []
        for _ in range(args.rounds):
            ours.append(median_call(lambda: [o.block_until_ready() for o in exe.execute(arrays)]))
            theirs.append(median_call(lambda: jax.block_until_ready(compiled(*jax_args))))
        ratios = [o / t for o, t in zip(ours, theirs)]
        print(f"{name:14} {median_ms(ours):11.3f} {median_ms(theirs):9.3f} "
              f"{ratio_text(ratios, 22)} {jax_compile * 1e3:15.0f} / {ours_compile * 1e3:.0f}")


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
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--tessera", default="build/benchmarks/ifrt/reshard_benchmark")
    ap.add_argument("--tessera-programs", default="build/benchmarks/ifrt/program_benchmark")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--width", type=int, default=2048)
    ap.add_argument("--tessera-python", default="build/python")
    ap.add_argument("--block-batch", type=int, default=8)
    ap.add_argument("--block-seq", type=int, default=128)
    ap.add_argument("--block-width", type=int, default=512)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--no-transformer", action="store_true")
    ap.add_argument("--busy", type=int, default=0,
                    help="busy loops (one core each) running beside the whole run")
    args = ap.parse_args()
    if args.rounds < 1 or args.repeat < 1:
        ap.error("--rounds and --repeat must be at least 1")
    if args.busy < 0:
        ap.error("--busy must be at least 0")
    busy = start_busy_loops(args.busy)
    try:
        return run_parts(args)
    finally:
        for proc in busy:
            proc.kill()
            proc.wait()


def start_busy_loops(count):
    """`count` processes that spin until killed, one core each while they run."""
    if count:
        print(f"with {count} busy loop(s) beside the run ({os.cpu_count()} cores)")
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]


def run_parts(args):
    if args.tessera_programs:
        print_programs(args)
    if args.tessera:
        if args.tessera_programs:
            print()
        print_reshards(args)
    if args.tessera_python:
        if args.tessera_programs or args.tessera:
            print()
        print_lowered(args)
        if not args.no_transformer:
            print()
            print_transformer(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
