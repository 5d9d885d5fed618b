"""Programs from JAX: functions lowered by jax.jit with their shardings, compiled by Tessera from
the jax.stages.Lowered (or its StableHLO text) and run on Tessera's devices, against JAX's own
results on the same inputs. JAX runs on 8 host CPU devices (conftest.py sets XLA_FLAGS).

Inputs are drawn from a numpy Generator with a fixed, printed seed. f32 results agree within
1e-5 relative where the op order matches; matmuls and reductions, whose summation order differs
(OpenBLAS or Tessera's kernels against XLA's), within rtol 1e-4, atol 1e-5 (stated per test).
"""
import re

import numpy as np
import pytest

import tessera

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
from jax.sharding import NamedSharding, PartitionSpec as P  # noqa: E402

SEED = 20261202


def rng(salt=0):
    print(f"seed {SEED + salt}")
    return np.random.default_rng(SEED + salt)


def normal(gen, *shape):
    return gen.standard_normal(shape).astype(np.float32)


@pytest.fixture(scope="module")
def client8():
    return tessera.Client(cpu_devices=8, vulkan="off")


def make_mesh(shape, names):
    """A JAX mesh whose axes JAX's partitioner shards automatically (as jit with in_shardings
    does), not the explicit axes jax.make_mesh defaults to since 0.7."""
    from jax.sharding import AxisType
    return jax.make_mesh(shape, names, axis_types=(AxisType.Auto,) * len(shape))


def needs_8_jax_devices():
    if len(jax.devices()) < 8:
        pytest.skip("JAX has fewer than 8 CPU devices (XLA_FLAGS set after jax was imported)")


def tessera_sharding(mesh, spec):
    """Tessera's text for JAX's NamedSharding(mesh, spec) over a value of rank len(spec)."""
    axes = ",".join(f"{n}={s}" for n, s in mesh.shape.items())

    def dim(d):
        if d is None:
            return "None"
        if isinstance(d, tuple):
            return "(" + ",".join(d) + ")"
        return d

    return f"mesh{{{axes}}} P({','.join(dim(d) for d in spec)})"


def run_both(client, f, args, in_specs, out_specs, mesh, program=None):
    """f lowered with the shardings, run by JAX and by Tessera; returns (jax outputs, tessera
    outputs) as lists of numpy arrays."""
    named = [NamedSharding(mesh, s) for s in in_specs]
    outs = out_specs if isinstance(out_specs, tuple) else (out_specs,)
    jitted = jax.jit(f, in_shardings=tuple(named),
                     out_shardings=tuple(NamedSharding(mesh, s) for s in outs)
                     if isinstance(out_specs, tuple) else NamedSharding(mesh, out_specs))
    lowered = jitted.lower(*args)
    expected = jitted(*[jax.device_put(a, s) for a, s in zip(args, named)])
    expected = [np.asarray(e) for e in (expected if isinstance(expected, (tuple, list))
                                        else [expected])]
    exe = client.compile(lowered if program is None else program,
                         devices=client.devices[:mesh.size])
    padded = [spec + (None,) * (np.ndim(a) - len(spec)) for a, spec in zip(args, in_specs)]
    arrays = [client.put(np.asarray(a), tessera_sharding(mesh, s)) for a, s in zip(args, padded)]
    got = [np.asarray(o.block_until_ready()) for o in exe.execute(arrays)]
    return expected, got


def mlp(x, w1, b1, w2):
    return jax.nn.relu(x @ w1 + b1) @ w2


def layernorm(x, g, b):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) * jax.lax.rsqrt(v + 1e-5) * g + b


def softmax_rows(x):
    return jax.nn.softmax(x, axis=-1)


def cross_entropy(logits, labels):
    one_hot = jax.nn.one_hot(labels, logits.shape[-1], dtype=logits.dtype)
    return -jnp.mean(jnp.sum(jax.nn.log_softmax(logits) * one_hot, -1))


def elementwise(x, y):
    return jnp.where(x > y, jnp.exp(x) * jnp.tanh(y), jnp.maximum(x, -y) / (1.0 + y * y))


def gelu_tanh(x):
    return jax.nn.gelu(x, approximate=True)


def gelu_erf(x):
    return jax.nn.gelu(x, approximate=False)


def mse_loss(params, x, y):
    return jnp.mean((mlp(x, *params) - y) ** 2)


def sgd_step(params, x, y):
    grads = jax.grad(mse_loss)(params, x, y)
    return tuple(p - 0.05 * g for p, g in zip(params, grads))


def test_mlp_data_parallel_odd_shapes(client8):
    needs_8_jax_devices()
    mesh = make_mesh((8,), ("x",))
    for rows, features, hidden, out in [(8, 1, 1, 1), (24, 7, 5, 3), (16, 13, 11, 2)]:
        g = rng(rows + features)
        args = (normal(g, rows, features), normal(g, features, hidden), normal(g, hidden),
                normal(g, hidden, out))
        (want,), (got,) = run_both(client8, mlp, args, (P("x"), P(), P(), P()), P("x"), mesh)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_megatron_mlp_all_reduces_its_partial_sums(client8):
    needs_8_jax_devices()
    mesh = make_mesh((2, 4), ("dp", "tp"))
    g = rng(1)
    args = (normal(g, 6, 8), normal(g, 8, 16), normal(g, 16), normal(g, 16, 8))
    before = client8.transfer_stats()["device_to_device"]["bytes"]
    (want,), (got,) = run_both(client8, mlp, args,
                               (P("dp"), P(None, "tp"), P("tp"), P("tp", None)), P("dp"), mesh)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    moved = client8.transfer_stats()["device_to_device"]["bytes"] - before
    # Each of the 8 devices holds a partial [3, 8] f32 sum that its 3 peers of the tp axis need.
    assert moved >= 8 * 3 * 8 * 4, moved


def test_dp_x_tp_mesh_and_two_axes_on_one_dimension(client8):
    needs_8_jax_devices()
    mesh = make_mesh((2, 4), ("dp", "tp"))
    g = rng(2)
    x, y = normal(g, 16, 3), normal(g, 16, 3)
    (want,), (got,) = run_both(client8, elementwise, (x, y), (P(("dp", "tp")), P(("dp", "tp"))),
                               P(("dp", "tp")), mesh)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("f", [layernorm, softmax_rows, gelu_tanh, gelu_erf],
                         ids=lambda f: f.__name__)
def test_row_wise_functions(client8, f):
    needs_8_jax_devices()
    mesh = make_mesh((8,), ("x",))
    g = rng(3)
    if f is layernorm:
        args, specs = (normal(g, 8, 3, 7), normal(g, 7), normal(g, 7)), (P("x"), P(), P())
    else:
        args, specs = (normal(g, 16, 11),), (P("x"),)
    (want,), (got,) = run_both(client8, f, args, specs, P("x"), mesh)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)  # reductions: another order


def test_cross_entropy_integer_labels(client8):
    needs_8_jax_devices()
    mesh = make_mesh((8,), ("x",))
    g = rng(4)
    logits = normal(g, 16, 10)
    labels = g.integers(0, 10, size=16).astype(np.int32)
    (want,), (got,) = run_both(client8, cross_entropy, (logits, labels), (P("x"), P("x")), P(),
                               mesh)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_stablehlo_text_compiles_as_the_lowered_does(client8):
    needs_8_jax_devices()
    mesh = make_mesh((8,), ("x",))
    g = rng(5)
    args = (normal(g, 8, 5), normal(g, 5, 3), normal(g, 3), normal(g, 3, 2))
    lowered = jax.jit(mlp).lower(*args)
    text = lowered.compiler_ir("stablehlo").operation.get_asm(print_generic_op_form=True)
    (want,), (got,) = run_both(client8, mlp, args, (P(), P(), P(), P()), P(), mesh, program=text)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_twenty_sgd_steps_end_where_jax_ends(client8):
    needs_8_jax_devices()
    mesh = make_mesh((8,), ("x",))
    g = rng(6)
    x, y = normal(g, 32, 7), normal(g, 32, 3)
    params = (0.5 * normal(g, 7, 5), np.zeros(5, np.float32), 0.5 * normal(g, 5, 3))
    replicated = (P(), P(), P())
    step = jax.jit(sgd_step, in_shardings=(tuple(NamedSharding(mesh, s) for s in replicated),
                                           NamedSharding(mesh, P("x")),
                                           NamedSharding(mesh, P("x"))),
                   out_shardings=tuple(NamedSharding(mesh, s) for s in replicated))
    exe = client8.compile(step.lower(params, x, y))
    data = [client8.put(x, "mesh{x=8} P(x,None)"), client8.put(y, "mesh{x=8} P(x,None)")]
    ours = [client8.put(p, "mesh{x=8} P(" + ",".join(["None"] * p.ndim) + ")") for p in params]
    theirs = params
    for _ in range(20):
        ours = exe.execute(ours + data)
        theirs = step(theirs, x, y)
    for got, want in zip(ours, theirs):
        np.testing.assert_allclose(np.asarray(got.block_until_ready()), np.asarray(want),
                                   rtol=1e-3, atol=1e-5)  # 20 steps of reordered sums
    loss = float(mse_loss(tuple(np.asarray(o) for o in ours), x, y))
    assert loss < float(mse_loss(params, x, y))


