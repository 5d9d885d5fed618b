#!/usr/bin/env python3
"""JAX on Tessera (the PJRT plugin) against JAX's own CPU backend and Tessera's own API, in one
process, rounds taking turns.

    PYTHONPATH=build/python build/pyenv/bin/python benchmarks/jax_plugin_compare.py \
        [--devices 8] [--rounds 5] [--repeat 7] [--batch 256] [--width 2048] [--mib 64] \
        [--cases device_put,asarray]

Three ways to run the same thing:
  plugin   JAX with JAX_PLATFORMS=tessera: jax.jit, jax.device_put, np.asarray through the plugin
  tessera  Tessera's API (the Python package over the C++ API): the same program JAX lowers,
           compiled by client.compile; client.put; np.asarray
  jax      JAX's own CPU backend (XLA), the peer
Cases:
  dispatch     jit(x + 1) on f32[8], one device: the fixed cost of one call (the mean over
               --dispatch-calls calls, the median of --repeat such runs; shown in microseconds)
  mlp          relu(x @ w + b), batch x width, x and y rows-sharded over the devices
  megatron     relu(x @ w1 + b1) @ w2, w1 column-, b1 and w2 row-sharded, x and y replicated
  device_put   --mib MiB of f32 from numpy, rows-sharded, until ready
  asarray      the same array back into numpy
  block_dp, block_megatron
               a transformer block's forward + backward (batch 8, sequence 128, width 512, 8
               heads; benchmarks/jax_compare.py's), data-parallel and Megatron (--no-transformer
               leaves them out: compiling them takes a minute)
  cnn_dp       a small CNN's forward + backward (three 3x3 convolutions, 32 channels, on a
               batch of 32 RGB 32x32 images), data-parallel
  cnn_pool_dp  the same with max pooling (3x3 windows, stride 2) where cnn_dp strides its
               convolutions, data-parallel
  embed_dp     an embedding lookup's forward + backward (a scatter-add into the table's
               gradient): 1024 token ids, data-parallel, into an 8192 x 256 table, then a
               256 x 256 dense layer
--cases names the cases to run (comma-separated; default all): the others are not even set up,
so that one case can be timed alone, in more rounds, on a busy machine.
Each round times every case on each system (median of --repeat), in turns; the table shows the
median over rounds and the per-round ratios plugin/tessera and plugin/jax with their ranges.
Targets (issue 23): dispatch at or below JAX's; programs <= 1.1x Tessera's API and at or below
JAX; device_put / asarray within 1.2x of Tessera's API.
asarray also times its floor: JAX's own assembly of the plugin's shard views into a new numpy array
(np.empty and a copy per shard, on one thread, as jax.Array._value does), without JAX.
"""
import argparse
import os
import statistics
import sys
import time


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--devices", type=int, default=8)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--width", type=int, default=2048)
    p.add_argument("--mib", type=int, default=64)
    p.add_argument("--dispatch-calls", type=int, default=2000)
    p.add_argument("--no-transformer", action="store_true")
    p.add_argument("--cases", type=lambda text: [c for c in text.split(",") if c], default=None,
                   help="comma-separated cases to run (default: all); e.g. device_put,asarray")
    return p.parse_args()


def gradient_cases(jax, np, client, plugin_devices, cpu_devices, loss, params, x, layouts):
    """jax.grad of loss(params, x) with respect to params on the three systems, one case per
    layout name: (x's PartitionSpec, the params' PartitionSpecs)."""
    from jax.sharding import Mesh, NamedSharding

    n = len(plugin_devices)

    def fwd_bwd(params, x):
        return jax.grad(loss)(params, x)

    def text(spec, ndim):
        dims = list(spec) + [None] * (ndim - len(spec))
        return f"mesh{{x={n}}} P({','.join(str(e) for e in dims)})"

    cases = {}
    for name, (x_spec, p_specs) in layouts.items():
        calls = {}
        for system, devices in (("plugin", plugin_devices), ("jax", cpu_devices)):
            mesh = Mesh(np.array(devices), ("x",))
            named = lambda spec: NamedSharding(mesh, spec)  # noqa: E731
            f = jax.jit(fwd_bwd, in_shardings=(tuple(map(named, p_specs)), named(x_spec)),
                        out_shardings=tuple(map(named, p_specs)))
            args = (tuple(jax.device_put(p, named(sp)) for p, sp in zip(params, p_specs)),
                    jax.device_put(x, named(x_spec)))
            calls[system] = lambda f=f, args=args: jax.block_until_ready(f(*args))
            if system == "plugin":
                exe = client.compile(f.lower(*args))
                arrays = [client.put(p, text(sp, p.ndim)) for p, sp in zip(params, p_specs)]
                arrays.append(client.put(x, text(x_spec, x.ndim)))
                calls["tessera"] = lambda exe=exe, arrays=arrays: [
                    o.block_until_ready() for o in exe.execute(arrays)]
        cases[name] = {k: calls[k] for k in ("plugin", "tessera", "jax")}
    return cases