def test_unsupported_op_names_it_and_the_python_line(client8):
    def largest_two(x):
        return jax.lax.top_k(x, 2)[0]

    lowered = jax.jit(largest_two).lower(np.zeros((8, 4), np.float32))
    with pytest.raises(RuntimeError) as error:
        client8.compile(lowered)
    message = str(error.value)
    assert "UNIMPLEMENTED" in message and "chlo.top_k" in message, message
    assert re.search(r"test_stablehlo\.py:\d+", message), message  # JAX's source location


def windows(x, i, j, update):
    """dynamic_slice and dynamic_update_slice at traced offsets (clamped into range)."""
    window = jax.lax.dynamic_slice(x, (i, j), (3, 2))
    return window, jax.lax.dynamic_update_slice(x, update, (j, i))


@pytest.mark.parametrize("i,j", [(0, 0), (2, 1), (-3, 1), (7, 9), (5, -1), (2**31 - 1, 3)])
def test_dynamic_slices_at_traced_offsets_clamp_as_jax_does(client8, i, j):
    needs_8_jax_devices()
    g = rng(17)
    x, update = normal(g, 8, 5), normal(g, 2, 3)
    want, got = run_both(client8, windows, (x, np.int32(i), np.int32(j), update),
                         (P("x"), P(), P(), P()), (P(), P("x")), make_mesh((8,), ("x",)))
    for w, o in zip(want, got):
        assert np.array_equal(o, w), (o, w)


def test_sharding_constraint_is_imposed(client8):
    # x and w replicated, y = tanh(x @ w) replicated: alone the partitioner computes all of it on
    # every device. with_sharding_constraint(x @ w, P("x")) splits the matmul by rows: the plan
    # gathers the rows into the result.
    needs_8_jax_devices()
    mesh = make_mesh((8,), ("x",))

    def constrained(x, w):
        y = jax.lax.with_sharding_constraint(x @ w, NamedSharding(mesh, P("x")))
        return jnp.tanh(y)

    g = rng(19)
    x, w = normal(g, 16, 5), normal(g, 5, 3)
    (want,), (got,) = run_both(client8, constrained, (x, w), (P(), P()), P(), mesh)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    plans = {}
    for name, f in (("free", lambda x, w: jnp.tanh(x @ w)), ("constrained", constrained)):
        named = NamedSharding(mesh, P())
        plans[name] = client8.compile(
            jax.jit(f, in_shardings=(named, named), out_shardings=named).lower(x, w)).explain()
    assert "all_gather" not in plans["free"], plans["free"]
    assert "all_gather" in plans["constrained"], plans["constrained"]


def mixed_precision_mlp(x, w, b):
    h = x.astype(jnp.bfloat16) @ w.astype(jnp.bfloat16) + b.astype(jnp.bfloat16)
    h = jax.nn.gelu(h) * jnp.bfloat16(1.7) + jnp.exp(h)
    return h.astype(jnp.float32), jnp.sum(h.astype(jnp.float32), -1)


def test_bf16_inside_the_program_is_rounded_as_bf16(client8):
    # bf16 computed in f32 and rounded to bf16 after each op: the bf16 results are bf16 values,
    # within one bf16 rounding (2^-8 relative) of JAX's, which keeps more precision inside its
    # fusions (XLA's excess precision) and accumulates its matmul in another order.
    needs_8_jax_devices()
    g = rng(20)
    x, w, b = normal(g, 16, 32), normal(g, 32, 8), normal(g, 8)
    (want_h, want_s), (got_h, got_s) = run_both(
        client8, mixed_precision_mlp, (x, w, b), (P("x"), P(), P()), (P("x"), P("x")),
        make_mesh((8,), ("x",)))
    assert np.all(got_h.view(np.uint32) & 0xFFFF == 0), "not bf16 values"
    np.testing.assert_allclose(got_h, want_h, rtol=2 ** -7, atol=1e-6)
    np.testing.assert_allclose(got_s, want_s, rtol=2 ** -7, atol=1e-4)
    # Rounding at the edges: ties to even, overflow to infinity, NaN kept.
    edges = np.array([1 + 2 ** -8, 1 + 3 * 2 ** -8, 3.3895e38, -np.inf, np.nan, -0.0, 1e-40],
                     np.float32)
    to_bf16 = jax.jit(lambda v: v.astype(jnp.bfloat16).astype(jnp.float32))
    (want,), (got,) = run_both(client8, to_bf16, (edges,), (P(),), P(), make_mesh((8,), ("x",)))
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), (got, want)


@pytest.mark.parametrize("shape", [(8,), (2, 4), (4, 2)])
def test_gspmd_shardings_become_the_mesh_they_fit(client8, shape):
    # With jax_use_shardy_partitioner=False JAX writes GSPMD shardings (mhlo.sharding: devices and
    # tiles, no axis names): Tessera finds the mesh they fit and names its axes x, y. The Megatron
    # MLP over (x, y): rows over x, the hidden units over y (an all-reduce over y).
    needs_8_jax_devices()
    names = ("x", "y")[:len(shape)]
    mesh = make_mesh(shape, names)
    tp = names[-1]
    previous = jax.config.jax_use_shardy_partitioner
    jax.config.update("jax_use_shardy_partitioner", False)
    try:
        g = rng(21)
        x, w1, w2 = normal(g, 16, 6), normal(g, 6, 8), normal(g, 8, 5)

        def megatron(x, w1, w2):
            return jnp.tanh(x @ w1) @ w2

        specs = (P("x"), P(None, tp), P(tp, None))
        lowered = jax.jit(megatron, in_shardings=tuple(NamedSharding(mesh, p) for p in specs),
                          out_shardings=NamedSharding(mesh, P("x"))).lower(x, w1, w2)
        text = lowered.compiler_ir("stablehlo").operation.get_asm(print_generic_op_form=True)
        assert "mhlo.sharding" in text and "sdy." not in text
        (want,), (got,) = run_both(client8, megatron, (x, w1, w2), specs, P("x"), mesh)
    finally:
        jax.config.update("jax_use_shardy_partitioner", previous)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_dynamic_slices_at_unsigned_offsets_clamp_as_jax_does(client8):
    # uint32 starts past int32's range clamp to the last window (not to 0).
    needs_8_jax_devices()
    g = rng(23)
    x = normal(g, 8, 5)
    for i in (np.uint32(3), np.uint32(4_000_000_000)):
        (want,), (got,) = run_both(client8, lambda x, i: jax.lax.dynamic_slice(x, (i, i), (3, 2)),
                                   (x, i), (P("x"), P()), P(), make_mesh((8,), ("x",)))
        assert np.array_equal(got, want), (i, got, want)


def scan_rnn(h, xs, w):
    """A scan over xs (a while loop reading xs[t] with dynamic_slice and writing ys[t] with
    dynamic_update_slice)."""
    def step(carry, x):
        carry = jnp.tanh(carry @ w + x)
        return carry, carry.sum(-1)
    return jax.lax.scan(step, h, xs)


def test_scan_over_xs_matches_jax(client8):
    needs_8_jax_devices()
    g = rng(18)
    h, xs, w = normal(g, 4, 6), normal(g, 7, 4, 6), 0.5 * normal(g, 6, 6)
    (want_h, want_ys), (got_h, got_ys) = run_both(
        client8, scan_rnn, (h, xs, w), (P(), P(), P()), (P(), P()), make_mesh((8,), ("x",)))
    np.testing.assert_allclose(got_h, want_h, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_ys, want_ys, rtol=1e-5, atol=1e-6)


def attention(x, wq, wk, wv, wo, heads):
    b, s, d = x.shape
    split = lambda t: t.reshape(b, s, heads, d // heads)  # noqa: E731
    q, k, v = split(x @ wq), split(x @ wk), split(x @ wv)
    scores = jnp.einsum("bshd,bthd->bhst", q, k) / jnp.sqrt(d // heads).astype(x.dtype)
    o = jnp.einsum("bhst,bthd->bshd", jax.nn.softmax(scores, -1), v).reshape(b, s, d)
    return o @ wo


def transformer_block(x, wq, wk, wv, wo, w1, w2, g, b, heads=4):
    h = x + attention(layernorm(x, g, b), wq, wk, wv, wo, heads)
    return h + jax.nn.gelu(layernorm(h, g, b) @ w1) @ w2


def block_params(g, width, hidden):
    scale = width ** -0.5
    return (*[scale * normal(g, width, width) for _ in range(4)], scale * normal(g, width, hidden),
            hidden ** -0.5 * normal(g, hidden, width), 1.0 + 0.1 * normal(g, width),
            0.1 * normal(g, width))


# Data-parallel (batch over x) and Megatron (heads and the MLP's hidden units over tp, batch over
# dp): the reshapes into and out of heads keep the heads sharded.
TRANSFORMER_SHARDINGS = {
    "data_parallel": ((8,), ("x",), (P("x"),) + (P(),) * 8, P("x")),
    "megatron": ((2, 4), ("dp", "tp"),
                 (P("dp"), P(None, "tp"), P(None, "tp"), P(None, "tp"), P("tp", None),
                  P(None, "tp"), P("tp", None), P(), P()), P("dp")),
}


@pytest.mark.parametrize("sharding", sorted(TRANSFORMER_SHARDINGS))
def test_transformer_block(client8, sharding):
    needs_8_jax_devices()
    shape, names, in_specs, out_spec = TRANSFORMER_SHARDINGS[sharding]
    g = rng(8)
    args = (normal(g, 8, 5, 16), *block_params(g, 16, 24))
    before = client8.transfer_stats()["device_to_device"]["bytes"]
    (want,), (got,) = run_both(client8, transformer_block, args, in_specs, out_spec,
                               make_mesh(shape, names))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)  # matmuls and softmax reorder
    moved = client8.transfer_stats()["device_to_device"]["bytes"] - before
    if sharding == "data_parallel":
        assert moved == 0, moved  # every device has its rows and all the weights
    else:
        # Two all-reduces of partial [4, 5, 16] f32 sums (after wo and after w2) over tp.
        assert moved >= 2 * 8 * 4 * 5 * 16 * 4, moved


def test_transformer_training_step(client8):
    needs_8_jax_devices()
    mesh = make_mesh((8,), ("x",))

    def step(params, x):
        loss = lambda p: jnp.sum(transformer_block(x, *p) ** 2)  # noqa: E731
        grads = jax.grad(loss)(params)
        return tuple(p - 1e-3 * gr for p, gr in zip(params, grads))

    g = rng(9)
    params, x = block_params(g, 16, 24), normal(g, 8, 5, 16)
    replicated = tuple(NamedSharding(mesh, P()) for _ in params)
    jitted = jax.jit(step, in_shardings=(replicated, NamedSharding(mesh, P("x"))),
                     out_shardings=replicated)
    exe = client8.compile(jitted.lower(params, x))
    want = jitted(params, x)
    ours = [client8.put(p, "mesh{x=8} P(" + ",".join(["None"] * p.ndim) + ")") for p in params]
    got = exe.execute(ours + [client8.put(x, "mesh{x=8} P(x,None,None)")])
    for a, b in zip(got, want):
        np.testing.assert_allclose(np.asarray(a.block_until_ready()), np.asarray(b), rtol=1e-4,
                                   atol=1e-4)


def test_embedding_lookup_and_its_gradient(client8):
    # table[ids] is a gather; its gradient a scatter-add of the rows back into the table, with
    # repeated ids (their rows add up) and negative ids (JAX wraps them: ids + vocab).
    needs_8_jax_devices()
    mesh = make_mesh((8,), ("x",))
    g = rng(11)
    table, w = normal(g, 13, 6), normal(g, 6, 5)
    ids = g.integers(-13, 13, size=24).astype(np.int32)
    ids[:4] = 3  # repeated

    def f(table, ids, w):
        loss = lambda t: jnp.sum(jnp.tanh(t[ids] @ w))  # noqa: E731
        return table[ids] @ w, jax.grad(loss)(table)

    (want_y, want_grad), (got_y, got_grad) = run_both(
        client8, f, (table, ids, w), (P(), P("x"), P()), (P("x"), P()), mesh)
    np.testing.assert_allclose(got_y, want_y, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_grad, want_grad, rtol=1e-4, atol=1e-5)  # sums reordered


@pytest.mark.parametrize("mode", ["clip", "fill"])
def test_take_out_of_range_indices_follow_jax(client8, mode):
    needs_8_jax_devices()
    mesh = make_mesh((8,), ("x",))
    g = rng(12)
    x = normal(g, 8, 7)
    idx = np.array([0, 6, 7, 100, -1, -8, 3], np.int32)  # past either end
    f = lambda x, i: jnp.take(x, i, axis=1, mode=mode)  # noqa: E731
    (want,), (got,) = run_both(client8, f, (x, idx), (P("x"), P()), P("x"), mesh)
    assert np.array_equal(got, want, equal_nan=True), (got, want)


def test_scatter_add_drops_indices_past_the_end(client8):
    needs_8_jax_devices()
    mesh = make_mesh((8,), ("x",))
    x = np.arange(10, dtype=np.float32)
    idx = np.array([1, 1, 9, 10, 12, 0, -0, 4], np.int32)
    upd = np.arange(8, dtype=np.float32) + 0.5
    f = lambda x, i, u: x.at[i].add(u, mode="drop")  # noqa: E731
    (want,), (got,) = run_both(client8, f, (x, idx, upd), (P(), P(), P()), P(), mesh)
    assert np.array_equal(got, want), (got, want)


def rotary_half_turn(x):
    half = x.shape[-1] // 2
    return jnp.concatenate([-x[..., half:], x[..., :half]], axis=-1)


SLICING = {
    "rotary_half_turn": rotary_half_turn,
    "strided_slice": lambda x: x[:, 1:7:3, ::2] * 2.0,
    "pad_and_cut": lambda x: jnp.pad(x, ((0, 0), (2, 0), (0, 1)), constant_values=-3.0)[:, :-1],
    "pad_the_sharded_rows": lambda x: jnp.pad(x, ((1, 2), (0, 0), (0, 0)))[1:-2] + 1.0,
    "flip": lambda x: jnp.flip(x, (0, 2)),
    "concat_three": lambda x: jnp.concatenate([x, x[:, :1] * 2.0, x[:, 2:]], axis=1),
}


@pytest.mark.parametrize("name", sorted(SLICING))
def test_slices_pads_concatenations_and_reverses(client8, name):
    # Rows sharded: cutting, padding and joining the other dimensions keeps them sharded; the rows
    # padded, or reversed, are gathered first.
    needs_8_jax_devices()
    g = rng(14)
    x = normal(g, 8, 9, 6)
    (want,), (got,) = run_both(client8, SLICING[name], (x,), (P("x"),), P("x"),
                               make_mesh((8,), ("x",)))
    assert got.shape == want.shape and np.array_equal(got, want), (got, want)


@pytest.mark.parametrize("f", [lambda x: jnp.argmax(x, axis=-1),
                               lambda x: jnp.argmin(x, axis=1) * 2,
                               lambda x: jnp.max(x, axis=-1) + jnp.argmax(x, axis=-1)],
                         ids=["argmax", "argmin", "max_and_argmax"])
def test_argmax_and_argmin_reduce_values_and_indices(client8, f):
    # Ties (the repeated columns) go to the first index, as in JAX.
    needs_8_jax_devices()
    g = rng(15)
    x = normal(g, 16, 7)
    x[:, 5] = x[:, 2]
    (want,), (got,) = run_both(client8, f, (x,), (P("x"),), P("x"), make_mesh((8,), ("x",)))
    assert got.dtype == want.dtype and np.array_equal(got, want), (got, want)


def loops_and_branches(x, n):
    y = jax.lax.fori_loop(0, 5, lambda i, a: a * 0.5 + i.astype(a.dtype), x)
    z, count = jax.lax.while_loop(lambda c: c[1] < n, lambda c: (jnp.tanh(c[0] @ c[0].T @ c[0]),
                                                                 c[1] + 1), (y, 0))
    branch = jnp.clip(count - 2, 0, 3)
    return jax.lax.switch(branch, [lambda t: t * 2.0, lambda t: -t, jnp.exp, jnp.sin], z), count


@pytest.mark.parametrize("n", [0, 1, 3, 4, 9])
def test_loops_and_branches_run_whole_on_every_device(client8, n):
    # fori_loop and while_loop (a matmul in the body) on rows-sharded x, then a switch of four
    # branches picked by the trip count: scf.while and scf.if, run whole on every device.
    needs_8_jax_devices()
    g = rng(16)
    x = 0.3 * normal(g, 16, 5)
    (want, want_count), (got, got_count) = run_both(
        client8, loops_and_branches, (x, np.int32(n)), (P("x"), P()), (P("x"), P()),
        make_mesh((8,), ("x",)))
    assert got_count == want_count
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


SCATTERS = {
    # Distinct indices for set (JAX leaves the order of repeated ones open); repeated ones for the
    # combining kinds, whose result does not depend on the order; 9 is past the end: dropped.
    "set": (lambda x, i, u: x.at[i].set(u), [5, 0, 7, 9]),
    "mul": (lambda x, i, u: x.at[i].mul(u), [5, 0, 5, 9]),
    "max": (lambda x, i, u: x.at[i].max(u), [5, 0, 5, 9]),
    "min": (lambda x, i, u: x.at[i].min(u), [2, 2, 7, 9]),
}


@pytest.mark.parametrize("kind", sorted(SCATTERS))
def test_scatters_that_set_multiply_and_take_extremes(client8, kind):
    needs_8_jax_devices()
    f, ids = SCATTERS[kind]
    g = rng(24)
    x, u = normal(g, 8, 3), normal(g, 4, 3)
    (want,), (got,) = run_both(client8, f, (x, np.array(ids, np.int32), u), (P("x"), P(), P()),
                               P("x"), make_mesh((8,), ("x",)))
    assert np.array_equal(got, want), (got, want)


def test_scatter_of_another_body_is_refused_by_name(client8):
    # The body calls JAX's outlined @clip: calls inside an op's region are inlined too, so the
    # error is the scatter's.
    def clipped_increment(x, i):
        return x.at[i].apply(lambda v: jnp.clip(v + 1.0, 0.0, 2.0))

    lowered = jax.jit(clipped_increment).lower(np.zeros(8, np.float32), np.zeros(2, np.int32))
    with pytest.raises(RuntimeError, match=r"UNIMPLEMENTED.*scatter whose body is not one"):
        client8.compile(lowered)


@pytest.mark.parametrize("f, shape, spec", [
    (lambda x: (x.reshape(8, 2, 3) * 2.0).reshape(8, 6), (8, 6), P("x")),
    (lambda x: x.reshape(4, 12) + 1.0, (8, 6), P()),  # one group of 48: sharded 8 rows -> 4
    (lambda x: x.reshape(-1) - 1.0, (8, 3, 5), P()),
    (lambda x: x.reshape(2, 4, 1, 15).transpose(1, 0, 2, 3), (8, 3, 5), P()),
], ids=["split_then_merge", "regroup", "flatten", "split_with_unit"])
def test_reshapes_move_elements_exactly(client8, f, shape, spec):
    needs_8_jax_devices()
    g = rng(10)
    x = normal(g, *shape)
    (want,), (got,) = run_both(client8, f, (x,), (P("x"),), spec, make_mesh((8,), ("x",)))
    assert got.shape == want.shape and np.array_equal(got, want)


def test_mesh_larger_than_the_devices_is_invalid(client8):
    needs_8_jax_devices()
    mesh = make_mesh((8,), ("x",))
    lowered = jax.jit(lambda x: x + 1.0, in_shardings=NamedSharding(mesh, P("x")),
                      out_shardings=NamedSharding(mesh, P("x"))).lower(
                          np.zeros((8, 2), np.float32))
    with pytest.raises(ValueError, match="INVALID_ARGUMENT.*mesh"):
        client8.compile(lowered, devices=client8.devices[:4])


def test_malformed_text_is_invalid_argument_with_line_and_column(client8):
    with pytest.raises(ValueError, match=r"INVALID_ARGUMENT.*2:\d+"):
        client8.compile('"builtin.module"() ({\n  "stablehlo.add"(%x : () -> ()\n}) : () -> ()')


def test_anything_else_is_a_type_error(client8):
    with pytest.raises(TypeError, match="jax.stages.Lowered"):
        client8.compile(42)


def test_two_lavapipe_devices_and_cpu_plus_vulkan():
    client = tessera.Client(cpu_devices=2, vulkan="if_available")
    gpus = [d for d in client.devices if d.platform == "vulkan"]
    if len(gpus) < 2:
        pytest.skip("fewer than 2 Vulkan devices (lavapipe ICD copies: VK_DRIVER_FILES)")
    from jax.sharding import AxisType, Mesh
    mesh = Mesh(np.array(jax.devices()[:2]), ("x",), axis_types=(AxisType.Auto,))
    g = rng(7)
    args = (normal(g, 8, 5), normal(g, 5, 3), normal(g, 3), normal(g, 3, 2))
    jitted = jax.jit(mlp, in_shardings=(NamedSharding(mesh, P("x")),) + (NamedSharding(mesh, P()),)
                     * 3, out_shardings=NamedSharding(mesh, P("x")))
    want = np.asarray(jitted(*args))
    for devices in (gpus[:2], [client.devices[0], gpus[0]]):
        exe = client.compile(jitted.lower(*args), devices=devices)
        arrays = [client.put(a, tessera.NamedSharding(tessera.Mesh(x=2, devices=devices), spec))
                  for a, spec in zip(args, [tessera.P("x", None), tessera.P(None, None),
                                            tessera.P(None), tessera.P(None, None)])]
        (got,) = exe.execute(arrays)
        np.testing.assert_allclose(np.asarray(got.block_until_ready()), want, rtol=1e-4,
                                   atol=1e-5)


def test_megatron_transformer_on_cpu_and_vulkan_devices_in_one_mesh():
    # The transformer block with dp x tp = 2 x 2 over two CPU and two lavapipe devices, each tp
    # group one of each: the heads' all-reduces cross platforms.
    client = tessera.Client(cpu_devices=2, vulkan="if_available")
    gpus = [d for d in client.devices if d.platform == "vulkan"]
    if len(gpus) < 2:
        pytest.skip("fewer than 2 Vulkan devices (lavapipe ICD copies: VK_DRIVER_FILES)")
    from jax.sharding import AxisType, Mesh
    mesh = Mesh(np.array(jax.devices()[:4]).reshape(2, 2), ("dp", "tp"),
                axis_types=(AxisType.Auto,) * 2)
    _, _, in_specs, out_spec = TRANSFORMER_SHARDINGS["megatron"]
    g = rng(22)
    args = (normal(g, 4, 3, 8), *block_params(g, 8, 12))
    jitted = jax.jit(transformer_block,
                     in_shardings=tuple(NamedSharding(mesh, s) for s in in_specs),
                     out_shardings=NamedSharding(mesh, out_spec))
    want = np.asarray(jitted(*args))
    devices = [client.devices[0], gpus[0], client.devices[1], gpus[1]]
    exe = client.compile(jitted.lower(*args), devices=devices)
    tmesh = tessera.Mesh(dp=2, tp=2, devices=devices)
    arrays = [client.put(a, tessera.NamedSharding(
        tmesh, tessera.P(*(tuple(s) + (None,) * (np.ndim(a) - len(s))))))
        for a, s in zip(args, in_specs)]
    (got,) = exe.execute(arrays)
    np.testing.assert_allclose(np.asarray(got.block_until_ready()), want, rtol=1e-4, atol=1e-4)


def test_reshapes_lookups_and_slices_on_vulkan():
    # tensor.expand_shape / collapse_shape, a gather's tensor.extract, slices, pads,
    # concatenations, a reverse and dynamic slices through the SPIR-V code generator: a
    # transformer block with batch over 2 lavapipe devices, a lookup on cpu + vulkan, slicing and
    # dynamic slicing on 2 lavapipe devices.
    client = tessera.Client(cpu_devices=2, vulkan="if_available")
    gpus = [d for d in client.devices if d.platform == "vulkan"]
    if len(gpus) < 2:
        pytest.skip("fewer than 2 Vulkan devices (lavapipe ICD copies: VK_DRIVER_FILES)")
    from jax.sharding import AxisType, Mesh
    mesh = Mesh(np.array(jax.devices()[:2]), ("x",), axis_types=(AxisType.Auto,))
    g = rng(13)
    block_args = (normal(g, 4, 3, 8), *block_params(g, 8, 12))
    table, ids = normal(g, 9, 5), g.integers(0, 9, size=6).astype(np.int32)
    cases = [(transformer_block, block_args, (P("x"),) + (P(),) * 8, P("x"), gpus[:2]),
             (lambda t, i: t[i] * 2.0, (table, ids), (P(), P("x")), P("x"),
              [client.devices[0], gpus[0]]),
             (lambda x: SLICING["pad_and_cut"](rotary_half_turn(x))[:, :5, :5] + jnp.flip(x, 2)[:, :, 1:],
              (normal(g, 4, 5, 6),), (P("x"),), P("x"), gpus[:2]),
             (lambda x, i, u: windows(x, i, i + 1, u)[1], (normal(g, 8, 5), np.int32(3),
                                                           normal(g, 2, 3)),
              (P("x"), P(), P()), P("x"), gpus[:2])]
    for f, args, in_specs, out_spec, devices in cases:
        jitted = jax.jit(f, in_shardings=tuple(NamedSharding(mesh, s) for s in in_specs),
                         out_shardings=NamedSharding(mesh, out_spec))
        want = np.asarray(jitted(*args))
        exe = client.compile(jitted.lower(*args), devices=devices)
        tmesh = tessera.Mesh(x=2, devices=devices)
        arrays = [client.put(a, tessera.NamedSharding(
            tmesh, tessera.P(*(tuple(s) + (None,) * (np.ndim(a) - len(s))))))
            for a, s in zip(args, in_specs)]
        (got,) = exe.execute(arrays)
        np.testing.assert_allclose(np.asarray(got.block_until_ready()), want, rtol=1e-4,
                                   atol=1e-4)


def test_jax_random_from_raw_key_data(client8):
    # Threefry on uint32 keys: shifts, xors, adds, slices and concatenations of u32, a bitcast to
    # f32; the key goes in as u32[2] and the bits come out as u32, bit-exact.
    def draw(key_data):
        key = jax.random.wrap_key_data(key_data, impl="threefry2x32")
        return jax.random.bits(key, (16,), jnp.uint32), jax.random.uniform(key, (4, 5))

    key_data = np.array([20261203, 42], np.uint32)
    mesh = make_mesh((8,), ("x",))
    (want_bits, want_uniform), (got_bits, got_uniform) = run_both(
        client8, draw, (key_data,), (P(),), (P(), P()), mesh)
    assert got_bits.dtype == np.uint32 and np.array_equal(got_bits, want_bits)
    assert np.array_equal(got_uniform, want_uniform)


def test_control_flow_on_vulkan_is_refused_by_name():
    client = tessera.Client(cpu_devices=1, vulkan="if_available")
    gpus = [d for d in client.devices if d.platform == "vulkan"]
    if not gpus:
        pytest.skip("no Vulkan device")
    lowered = jax.jit(lambda x: jax.lax.fori_loop(0, 3, lambda i, a: a * 2.0, x)).lower(
        np.zeros(4, np.float32))
    with pytest.raises(RuntimeError, match=r"UNIMPLEMENTED.*run on CPU devices only"):
        client.compile(lowered, devices=gpus[:1])


@pytest.mark.parametrize("f, x", [
    (lambda x: x > 0, np.array([-1.0, 2.0, 0.5, -0.0], np.float32)),
    (lambda x: (x * 2).astype(jnp.int8), np.array([1, -3, 5, 127], np.int8)),
    (lambda x: x + 1, np.array([1, -2, 3, 32767], np.int16)),
    (lambda x: (x >> 3) ^ (x * np.uint32(2654435761)), np.array([1, 7, 2**31, 2**32 - 1],
                                                                  np.uint32)),
    (lambda x: (x + 200).astype(jnp.uint16), np.array([0, 55, 56, 255], np.uint8)),
], ids=["f32_to_pred", "s8", "s16", "u32", "u8_to_u16"])
def test_pred_and_integers_at_the_boundary(f, x):
    client = tessera.Client(cpu_devices=1, vulkan="off")
    exe = client.compile(jax.jit(f).lower(x))
    (y,) = exe.execute([client.put(x, "mesh{x=1} P(None)")])
    got, want = np.asarray(y.block_until_ready()), np.asarray(f(x))
    assert got.dtype == want.dtype and np.array_equal(got, want), (got, want)


# shard_map: the body runs on each device's shards, its collectives mapped onto Tessera's.
def collectives_zoo(a, b):
    """Every collective shard_map's body may use, over a (x=2, y=4) mesh."""
    s = jax.lax.psum(a, "y")
    g = jax.lax.all_gather(b, "x", axis=0, tiled=True)
    r = jax.lax.psum_scatter(a, "x", scatter_dimension=1, tiled=True)
    t = jax.lax.all_to_all(a, "y", 0, 1, tiled=True)
    m = jax.lax.pmax(a, ("x", "y"))
    yx = jax.lax.all_gather(a, ("y", "x"), axis=1, tiled=True)
    position = (jax.lax.axis_index("x") * 10 + jax.lax.axis_index("y")).astype(jnp.float32)
    return s + position, g, r, t, m, yx


def test_shard_map_collectives_match_jax(client8):
    needs_8_jax_devices()
    from jax import shard_map
    mesh = make_mesh((2, 4), ("x", "y"))
    outs = (P("x", "y"), P(), P("x", "y"), P("x", "y"), P("x", "y"), P("x"))
    f = shard_map(collectives_zoo, mesh=mesh, in_specs=(P("x", "y"), P("x")), out_specs=outs,
                  check_vma=False)
    g = rng(30)
    args = (normal(g, 8, 16), normal(g, 6, 3))
    want, got = run_both(client8, f, args, (P("x", "y"), P("x")), outs, mesh)
    for w, t in zip(want, got):
        # Sums of 2, 4 or 8 terms: the order differs from XLA's at most in the last bits.
        np.testing.assert_allclose(t, w, rtol=1e-6, atol=1e-6)


def megatron_shard_map(mesh):
    from jax import shard_map
    return shard_map(lambda x, a, b: jax.lax.psum(jax.nn.relu(x @ a) @ b, "tp"), mesh=mesh,
                     in_specs=(P(), P(None, "tp"), P("tp", None)), out_specs=P())


def test_shard_map_megatron_mlp_moves_only_its_psum(client8):
    needs_8_jax_devices()
    mesh = make_mesh((8,), ("tp",))
    g = rng(31)
    args = (normal(g, 5, 16), normal(g, 16, 64), normal(g, 64, 16))
    specs = (P(), P(None, "tp"), P("tp", None))
    before = client8.transfer_stats()["device_to_device"]["bytes"]
    (want,), (got,) = run_both(client8, megatron_shard_map(mesh), args, specs, P(), mesh)
    moved = client8.transfer_stats()["device_to_device"]["bytes"] - before
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    # The psum of a [5, 16] f32 partial result over 8 devices; the inputs arrive with the
    # shardings the body takes (nothing resharded).
    assert 8 * 5 * 16 * 4 <= moved <= 2 * 8 * 7 * 5 * 16 * 4, moved


def test_shard_map_inside_a_larger_program(client8):
    # Ops before and after the shard_map; the arguments arrive replicated and are split for it.
    needs_8_jax_devices()
    mesh = make_mesh((8,), ("tp",))
    body = megatron_shard_map(mesh)

    def f(x, a, b):
        return body(jnp.tanh(x) * 2, a, b).sum(axis=0)

    g = rng(32)
    args = (normal(g, 5, 16), normal(g, 16, 64), normal(g, 64, 16))
    (want,), (got,) = run_both(client8, f, args, (P(), P(), P()), P(), mesh)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_shard_map_data_parallel_gradient_pmean(client8):
    needs_8_jax_devices()
    from jax import shard_map
    mesh = make_mesh((8,), ("dp",))

    def loss(w, x):
        return jnp.mean(jnp.tanh(x @ w) ** 2)

    def step(w, x):
        return jax.lax.pmean(jax.grad(loss)(w, x), "dp")

    f = shard_map(step, mesh=mesh, in_specs=(P(), P("dp")), out_specs=P())
    g = rng(33)
    args = (normal(g, 16, 8), normal(g, 24, 16))
    (want,), (got,) = run_both(client8, f, args, (P(), P("dp")), P(), mesh)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype,collective", [(np.uint32, jax.lax.pmax), (np.uint32, jax.lax.pmin),
                                              (np.int32, jax.lax.psum), (np.int8, jax.lax.pmin)],
                         ids=["pmax-u32", "pmin-u32", "psum-i32", "pmin-i8"])