def transformer_cases(jax, np, client, plugin_devices, cpu_devices, b=8, s=128, d=512, heads=8):
    """The transformer block of jax_compare.py, forward + backward, on the three systems."""
    import jax.numpy as jnp
    from jax.sharding import PartitionSpec as P

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from jax_compare import transformer_block

    hidden = 4 * d
    rng = np.random.default_rng(0)
    rand = lambda scale, *shape: (scale * rng.standard_normal(shape)).astype(np.float32)  # noqa
    params = (*[rand(d ** -0.5, d, d) for _ in range(4)], rand(d ** -0.5, d, hidden),
              rand(hidden ** -0.5, hidden, d), 1.0 + rand(0.1, d), rand(0.1, d))
    x = rand(1.0, b, s, d)
    col, row, rep = P(None, "x"), P("x", None), P()
    layouts = {"block_dp": (P("x", None, None), (rep,) * 8),
               "block_megatron": (P(None, None, None), (col, col, col, row, col, row, rep, rep))}
    return gradient_cases(
        jax, np, client, plugin_devices, cpu_devices,
        lambda p, x: jnp.mean(transformer_block(x, *p, heads=heads) ** 2), params, x, layouts)


def cnn_cases(jax, np, client, plugin_devices, cpu_devices, wanted, b=32, size=32, width=32):
    """A small CNN's forward + backward, data-parallel: three 3x3 convolutions with ReLUs, the
    last two strided (cnn_dp) or each of the first two followed by a 3x3 max pooling of stride 2
    (cnn_pool_dp), mean pooling and a dense layer, on 32x32 RGB images."""
    import jax.numpy as jnp
    from jax.sharding import PartitionSpec as P

    rng = np.random.default_rng(0)
    rand = lambda scale, *shape: (scale * rng.standard_normal(shape)).astype(np.float32)  # noqa
    params = (rand(0.3, 3, 3, 3, width), rand(width ** -0.5 / 3, 3, 3, width, width),
              rand(width ** -0.5 / 3, 3, 3, width, width), rand(width ** -0.5, width, 10))

    def conv(h, w, stride):
        return jax.nn.relu(jax.lax.conv_general_dilated(
            h, w, (stride, stride), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")))

    def max_pool(h):
        return jax.lax.reduce_window(h, -jnp.inf, jax.lax.max, (1, 3, 3, 1), (1, 2, 2, 1), "SAME")

    def strided(p, x):
        h = x
        for w, stride in zip(p[:3], (1, 2, 2)):
            h = conv(h, w, stride)
        return jnp.mean((h.mean(axis=(1, 2)) @ p[3]) ** 2)

    def pooled(p, x):
        h = max_pool(conv(x, p[0], 1))
        h = max_pool(conv(h, p[1], 1))
        h = conv(h, p[2], 1)
        return jnp.mean((h.mean(axis=(1, 2)) @ p[3]) ** 2)

    x = rand(1.0, b, size, size, 3)
    cases = {}
    for name, loss in (("cnn_dp", strided), ("cnn_pool_dp", pooled)):
        if wanted(name):
            cases.update(gradient_cases(jax, np, client, plugin_devices, cpu_devices, loss,
                                        params, x, {name: (P("x", None, None, None), (P(),) * 4)}))
    return cases


def embedding_cases(jax, np, client, plugin_devices, cpu_devices, wanted, vocab=8192, width=256,
                    tokens=1024):
    """An embedding lookup and a dense layer, forward + backward, the ids data-parallel: the
    table's gradient is a scatter-add of the tokens' rows."""
    import jax.numpy as jnp
    from jax.sharding import PartitionSpec as P

    if not wanted("embed_dp"):
        return {}
    rng = np.random.default_rng(0)
    params = ((0.1 * rng.standard_normal((vocab, width))).astype(np.float32),
              (width ** -0.5 * rng.standard_normal((width, width))).astype(np.float32))
    ids = rng.integers(0, vocab, tokens).astype(np.int32)

    def loss(p, i):
        return jnp.mean(jnp.tanh(p[0][i] @ p[1]) ** 2)

    return gradient_cases(jax, np, client, plugin_devices, cpu_devices, loss, params, ids,
                          {"embed_dp": (P("x"), (P(), P()))})


def main():
    args = parse_args()
    known = {"dispatch", "mlp", "megatron", "block_dp", "block_megatron", "cnn_dp", "cnn_pool_dp",
             "embed_dp", "device_put", "asarray"}
    unknown = set(args.cases or []) - known
    if unknown:
        sys.exit(f"unknown --cases {sorted(unknown)}; the cases are {sorted(known)}")
    wanted = lambda case: args.cases is None or case in args.cases  # noqa: E731
    d = args.devices
    os.environ["JAX_PLATFORMS"] = "tessera,cpu"
    os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={d}"
    os.environ["TESSERA_CPU_DEVICES"] = str(d)
    os.environ["TESSERA_VULKAN"] = "off"
    import jax
    import numpy as np
    import tessera
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

    plugin_devices = jax.devices("tessera")[:d]
    cpu_devices = jax.devices("cpu")[:d]
    client = tessera.Client(cpu_devices=d, vulkan="off")
    rng = np.random.default_rng(0)
    rand = lambda *shape: rng.uniform(-1, 1, shape).astype(np.float32)  # noqa: E731
    b, n = args.batch, args.width

    def median_time(fn, repeat=args.repeat):
        fn()  # warm: compiled, allocated
        times = []
        for _ in range(repeat):
            t = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t)
        return statistics.median(times)

    def jax_program(devices, fn, in_specs, out_spec, host):
        mesh = Mesh(np.array(devices), ("x",))
        sh = lambda s: NamedSharding(mesh, P(*s))  # noqa: E731
        f = jax.jit(fn, in_shardings=tuple(sh(s) for s in in_specs), out_shardings=sh(out_spec))
        arrays = [jax.device_put(a, sh(s)) for a, s in zip(host, in_specs)]
        return lambda: f(*arrays).block_until_ready(), f

    def tessera_program(jitted, in_specs, host):
        exe = client.compile(jitted.lower(*host))
        arrays = [client.put(a, f"mesh{{x={d}}} P({','.join(str(x) for x in s)})")
                  for a, s in zip(host, in_specs)]

        def call():
            for o in exe.execute(arrays):
                o.block_until_ready()

        return call

    programs = {
        "mlp": (lambda x, w, bias: jax.nn.relu(x @ w + bias), [("x", None), (), ()], ("x", None),
                [rand(b, n), rand(n, n), rand(n)]),
        "megatron": (lambda x, w1, b1, w2: jax.nn.relu(x @ w1 + b1) @ w2,
                     [(), (None, "x"), ("x",), ("x", None)], (),
                     [rand(b, n), rand(n, n), rand(n), rand(n, n)]),
    }
    cases = {}
    small = np.ones(8, np.float32)
    dispatch_devices = (("plugin", plugin_devices), ("jax", cpu_devices))
    for name, devs in dispatch_devices if wanted("dispatch") else ():
        x = jax.device_put(small, devs[0])
        f = jax.jit(lambda a: a + 1)
        cases.setdefault("dispatch", {})[name] = (
            lambda f=f, x=x: [f(x).block_until_ready() for _ in range(args.dispatch_calls)])
    for name, (fn, in_specs, out_spec, host) in programs.items():
        if not wanted(name):
            continue
        run_plugin, jitted = jax_program(plugin_devices, fn, in_specs, out_spec, host)
        run_jax, _ = jax_program(cpu_devices, fn, in_specs, out_spec, host)
        cases[name] = {"plugin": run_plugin, "tessera": tessera_program(jitted, in_specs, host),
                       "jax": run_jax}
    if not args.no_transformer and (wanted("block_dp") or wanted("block_megatron")):
        blocks = transformer_cases(jax, np, client, plugin_devices, cpu_devices)
        cases.update({case: systems for case, systems in blocks.items() if wanted(case)})
    if wanted("cnn_dp") or wanted("cnn_pool_dp"):
        cases.update(cnn_cases(jax, np, client, plugin_devices, cpu_devices, wanted))
    cases.update(embedding_cases(jax, np, client, plugin_devices, cpu_devices, wanted))
    big = rand(args.mib * (1 << 20) // 4 // 1024, 1024)
    rows_plugin = NamedSharding(Mesh(np.array(plugin_devices), ("x",)), P("x", None))
    rows_cpu = NamedSharding(Mesh(np.array(cpu_devices), ("x",)), P("x", None))
    rows_text = f"mesh{{x={d}}} P(x,None)"
    if wanted("device_put"):
        cases["device_put"] = {
            "plugin": lambda: jax.device_put(big, rows_plugin).block_until_ready(),
            "tessera": lambda: client.put(big, rows_text).block_until_ready(),
            "jax": lambda: jax.device_put(big, rows_cpu).block_until_ready(),
        }
    if wanted("asarray"):
        on_plugin = jax.device_put(big, rows_plugin)
        on_tessera = client.put(big, rows_text)
        on_cpu = jax.device_put(big, rows_cpu)

        # np.asarray of a jax.Array caches its value: each call reads a fresh jax.Array over the
        # same device buffers (no device copy).
        def fresh(a):
            return jax.make_array_from_single_device_arrays(
                a.shape, a.sharding, [shard.data for shard in a.addressable_shards])

        # What JAX does with the plugin's shards, without JAX: np.empty, then one numpy copy per
        # shard from its zero-copy view, on one thread (jax.Array._value). The plugin's floor.
        views = [(shard.index, np.asarray(shard.data)) for shard in on_plugin.addressable_shards]

        def assembly():
            out = np.empty(big.shape, big.dtype)
            for index, view in views:
                out[index] = view
            return out

        cases["asarray"] = {
            "plugin": lambda: np.asarray(fresh(on_plugin)),
            "tessera": lambda: np.asarray(on_tessera),
            "jax": lambda: np.asarray(fresh(on_cpu)),
            "floor": assembly,
        }

    results = {case: {system: [] for system in systems} for case, systems in cases.items()}
    for _ in range(args.rounds):
        for case, systems in cases.items():
            for system, fn in systems.items():
                t = median_time(fn)
                if case == "dispatch":
                    t /= args.dispatch_calls
                results[case][system].append(t)

    print(f"JAX {jax.__version__} on Tessera (plugin) vs Tessera's API vs JAX's CPU backend; "
          f"{d} CPU devices each; {os.cpu_count()} cores; median of {args.repeat} a round, "
          f"{args.rounds} rounds taking turns")
    print(f"{'case':11} {'plugin':>10} {'tessera':>10} {'jax':>10}   "
          f"{'plugin/tessera (range)':>24} {'plugin/jax (range)':>22}")

    def ms(values, scale=1e3):
        return f"{statistics.median(values) * scale:10.3f}" if values else f"{'-':>10}"

    def ratio(a, b):
        if not a or not b:
            return "-"
        r = [x / y for x, y in zip(a, b)]
        return f"{statistics.median(r):.2f}x ({min(r):.2f}-{max(r):.2f})"

    for case, systems in results.items():
        scale = 1e6 if case == "dispatch" else 1e3
        print(f"{case:11} {ms(systems.get('plugin'), scale)} "
              f"{ms(systems.get('tessera', []), scale)} {ms(systems.get('jax'), scale)}   "
              f"{ratio(systems.get('plugin'), systems.get('tessera')):>24}"
              f" {ratio(systems.get('plugin'), systems.get('jax')):>22}")
    for case, systems in results.items():
        if systems.get("floor"):
            print(f"{case}: JAX's assembly alone (numpy, one thread) {ms(systems['floor'])} ms; "
                  f"plugin / that floor {ratio(systems['plugin'], systems['floor'])}")
    print(f"(ms per call; dispatch: us per call, the mean of {args.dispatch_calls}; tessera has no "
          "dispatch row: its Python API is not jit's dispatch path)")


if __name__ == "__main__":
    sys.exit(main())