def test_shard_map_integer_collectives_keep_signedness(client8, dtype, collective):
    needs_8_jax_devices()
    from jax import shard_map
    mesh = make_mesh((8,), ("x",))
    info = np.iinfo(dtype)
    g = rng(34)
    x = g.integers(info.min // 2, info.max // 2, size=(16, 3), dtype=np.int64).astype(dtype)
    x[0, 0] = info.max  # above 2^31 for u32: a signed max would pick another element
    f = shard_map(lambda a: collective(a, "x"), mesh=mesh, in_specs=(P("x"),), out_specs=P())
    (want,), (got,) = run_both(client8, f, (x,), (P("x"),), P(), mesh)
    np.testing.assert_array_equal(got, want)


def test_shard_map_over_some_axes_runs_as_jax_computes_it(client8):
    # Manual over y only (x left to the partitioner): Tessera runs the body on every x device
    # alike, the operands gathered along x. A matmul, axis_index over y (JAX makes a shard_map
    # over x of it inside), psum over y; the operands sharded over x or not.
    needs_8_jax_devices()
    from jax import shard_map
    mesh = make_mesh((2, 4), ("x", "y"))
    x, w = normal(rng(35), 8, 8), normal(rng(36), 8, 3)

    def body(a, v):
        return jax.lax.psum(a @ v + jax.lax.axis_index("y").astype(np.float32), "y")

    partial = shard_map(body, mesh=mesh, in_specs=(P(None, "y"), P("y")), out_specs=P(),
                        axis_names={"y"}, check_vma=False)
    for specs in ((P("x", "y"), P()), (P(), P("y"))):
        (want,), (got,) = run_both(client8, partial, (x, w), specs, P(), mesh)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_ppermute_rings_and_pipeline_steps_run_as_jax_computes_them(client8):
    needs_8_jax_devices()
    from jax import shard_map
    mesh = make_mesh((2, 4), ("x", "y"))
    x = normal(rng(36), 8, 12)

    def body(a):
        ring = jax.lax.ppermute(a, "y", [(i, (i + 1) % 4) for i in range(4)])
        stage = jax.lax.ppermute(a * 3, "x", [(0, 1)])
        flat = jax.lax.ppermute(a - 1, ("x", "y"), [(i, (i + 1) % 8) for i in range(8)])
        return ring + stage + flat
    jitted = jax.jit(shard_map(body, mesh=mesh, in_specs=(P("x", "y"),), out_specs=P("x", "y")),
                     in_shardings=NamedSharding(mesh, P("x", "y")))
    want = np.asarray(jitted(x))
    exe = client8.compile(jitted.lower(x))
    arg = client8.put(x, "mesh{x=2,y=4} P(x,y)")
    before = client8.transfer_stats()["device_to_device"]
    (got,) = exe.execute([arg])
    np.testing.assert_allclose(np.asarray(got.block_until_ready()), want, rtol=1e-6)
    # Each device reads one 4x3 f32 block from its ring neighbour, and the 4 devices of x=1 one
    # more from their stage before: 12 blocks of 48 bytes. The ring over both axes is composed
    # of shifts along one axis each: 6 along y for the pairs within a row, and for each of the
    # two pairs that change rows a shift of 2 blocks along y and one of 4 along x: 18 blocks.
    after = client8.transfer_stats()["device_to_device"]
    assert (after["bytes"] - before["bytes"], after["copies"] - before["copies"]) == (30 * 48, 30)


def test_shard_map_on_lavapipe_and_cpu_plus_vulkan():
    client = tessera.Client(cpu_devices=2, vulkan="if_available")
    gpus = [d for d in client.devices if d.platform == "vulkan"]
    if len(gpus) < 2:
        pytest.skip("fewer than 2 Vulkan devices (lavapipe ICD copies: VK_DRIVER_FILES)")
    from jax import shard_map
    from jax.sharding import AxisType, Mesh
    mesh = Mesh(np.array(jax.devices()[:2]), ("tp",), axis_types=(AxisType.Auto,))
    g = rng(35)
    args = (normal(g, 5, 8), normal(g, 8, 6), normal(g, 6, 4))
    specs = (P(), P(None, "tp"), P("tp", None))
    jitted = jax.jit(megatron_shard_map(mesh),
                     in_shardings=tuple(NamedSharding(mesh, s) for s in specs),
                     out_shardings=NamedSharding(mesh, P()))
    want = np.asarray(jitted(*args))
    for devices in (gpus[:2], [client.devices[0], gpus[0]]):
        exe = client.compile(jitted.lower(*args), devices=devices)
        tmesh = tessera.Mesh(tp=2, devices=devices)
        arrays = [client.put(a, tessera.NamedSharding(tmesh, tessera.P(*(tuple(s) + (None,) * (
            2 - len(s)))))) for a, s in zip(args, specs)]
        (got,) = exe.execute(arrays)
        np.testing.assert_allclose(np.asarray(got.block_until_ready()), want, rtol=1e-5,
                                   atol=1e-5)
    # A ppermute ring between the two devices, staged through the host where a device is Vulkan.
    x = normal(g, 6, 4)
    ring = jax.jit(shard_map(lambda a: jax.lax.ppermute(a, "tp", [(0, 1), (1, 0)]) * 2,
                             mesh=mesh, in_specs=(P("tp"),), out_specs=P("tp")),
                   in_shardings=NamedSharding(mesh, P("tp")))
    want = np.asarray(ring(x))
    for devices in (gpus[:2], [client.devices[0], gpus[0]]):
        exe = client.compile(ring.lower(x), devices=devices)
        arg = client.put(x, tessera.NamedSharding(tessera.Mesh(tp=2, devices=devices),
                                                  tessera.P("tp", None)))
        (got,) = exe.execute([arg])
        np.testing.assert_array_equal(np.asarray(got.block_until_ready()), want)
    # Pairwise swaps over 2 CPU + 2 Vulkan devices (masked shifts: selects on every platform).
    devices = [d for d in client.devices if d.platform == "cpu"][:2] + gpus[:2]
    mesh4 = Mesh(np.array(jax.devices()[:4]), ("tp",), axis_types=(AxisType.Auto,))
    swaps = jax.jit(shard_map(lambda a: jax.lax.ppermute(a, "tp", [(0, 1), (1, 0), (2, 3),
                                                                   (3, 2)]) + 1,
                              mesh=mesh4, in_specs=(P("tp"),), out_specs=P("tp")),
                    in_shardings=NamedSharding(mesh4, P("tp")))
    x = (np.arange(8 * 4).reshape(8, 4) % 7).astype(np.int32)
    exe = client.compile(swaps.lower(x), devices=devices)
    arg = client.put(x, tessera.NamedSharding(tessera.Mesh(tp=4, devices=devices),
                                              tessera.P("tp", None)))
    (got,) = exe.execute([arg])
    np.testing.assert_array_equal(np.asarray(got.block_until_ready()), np.asarray(swaps(x)))
    # A ring over both axes of a 2x2 mesh of those devices (shifts along each axis, composed).
    mesh22 = Mesh(np.array(jax.devices()[:4]).reshape(2, 2), ("x", "y"),
                  axis_types=(AxisType.Auto,) * 2)
    flat = jax.jit(shard_map(lambda a: jax.lax.ppermute(a, ("x", "y"), [(0, 1), (1, 2), (2, 3),
                                                                        (3, 0)]),
                             mesh=mesh22, in_specs=(P("x", "y"),), out_specs=P("x", "y")),
                   in_shardings=NamedSharding(mesh22, P("x", "y")))
    exe = client.compile(flat.lower(x), devices=devices)
    arg = client.put(x, tessera.NamedSharding(tessera.Mesh(x=2, y=2, devices=devices),
                                              tessera.P("x", "y")))
    (got,) = exe.execute([arg])
    np.testing.assert_array_equal(np.asarray(got.block_until_ready()), np.asarray(flat(x)))


def test_shard_map_collectives_are_refused_by_the_guard_before_anything_runs(client8):
    needs_8_jax_devices()
    mesh = make_mesh((8,), ("tp",))
    specs = (P(), P(None, "tp"), P("tp", None))
    g = rng(36)
    args = (normal(g, 5, 16), normal(g, 16, 64), normal(g, 64, 16))
    jitted = jax.jit(megatron_shard_map(mesh),
                     in_shardings=tuple(NamedSharding(mesh, s) for s in specs),
                     out_shardings=NamedSharding(mesh, P()))
    exe = client8.compile(jitted.lower(*args))
    arrays = [client8.put(a, tessera_sharding(mesh, s + (None,) * (2 - len(s))))
              for a, s in zip(args, specs)]
    refused = client8.transfer_guard_counters("d2d")["refused_events"]
    with tessera.transfer_guard_device_to_device("disallow_explicit"):
        with pytest.raises(tessera.TransferGuardError, match="device-to-device"):
            exe.execute(arrays)
    assert client8.transfer_guard_counters("d2d")["refused_events"] > refused
    (got,) = exe.execute(arrays)  # the inputs are intact, and it runs once allowed
    np.testing.assert_allclose(np.asarray(got.block_until_ready()), np.asarray(jitted(*args)),
                               rtol=1e-5, atol=1e-5)


def bf16_mlp(x, w, b):
    h = jax.nn.relu(x @ w + b)
    return h, jnp.sum(h.astype(jnp.float32), axis=1)


def test_bf16_at_the_boundary_matches_jax_bit_for_bit(client8):
    # bf16 arguments and results (numpy arrays of ml_dtypes' bfloat16, as JAX hands them to numpy):
    # computed in f32 and rounded after each op, as XLA's CPU backend computes bf16.
    needs_8_jax_devices()
    ml_dtypes = pytest.importorskip("ml_dtypes")
    mesh = make_mesh((8,), ("x",))
    g = rng(37)
    args = tuple(a.astype(ml_dtypes.bfloat16)
                 for a in (normal(g, 16, 8), normal(g, 8, 4), normal(g, 4)))
    want, got = run_both(client8, bf16_mlp, args, (P("x"), P(), P()), (P("x"), P("x")), mesh)
    assert got[0].dtype == ml_dtypes.bfloat16 and got[1].dtype == np.float32
    np.testing.assert_array_equal(got[0].view(np.uint16), want[0].view(np.uint16))
    np.testing.assert_array_equal(got[1], want[1])


def test_bf16_arrays_round_trip_through_put_and_asarray(client8):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    bits = np.array([0x3F80, 0x8000, 0x7F7F, 0x0001, 0xFF80, 0x7F81, 0x7FC0, 0x4049],
                    np.uint16)
    x = bits.view(ml_dtypes.bfloat16)
    a = client8.put(x, "mesh{x=8} P(x)")
    assert a.dtype == "bf16"
    back = np.asarray(a)
    assert back.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(back.view(np.uint16), bits)
    with pytest.raises(TypeError, match="put takes a numpy array"):
        client8.put("not an array", "mesh{x=8} P()")


def test_bf16_boundary_on_lavapipe_and_cpu_plus_vulkan():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    client = tessera.Client(cpu_devices=2, vulkan="if_available")
    gpus = [d for d in client.devices if d.platform == "vulkan"]
    if len(gpus) < 2:
        pytest.skip("fewer than 2 Vulkan devices (lavapipe ICD copies: VK_DRIVER_FILES)")
    from jax.sharding import AxisType, Mesh
    mesh = Mesh(np.array(jax.devices()[:2]), ("x",), axis_types=(AxisType.Auto,))
    g = rng(38)
    args = tuple(a.astype(ml_dtypes.bfloat16)
                 for a in (normal(g, 16, 8), normal(g, 8, 4), normal(g, 4)))
    specs = (P("x"), P(), P())
    jitted = jax.jit(bf16_mlp, in_shardings=tuple(NamedSharding(mesh, s) for s in specs),
                     out_shardings=(NamedSharding(mesh, P("x")),) * 2)
    want = [np.asarray(o) for o in jitted(*args)]
    for devices in (gpus[:2], [client.devices[0], gpus[0]]):
        exe = client.compile(jitted.lower(*args), devices=devices)
        tmesh = tessera.Mesh(x=2, devices=devices)
        arrays = [client.put(a, tessera.NamedSharding(tmesh, tessera.P(*(tuple(s) + (None,) * (
            a.ndim - len(s)))))) for a, s in zip(args, specs)]
        got = [np.asarray(o.block_until_ready()) for o in exe.execute(arrays)]
        np.testing.assert_array_equal(got[0].view(np.uint16), want[0].view(np.uint16))
        np.testing.assert_array_equal(got[1], want[1])


def f16_program(x, w, b):
    h = jax.nn.relu(x @ w + b)
    return h, x * 3, jnp.exp(x) - 1, h.astype(jnp.float32).sum(axis=1)


@pytest.mark.parametrize("platform", ["cpu", "vulkan", "cpu+vulkan"])
def test_f16_matches_jax_bit_for_bit(client8, platform):
    # f16 in and out, computed in f32 and rounded after each op; edge values in the first row
    # (65504, -0, a subnormal, the smallest normal, infinities, NaN, one ulp above 1).
    g = rng(39)
    x = (normal(g, 16, 8) * 4).astype(np.float16)
    x[0] = np.array([65504, -0.0, 6e-8, 2 ** -14, np.inf, -np.inf, np.nan, 1 + 2 ** -10],
                    np.float16)
    args = (x, normal(g, 8, 4).astype(np.float16), normal(g, 4).astype(np.float16))
    specs, outs = (P("x"), P(), P()), (P("x"),) * 4
    if platform == "cpu":
        needs_8_jax_devices()
        want, got = run_both(client8, f16_program, args, specs, outs, make_mesh((8,), ("x",)))
    else:
        client = tessera.Client(cpu_devices=2, vulkan="if_available")
        gpus = [d for d in client.devices if d.platform == "vulkan"]
        if len(gpus) < 2:
            pytest.skip("fewer than 2 Vulkan devices (lavapipe ICD copies: VK_DRIVER_FILES)")
        from jax.sharding import AxisType, Mesh
        mesh = Mesh(np.array(jax.devices()[:2]), ("x",), axis_types=(AxisType.Auto,))
        jitted = jax.jit(f16_program, in_shardings=tuple(NamedSharding(mesh, s) for s in specs),
                         out_shardings=tuple(NamedSharding(mesh, s) for s in outs))
        want = [np.asarray(o) for o in jitted(*args)]
        devices = gpus[:2] if platform == "vulkan" else [client.devices[0], gpus[0]]
        exe = client.compile(jitted.lower(*args), devices=devices)
        tmesh = tessera.Mesh(x=2, devices=devices)
        arrays = [client.put(a, tessera.NamedSharding(tmesh, tessera.P(*(tuple(s) + (None,) * (
            a.ndim - len(s)))))) for a, s in zip(args, specs)]
        got = [np.asarray(o.block_until_ready()) for o in exe.execute(arrays)]
    assert [o.dtype for o in got] == [np.float16, np.float16, np.float16, np.float32]
    # The matmul's row of infinities and NaN is NaN in both, its sign left open (as in XLA).
    np.testing.assert_array_equal(got[0], want[0])
    for i in (1, 2):
        np.testing.assert_array_equal(got[i].view(np.uint16), want[i].view(np.uint16))
    np.testing.assert_array_equal(got[3], want[3])


@pytest.mark.parametrize("which", ["megatron", "inside a program", "2-d mesh"])
def test_shard_map_lowered_for_gspmd_matches_jax(client8, which):
    # With jax_use_shardy_partitioner=False, shard_map is a call of its body between custom_calls
    # @SPMDFullToShardShape and @SPMDShardToFullShape, its shardings GSPMD's: the same computation.
    needs_8_jax_devices()
    from jax import shard_map
    previous = jax.config.jax_use_shardy_partitioner
    jax.config.update("jax_use_shardy_partitioner", False)
    try:
        g = rng(40)
        if which == "2-d mesh":
            mesh = make_mesh((2, 4), ("x", "y"))
            f = shard_map(lambda a: jax.lax.psum(a, "y") + jax.lax.axis_index("x").astype(
                jnp.float32), mesh=mesh, in_specs=(P("x", "y"),), out_specs=P("x", "y"))
            args, specs, out = (normal(g, 8, 16),), (P("x", "y"),), P("x", "y")
        else:
            mesh = make_mesh((8,), ("tp",))
            body = megatron_shard_map(mesh)
            args = (normal(g, 5, 16), normal(g, 16, 64), normal(g, 64, 16))
            if which == "megatron":
                f, specs = body, (P(), P(None, "tp"), P("tp", None))
            else:
                f, specs = (lambda x, a, b: body(jnp.tanh(x), a, b).sum(axis=0)), (P(), P(), P())
            out = P()
        text = jax.jit(f).lower(*args).compiler_ir("stablehlo").operation.get_asm(
            print_generic_op_form=True)
        assert "SPMDFullToShardShape" in text and "sdy." not in text
        (want,), (got,) = run_both(client8, f, args, specs, out, mesh)
    finally:
        jax.config.update("jax_use_shardy_partitioner", previous)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


WINDOWS = {
    "cumsum": lambda x: jnp.cumsum(x, axis=1),
    "cumprod": lambda x: jnp.cumprod(x, axis=0),
    "cummax": lambda x: jax.lax.cummax(x, axis=1),
    "cumsum of integers": lambda x: jnp.cumsum((x * 10).astype(jnp.int32), axis=0),
    "max pooling": lambda x: jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (2, 3), (2, 1),
                                                   "SAME"),
    "dilated sum pooling": lambda x: jax.lax.reduce_window(
        x, 0.0, jax.lax.add, (2, 2), (1, 2), [(1, 2), (0, 1)], base_dilation=(2, 1),
        window_dilation=(1, 2)),
}


@pytest.mark.parametrize("name", list(WINDOWS))
def test_reduce_windows_match_jax(client8, name):
    # reduce_window: cumulative reductions and pooling, padded, strided and dilated; the window
    # is combined in order, as XLA does (the sums agree bit for bit).
    needs_8_jax_devices()
    g = rng(41)
    x = normal(g, 8, 6)
    (want,), (got,) = run_both(client8, WINDOWS[name], (x,), (P("x"),), P(),
                               make_mesh((8,), ("x",)))
    np.testing.assert_array_equal(got, want)


def test_reduce_window_on_lavapipe():
    client = tessera.Client(cpu_devices=0, vulkan="if_available")
    gpus = [d for d in client.devices if d.platform == "vulkan"]
    if len(gpus) < 2:
        pytest.skip("fewer than 2 Vulkan devices (lavapipe ICD copies: VK_DRIVER_FILES)")
    from jax.sharding import AxisType, Mesh
    mesh = Mesh(np.array(jax.devices()[:2]), ("x",), axis_types=(AxisType.Auto,))
    x = normal(rng(42), 8, 6)
    for name in ("cumsum", "max pooling"):
        jitted = jax.jit(WINDOWS[name], in_shardings=NamedSharding(mesh, P("x")),
                         out_shardings=NamedSharding(mesh, P("x")))
        exe = client.compile(jitted.lower(x), devices=gpus[:2])
        arr = client.put(x, tessera.NamedSharding(tessera.Mesh(x=2, devices=gpus[:2]),
                                                  tessera.P("x", None)))
        (got,) = exe.execute([arr])
        np.testing.assert_allclose(np.asarray(got.block_until_ready()), np.asarray(jitted(x)),
                                   rtol=1e-6, atol=1e-6)


# jax.device_put between meshes of the same devices in another order, as JAX 0.10.2 lowers it
# (dispatch.py, _different_device_order_reshard): the argument's mesh lists the devices backwards.
DEVICE_ORDER_PUT = """
"builtin.module"() <{sym_name = "jit__device_put_reshard"}> ({
  "sdy.mesh"() <{mesh = #sdy.mesh<["x"=8], device_ids=[7, 6, 5, 4, 3, 2, 1, 0]>,
      sym_name = "mesh"}> : () -> ()
  "sdy.mesh"() <{mesh = #sdy.mesh<["x"=8]>, sym_name = "mesh_0"}> : () -> ()
  "func.func"() <{arg_attrs = [{sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}],
      function_type = (tensor<8x8xf32>) -> tensor<8x8xf32>,
      res_attrs = [{sdy.sharding = #sdy.sharding<@mesh_0, [{"x"}, {}]>}], sym_name = "main"}> ({
  ^bb0(%arg0: tensor<8x8xf32>):
    "func.return"(%arg0) : (tensor<8x8xf32>) -> ()
  }) : () -> ()
}) : () -> ()
"""


def test_an_argument_on_its_devices_in_another_order_moves_as_the_programs_own(client8):
    exe = client8.compile(DEVICE_ORDER_PUT)
    x = np.arange(64, dtype=np.float32).reshape(8, 8)
    backwards = tessera.NamedSharding(tessera.Mesh(x=8, devices=client8.devices[::-1]),
                                      tessera.P("x", None))
    arg = client8.put(x, backwards)
    before = client8.transfer_stats()["device_to_device"]
    # Row i moves from device 7 - i to device i: the program's own communication, explicit, so
    # a policy refusing implicit transfers lets it run.
    with tessera.transfer_guard_device_to_device("disallow"):
        (got,) = exe.execute([arg])
    np.testing.assert_array_equal(np.asarray(got.block_until_ready()), x)
    for shard in got.addressable_shards:
        np.testing.assert_array_equal(np.asarray(shard.data), x[shard.index])
        assert shard.device == client8.devices[shard.index[0].start]
    after = client8.transfer_stats()["device_to_device"]
    assert (after["bytes"] - before["bytes"], after["copies"] - before["copies"]) == (8 * 32, 8)
    # Refused where explicit transfers are, before anything moves; the argument stays intact.
    with tessera.transfer_guard_device_to_device("disallow_explicit"):
        with pytest.raises(tessera.TransferGuardError, match="device-to-device"):
            exe.execute([arg])
    assert client8.transfer_stats()["device_to_device"] == after
    np.testing.assert_array_equal(np.asarray(arg), x)
    # An argument already in the kernels' order (the devices in order) runs in place.
    (same,) = exe.execute([client8.put(x, "mesh{x=8} P(x,None)")])
    np.testing.assert_array_equal(np.asarray(same.block_until_ready()), x)
    assert client8.transfer_stats()["device_to_device"] == after


def test_pad_with_a_computed_value_on_lavapipe_and_cpu_plus_vulkan():
    # jnp.pad's constant_values from an argument: a broadcast and a select, kernels every
    # platform runs (no scalar read on the host).
    client = tessera.Client(cpu_devices=1, vulkan="if_available")
    gpus = [d for d in client.devices if d.platform == "vulkan"]
    if len(gpus) < 2:
        pytest.skip("fewer than 2 Vulkan devices (lavapipe ICD copies: VK_DRIVER_FILES)")
    from jax.sharding import AxisType, Mesh
    x = np.arange(32, dtype=np.float32).reshape(8, 4)
    pad = lambda a, v: jnp.pad(a, ((1, 2), (0, 3)), constant_values=v)  # noqa: E731
    want = np.asarray(jax.jit(pad)(x, np.float32(-7.5)))
    for devices in (gpus[:1], gpus[:2], [client.devices[0], gpus[0]]):
        mesh = Mesh(np.array(jax.devices()[:len(devices)]), ("x",), axis_types=(AxisType.Auto,))
        spec = P("x") if len(devices) > 1 else P()
        lowered = jax.jit(pad, in_shardings=(NamedSharding(mesh, spec), NamedSharding(mesh, P()))
                          ).lower(x, np.float32(-7.5))
        exe = client.compile(lowered, devices=devices)
        tmesh = tessera.Mesh(x=len(devices), devices=devices)
        rows = tessera.P("x", None) if len(devices) > 1 else tessera.P(None, None)
        (got,) = exe.execute([client.put(x, tessera.NamedSharding(tmesh, rows)),
                              client.put(np.float32(-7.5), tessera.NamedSharding(tmesh, tessera.P()))])
        np.testing.assert_array_equal(np.asarray(got.block_until_ready()), want)


def test_sorts_match_jax_bit_for_bit(client8):
    # stablehlo.sort as a bitonic network: a stable sort (ties keep their order: -0 and +0,
    # repeated values), NaNs last, lengths that are no power of two, several operands (argsort's
    # keys and indices, lax.sort of two with one key), along a dimension that is sharded or not.
    needs_8_jax_devices()
    mesh = make_mesh((8,), ("x",))
    g = rng(37)
    x = normal(g, 16, 37)
    x[0, [3, 9]] = np.nan
    x[1, 5], x[1, 6] = -0.0, 0.0
    x[2, 7] = x[2, 8] = 1.5
    x[3, 10] = -np.inf
    k = g.integers(-4, 4, size=(16, 37)).astype(np.int32)
    cases = [
        (lambda a: jnp.sort(a, axis=1), (x,), (P("x"),)),
        (lambda a: jnp.argsort(a, axis=1), (x,), (P("x"),)),
        (lambda a: jnp.argsort(a, axis=0), (x,), (P("x"),)),
        (lambda a: jnp.sort(a, axis=1, descending=True), (k,), (P("x"),)),
        (lambda a, b: jax.lax.sort((a, b), dimension=1, num_keys=1), (k, x), (P("x"), P("x"))),
        (lambda a: jnp.sort(a.astype(jnp.bfloat16), axis=1), (x,), (P(),)),
    ]
    for f, args, specs in cases:
        outs = jax.eval_shape(f, *args)
        out_spec = specs[0]  # the results sharded as the first operand
        if isinstance(outs, (tuple, list)):
            out_spec = (out_spec,) * len(outs)
        want, got = run_both(client8, f, args, specs, out_spec, mesh)
        for w, o in zip(want, got):
            np.testing.assert_array_equal(np.asarray(o).view(np.uint8), np.asarray(w).view(np.uint8))


def test_a_sort_along_too_long_a_dimension_is_refused_by_name(client8):
    lowered = jax.jit(jnp.sort).lower(np.zeros(70000, np.float32))
    with pytest.raises(RuntimeError, match=r"UNIMPLEMENTED: .*stablehlo.sort.*a sort along a "
                                           r"dimension of 70000 \(at most 65536"):
        client8.compile(lowered, devices=client8.devices[:1])
